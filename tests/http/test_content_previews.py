"""Link previews (contract 7b): Open Graph/Twitter tags and a 1200x630 PNG card;
nothing of a protected, disabled or expired document. Both stores."""
from __future__ import annotations

import io
import json
import re

import pytest

from tests.helpers import post_json

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


def meta(page: str) -> dict:
    return {m[1]: m[2] for m in re.findall(r'<meta (property|name)="([^"]+)" content="([^"]*)">', page)
            if m[1].startswith(("og:", "twitter:"))}


def published(client, key, **body) -> tuple[dict, str]:
    r = post_json(client, "/api/v1/publish", {"title": "Q3 <Report>", "html": "<p>x</p>", **body}, key)
    assert r.status_code == 200, r.body
    result = json.loads(r.body)
    return result, result["share_url"].rsplit("/d/", 1)[1]


@BOTH
def test_a_public_link_unfurls_with_title_description_and_a_png_card(client, workspace):
    from PIL import Image

    _, key = workspace
    result, share = published(client, key, description="Numbers & notes")
    tags = meta(client.http.get(f"/d/{share}").body.decode())
    assert tags["og:title"] == "Q3 &lt;Report&gt;" and tags["og:description"] == "Numbers &amp; notes"
    assert tags["og:url"] == result["share_url"]
    assert tags["twitter:card"] == "summary_large_image"
    image = tags["og:image"].replace("&amp;", "&")
    assert image.startswith(result["share_url"] + "/card.png?k=")
    card = client.http.get(image.split("127.0.0.1:8000", 1)[1], headers={"Accept": "*/*"})
    assert card.status_code == 200 and card.headers["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(card.body)).size == (1200, 630)
    again = client.http.get(f"/d/{share}/card.png", headers={"If-None-Match": card.headers["ETag"], "Accept": "*/*"})
    assert again.status_code == 304  # cached by ETag (and drawn once: stored beside the document)
    # A new title is a new card address (chat apps cache images by URL).
    post_json(client, "/api/v1/publish", {"title": "Q4", "html": "<p>y</p>", "document_id": result["document_id"]}, key)
    assert meta(client.http.get(f"/d/{share}").body.decode())["og:image"] != tags["og:image"]


@BOTH
def test_protected_disabled_and_expired_links_name_nothing(client, workspace, services):
    ws, key = workspace
    services.workspaces.set_plan(ws.id, "pro")
    secret, share = published(client, key, title="Secret merger plan", description="Top secret")
    r = client.http.put(f"/api/v1/documents/{secret['document_id']}/passphrase",
                        headers={"X-Api-Key": key, "Content-Type": "application/json"},
                        body=json.dumps({"passphrase": "correct horse battery staple"}))
    assert r.status_code == 204
    page = client.http.get(f"/d/{share}").body.decode()
    tags = meta(page)
    assert "Secret" not in page and "og:image" not in tags and "og:description" not in tags
    assert tags["og:title"] == "A document shared with Docpub"
    assert client.http.get(f"/d/{share}/card.png", headers={"Accept": "*/*"}).status_code == 404
    _, off = published(client, key, title="Withdrawn plan", share_enabled=False)
    assert b"Withdrawn" not in client.http.get(f"/d/{off}").body
    assert client.http.get(f"/d/{off}/card.png", headers={"Accept": "*/*"}).status_code == 404


def test_the_card_carries_the_pro_brand(services, workspace):
    from chalicelib.domain import cards
    from chalicelib.services.sharing import Branding

    assert Branding("free", "Acme").card_name == "Docpub"
    assert Branding("pro", "Acme").card_name == "Acme"
    assert Branding("pro", None).card_name == "Docpub"
    assert cards.card_key("T", "Acme") != cards.card_key("T", "Docpub")
    long = cards.render_card("W" * 400 + " " + "word " * 200, "Acme")
    from PIL import Image

    assert Image.open(io.BytesIO(long)).size == (1200, 630)
