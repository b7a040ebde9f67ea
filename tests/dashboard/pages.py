"""The dashboard as its tests read it: a page fetched without a browser, the refusal
shown inside a page, a form's token, and the table of seeded sessions."""

from __future__ import annotations

import html
import re
import urllib.error
import urllib.request

from tests.helpers import TEST_TOKEN

#: (prompt, output, status, trigger source, runtime, days ago)
ROWS = [
    ("Pay the plumber invoice", "Paid the kangaroo invoice", "succeeded", "external", "command", 0),
    ("Pay the dentist invoice", "Card declined", "failed", "external", "command", 1),
    ("Water the plants", "Watered every plant", "succeeded", "schedule:morning", "command", 2),
    ("Summarise the news", "Kangaroos escaped the zoo", "succeeded", "external", "codex", 3),
    ("Book a train", "No train today", "failed", "tick", "codex", 20),
    ("Renew the passport", None, "cancelled", "external", "command", 40),
]

SEED = (
    "INSERT INTO sessions (id, prompt, output, status, trigger_source, runtime, created_at,"
    " duration_ms) SELECT gen_random_uuid(), r.p, r.o, r.s, r.t, r.rt,"
    " now() - make_interval(days => r.d), 1000"
    " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[])"
    " AS r(p, o, s, t, rt, d)"
)


def seed_rows(seeded) -> None:
    columns = [list(c) for c in zip(*ROWS, strict=True)]
    seeded.sql(SEED, *columns)


def refusal_in_frame(body: str) -> str:
    """The refusal's one line, after checking the page frame is around it."""
    assert body.startswith("<!doctype html>") and '<nav aria-label="views">' in body
    found = re.search(r'<p class="error" role="alert" id="refused">([^<]*)</p>', body)
    assert found, body
    return html.unescape(found.group(1))


def form_token_of(url: str, session_id: str) -> str:
    _, page = fetch(
        f"{url}/sessions/{session_id}", headers={"Authorization": f"Bearer {TEST_TOKEN}"}
    )
    return "csrf=" + re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def fetch(url: str, headers: dict[str, str] | None = None, data: str | None = None):
    """GET (or POST ``data``) without following redirects; (status, body)."""
    if data is None:
        headers = {"Authorization": f"Bearer {TEST_TOKEN}", **(headers or {})}
    request = urllib.request.Request(
        url, headers=headers or {}, data=data.encode() if data is not None else None
    )
    if data is not None:
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
