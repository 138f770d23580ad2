"""A store for the web tests: the real pipeline over a generated corpus, one comment of
which is hostile (its text holds a <script> and an <img onerror>) and one of which cites a
statute no other comment cites."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from devtools.mirror_layout import DocketFolders, replace_json
from tests.pipeline_fixtures import built_store

HOSTILE_ID = "CMS-2026-0001-0004"
# As the API would send it: HTML entities, which the record normaliser turns into these
# characters in the stored text (a raw tag would be stripped there already).
HOSTILE_HTML = ("Zanzibar clinics object. &lt;script&gt;window.pwned = 1; alert('xss')&lt;/script&gt; "
                "&lt;img src=/static/pwned.png onerror=\"alert('img')\"&gt; End of comment.")
HOSTILE_TEXT = ("Zanzibar clinics object. <script>window.pwned = 1; alert('xss')</script> "
                "<img src=/static/pwned.png onerror=\"alert('img')\"> End of comment.")
CITING_ID = "CMS-2026-0001-0005"
CITATION = "42 U.S.C. 1395ww"


@contextmanager
def web_store(root: Path, pg_server):
    with built_store(root, pg_server, dockets=2, comments=8, build=False) as store:
        _rewrite(store.root / "mirror", HOSTILE_ID, HOSTILE_HTML, "Hostile Tester", "Script Kiddies <b>Inc</b>")
        _rewrite(store.root / "mirror", CITING_ID,
                 f"The hospital payment rule under {CITATION} must account for rural wage indexes.",
                 "Pat Citation", "Rural Wage Coalition")
        store.server.reload()
        assert store.run(), "IndexAll over the web corpus failed"
        yield store


def _rewrite(mirror: Path, comment_id: str, comment: str, submitter: str, organization: str) -> None:
    path = DocketFolders.find(mirror, comment_id.rsplit("-", 1)[0]).comment_file(comment_id)
    body = json.loads(path.read_text(encoding="utf-8"))
    attrs = body["data"]["attributes"]
    attrs.update(comment=comment, organization=organization, firstName=submitter.split()[0],
                 lastName=submitter.split()[1], title=f"Comment from {organization}")
    replace_json(path, body)
