"""The Atom feeds of new comments, one handler each: a docket's, a search's (or a browse's:
the same filters without a query), an organisation's and a campaign's. ``app.py`` routes
them; what a feed holds comes from ``feeds.py``. A bad value is answered with HTTP 400 as on
the pages, an unknown docket, campaign or organisation with 404."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request

from pipeline.errors import DocketeerError
from pipeline.ids import REGULATIONS_GOV
from pipeline.reading import browsing
from pipeline.web import browse, feeds, pages
from pipeline.web.site import base_of, site_of

# What a search's feed holds, by the index collection its search looks in.
FEED_KINDS = {None: "comments and documents", "comments": "comments", "documents": "documents"}


async def docket_feed(request: Request):
    from pipeline.reading import reports

    site, docket_id = site_of(request), request.path_params["docket_id"]
    docket = reports.find_docket(docket_id)
    if docket is None:
        return site.missing(request, "docket", docket_id)
    title = f"New comments on {docket_id}" + (f": {docket.title}" if docket.title else "")
    return site.atom(feeds.Feed(f"{REGULATIONS_GOV}/docket/{docket_id}", title,
                                f"{base_of(request)}/feed/docket/{docket_id}", f"{base_of(request)}/docket/{docket_id}",
                                feeds.latest(browsing.BrowseFilters(docket=docket_id))), request)


async def search_feed(request: Request):
    site = site_of(request)
    try:
        form = browse.BrowseForm.parse(request.query_params)
    except browse.BadParameters as exc:
        return site.bad(request, exc.problems, "/search")
    query = urlencode(form.query_string(sort="", page=""))
    if form.q:
        try:  # the search page's own checks: an unknown campaign or organisation is said, not dropped
            search_form = pages.SearchForm.parse(request.query_params).checked()
            hits = site.engine.search(search_form.q, search_form.filters(), k=feeds.SEARCH_READ, offset=0)
        except DocketeerError as exc:  # a query of punctuation only: said, as on the page
            return site.bad(request, [str(exc)], "/search")
        rows = feeds.latest_of_keys(list(dict.fromkeys(h.item_key for h in hits)))
        page_url = f"{base_of(request)}/search?{query}"
    else:
        rows = feeds.latest(form.filters())
        page_url = f"{base_of(request)}/comments?{query}"
    described = ", ".join(f"{label} {value}" for _, label, value in form.active)
    kinds = FEED_KINDS[search_form.collection] if form.q else "comments"
    title = f"New {kinds}" + (f" matching “{form.q}”" if form.q else "") + (f" ({described})" if described else "")
    # The feed's id is its query: the same search is the same feed, whatever the host.
    return site.atom(feeds.Feed(f"tag:docketeer,2026:search?{query}", title,
                                f"{base_of(request)}/feed/search?{query}", page_url, rows), request)


async def organisation_feed(request: Request):
    site, name = site_of(request), request.query_params.get("name", "").strip()[:300]
    if not name:
        return site.bad(request, ["name= is missing: give the organisation's name"], "/")
    # The resolved organisation (every spelling of it) as on its page; else the name as written.
    resolved = browsing.resolved_organisation(name)
    filters = (browsing.BrowseFilters(organisation_id=resolved[0]) if resolved
               else browsing.BrowseFilters(organization_exact=name))
    if not resolved and not browsing.organisation_dockets(name):
        return site.missing(request, "organisation", name)
    query = urlencode({"name": name})
    return site.atom(feeds.Feed(f"tag:docketeer,2026:organisation?{query}", f"New comments of {name}",
                                f"{base_of(request)}/feed/organisation?{query}",
                                f"{base_of(request)}/organisation?{query}", feeds.latest(filters)), request)


async def campaign_feed(request: Request):
    from pipeline.reading import campaigns

    site, campaign_id = site_of(request), request.path_params["campaign_id"]
    if campaign_id not in campaigns.campaign_rows([campaign_id]):
        return site.missing(request, "campaign", campaign_id)
    return site.atom(feeds.Feed(f"tag:docketeer,2026:campaign/{campaign_id}", f"New comments in campaign {campaign_id}",
                                f"{base_of(request)}/feed/campaign/{campaign_id}",
                                f"{base_of(request)}/campaign/{campaign_id}",
                                feeds.latest(browsing.BrowseFilters(campaign=campaign_id))), request)
