"""The served OpenAPI document and the code cannot drift apart."""
from __future__ import annotations

import json

import pytest

from chalicelib import openapi
from chalicelib.openapi import REF_TEMPLATE


@pytest.fixture
def served(client):
    r = client.http.get("/api/v1/openapi.json")
    assert r.status_code == 200, r.body
    assert r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


def _app():
    from app import app

    return app


def _documented(doc: dict) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in doc["paths"].items() for method in item
            if path.startswith(openapi.API_PREFIX)}


def test_served_without_a_key_and_valid_openapi_31(served):
    from openapi_spec_validator import validate

    assert served["openapi"] == "3.1.0"
    validate(served)


def test_every_rest_route_is_documented_and_vice_versa(served):
    routes = set(openapi.rest_routes(_app().routes))
    assert routes, "the route table has REST routes"
    assert _documented(served) == routes


def test_method_not_allowed_fillers_are_not_operations(served):
    # routing.add_method_not_allowed adds e.g. PUT /api/v1/publish; it answers 405 and is no operation.
    assert "put" not in served["paths"]["/api/v1/publish"]
    assert ("PUT", "/api/v1/publish") not in set(openapi.rest_routes(_app().routes))


def test_an_undeclared_route_fails_the_build():
    from chalice import Chalice

    app = Chalice("probe")

    @app.route("/api/v1/brand-new", methods=["GET"])
    def brand_new():
        return {}

    with pytest.raises(openapi.UndocumentedRoute, match="GET /api/v1/brand-new"):
        openapi.build(app.routes)


def test_operations_declared_ahead_of_their_routes_are_left_out():
    from chalice import Chalice

    app = Chalice("probe")

    @app.route("/api/v1/health", methods=["GET"])
    def health():
        return {}

    doc = openapi.build(app.routes)
    assert list(doc["paths"]) == ["/api/v1/health"]


def test_schemas_are_the_models_schemas(served):
    components = served["components"]["schemas"]
    checked = 0
    for method, path in openapi.rest_routes(_app().routes):
        op = openapi.operation_for(method, path)
        item = served["paths"][path][method.lower()]
        pairs = [(op.request, "validation"), (op.response, "serialization")]
        for model, mode in pairs:
            if model is None:
                continue
            schema = model.model_json_schema(ref_template=REF_TEMPLATE, mode=mode)
            for name, definition in schema.pop("$defs", {}).items():
                assert components[name] == definition, name
            assert components[model.__name__] == schema, model.__name__
            checked += 1
        if op.request is not None:
            ref = item["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            assert ref == REF_TEMPLATE.format(model=op.request.__name__)
        if op.response is not None:
            ref = item["responses"][str(op.status)]["content"]["application/json"]["schema"]["$ref"]
            assert ref == REF_TEMPLATE.format(model=op.response.__name__)
        if op.query is not None:
            names = {p["name"] for p in item["parameters"] if p["in"] == "query"}
            assert names == set(op.query.model_fields)
    assert checked >= 8


def test_every_error_status_has_the_error_body(served):
    error_ref = {"$ref": REF_TEMPLATE.format(model="ErrorBody")}
    from chalicelib.models import ErrorBody

    assert served["components"]["schemas"]["ErrorBody"] == {
        k: v for k, v in ErrorBody.model_json_schema(ref_template=REF_TEMPLATE, mode="serialization").items()
        if k != "$defs"}
    for path, item in served["paths"].items():
        for method, op in item.items():
            if op["tags"] == ["oauth"]:
                continue  # RFC 6749 error bodies: test_oauth_endpoints_are_documented
            statuses = {int(s) for s in op["responses"]}
            errors = {s for s in statuses if s >= 400}
            assert {500, 503} <= errors, (method, path)
            if op["security"]:
                assert 401 in errors
                assert op["responses"]["401"]["headers"]["WWW-Authenticate"]["required"] is True
            if "requestBody" in op:
                assert {400, 413, 415, 422} <= errors, (method, path)
            for status in errors:
                assert op["responses"][str(status)]["content"]["application/json"]["schema"] == error_ref
            assert op["responses"]["503"]["headers"]["Retry-After"]["required"] is True


def test_security_schemes_are_the_contracts(served):
    schemes = served["components"]["securitySchemes"]
    assert schemes["ApiKeyHeader"] == {**schemes["ApiKeyHeader"], "type": "apiKey", "in": "header",
                                       "name": "X-Api-Key"}
    assert schemes["BearerAuth"]["scheme"] == "bearer"
    assert served["paths"]["/api/v1/health"]["get"]["security"] == []
    assert served["paths"]["/api/v1/publish"]["post"]["security"] == openapi.KEY_SECURITY


def test_publish_links_lead_to_get_edit_update_delete(served):
    links = served["paths"]["/api/v1/publish"]["post"]["responses"]["200"]["links"]
    ids = {link["operationId"] for link in links.values()}
    assert ids == {"getDocument", "editDocument", "updateDocument", "deleteDocument"}
    for link in links.values():
        assert link["parameters"] == {"document_id": "$response.body#/document_id"}


def test_examples_are_valid_requests():
    for op in openapi.OPERATIONS:
        if op.request is not None:
            assert op.example is not None, op.operation_id
            op.request.model_validate(op.example)


def test_committed_copy_is_up_to_date(served):
    from scripts.export_openapi import PATH, render

    assert PATH.read_text(encoding="utf-8") == render(), "docs/openapi.json is stale: run `make openapi`"
    assert json.loads(PATH.read_text(encoding="utf-8")) == served


def test_oauth_endpoints_are_documented(served):
    oauth_routes = {(m, p) for p, methods in _app().routes.items() if p in openapi.OAUTH_PATHS
                    for m, entry in methods.items() if entry.view_name != openapi.FILLER_VIEW and m != "HEAD"}
    documented = {(m.upper(), p) for p, item in served["paths"].items() for m in item
                  if not p.startswith(openapi.API_PREFIX)}
    assert documented == oauth_routes and len(documented) == 7
    error_ref = {"$ref": REF_TEMPLATE.format(model="OAuthErrorBody")}
    token = served["paths"]["/oauth/token"]["post"]
    assert token["responses"]["400"]["content"]["application/json"]["schema"] == error_ref
    assert "application/x-www-form-urlencoded" in token["requestBody"]["content"]
    assert served["paths"]["/oauth/register"]["post"]["responses"]["201"]
