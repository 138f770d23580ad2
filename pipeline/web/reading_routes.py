"""The routes of reading without a query: the home page (every docket), a docket's comments
(``/comments``: paged, sorted, faceted), a campaign, an organisation, and the Atom feeds of new
comments, and a rule's organisations that commented in every phase named
(``/rule/<RIN or docket>/organisations?phases=proposed,final``). ``app.py`` adds them to its own; the pages' contents come from ``browse.py`` and
``feeds.py``.

A value of the query string that cannot be used is answered with HTTP 400 and a page saying
which and why; an unknown docket, campaign or organisation with 404.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from pipeline.errors import DocketeerError
from pipeline.store import browsing
from pipeline.web import browse, feeds, pages

ATOM = "application/atom+xml; charset=utf-8"


def routes(render, engine, headers: dict[str, str]) -> list[Route]:
    """The routes, rendering pages with ``render(request, template, status, **context)`` and
    searching (a search's feed) with ``engine``; ``headers`` go on every feed too."""

    def bad(request: Request, problems: list[str], back: str):
        return render(request, "bad_request.html", 400, problems=problems, back=back)

    def base_of(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def atom(feed: feeds.Feed, request: Request) -> Response:
        return Response(feeds.atom(feed, base_of(request)), media_type=ATOM, headers=headers)

    def page_number(request: Request) -> int | list[str]:
        problems = browse.problems_of({"page": request.query_params.get("page", "")}, known_ids=False)
        return problems or min(browse.MAX_BROWSE_PAGE, int(request.query_params.get("page", "").strip()[:9] or 1))

    async def home(request: Request):
        number = page_number(request)
        if isinstance(number, list):
            return bad(request, number, "/")
        return render(request, "home.html", page=browse.home_page(number))

    async def comments(request: Request):
        try:
            form = browse.BrowseForm.parse(request.query_params)
        except browse.BadParameters as exc:
            return bad(request, exc.problems, "/comments")
        if form.q:  # a query: the search page takes the same filters
            return RedirectResponse(f"/search?{urlencode(form.query_string())}", status_code=302)
        page = browse.browse_page(form)
        if form.docket and page.docket is None:
            return render(request, "missing.html", 404, what="docket", name=form.docket)
        return render(request, "browse.html", page=page, sorts=browsing.SORTS,
                      feed=f"/feed/search?{urlencode(form.query_string(sort='', page=''))}")

    async def campaign(request: Request):
        campaign_id = request.path_params["campaign_id"]
        number = page_number(request)
        if isinstance(number, list):
            return bad(request, number, f"/campaign/{campaign_id}")
        page = browse.campaign_page(campaign_id, number)
        if page is None:
            return render(request, "missing.html", 404, what="campaign", name=campaign_id)
        return render(request, "campaign.html", page=page, feed=f"/feed/campaign/{campaign_id}")

    async def organisation(request: Request):
        name = (request.query_params.get("id") or request.query_params.get("name", "")).strip()[:300]
        number = page_number(request)
        if not name or isinstance(number, list):
            problems = (["name= is missing: give the organisation's name"] if not name else []) + (
                number if isinstance(number, list) else [])
            return bad(request, problems, "/")
        page = browse.organisation_page(name, number)
        if page is None:
            return render(request, "missing.html", 404, what="organisation", name=name)
        return render(request, "organisation.html", page=page, feed=f"/feed/organisation?{urlencode({'name': page.name})}")

    async def rule_organisations(request: Request):
        from pipeline.lineage import queries as lineage
        from pipeline.lineage.phases import BadPhases, parse_phases

        name = request.path_params["name"][:300]
        try:
            phases = parse_phases(request.query_params.get("phases", "proposed,final")[:300])
        except BadPhases as exc:
            return bad(request, [str(exc)], f"/rule/{name}/organisations")
        rin, dockets = lineage.rule_dockets(name)
        if not dockets:
            return render(request, "missing.html", 404, what="rule", name=name)
        return render(request, "rule_organisations.html", name=name, rin=rin, dockets=dockets, phases=phases,
                      found=lineage.organisations_in_every_phase(dockets, phases))

    async def docket_feed(request: Request):
        from pipeline.store import reports

        docket_id = request.path_params["docket_id"]
        docket = reports.find_docket(docket_id)
        if docket is None:
            return render(request, "missing.html", 404, what="docket", name=docket_id)
        title = f"New comments on {docket_id}" + (f": {docket.title}" if docket.title else "")
        return atom(feeds.Feed(f"{feeds.REGULATIONS_GOV}/docket/{docket_id}", title,
                               f"{base_of(request)}/feed/docket/{docket_id}", f"{base_of(request)}/docket/{docket_id}",
                               feeds.latest(browsing.BrowseFilters(docket=docket_id))), request)

    async def search_feed(request: Request):
        try:
            form = browse.BrowseForm.parse(request.query_params)
        except browse.BadParameters as exc:
            return bad(request, exc.problems, "/search")
        query = urlencode(form.query_string(sort="", page=""))
        if form.q:
            try:  # the search page's own checks: an unknown campaign or organisation is said, not dropped
                search_form = pages.SearchForm.parse(request.query_params).checked()
                hits = engine.search(search_form.q, search_form.filters(), k=feeds.SEARCH_READ, offset=0)
            except DocketeerError as exc:  # a query of punctuation only: said, as on the page
                return bad(request, [str(exc)], "/search")
            rows = feeds.latest_of_keys(list(dict.fromkeys(h.item_key for h in hits)))
            page_url = f"{base_of(request)}/search?{query}"
        else:
            rows = feeds.latest(form.filters())
            page_url = f"{base_of(request)}/comments?{query}"
        described = ", ".join(f"{label} {value}" for _, label, value in form.active)
        title = "New comments" + (f" matching “{form.q}”" if form.q else "") + (f" ({described})" if described else "")
        # The feed's id is its query: the same search is the same feed, whatever the host.
        return atom(feeds.Feed(f"tag:docketeer,2026:search?{query}", title,
                               f"{base_of(request)}/feed/search?{query}", page_url, rows), request)

    async def organisation_feed(request: Request):
        name = request.query_params.get("name", "").strip()[:300]
        if not name:
            return bad(request, ["name= is missing: give the organisation's name"], "/")
        # The resolved organisation (every spelling of it) as on its page; else the name as written.
        resolved = browsing.resolved_organisation(name)
        filters = (browsing.BrowseFilters(organisation_id=resolved[0]) if resolved
                   else browsing.BrowseFilters(organization_exact=name))
        if not resolved and not browsing.organisation_dockets(name):
            return render(request, "missing.html", 404, what="organisation", name=name)
        query = urlencode({"name": name})
        return atom(feeds.Feed(f"tag:docketeer,2026:organisation?{query}", f"New comments of {name}",
                               f"{base_of(request)}/feed/organisation?{query}",
                               f"{base_of(request)}/organisation?{query}",
                               feeds.latest(filters)), request)

    async def campaign_feed(request: Request):
        from pipeline.campaigns import queries

        campaign_id = request.path_params["campaign_id"]
        if campaign_id not in queries.campaign_rows([campaign_id]):
            return render(request, "missing.html", 404, what="campaign", name=campaign_id)
        return atom(feeds.Feed(f"tag:docketeer,2026:campaign/{campaign_id}", f"New comments in campaign {campaign_id}",
                               f"{base_of(request)}/feed/campaign/{campaign_id}",
                               f"{base_of(request)}/campaign/{campaign_id}",
                               feeds.latest(browsing.BrowseFilters(campaign=campaign_id))), request)

    return [
        Route("/", home), Route("/comments", comments), Route("/campaign/{campaign_id}", campaign),
        Route("/organisation", organisation), Route("/feed/docket/{docket_id}", docket_feed),
        Route("/feed/search", search_feed), Route("/feed/organisation", organisation_feed),
        Route("/feed/campaign/{campaign_id}", campaign_feed),
        Route("/rule/{name}/organisations", rule_organisations),
    ]
