"""Re-anchoring (contract 7e, domain/anchoring.py): exact, moved, fuzzy, orphaned; never
a different passage."""
from __future__ import annotations

import pytest

from chalicelib.domain.anchoring import Found, Text, locate, page_text

PARAS = ["Intro text here.", "The database failover takes two minutes.", "Restart the worker after it.",
         "Check the dashboards for errors.", "Then tell the on-call channel."]
FAILOVER = {"quote": "The database failover takes two minutes.", "prefix": "Intro text here.",
            "suffix": "Restart the worker after it."}


def page(paragraphs):
    return Text.of_html("".join(f"<p>{p}</p>" for p in paragraphs))


def test_page_text_is_what_a_viewer_selects():
    html = ("<html><head><title>T</title><style>p{}</style></head><body><script>var a = '<p>x</p>';</script>"
            "<p>Fish &amp; chips</p><!-- hidden --><template>t</template><p>caf&eacute;</p></body></html>")
    assert page_text(html) == "Fish & chipscafé"


def test_exact_and_moved():
    assert locate(page(PARAS), FAILOVER).status == "exact"
    moved = PARAS[2:] + PARAS[:2]  # the paragraph elsewhere: other surroundings
    assert locate(page(moved), FAILOVER).status == "moved"
    assert locate(page(PARAS), {"quote": "two minutes"}).status == "exact"  # no context sent: found is exact


def test_the_quoted_finding_an_edit_near_the_comment_keeps_it():
    """Issue 34: a comment on "The database failover…" became "on an earlier version"
    after an edit to "Note: the database failover…"."""
    edited = [PARAS[0], "Note: the database failover takes two minutes."] + PARAS[2:]
    found = locate(page(edited), FAILOVER)
    assert found.status == "fuzzy" and found.quote_now == "the database failover takes two minutes."
    short = {"quote": "The database failover", "prefix": "Intro text here.", "suffix": " takes two minutes."}
    assert locate(page(edited), short) == locate(page(edited), short)
    assert locate(page(edited), short).status == "fuzzy"


@pytest.mark.parametrize("changed, quote_now", [
    ("The database failovr takes two minutes.", "The database failovr takes two minutes."),  # a typo
    ("The database failover takes three minutes.", "The database failover takes three minutes."),  # a word
    ("THE DATABASE FAILOVER TAKES TWO MINUTES.", "THE DATABASE FAILOVER TAKES TWO MINUTES."),  # case
])
def test_small_edits_are_fuzzy_with_the_text_found(changed, quote_now):
    found = locate(page([PARAS[0], changed] + PARAS[2:]), FAILOVER)
    assert (found.status, found.quote_now) == ("fuzzy", quote_now)


def test_deleted_and_rewritten_passages_are_orphaned():
    assert locate(page([PARAS[0]] + PARAS[2:]), FAILOVER).status == "orphaned"
    rewritten = [PARAS[0], "Failing over takes a while; plan for it."] + PARAS[2:]
    assert locate(page(rewritten), FAILOVER).status == "orphaned"


def test_never_a_different_passage():
    # a short quote whose paragraph went, while the same words stay elsewhere in other surroundings
    text = ["Alpha section.", "Restart the worker now.", "Beta section.", "Zeta: restart the worker later."]
    anchor = {"quote": "restart the worker", "prefix": "Zeta: ", "suffix": " later."}
    assert locate(page(text), anchor).status == "exact"
    assert locate(page(text[:3]), anchor).status == "orphaned"  # "Restart the worker" is another passage
    # two equally good fuzzy candidates, neither beside the anchor's context: none is taken
    twins = ["Other intro.", "The database failover takes 2 minutes.", "x", "The database failover takes 9 minutes."]
    assert locate(page(twins), FAILOVER).status == "orphaned"
    # ... but the one that follows the anchor's prefix is the passage, edited
    twins[0] = "Intro text here."
    assert locate(page(twins), FAILOVER) == Found("fuzzy", "The database failover takes 2 minutes.")
    # repeats of an exact quote that nothing tells apart
    anchor = {"quote": "ok", "prefix": "first ", "suffix": " one"}
    assert locate(Text("second ok two, third ok three"), anchor).status == "orphaned"


def test_repeats_are_told_apart_by_their_context():
    text = Text("Say hello to Ana. Then say hello to Bo. Say hello to Cy.")
    anchor = {"quote": "say hello", "prefix": "Then ", "suffix": " to Bo."}
    assert locate(text, anchor).status == "exact"
    edited = Text("Say hello to Ana. And then say hello to Bo! Say hello to Cy.")
    assert locate(edited, anchor).status == "moved"


def test_a_fuzzy_passage_ends_on_whole_words():
    """Normalised edit distance favours shorter passages: "...in Februar" scored above
    "...in February." (seen in the browser test)."""
    text = Text("Short intro.We will ship the new pricing page in February. Then we rest.")
    anchor = {"quote": "We will ship the new pricing page in March.", "prefix": "Short intro.", "suffix": " Then we rest."}
    assert locate(text, anchor) == Found("fuzzy", "We will ship the new pricing page in February.")


def test_page_text_is_linear_on_unclosed_elements():
    # A script that never ends takes the rest of the page (as a browser's parser does);
    # thousands of them cost one scan each, not one scan of the rest of the page each.
    assert page_text("<p>kept</p><script>var x = '</p>'; <p>gone</p>") == "kept"
    many = "<p>text</p>" + "<style>x</style>" * 20000 + "<!-- open"
    assert page_text(many) == "text"


def test_the_benchmark_corpus_finds_no_wrong_place():
    """bench/reanchor.py's corpus, small: every kind of edit, no wrong anchor, 90 % re-anchored.
    Made from a frozen copy of the docs' prose (tests/data/reanchor_prose.json), so that
    rewording a doc cannot turn this test red or green; the bench reads the docs as they are."""
    import json
    from pathlib import Path

    from bench.reanchor import corpus, judge

    prose = json.loads((Path(__file__).parent.parent / "data" / "reanchor_prose.json").read_text(encoding="utf-8"))
    _rows, totals = judge(corpus(15, seed=7, paragraphs=prose))
    assert totals["wrong"] == 0, totals["examples"]
    assert totals["anchored"] >= 0.9 * totals["surviving"]


def test_a_short_context_found_whole_a_few_characters_off_supports_the_match():
    text = Text("Intro.Note: the database failover takes two minutes.")
    assert locate(text, {"quote": "The database failover", "prefix": "Intro."}) == Found("fuzzy", "the database failover")
