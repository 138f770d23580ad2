"""What every page's handler shares: the stores it reads, the warm search, the templates and
the headers every answer carries, and the answers several pages give alike (a bad request, a
missing thing, an Atom feed). ``app.py`` makes one ``Site`` and keeps it on the application;
a handler finds it with ``site_of(request)``."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.templating import Jinja2Templates

from pipeline.web import browse, feeds

ATOM = "application/atom+xml; charset=utf-8"


@dataclass(frozen=True)
class Site:
    runtime: object  # the process's stores (None: a site that answers nothing past its host check)
    engine: object  # pages.WarmSearch: the embedder kept loaded
    templates: Jinja2Templates
    headers: dict[str, str]  # on every page and feed

    def render(self, request: Request, template: str, status: int = 200, **context) -> HTMLResponse:
        return self.templates.TemplateResponse(request, template, context, status_code=status, headers=self.headers)

    def bad(self, request: Request, problems: list[str], back: str) -> HTMLResponse:
        """HTTP 400, the page saying which values cannot be used and why."""
        return self.render(request, "bad_request.html", 400, problems=problems, back=back)

    def missing(self, request: Request, what: str, name: str) -> HTMLResponse:
        """HTTP 404: no such docket, comment, campaign, organisation or rule in this store."""
        return self.render(request, "missing.html", 404, what=what, name=name)

    def atom(self, feed: feeds.Feed, request: Request) -> Response:
        return Response(feeds.atom(feed, base_of(request)), media_type=ATOM, headers=self.headers)


def site_of(request: Request) -> Site:
    return request.app.state.site


def base_of(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def page_number(request: Request) -> int | list[str]:
    """The ``page=`` of a paged list (1 when none is given), or the problems with it."""
    problems = browse.problems_of({"page": request.query_params.get("page", "")}, known_ids=False)
    return problems or min(browse.MAX_BROWSE_PAGE, int(request.query_params.get("page", "").strip()[:9] or 1))
