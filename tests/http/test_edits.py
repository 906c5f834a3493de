"""The literal edit engine (property-based) and the edit endpoint."""
import json
from types import SimpleNamespace

import pytest

from tests import helpers
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.domain.edits import apply_edits
from chalicelib.errors import EditAmbiguous, EditNotFound, NoChange
from tests.helpers import post_json, run_together


def E(old, new, replace_all=False):
    return SimpleNamespace(old_string=old, new_string=new, replace_all=replace_all)


# ------------------------------------------------------------------ engine

def test_edits_apply_in_order_and_see_earlier_results():
    out = apply_edits("<p>Hello world</p>", [E("Hello", "Goodbye"), E("Goodbye world", "Goodbye moon")])
    assert out.html == "<p>Goodbye moon</p>"
    assert (out.edits_applied, out.replacements) == (2, 2)


def test_matching_is_literal_and_case_sensitive():
    html = "price: $1 (a+b)* [x] \\d Hello"
    out = apply_edits(html, [E("$1", "$2"), E("(a+b)*", "c"), E("\\d", "digit")])
    assert out.html == "price: $2 c [x] digit Hello"
    with pytest.raises(EditNotFound):
        apply_edits(html, [E("hello", "hi")])


def test_not_found_reports_index_and_closest_match():
    with pytest.raises(EditNotFound) as info:
        apply_edits("<h1>Quarterly Report</h1>", [E("Quarterly", "Q"), E("quarterly report", "x")])
    assert info.value.details["edit_index"] == 1
    with pytest.raises(EditNotFound) as info:
        apply_edits("<h1>Quarterly Report</h1>", [E("quarterly report", "x")])
    assert info.value.details["closest_match"] == "Quarterly Report"
    with pytest.raises(EditNotFound) as info:
        apply_edits("<p>The colour is red</p>", [E("The color is red", "x")])
    assert "colour is red" in info.value.details["closest_match"]


def test_ambiguous_unless_replace_all():
    with pytest.raises(EditAmbiguous) as info:
        apply_edits("a-a-a", [E("a", "b")])
    assert info.value.details == {"edit_index": 0, "match_count": 3}
    out = apply_edits("a-a-a", [E("a", "b", True)])
    assert out.html == "b-b-b" and out.replacements == 3


def test_no_change_is_refused():
    with pytest.raises(NoChange):
        apply_edits("<p>x</p>", [E("x", "x")])
    with pytest.raises(NoChange):
        apply_edits("<p>x</p>", [E("x", "y"), E("y", "x")])


text = st.text(alphabet=st.sampled_from("ab<>/p é日"), max_size=60)


@settings(max_examples=200, deadline=None)
@given(html=text, old=st.text(alphabet=st.sampled_from("ab<>é"), min_size=1, max_size=4), new=text)
def test_replace_all_counts_non_overlapping_occurrences(html, old, new):
    count = html.count(old)
    try:
        out = apply_edits(html, [E(old, new, True)])
    except EditNotFound:
        assert count == 0
        return
    except NoChange:
        assert html.replace(old, new) == html
        return
    assert out.replacements == count
    assert out.html == html.replace(old, new)


@settings(max_examples=200, deadline=None)
@given(prefix=text, suffix=text, new=text)
def test_text_outside_the_match_is_kept(prefix, suffix, new):
    marker = "\x00MARK\x00"
    html = prefix + marker + suffix
    try:
        out = apply_edits(html, [E(marker, new)])
    except NoChange:
        assert new == marker
        return
    assert out.html == prefix + new + suffix


@settings(max_examples=200, deadline=None)
@given(html=text, edits=st.lists(st.tuples(st.text(alphabet="ab<", min_size=1, max_size=3), text, st.booleans()),
                                 min_size=1, max_size=5))
def test_failure_leaves_input_untouched(html, edits):
    original = str(html)
    try:
        apply_edits(html, [E(o, n, r) for o, n, r in edits])
    except (EditNotFound, EditAmbiguous, NoChange):
        pass
    assert html == original


# ------------------------------------------------------------------ endpoint

def publish(client, key, **body):
    return helpers.publish(client, key, **{"html": "<h1>Hello</h1><p>a a</p>", **body})


def edit(client, key, doc_id, edits, **extra):
    return post_json(client, f"/api/v1/documents/{doc_id}/edit", {"edits": edits, **extra}, key)


def test_edit_creates_one_version_with_summary(api, workspace):
    _, key = workspace
    doc = publish(api, key)
    r = edit(api, key, doc["document_id"], [{"old_string": "Hello", "new_string": "Hi"},
                                            {"old_string": "a", "new_string": "bb", "replace_all": True}],
             note="tidy")
    assert r.status_code == 200, r.body
    body = json.loads(r.body)
    assert body["version_number"] == 2 and body["share_url"] == doc["share_url"]
    assert body["summary"] == {"edits_applied": 2, "replacements": 3,
                               "size_bytes_before": len("<h1>Hello</h1><p>a a</p>"),
                               "size_bytes_after": len("<h1>Hi</h1><p>bb bb</p>")}
    got = json.loads(api.http.get(f"/api/v1/documents/{doc['document_id']}?include_html=true",
                                  headers={"X-Api-Key": key}).body)
    assert got["html"] == "<h1>Hi</h1><p>bb bb</p>"
    assert got["versions"][-1]["note"] == "tidy"


