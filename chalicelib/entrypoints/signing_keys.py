"""`GET /.well-known/docpub-signing-keys.json` (contract 7g): the JWKS of every key that
signed versions; a rotated key stays listed with its `not_after` (docs/provenance.md)."""
from __future__ import annotations

from chalice import Blueprint

from chalicelib import wiring
from chalicelib.entrypoints.http import handles_errors, json_response

bp = Blueprint(__name__)

# Keys change only by rotation: a verifier may keep the set a few minutes.
CACHE = "public, max-age=300"


@bp.route("/.well-known/docpub-signing-keys.json", methods=["GET"])
@handles_errors(bp)
def signing_keys():
    return json_response(wiring.provenance().signing_keys(),
                         headers={"Cache-Control": CACHE, "Access-Control-Allow-Origin": "*"})
