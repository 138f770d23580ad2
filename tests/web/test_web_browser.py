"""``docketeer serve`` run as users run it (a subprocess on loopback) and read in headless
Chromium (Debian's, driven by Playwright): search -> result -> comment -> docket, filters,
a hostile comment that stays text, and a screenshot of every page (under the test's tmp
folder; ``docs/serve.png`` is one of them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.index import search_service
from pipeline.reading.search import embedder_from
from tests.fixtures.luigid_server import free_port
from tests.fixtures.paths import ROOT as CHECKOUT
from tests.fixtures.served_site import wait_until_up
from tests.fixtures.web_fixtures import CITATION, CITING_ID, HOSTILE_ID

pytestmark = pytest.mark.postgres

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def store(read_only_web_store):
    """This file's tests only read the store: the folder's shared one (tests/web/conftest.py)."""
    return read_only_web_store


@pytest.fixture(scope="module")
def served(store):
    """The base URL of a `docketeer serve` subprocess over the store."""
    port = free_port()
    env = {**os.environ, **store.env(), "PYTHONPATH": str(CHECKOUT)}
    log = open(store.root / "serve.log", "wb")  # noqa: SIM115 - closed below
    child = subprocess.Popen([sys.executable, "-m", "pipeline.ops.cli", "serve", "--port", str(port)],
                             env=env, cwd=CHECKOUT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, child, store.root / "serve.log")
        yield base
    finally:
        child.terminate()
        child.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no {CHROMIUM}: the browser tests need Debian's chromium")
    with sync_api.sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except Exception as exc:  # any launch failure: say why, do not fail the suite
            pytest.skip(f"chromium cannot start here: {exc}".splitlines()[0])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, served):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.dialogs, tab.requests = [], []
    tab.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message), dialog.dismiss()))
    tab.on("request", lambda request: tab.requests.append(request.url))
    yield tab
    context.close()


def test_search_result_comment_and_docket_pages_in_a_browser(page, served, store, tmp_path):
    page.goto(f"{served}/search")
    page.fill("input[name=q]", CITATION)
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("ol.results")
    assert "q=42+U.S.C.+1395ww" in page.url  # the query is in the URL: shareable
    assert page.locator("a.comment-link").first.inner_text() == CITING_ID
    assert page.locator("li.result").first.locator("mark").count() >= 2
    page.screenshot(path=tmp_path / "search.png", full_page=True)
    page.screenshot(path=tmp_path / "serve.png")  # the README's picture (docs/serve.png)

    page.locator("a.comment-link").first.click()
    page.wait_for_selector("h1")
    assert page.locator("h1").inner_text() == CITING_ID
    assert CITATION in page.locator("div.body").inner_text()
    page.screenshot(path=tmp_path / "comment.png", full_page=True)

    page.locator("dl.facts a").first.click()
    page.wait_for_selector("svg.chart")
    assert page.locator("h1").inner_text() == CITING_ID.rsplit("-", 1)[0]
    assert page.locator("svg.chart rect").count() >= 1
    assert page.locator("table.counts tbody tr").count() > 3
    page.screenshot(path=tmp_path / "docket.png", full_page=True)

    page.goto(f"{served}/status")
    assert page.locator("table.status tbody tr").count() == len(store.dockets)
    page.screenshot(path=tmp_path / "status.png", full_page=True)
    assert all(url.startswith(served) for url in page.requests)  # nothing fetched from elsewhere
    assert all((tmp_path / f"{name}.png").stat().st_size > 5000 for name in ("search", "comment", "docket", "status"))


def test_filters_narrow_the_results_in_a_browser(page, served, store):
    page.goto(f"{served}/search?q=hospital+payment+rural")
    everywhere = page.locator("a.comment-link").all_inner_texts()
    page.fill("input[name=docket]", store.dockets[1])
    page.press("input[name=q]", "Enter")
    page.wait_for_load_state()
    narrowed = page.locator("a.comment-link").all_inner_texts()
    assert narrowed and len(narrowed) < len(everywhere)
    assert {key.rsplit("-", 1)[0] for key in narrowed} == {store.dockets[1]}
    page.fill("input[name=docket]", "")
    page.fill("input[name=org]", "rural wage")
    page.press("input[name=q]", "Enter")
    page.wait_for_load_state()
    assert page.locator("a.comment-link").all_inner_texts() == [CITING_ID]


def test_a_hostile_comment_renders_as_text_no_dialog_no_request(page, served, tmp_path):
    for path in ("/search?q=zanzibar", f"/comment/{HOSTILE_ID}"):
        page.goto(served + path)
        page.wait_for_load_state("networkidle")
    assert "<script>window.pwned = 1;" in page.locator("div.body").inner_text()
    assert page.locator("div.body img").count() == 0 and page.locator("main script").count() == 0
    assert page.evaluate("window.pwned") is None
    assert page.dialogs == []
    assert not [url for url in page.requests if "pwned" in url]
    page.screenshot(path=tmp_path / "hostile.png", full_page=True)


def test_the_server_also_answers_docketeer_search_on_its_socket(served, store):
    settings, data_dir = store.runtime.settings, store.runtime.data_dir
    if search_service.socket_path(data_dir) is None:
        pytest.skip("temporary folder too deep for a unix socket")
    request = {"query": CITATION, "collection": None, "docket": None, "k": 3,
               "embedder": embedder_from(settings).id, "index": search_service.index_key(settings, data_dir)}
    answer = search_service.ask(data_dir, request, start=False)  # start=False: only serve answers
    assert answer is not None and CITING_ID in answer["text"].splitlines()[0]
