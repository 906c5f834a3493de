#!/usr/bin/env bash
# Install the OpenID provider the SSO tests and `make sso-provider` run (the certified
# `oidc-provider` package on Node) into a local, git-ignored folder, as scripts/axe.sh
# installs axe-core. Usage: scripts/oidc-provider.sh [DIR]   (default .oidc-provider)
set -euo pipefail
DIR="${1:-.oidc-provider}"
PACKAGES="oidc-provider@9.13.3"
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name": "docpub-oidc-provider", "private": true, "type": "module"}' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --silent $PACKAGES
test -f "$DIR/node_modules/oidc-provider/package.json"
echo "$PACKAGES" > "$DIR/.installed"
