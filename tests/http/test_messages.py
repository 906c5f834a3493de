"""Validation messages in plain words, one style on every surface (issue 17).

Every request model is fed every kind of bad input its fields can get (missing,
wrong type, too short, too long, blank, unknown field, bad nested item); each
pydantic error must come out as `<field>: <plain phrase>` without library phrasing.
"""
from __future__ import annotations

import inspect
import json
import re

import pytest
from pydantic import BaseModel, ValidationError

from chalicelib import errors, models
from tests.dashboard_client import FAST_ARGON2, DashboardClient
from tests.helpers import post_json

STYLE = re.compile(r"^[a-z_][a-z0-9_.]*: [a-z0-9]")
LIBRARY_PHRASES = ("Value error", "Input should", "should have", "should be", "after validation", "String ",
                   "List ", "Field required", "Extra inputs", "Assertion failed", "pydantic")


def request_models() -> list[type[BaseModel]]:
    found = []
    for _, obj in inspect.getmembers(models, inspect.isclass):
        if issubclass(obj, models.RequestModel) and obj not in (models.RequestModel, models.QueryModel):
            found.append(obj)
    return found


def bad_values(schema: dict) -> list:
    """Values that break a field whatever its type, plus ones that break its bounds."""
    values: list = [{"an": "object"}, ["a", "list"], 3.5, True, 7, "text", None]
    for option in schema.get("anyOf", [schema]):
        if "maxLength" in option:
            values.append("x" * (option["maxLength"] + 1))
        if "minLength" in option:
            values.append("x" * max(0, option["minLength"] - 1))
        if option.get("type") == "string":
            values += ["", "   "]
        if "maximum" in option:
            values.append(option["maximum"] + 1)
        if "minimum" in option:
            values.append(option["minimum"] - 1)
        if option.get("type") == "array":
            values += [[], [{}] * ((option.get("maxItems") or 100) + 1), [{"old_string": ""}], ["x"],
                       [{"old_string": "a", "new_string": "b", "extra": 1}]]
    return values


def valid_example(model: type[BaseModel]) -> dict:
    """A body that passes the model (so each bad field is the only problem)."""
    examples = {
        models.PublishRequest: {"title": "T", "html": "<p>x</p>"},
        models.EditRequest: {"edits": [{"old_string": "a", "new_string": "b"}]},
        models.EditOperation: {"old_string": "a", "new_string": "b"},
        models.PassphraseRequest: {"passphrase": "long enough passphrase"},
        models.FeedbackSubmission: {"message": "hello"},
    }
    if model in examples:
        return dict(examples[model])
    # a model added later: its required fields as plain text (its errors must read plainly either way)
    return {name: "a plain value 42" for name in model.model_json_schema().get("required", [])}


def all_errors():
    for model in request_models():
        schema = model.model_json_schema()
        base = valid_example(model)
        cases = [dict(base, unknown_field=1)]
        cases += [{k: v for k, v in base.items() if k != name} for name in base]  # each required one missing
        for name, field_schema in schema.get("properties", {}).items():
            cases += [dict(base, **{name: value}) for value in bad_values(field_schema)]
        for case in cases:
            try:
                model.model_validate(case)
            except ValidationError as exc:
                yield model.__name__, case, exc


def test_every_validation_error_the_models_can_raise_reads_plainly():
    seen_types = set()
    count = 0
    for model_name, case, exc in all_errors():
        problems = exc.errors(include_url=False, include_input=False)
        failed = errors.ValidationFailed.from_pydantic(problems)
        assert STYLE.match(failed.message), (model_name, case, failed.message)
        for item, problem in zip(failed.details["fields"], problems):
            seen_types.add(problem["type"])
            text = f"{item['field']}: {item['message']}"
            assert STYLE.match(text), (model_name, case, text)
            assert not any(p in text for p in LIBRARY_PHRASES), (model_name, case, text, problem["msg"])
            count += 1
    assert count > 100
    # the kinds of error the models raise today, all worded by plain_message
    assert {"missing", "extra_forbidden", "string_too_short", "string_too_long", "string_type", "bool_type",
            "int_type", "too_short", "too_long", "value_error", "literal_error",
            "string_pattern_mismatch"} <= seen_types


