#!/usr/bin/env bash
# Install the real engines of `make test-aws` into a local, git-ignored folder:
# DynamoDB Local (the jar carried by npm amplify-dynamodb-simulator) and s3rver.
# Java comes from Debian (default-jre-headless; .ci/run installs it).
# Usage: scripts/engines.sh [DIR]   (default .engines)
set -euo pipefail
DIR="${1:-.engines}"
PACKAGES="amplify-dynamodb-simulator@2.9.30 s3rver@3.7.1"
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name": "docpub-engines", "private": true}' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --silent $PACKAGES
test -f "$DIR/node_modules/amplify-dynamodb-simulator/emulator/DynamoDBLocal.jar"
test -f "$DIR/node_modules/s3rver/bin/s3rver.js"
echo "$PACKAGES" > "$DIR/.installed"
