"""The edit engine's single-pass replace (issue 10) behaves exactly like the
straightforward count-then-replace engine it replaced: same result, same counts,
same errors with the same details."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.domain.edits import _replace, apply_edits
from chalicelib.errors import EditAmbiguous, EditNotFound, NoChange


@dataclass(frozen=True)
class E:
    old_string: str
    new_string: str
    replace_all: bool = False


def reference(html: str, edits) -> tuple[str, int, int]:
    """The engine as first written: count() then replace() for every edit."""
    current, replacements = html, 0
    for index, edit in enumerate(edits):
        count = current.count(edit.old_string)
        if count == 0:
            raise EditNotFound("", {"edit_index": index})
        if count > 1 and not edit.replace_all:
            raise EditAmbiguous("", {"edit_index": index, "match_count": count})
        current = current.replace(edit.old_string, edit.new_string)
        replacements += count
    if current == html:
        raise NoChange("")
    return current, len(edits), replacements


def outcome(fn):
    try:
        return ("ok", fn())
    except (EditNotFound, EditAmbiguous, NoChange) as exc:
        details = dict(exc.details or {})
        details.pop("closest_match", None)  # the reference does not compute hints
        return (type(exc).__name__, details)


# A tiny alphabet makes matches, repeats and overlaps ("aaa" in "aaaa") common.
text = st.text(alphabet="ab\u00e9\u732b", max_size=40)
needle = st.text(alphabet="ab\u00e9\u732b", min_size=1, max_size=4)
edits = st.lists(st.builds(E, needle, st.text(alphabet="ab\u00e9\u732bx", max_size=5), st.booleans()),
                 min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(text, edits)
def test_same_outcome_as_count_then_replace(html, batch):
    fast = outcome(lambda: (lambda o: (o.html, o.edits_applied, o.replacements))(apply_edits(html, batch)))
    assert fast == outcome(lambda: reference(html, batch))


@settings(max_examples=300, deadline=None)
@given(text, st.text(alphabet="ab\u00e9\u732b", max_size=4), st.text(alphabet="abx", max_size=4), st.booleans())
def test_replace_counts_non_overlapping_matches(html, old, new, replace_all):
    result, count = _replace(html, old, new, replace_all)
    assert count == html.count(old)
    if count == 1 or (count and replace_all):
        assert result == html.replace(old, new)
    else:
        assert result is None or count == 0


def test_overlapping_occurrences_are_not_ambiguous_when_they_overlap():
    # "aa" occurs at 0 and 1 in "aaa" but only once without overlap: unique.
    assert apply_edits("aaa", [E("aa", "b")]).html == "ba"
    with pytest.raises(EditAmbiguous) as info:
        apply_edits("aaaa", [E("aa", "b")])
    assert info.value.details["match_count"] == 2


utf8_text = st.text(alphabet="a\u00e9\u732b\U0001f600<>", max_size=40)
utf8_needle = st.text(alphabet="a\u00e9\u732b\U0001f600<>", min_size=1, max_size=4)
utf8_edits = st.lists(st.builds(E, utf8_needle, st.text(alphabet="a\u00e9\u732b\U0001f600x", max_size=5),
                                st.booleans()), min_size=1, max_size=6)


def _as_bytes_outcome(result):
    if result[0] == "ok":
        html, applied, replacements = result[1]
        return "ok", (html.encode("utf-8") if isinstance(html, str) else html, applied, replacements)
    return result


@settings(max_examples=300, deadline=None)
@given(utf8_text, utf8_edits, st.sampled_from([0, 100]))
def test_utf8_engine_matches_the_str_engine(html, batch, max_edits_on_bytes):
    """Editing the stored bytes gives the encoded result of editing the text,
    with the same counts, errors and closest_match hints."""
    from chalicelib.domain.edits import apply_edits_utf8

    def run(fn, data):
        try:
            o = fn(data, batch)
            return ("ok", (o.html, o.edits_applied, o.replacements))
        except (EditNotFound, EditAmbiguous, NoChange) as exc:
            return (type(exc).__name__, exc.details, str(exc))

    def utf8_engine(data, edits):
        return apply_edits_utf8(data, edits, max_edits_on_bytes)

    assert _as_bytes_outcome(run(utf8_engine, html.encode("utf-8"))) == \
        _as_bytes_outcome(run(apply_edits, html))


def test_edit_summary_sizes_are_utf8_bytes(client, workspace):
    import json

    from tests.helpers import post_json

    _, key = workspace
    html = "<p>吾輩は猫である</p>"
    doc = json.loads(post_json(client, "/api/v1/publish", {"title": "T", "html": html}, key).body)
    r = post_json(client, f"/api/v1/documents/{doc['document_id']}/edit",
                  {"edits": [{"old_string": "猫", "new_string": "犬です"}]}, key)
    assert r.status_code == 200, r.body
    summary = json.loads(r.body)["summary"]
    assert summary["size_bytes_before"] == len(html.encode("utf-8"))
    assert summary["size_bytes_after"] == len(html.replace("猫", "犬です").encode("utf-8"))
    got = client.http.get(f"/api/v1/documents/{doc['document_id']}?include_html=true", headers={"X-Api-Key": key})
    assert json.loads(got.body)["html"] == html.replace("猫", "犬です")


@pytest.mark.parametrize("path,body", [
    ("/api/v1/publish", '{"title": "T", "html": "<p>\\ud800</p>"}'),
    ("/api/v1/publish", '{"title": "T\\udc00", "html": "<p>x</p>"}'),
    ("/api/v1/publish", '{"title": "T", "html": "<p>x</p>", "\\ud800": 1}'),
    ("/api/v1/publish", '{"title": "T", "html": "\\u732b\\ud800"}'),
])
def test_lone_surrogates_are_400_invalid_json(client, workspace, path, body):
    import json

    _, key = workspace
    r = client.http.post(path, headers={"X-Api-Key": key, "Content-Type": "application/json"}, body=body)
    assert r.status_code == 400, r.body
    assert json.loads(r.body)["error"]["code"] == "invalid_json"


def test_lone_surrogate_in_an_edit_is_400_and_a_pair_is_fine(client, workspace):
    import json

    from tests.helpers import post_json

    _, key = workspace
    doc = json.loads(post_json(client, "/api/v1/publish", {"title": "T", "html": "<p>a</p>"}, key).body)
    path = f"/api/v1/documents/{doc['document_id']}/edit"
    headers = {"X-Api-Key": key, "Content-Type": "application/json"}
    r = client.http.post(path, headers=headers,
                         body='{"edits": [{"old_string": "a", "new_string": "\\udc00"}]}')
    assert r.status_code == 400 and json.loads(r.body)["error"]["code"] == "invalid_json"
    r = client.http.post(path, headers=headers,
                         body='{"edits": [{"old_string": "a", "new_string": "\\ud83d\\ude00"}]}')
    assert r.status_code == 200, r.body
    got = client.http.get(f"/api/v1/documents/{doc['document_id']}?include_html=true", headers={"X-Api-Key": key})
    assert json.loads(got.body)["html"] == "<p>\U0001f600</p>"