@pytest.mark.parametrize("model, body, expected", [
    (models.PublishRequest, {"title": "   ", "html": "<p>x</p>"}, "title: must not be blank"),
    (models.PublishRequest, {"title": "", "html": "<p>x</p>"}, "title: must not be empty"),
    (models.PublishRequest, {"title": "x" * 501, "html": "<p>x</p>"}, "title: must be at most 500 characters"),
    (models.EditRequest, {}, "edits: is required"),
    (models.PublishRequest, {"title": "T", "html": "<p>x</p>", "titel": "T"}, "titel: is not a field of this request"),
    (models.PublishRequest, {"title": "T", "html": "<p>x</p>", "document_id": "nope"},
     "document_id: must be a document id (a UUID such as 3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60)"),
    (models.EditRequest, {"edits": []}, "edits: give 1 to 100 edits"),
    (models.EditRequest, {"edits": [{"old_string": "a", "new_string": "b"}] * 101}, "edits: give 1 to 100 edits"),
    (models.EditRequest, {"edits": [{"old_string": "", "new_string": "b"}]}, "edits.0.old_string: must not be empty"),
    (models.EditRequest, {"edits": [{"old_string": "a", "new_string": "b", "replace_all": "yes"}]},
     "edits.0.replace_all: must be true or false"),
    (models.ListDocumentsQuery, {"limit": "0"}, "limit: must be at least 1"),
    (models.FeedbackListQuery, {"status": "closed"}, "status: must be one of 'open', 'resolved' or 'all'"),
])
def test_examples_of_the_message_style(model, body, expected):
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    assert errors.ValidationFailed.from_pydantic(caught.value.errors()).message == expected


def test_rest_says_it_plainly(client, workspace):
    _, key = workspace
    r = post_json(client, "/api/v1/publish", {"title": " ", "html": "<p>x</p>"}, key)
    assert r.status_code == 422
    error = json.loads(r.body)["error"]
    assert error["message"] == "title: must not be blank"
    assert error["details"]["fields"] == [{"field": "title", "message": "must not be blank"}]
    doc = json.loads(post_json(client, "/api/v1/publish", {"title": "T", "html": "<p>x</p>"}, key).body)
    r = post_json(client, f"/api/v1/documents/{doc['document_id']}/edit", {"edits": []}, key)
    assert json.loads(r.body)["error"]["message"] == "edits: give 1 to 100 edits"


def test_mcp_says_it_plainly_and_an_unknown_tool_lists_the_tools_without_the_id_hint(client, workspace):
    from tests.http.test_mcp import call

    _, key = workspace
    blank = call(client, key, "publish_document", {"title": " ", "html": "<p>x</p>"})
    assert blank["isError"] is True
    assert blank["content"][0]["text"].startswith("validation_error: title: must not be blank")
    empty = call(client, key, "edit_document", {"document_id": "3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60",
                                                "edits": []})
    assert empty["content"][0]["text"].startswith("validation_error: edits: give 1 to 100 edits")
    unknown = call(client, key, "publish_doc", {})
    text = unknown["content"][0]["text"]
    assert text.startswith("not_found: There is no tool named 'publish_doc'; the tools are publish_document, ")
    assert "check the id" not in text and "list_documents" in text


def test_dashboard_says_it_plainly(client, aws, monkeypatch):
    for name, value in FAST_ARGON2.items():
        monkeypatch.setenv(name, value)
    dash = DashboardClient(client)
    dash.sign_up()
    page = dash.post_multipart("/dashboard/upload", {"title": "Report", "note": ""},
                               {"file": ("doc.html", b"<p>x</p>")}, csrf=dash.token())
    document_id = re.search(r"/dashboard/documents/([0-9a-f-]{36})", page.location).group(1)
    page = dash.post(f"/dashboard/documents/{document_id}", {"title": " ", "description": ""}, csrf=dash.token())
    assert page.status == 422
    assert "title: must not be blank" in page.text and "Value error" not in page.text
    page = dash.post(f"/dashboard/documents/{document_id}", {"title": "x" * 501, "description": ""},
                     csrf=dash.token())
    assert "title: must be at most 500 characters" in page.text and "should" not in page.text
