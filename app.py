"""Docpub's route table. Handlers parse, call one service function, shape the answer."""
from chalice import Chalice

from chalicelib import config, logs
from chalicelib.errors import DocpubError
from chalicelib.entrypoints.http import (
    MULTIPART_TYPE, download_response, empty_response, handles_errors, is_multipart, json_response, normalise_chalice_error,
    parse_body, parse_multipart, parse_query, refuse_without_origin_secret, validate,
)
from chalicelib.errors import ValidationFailed
from chalicelib.entrypoints import bounds, pages, routing
from chalicelib.entrypoints.share import bp as share_pages, separate_sites
from chalicelib.entrypoints.mcp import bp as mcp_blueprint
from chalicelib.entrypoints.dashboard import bp as dashboard_blueprint
from chalicelib.entrypoints.oauth import bp as oauth_blueprint
from chalicelib.models import (
    ActivityQuery, DownloadQuery, EditRequest, UploadRequest, FeedbackListQuery, GetDocumentQuery, Health,
    ListDocumentsQuery, ListVersionsQuery, PassphraseRequest, PublishRequest, ReplyRequest, ResolveFeedbackRequest,
    StatsQuery, UpdateDocumentRequest, WebhookCreateRequest,
)
from chalicelib.services import registry
from chalicelib.services.documents import document_exclusions
from chalicelib.services.auth import credentials_from_headers
from chalicelib.services.health import check_storage

config.check_startup()  # deployed without DOCPUB_SECRET_KEY: refuse to start (no public default)
app = Chalice(app_name="docpub")
# Uploads (multipart) reach the function as bytes, base64-encoded by API Gateway.
app.api.binary_types.append(MULTIPART_TYPE)
logs.configure()
api = handles_errors(app)


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
    refused = bounds.admit_event(event, app)
    if refused is not None:
        return refused
    # Chalice answers 405/415 itself, in its own shape; reshape to the contract's.
    return normalise_chalice_error(get_response(event))


def _request():
    return app.current_request


def _credentials():
    return credentials_from_headers(app.current_request.headers)


def _authorized(parse, model, write=False):
    """(credentials, parsed input), the key judged first: a missing or unknown key
    is 401 whatever the input. The key is looked up here only when the input is
    invalid; valid requests verify it inside the service call (no extra trip)."""
    credentials = _credentials()
    try:
        return credentials, parse(_request(), model)
    except DocpubError as exc:
        key_item = registry.workspaces().authenticate(credentials)
        if write:  # every publish/edit answer carries the rate-limit headers
            exc.headers.update(registry.documents().rate_limit_headers(key_item))
        raise


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


@app.route("/api/v1/health", methods=["GET"])
@api
def health():
    from chalicelib.ports import StorageFull

    try:
        check_storage()
    except StorageFull:  # readable, but the disk is full: writes answer 507
        return json_response({"status": "degraded", "reason": "disk_full",
                              "message": "The disk is full: writes are refused (507); reads and deletes work."},
                             status=503, headers={"Retry-After": "60"})
    return json_response(Health(status="ok"))


@app.route("/api/v1/openapi.json", methods=["GET"])
@api
def openapi_document():
    from chalicelib import openapi  # built on first request only

    return json_response(openapi.document(app.routes))


@app.route("/api/v1/me", methods=["GET"])
@api
def me():
    return json_response(registry.workspaces().me(_credentials()))


@app.route("/api/v1/activity", methods=["GET"])
@api
def list_activity():
    credentials, query = _authorized(parse_query, ActivityQuery)
    return json_response(registry.activity().list(credentials, query.limit, query.cursor))


def _parse_publish(request, model):
    """(PublishRequest, upload or None): JSON, or multipart/form-data with a `file`
    part (.html/.htm/.md/.markdown/.zip) and text fields named like the JSON ones."""
    if not is_multipart(request):
        return parse_body(request, model), None
    fields, upload = parse_multipart(request)
    if upload is None:
        if "upload_id" in fields:
            return validate(model, fields), None
        if "html" not in fields:
            raise ValidationFailed.field("file", "is required: send the document as a `file` part "
                                                 "(.html, .htm, .md, .markdown or .zip)")
        return validate(model, fields), None
    if "html" in fields:
        raise ValidationFailed.field("html", "give either a `file` part or an `html` field, not both")
    if "format" in fields:
        raise ValidationFailed.field("format", "comes from the file's name (.md/.markdown is Markdown)")
    return validate(model, {**fields, "html": "(file)"}), upload


@app.route("/api/v1/publish", methods=["POST"], content_types=["application/json", MULTIPART_TYPE])
@api
def publish():
    credentials, (request, upload) = _authorized(_parse_publish, PublishRequest, write=True)
    result = registry.documents().publish(credentials, request,
                                          _request().headers.get("idempotency-key"), upload=upload)
    return json_response(result.response, headers=result.headers)


@app.route("/api/v1/uploads", methods=["POST"])
@api
def create_upload():
    credentials, request = _authorized(parse_body, UploadRequest)
    return json_response(registry.uploads().create(credentials, request.filename, request.size_bytes), 201)


@app.route("/uploads/{upload_id}", methods=["PUT"], content_types=["*/*"])
@api
def receive_upload(upload_id):
    """The embedded store's upload_url: no key, the signed token in the URL is the credential
    (outside /api/v1: its size is the one declared, not the API's body cap)."""
    body = _request().raw_body or b""
    registry.uploads().receive(upload_id, (_request().query_params or {}).get("token"), body)
    return empty_response(204)


@app.route("/api/v1/documents", methods=["GET"])
@api
def list_documents():
    credentials, query = _authorized(parse_query, ListDocumentsQuery)
    return json_response(registry.documents().list(credentials, query.limit, query.cursor, query.query))


