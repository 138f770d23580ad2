"""The pages of reading without a query, one handler each: the home page (every docket), a
docket's comments (``/comments``: paged, sorted, faceted), a campaign, an organisation, and a
rule's organisations that commented in every phase named
(``/rule/<RIN or docket>/organisations?phases=proposed,final``). ``app.py`` routes them; the
pages' contents come from ``browse.py``.

A value of the query string that cannot be used is answered with HTTP 400 and a page saying
which and why; an unknown docket, campaign or organisation with 404.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse

from pipeline.reading import browsing
from pipeline.web import browse
from pipeline.web.site import page_number, site_of


async def home(request: Request):
    site, number = site_of(request), page_number(request)
    if isinstance(number, list):
        return site.bad(request, number, "/")
    return site.render(request, "home.html", page=browse.home_page(number))


async def comments(request: Request):
    site = site_of(request)
    try:
        form = browse.BrowseForm.parse(request.query_params)
    except browse.BadParameters as exc:
        return site.bad(request, exc.problems, "/comments")
    if form.q:  # a query: the search page takes the same filters
        return RedirectResponse(f"/search?{urlencode(form.query_string())}", status_code=302)
    page = browse.browse_page(form)
    if form.docket and page.docket is None:
        return site.missing(request, "docket", form.docket)
    return site.render(request, "browse.html", page=page, sorts=browsing.SORTS,
                       feed=f"/feed/search?{urlencode(form.query_string(sort='', page=''))}")


async def campaign(request: Request):
    site, campaign_id, number = site_of(request), request.path_params["campaign_id"], page_number(request)
    if isinstance(number, list):
        return site.bad(request, number, f"/campaign/{campaign_id}")
    page = browse.campaign_page(campaign_id, number)
    if page is None:
        return site.missing(request, "campaign", campaign_id)
    return site.render(request, "campaign.html", page=page, feed=f"/feed/campaign/{campaign_id}")


async def organisation(request: Request):
    site = site_of(request)
    name = (request.query_params.get("id") or request.query_params.get("name", "")).strip()[:300]
    number = page_number(request)
    if not name or isinstance(number, list):
        problems = (["name= is missing: give the organisation's name"] if not name else []) + (
            number if isinstance(number, list) else [])
        return site.bad(request, problems, "/")
    page = browse.organisation_page(name, number)
    if page is None:
        return site.missing(request, "organisation", name)
    return site.render(request, "organisation.html", page=page,
                       feed=f"/feed/organisation?{urlencode({'name': page.name})}")


async def rule_organisations(request: Request):
    from pipeline.reading import lineage

    site, name = site_of(request), request.path_params["name"][:300]
    try:
        phases = lineage.parse_phases(request.query_params.get("phases", "proposed,final")[:300])
    except lineage.BadPhases as exc:
        return site.bad(request, [str(exc)], f"/rule/{name}/organisations")
    rin, dockets = lineage.rule_dockets(name)
    if not dockets:
        return site.missing(request, "rule", name)
    return site.render(request, "rule_organisations.html", name=name, rin=rin, dockets=dockets, phases=phases,
                       found=lineage.organisations_in_every_phase(dockets, phases))
