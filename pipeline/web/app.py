"""The Starlette application of ``docketeer serve``: its templates, and every page's and
feed's route to its handler (``page_routes.py``, ``reading_routes.py``, ``feed_routes.py``).

Handlers are ``async`` and call the stores directly: they run one at a time on the event
loop's thread, so the state DB and index DB connections are never shared between threads
(the pages are small reads; a local reader does not need parallel requests). So that one
request never holds the others for long, every handler runs behind ``guarded``: the request's
values pass the one check (``browse.problems_of``: 400 with the reasons) and its statements
are bounded in time (``request_limits``: 503 when a request runs out).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from pathlib import Path

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from pipeline.clock import eastern_date, eastern_instant
from pipeline.reading import search_arguments
from pipeline.web import browse, feed_routes, page_routes, pages, reading_routes, request_limits
from pipeline.web.hosts import HostCheck, allowed_hosts
from pipeline.web.site import Site

log = logging.getLogger("docketeer")
HERE = Path(__file__).parent
# Defence in depth behind autoescaping: no script runs and nothing loads from elsewhere,
# even if some text slipped through unescaped.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


# Every page and feed: its path and its handler.
PAGES = [
    ("/", reading_routes.home), ("/comments", reading_routes.comments),
    ("/campaign/{campaign_id}", reading_routes.campaign), ("/organisation", reading_routes.organisation),
    ("/feed/docket/{docket_id}", feed_routes.docket_feed), ("/feed/search", feed_routes.search_feed),
    ("/feed/organisation", feed_routes.organisation_feed), ("/feed/campaign/{campaign_id}", feed_routes.campaign_feed),
    ("/rule/{name}/organisations", reading_routes.rule_organisations),
    ("/search", page_routes.search), ("/status", page_routes.status),
    ("/docket/{docket_id}", page_routes.docket), ("/comment/{key}", page_routes.comment),
    ("/document/{key}", page_routes.document), ("/document/{key}/section/{section}", page_routes.document_section),
]


def make_app(runtime, engine: pages.WarmSearch, hosts: frozenset[str] | None = None) -> Starlette:
    """The application over ``runtime``'s stores, searching with ``engine`` (kept warm),
    answering only requests whose Host is one of ``hosts`` (default: the loopback names)."""
    site = Site(runtime, engine, Jinja2Templates(env=template_environment()), SECURITY_HEADERS)
    routes = [
        *(Route(path, guarded(site, handler)) for path, handler in PAGES),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(HostCheck, hosts=hosts or allowed_hosts())])
    app.state.site = site  # where each handler finds it (site.site_of)
    return app


def template_environment() -> jinja2.Environment:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined)
    environment.filters["eastern"] = eastern_date  # dates people read are Washington's days
    environment.filters["instant"] = eastern_instant  # instants: Washington's time, zone named
    environment.globals["attribute_labels"] = search_arguments.ATTRIBUTES  # the attribute facets' order
    environment.globals["positions"] = search_arguments.POSITIONS  # the search form's choice, in order
    return environment


def guarded(site: Site, handler):
    """``handler`` behind the one check of a request's values and the bound on its work."""

    @functools.wraps(handler)
    async def checked(request: Request):
        database = site.runtime.state if site.runtime is not None else None
        try:
            with request_limits.bounded(database) if database is not None else contextlib.nullcontext():
                problems = browse.problems_of(request.query_params, request.path_params)
                if problems:  # said on the page, never dropped in silence
                    return site.bad(request, problems, request.url.path)
                return await handler(request)
        except Exception as exc:
            if not request_limits.ran_out(exc):
                raise
            request_limits.recover(database)
            log.warning("docketeer serve: %s ran out of time (%s)", request.url.path, exc)
            return site.render(request, "busy.html", 503, seconds=request_limits.STATEMENT_SECONDS)

    return checked