@app.route("/api/v1/documents/{document_id}", methods=["GET"])
@api
def get_document(document_id):
    credentials, query = _authorized(parse_query, GetDocumentQuery)
    document = registry.documents().get(credentials, document_id, query.include_html, query.version_id,
                                        query.include_source)
    return json_response(document, exclude=document_exclusions(query.include_html, query.include_source))


@app.route("/api/v1/documents/{document_id}", methods=["PATCH"])
@api
def update_document(document_id):
    credentials, request = _authorized(parse_body, UpdateDocumentRequest)
    return json_response(registry.documents().update(credentials, document_id, request),
                         exclude=document_exclusions(False, False))


@app.route("/api/v1/documents/{document_id}", methods=["DELETE"])
@api
def delete_document(document_id):
    registry.documents().delete(_credentials(), document_id)
    return empty_response(204)


@app.route("/api/v1/documents/{document_id}/versions", methods=["GET"])
@api
def list_versions(document_id):
    credentials, query = _authorized(parse_query, ListVersionsQuery)
    return json_response(registry.documents().list_versions(credentials, document_id, query.limit, query.cursor))


@app.route("/api/v1/documents/{document_id}/versions/{version_id}", methods=["DELETE"])
@api
def delete_version(document_id, version_id):
    registry.documents().delete_version(_credentials(), document_id, version_id)
    return empty_response(204)


@app.route("/api/v1/documents/{document_id}/edit", methods=["POST"])
@api
def edit_document(document_id):
    credentials, request = _authorized(parse_body, EditRequest, write=True)
    result = registry.documents().edit(credentials, document_id, request)
    return json_response(result.response, headers=result.headers)


@app.route("/api/v1/documents/{document_id}/download", methods=["GET"])
@api
def download_document(document_id):
    credentials, query = _authorized(parse_query, DownloadQuery)
    return download_response(registry.documents().download(credentials, document_id, query.version_id))


@app.route("/api/v1/documents/{document_id}/stats", methods=["GET"])
@api
def document_stats(document_id):
    credentials, query = _authorized(parse_query, StatsQuery)
    return json_response(registry.views().stats(credentials, document_id, query.days))


@app.route("/api/v1/documents/{document_id}/passphrase", methods=["PUT"])
@api
def set_passphrase(document_id):
    credentials, request = _authorized(parse_body, PassphraseRequest)
    registry.sharing().set_passphrase(credentials, document_id, request.passphrase)
    return empty_response(204)


@app.route("/api/v1/documents/{document_id}/passphrase", methods=["DELETE"])
@api
def clear_passphrase(document_id):
    registry.sharing().clear_passphrase(_credentials(), document_id)
    return empty_response(204)


@app.route("/api/v1/documents/{document_id}/share/rotate", methods=["POST"])
@api
def rotate_share_link(document_id):
    return json_response(registry.sharing().rotate(_credentials(), document_id))


@app.route("/api/v1/feedback", methods=["GET"])
@api
def list_feedback():
    credentials, query = _authorized(parse_query, FeedbackListQuery)
    return json_response(registry.feedback().list(credentials, query.document_id, query.status,
                                                  query.limit, query.cursor, query.since, query.wait))


@app.route("/api/v1/feedback/{feedback_id}/resolve", methods=["POST"])
@api
def resolve_feedback(feedback_id):
    # The body is optional: none means {"resolved": true}.
    parse = parse_body if _request().raw_body else (lambda _request, model: model())
    credentials, request = _authorized(parse, ResolveFeedbackRequest)
    return json_response(registry.feedback().resolve(credentials, feedback_id, request.resolved))


@app.route("/api/v1/feedback/{feedback_id}/replies", methods=["POST"])
@api
def reply_to_feedback(feedback_id):
    credentials, request = _authorized(parse_body, ReplyRequest)
    return json_response(registry.feedback().reply(credentials, feedback_id, request.message), 201)


@app.route("/api/v1/webhooks", methods=["POST"])
@api
def create_webhook():
    credentials, request = _authorized(parse_body, WebhookCreateRequest)
    return json_response(registry.webhooks().create(credentials, request), 201)


@app.route("/api/v1/webhooks", methods=["GET"])
@api
def list_webhooks():
    return json_response(registry.webhooks().list(_credentials()))


@app.route("/api/v1/webhooks/{webhook_id}", methods=["DELETE"])
@api
def delete_webhook(webhook_id):
    registry.webhooks().delete(_credentials(), webhook_id)
    return empty_response(204)


@app.route("/api/v1/webhooks/{webhook_id}/test", methods=["POST"])
@api
def test_webhook(webhook_id):
    return json_response(registry.webhooks().test(_credentials(), webhook_id), 202)


@app.route("/api/v1/webhooks/{webhook_id}/rotate-secret", methods=["POST"])
@api
def rotate_webhook_secret(webhook_id):
    return json_response(registry.webhooks().rotate_secret(_credentials(), webhook_id))


@app.route("/api/v1/webhooks/{webhook_id}/deliveries", methods=["GET"])
@api
def webhook_deliveries(webhook_id):
    return json_response(registry.webhooks().deliveries(_credentials(), webhook_id))


app.register_blueprint(share_pages)
app.register_blueprint(mcp_blueprint)  # POST /mcp (the SDK is imported only when it is hit)
app.register_blueprint(dashboard_blueprint, url_prefix="/dashboard")
app.register_blueprint(oauth_blueprint)  # OAuth 2.1 for MCP clients (discovery, register, authorize, token)

# Must stay last: answers 405 (in the contract's shape) for every method a route lacks.
routing.add_method_not_allowed(app)
