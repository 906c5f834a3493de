#!/usr/bin/env bash
# The script of Docpub's GitHub Action (action.yml at the repository root).
#
# Installs the client from this repository's clients/python into a virtualenv under
# $RUNNER_TEMP (reused when the action runs again in the same job: pip is skipped while
# the virtualenv holds this client's version and sources), runs
# `docpub publish`, and writes the outputs (document-id, share-url, version-number),
# a job summary line and, for a new document, a notice with its id.
#
# Inputs come as INPUT_* environment variables (see action.yml). Exit status: the
# client's (2 usage, 3 auth, 4 not found, 5 limit, 6 server; clients/python/README.md).
set -euo pipefail

fail() { echo "::error title=Docpub::$1"; exit "${2:-2}"; }

action_path=${GITHUB_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
file=${INPUT_FILE:-} folder=${INPUT_FOLDER:-}
[ -n "$file" ] && [ -n "$folder" ] && fail "give either file or folder, not both"
[ -z "$file" ] && [ -z "$folder" ] && fail "give file (an HTML file) or folder"
path=${file:-$folder}
if [ -n "$file" ] && [ ! -f "$file" ]; then fail "file: no such file: $file"; fi
if [ -n "$folder" ] && [ ! -d "$folder" ]; then fail "folder: no such folder: $folder"; fi
[ -n "${INPUT_API_KEY:-}" ] || fail "api-key is empty (is the secret available to this workflow? pull requests from forks get no secrets)" 3
[ -n "${INPUT_BASE_URL:-}" ] || fail "base-url is empty"
echo "::add-mask::$INPUT_API_KEY"

venv=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/docpub-client
# The client's version and a digest of its sources: a virtualenv that holds this stamp already
# has this very client, and pip (most of a run's time) is skipped.
stamp=$(python3 - "$action_path/clients/python" <<'EOF'
import hashlib, pathlib, re, sys
root = pathlib.Path(sys.argv[1])
digest = hashlib.sha256()
for path in sorted([root / "pyproject.toml", *(root / "src" / "docpub").rglob("*")]):
    if path.is_file() and "__pycache__" not in path.parts:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
version = re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(), re.M).group(1)
print(version, digest.hexdigest())
EOF
)
if [ -x "$venv/bin/docpub" ] && [ "$(cat "$venv/.docpub-client" 2>/dev/null)" = "$stamp" ]; then
  echo "Docpub client ${stamp%% *} already installed in $venv"
else
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  rm -f "$venv/.docpub-client"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$action_path/clients/python"
  echo "$stamp" > "$venv/.docpub-client"
fi

note=${INPUT_NOTE:-}
if [ -z "$note" ] && [ -n "${GITHUB_RUN_NUMBER:-}" ]; then
  note="run $GITHUB_RUN_NUMBER, commit $(printf '%.7s' "${GITHUB_SHA:-}")"
fi
set -- publish "$path" --json
[ -n "${INPUT_TITLE:-}" ] && set -- "$@" --title "$INPUT_TITLE"
[ -n "${INPUT_DOCUMENT_ID:-}" ] && set -- "$@" --document "$INPUT_DOCUMENT_ID"
[ -n "$note" ] && set -- "$@" --note "$note"

answer=$(mktemp)
status=0
# The key goes in the environment, never on a command line (other processes can read those).
DOCPUB_URL=$INPUT_BASE_URL DOCPUB_API_KEY=$INPUT_API_KEY "$venv/bin/docpub" "$@" > "$answer" || status=$?
if [ "$status" -ne 0 ]; then
  # --json: the error ({"error": {"code", "message"}}) is on stdout
  message=$("$venv/bin/python" -c 'import json, sys
try:
    e = json.load(open(sys.argv[1]))["error"]; print(e["code"], e["message"], sep=": ")
except Exception:
    print(open(sys.argv[1]).read().strip() or "docpub publish failed")' "$answer")
  rm -f "$answer"
  fail "$message" "$status"
fi
read -r doc_id version url < <("$venv/bin/python" -c 'import json, sys
d = json.load(open(sys.argv[1])); print(d["document_id"], d["version_number"], d["share_url"])' "$answer")
rm -f "$answer"

{
  echo "document-id=$doc_id"
  echo "share-url=$url"
  echo "version-number=$version"
} >> "${GITHUB_OUTPUT:-/dev/stdout}"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  printf '### Published to Docpub\n\n[%s](%s) (version %s)\n' "$url" "$url" "$version" >> "$GITHUB_STEP_SUMMARY"
fi
echo "Published $path: $url (version $version)"
if [ -z "${INPUT_DOCUMENT_ID:-}" ]; then
  echo "::notice title=Docpub::Created document $doc_id. Pass it as document-id (e.g. a repository variable) so later runs add versions to it."
fi
