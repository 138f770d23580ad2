"""The Starlette application of ``docketeer serve``: routes, query strings, templates.

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
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from pipeline import search_arguments
from pipeline.clock import eastern_date, eastern_instant
from pipeline.errors import DocketeerError
from pipeline.search_arguments import BadSearch
from pipeline.store import browsing, docket_failures
from pipeline.web import browse, campaigns, pages, reading_routes, request_limits
from pipeline.web.hosts import HostCheck, allowed_hosts

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


def make_app(runtime, engine: pages.WarmSearch, hosts: frozenset[str] | None = None) -> Starlette:
    """The application over ``runtime``'s stores, searching with ``engine`` (kept warm),
    answering only requests whose Host is one of ``hosts`` (default: the loopback names)."""
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined)
    environment.filters["eastern"] = eastern_date  # dates people read are Washington's days
    environment.filters["instant"] = eastern_instant  # instants: Washington's time, zone named
    environment.globals["attribute_labels"] = search_arguments.ATTRIBUTES  # the attribute facets' order
    templates = Jinja2Templates(env=environment)

    def render(request: Request, template: str, status: int = 200, **context) -> HTMLResponse:
        return templates.TemplateResponse(request, template, context, status_code=status, headers=SECURITY_HEADERS)

    def guarded(handler):
        """``handler`` behind the one check of a request's values and the bound on its work."""

        @functools.wraps(handler)
        async def checked(request: Request):
            database = runtime.state if runtime is not None else None
            try:
                with request_limits.bounded(database) if database is not None else contextlib.nullcontext():
                    problems = browse.problems_of(request.query_params, request.path_params)
                    if problems:  # said on the page, never dropped in silence
                        return render(request, "bad_request.html", 400, problems=problems, back=request.url.path)
                    return await handler(request)
            except Exception as exc:
                if not request_limits.ran_out(exc):
                    raise
                request_limits.recover(database)
                log.warning("docketeer serve: %s ran out of time (%s)", request.url.path, exc)
                return render(request, "busy.html", 503, seconds=request_limits.STATEMENT_SECONDS)

        return checked

    async def search(request: Request):
        form = pages.SearchForm.parse(request.query_params)
        if not form.q and any(request.query_params.get(name) for name in browse.FILTER_NAMES):
            # Filters without a query: the docket's comments, browsed with the same filters.
            return RedirectResponse(f"/comments?{request.url.query}", status_code=302)
        status = 200
        try:
            form = form.checked()
        except BadSearch as exc:  # NUL, an impossible day, an unknown campaign: 400, said
            results, error, status = [], str(exc), 400
        else:
            try:
                results, error = pages.search_results(engine, form), ""
            except DocketeerError as exc:  # a query of punctuation only: say so on the page
                results, error = [], str(exc)
        # The topic and attribute facets only (four statements): the search page shows no others.
        facets = (browsing.Facets([], [], {}, {}, browsing.attribute_counts(form.browse_filters()),
                                  browsing.topic_counts(form.browse_filters()))
                  if form.q and not error else None)
        return render(request, "search.html", status, form=form, results=results, error=error, facets=facets,
                      page_size=pages.PAGE_SIZE, max_page=pages.MAX_PAGE,
                      campaigns_known=campaigns.available())

    async def docket(request: Request):
        page = pages.docket_page(request.path_params["docket_id"])
        if page is None:
            return render(request, "missing.html", 404, what="docket", name=request.path_params["docket_id"])
        return render(request, "docket.html", page=page, problems=browsing.problems(page.docket.id),
                      stage_failures=docket_failures.current([page.docket.id]),
                      failed_states=browsing.FAILED_STATES, show_docket=False)

    async def comment(request: Request):
        page = pages.comment_page(runtime, request.path_params["key"])
        if page is None:
            return render(request, "missing.html", 404, what="comment", name=request.path_params["key"])
        return render(request, "comment.html", page=page)

    async def status(request: Request):
        return render(request, "status.html", rows=pages.status_page(runtime), problems=browsing.problems(),
                      stage_failures=docket_failures.current(),
                      failed_states=browsing.FAILED_STATES, show_docket=True)

    pages_routes = [
        *reading_routes.routes(render, engine, SECURITY_HEADERS), Route("/search", search), Route("/status", status),
        Route("/docket/{docket_id}", docket), Route("/comment/{key}", comment),
    ]
    routes = [
        *(Route(route.path, guarded(route.endpoint)) for route in pages_routes),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(HostCheck, hosts=hosts or allowed_hosts())])