@pytest.mark.parametrize("edits,code,details", [
    ([{"old_string": "Nope", "new_string": "x"}], "edit_not_found", {"edit_index": 0}),
    ([{"old_string": "Hello", "new_string": "x"}, {"old_string": "a", "new_string": "x"}], "edit_ambiguous",
     {"edit_index": 1, "match_count": 2}),
    ([{"old_string": "Hello", "new_string": "Hello"}], "no_change", None),
])
def test_edit_failures_store_nothing(api, workspace, ctx, edits, code, details):
    _, key = workspace
    doc = publish(api, key)
    r = edit(api, key, doc["document_id"], edits)
    assert r.status_code == 422
    error = json.loads(r.body)["error"]
    assert error["code"] == code
    if details:
        assert {k: error["details"][k] for k in details} == details
    got = json.loads(api.http.get(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).body)
    assert got["version_count"] == 1
    assert len(ctx.blobs.list_keys("documents/")) == 1


@pytest.mark.parametrize("body", [{"edits": []}, {"edits": [{"old_string": "", "new_string": "x"}]},
                                  {"edits": [{"old_string": "a"}]},
                                  {"edits": [{"old_string": "a", "new_string": "b", "regex": True}]},
                                  {"edits": [{"old_string": "a", "new_string": "b"}] * 101}])
def test_edit_validation(api, workspace, body):
    _, key = workspace
    doc = publish(api, key)
    r = post_json(api, f"/api/v1/documents/{doc['document_id']}/edit", body, key)
    assert r.status_code == 422
    assert json.loads(r.body)["error"]["code"] == "validation_error"


def test_edit_over_size_limit_is_413(api, services):
    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    big = "x" * (4 * 1024 * 1024 - 10) + "<p>SLOT</p>"
    big = big[: 4 * 1024 * 1024]
    doc = publish(api, key, html=big[:-11] + "<p>SLOT</p>")
    r = edit(api, key, doc["document_id"], [{"old_string": "SLOT", "new_string": "S" * 100}])
    assert r.status_code == 413
    assert json.loads(r.body)["error"]["code"] == "document_too_large"


def test_base_version_id_guards_against_stale_writes(api, workspace):
    _, key = workspace
    doc = publish(api, key)
    second = publish(api, key, document_id=doc["document_id"], html="<h1>Hello</h1><p>b</p>")
    for r in (edit(api, key, doc["document_id"], [{"old_string": "Hello", "new_string": "Hi"}],
                   base_version_id=doc["version_id"]),
              post_json(api, "/api/v1/publish", {"title": "t", "html": "<p/>", "document_id": doc["document_id"],
                                                 "base_version_id": doc["version_id"]}, key)):
        assert r.status_code == 409
        error = json.loads(r.body)["error"]
        assert error["code"] == "version_conflict"
        assert error["details"]["latest_version_id"] == second["version_id"]
    ok = edit(api, key, doc["document_id"], [{"old_string": "Hello", "new_string": "Hi"}],
              base_version_id=second["version_id"])
    assert ok.status_code == 200


def test_twenty_concurrent_edits_lose_nothing(services):
    """20 writers editing one document at once: gapless numbers, every edit kept."""
    from chalicelib.models import EditOperation, EditRequest, PublishRequest
    from chalicelib.services.auth import credentials_from_key

    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    credentials = credentials_from_key(key)
    doc = services.documents.publish(credentials, PublishRequest(
        title="t", html="".join(f"[s{i}]" for i in range(20)))).response

    def editor(i):
        def run():
            response = services.documents.edit(credentials, doc.document_id, EditRequest(
                edits=[EditOperation(old_string=f"[s{i}]", new_string=f"[done{i}]")])).response
            return i, response.version_number
        return run

    done, failures = run_together([editor(i) for i in range(20)])
    # The contract allows a 409 after bounded retries; nothing else may fail,
    # and what was acknowledged must all be there, numbered without gaps.
    assert set(failures) <= {"VersionConflict"}, failures
    assert len(done) >= 15
    assert sorted(n for _, n in done) == list(range(2, 2 + len(done)))
    final = services.documents.get(credentials, doc.document_id, include_html=True)
    applied = {i for i, _ in done}
    assert final.html == "".join(f"[done{i}]" if i in applied else f"[s{i}]" for i in range(20))
    assert [v.number for v in final.versions] == list(range(1, 2 + len(done)))


def test_twenty_concurrent_publishes_get_unique_gapless_numbers(services):
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    credentials = credentials_from_key(key)
    doc = services.documents.publish(credentials, PublishRequest(title="t", html="<p>0</p>")).response

    def publisher(i):
        return lambda: (i, services.documents.publish(credentials, PublishRequest(
            title="t", html=f"<p>{i}</p>", document_id=doc.document_id)).response)

    responses, failures = run_together([publisher(i) for i in range(1, 21)])
    assert set(failures) <= {"VersionConflict"}, failures
    assert len(responses) >= 15
    assert sorted(r.version_number for _, r in responses) == list(range(2, 2 + len(responses)))
    for i, r in responses:  # each acknowledged version holds what its writer sent
        html = services.documents.get(credentials, doc.document_id, include_html=True, version_id=r.version_id).html
        assert html == f"<p>{i}</p>"


def test_edit_that_empties_the_document_is_422(api, workspace):
    _, key = workspace
    doc = publish(api, key, html="<p>x</p>")
    r = edit(api, key, doc["document_id"], [{"old_string": "<p>x</p>", "new_string": ""}])
    assert r.status_code == 422
    assert json.loads(r.body)["error"]["details"]["fields"][0]["field"] == "edits"


def test_wrong_json_types_are_refused_not_coerced(api, workspace):
    _, key = workspace
    doc = publish(api, key)
    r = edit(api, key, doc["document_id"], [{"old_string": "Hello", "new_string": "x", "replace_all": "yes"}])
    assert r.status_code == 422
    r = post_json(api, "/api/v1/publish", {"title": 5, "html": "<p/>"}, key)
    assert r.status_code == 422
