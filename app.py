"""Docpub's Chalice app: the REST operations (generated from chalicelib/operations.py),
the pages, share links, /mcp, the dashboard and OAuth blueprints."""
from chalicelib import wiring
from chalicelib.entrypoints.apps import new_app
from chalicelib.entrypoints.http import body_bytes, empty_response, handles_errors
from chalicelib.entrypoints import pages, rest, routing
from chalicelib.entrypoints.share import bp as share_pages
from chalicelib.entrypoints.mcp import bp as mcp_blueprint
from chalicelib.entrypoints.dashboard import bp as dashboard_blueprint
from chalicelib.entrypoints.oauth import bp as oauth_blueprint
from chalicelib.entrypoints.signing_keys import bp as signing_keys_blueprint

# The configuration check, logging and the contract's middleware (origin secret, separate
# content site, resource bounds, Chalice's own errors reshaped): chalicelib/entrypoints/apps.py,
# shared with the share function's app (chalicelib/entrypoints/edge.py).
app = new_app()


def _request():
    return app.current_request


@app.route("/", methods=["GET"])
def landing_page():
    return pages.landing(_request())


@app.route("/docs", methods=["GET"])
def api_reference_page():
    return pages.api_reference(_request(), app.routes)


@app.route("/favicon.svg", methods=["GET"])
@app.route("/favicon.ico", methods=["GET"])
def favicon():
    return pages.favicon(_request())


# REST v1: one route per entry of chalicelib/operations.py (which also makes the
# OpenAPI document, the MCP tools and the OAuth scope table).
rest.register(app)


@app.route("/uploads/{upload_id}", methods=["PUT"], content_types=["*/*"])
@handles_errors(app)
def receive_upload(upload_id):
    """The embedded store's upload_url: no key, the signed token in the URL is the credential
    (outside /api/v1: its size is the one declared, not the API's body cap). `make run`
    streams this PUT itself (scripts/serve_local.py) before chalice local would read the
    body whole; this route serves the in-process test client."""
    import io

    body = body_bytes(_request())
    wiring.uploads().receive(upload_id, (_request().query_params or {}).get("token") or "", io.BytesIO(body),
                             len(body))
    return empty_response(204)


@app.route("/exports/{export_id}/download", methods=["GET"])
@handles_errors(app)
def download_export(export_id):
    """The embedded store's export download URL (deployed, a presigned S3 GET serves it): no
    key, the signature and expiry in the URL are the credential (services/exports.py). `make
    run` streams it itself (scripts/serve_local.py) instead of reading the zip into memory;
    this route serves the in-process test client."""
    from chalicelib.entrypoints.http import download_response
    from chalicelib.services.downloads import Download

    query = _request().query_params or {}
    service = wiring.exports()
    file = service.download(export_id, query.get("until") or "", query.get("sig") or "")
    return download_response(Download(file.filename, "application/zip", service.read(file)),
                             {"Referrer-Policy": "no-referrer"})


app.register_blueprint(share_pages)
app.register_blueprint(mcp_blueprint)  # POST /mcp (the SDK is imported only when it is hit)
app.register_blueprint(dashboard_blueprint, url_prefix="/dashboard")
app.register_blueprint(oauth_blueprint)  # OAuth 2.1 for MCP clients (discovery, register, authorize, token)
app.register_blueprint(signing_keys_blueprint)  # /.well-known/docpub-signing-keys.json (signed versions)

# Must stay last: answers 405 (in the contract's shape) for every method a route lacks.
routing.add_method_not_allowed(app)
