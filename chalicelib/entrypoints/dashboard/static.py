"""Static files of the dashboard: its stylesheet, script and icon."""
from __future__ import annotations

from chalice import Response

from chalicelib.entrypoints.dashboard.web import SECURITY_HEADERS, STATIC, STATIC_TYPES, bp
from chalicelib.entrypoints.http import compress


@bp.route("/static/{name}", methods=["GET"])
def static_file(name):
    content_type = STATIC_TYPES.get(name)
    if content_type is None:
        return Response("Not found", status_code=404,
                        headers={"Content-Type": "text/plain; charset=utf-8", **SECURITY_HEADERS})
    body = (STATIC / name).read_text(encoding="utf-8")
    return compress(bp.current_request, Response(body, status_code=200, headers={
        "Content-Type": content_type, "Cache-Control": "public, max-age=300", **SECURITY_HEADERS}))
