"""Docpub's Chalice app: the REST operations (generated from chalicelib/operations.py),
the pages, share links, /mcp, the dashboard and OAuth blueprints."""
from chalice import Chalice

from chalicelib import config, logs, wiring
from chalicelib.entrypoints.http import (
    MULTIPART_TYPE, body_bytes, empty_response, forget_content_type_without_body, handles_errors, normalise_chalice_error,
    refuse_without_origin_secret,
)
from chalicelib.entrypoints import admission, pages, rest, routing
from chalicelib.entrypoints.share import bp as share_pages, separate_sites
from chalicelib.entrypoints.mcp import bp as mcp_blueprint
from chalicelib.entrypoints.dashboard import bp as dashboard_blueprint
from chalicelib.entrypoints.oauth import bp as oauth_blueprint
from chalicelib.entrypoints.signing_keys import bp as signing_keys_blueprint

config.check_startup()  # deployed without DOCPUB_SECRET_KEY: refuse to start (no public default)
# configure_logs=False: Chalice would add its own plain handler to the "docpub" logger, and every
# line came out twice, plain and as JSON (issue 33); chalicelib/logs.py owns the one handler.
app = Chalice(app_name="docpub", configure_logs=False)
# Uploads (multipart) reach the function as bytes, base64-encoded by API Gateway.
app.api.binary_types.append(MULTIPART_TYPE)
logs.configure()


@app.middleware("http")
def contract_errors(event, get_response):
    # Only CloudFront may call the origin (when it has a secret): 403 otherwise.
    refused = refuse_without_origin_secret(event)
    if refused is not None:
        return refused
    # With DOCPUB_CONTENT_URL: that origin serves document content only, and only it does.
    elsewhere = separate_sites(event)
    if elsewhere is not None:
        return elsewhere
    # Undecodable headers, credentials where needed, the route's body cap: before any view reads the body.
    refused = admission.admit_event(event, app)
    if refused is not None:
        return refused
    # Chalice answers 405/415 itself, in its own shape; reshape to the contract's. A request
    # without a body is not refused for its Content-Type.
    forget_content_type_without_body(event)
    return normalise_chalice_error(get_response(event))


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
