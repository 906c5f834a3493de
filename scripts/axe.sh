#!/usr/bin/env bash
# Install axe-core (the accessibility rules the browser tests inject into pages) into a
# local, git-ignored folder, as scripts/engines.sh installs the engines.
# Usage: scripts/axe.sh [DIR]   (default .axe)
set -euo pipefail
DIR="${1:-.axe}"
PACKAGES="axe-core@4.14.1"
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name": "docpub-axe", "private": true}' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --silent $PACKAGES
test -f "$DIR/node_modules/axe-core/axe.min.js"
echo "$PACKAGES" > "$DIR/.installed"
