"""The pages of ``pages.py``, one handler each: the search page, a docket's dashboard, one
comment, one rule document, and the status of every docket. ``app.py`` routes them."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse

from pipeline.errors import DocketeerError
from pipeline.reading import browsing, campaigns
from pipeline.reading.search_arguments import BadSearch
from pipeline.store import docket_failures
from pipeline.web import browse, pages
from pipeline.web.site import page_number, site_of


async def search(request: Request):
    site, form = site_of(request), pages.SearchForm.parse(request.query_params)
    if not form.q and any(request.query_params.get(name) for name in browse.FILTER_NAMES):
        # Filters without a query: the docket's comments, browsed with the same filters.
        return RedirectResponse(f"/comments?{request.url.query}", status_code=302)
    status = 200
    try:
        form = form.checked()
    except BadSearch as exc:  # NUL, an impossible day, an unknown campaign: 400, said
        results, error, status, no_match = [], str(exc), 400, ""
    else:
        try:
            (results, no_match), error = pages.search_results(site.engine, form), ""
        except DocketeerError as exc:  # a query of punctuation only: say so on the page
            results, error, no_match = [], str(exc), ""
    # The topic, position and attribute facets only (five statements): the search page shows no others.
    facets = (browsing.Facets([], [], {}, {}, browsing.attribute_counts(form.browse_filters()),
                              browsing.topic_counts(form.browse_filters()),
                              *browsing.position_counts(form.browse_filters()))
              if form.q and not error and form.searches_comments else None)
    return site.render(request, "search.html", status, form=form, results=results, error=error, facets=facets,
                       no_match=no_match,
                       page_size=pages.PAGE_SIZE, max_page=pages.MAX_PAGE, campaigns_known=campaigns.available())


async def docket(request: Request):
    site, docket_id = site_of(request), request.path_params["docket_id"]
    page = pages.docket_page(docket_id)
    if page is None:
        return site.missing(request, "docket", docket_id)
    return site.render(request, "docket.html", page=page, problems=browsing.problems(page.docket.id),
                       stage_failures=docket_failures.current([page.docket.id]),
                       failed_states=browsing.FAILED_STATES, show_docket=False)


async def comment(request: Request):
    site, key = site_of(request), request.path_params["key"]
    page = pages.comment_page(site.runtime, key)
    if page is None:
        return site.missing(request, "comment", key)
    if page.item.kind == "document":  # a rule document: its own page shows it
        return RedirectResponse(f"/document/{quote(key, safe='')}", status_code=302)
    return site.render(request, "comment.html", page=page)


async def document(request: Request):
    site, key = site_of(request), request.path_params["key"]
    page = pages.document_page(site.runtime, key)
    if page is None:
        return site.missing(request, "document", key)
    if isinstance(page, str):  # a comment's id: its own page shows it
        return RedirectResponse(f"/comment/{quote(page, safe='')}", status_code=302)
    return site.render(request, "document.html", page=page)


async def document_section(request: Request):
    site, key, section = site_of(request), request.path_params["key"], request.path_params["section"]
    found = pages.section_page(key, section)
    if found is None:
        return site.missing(request, "document section", f"{key} {section}")
    facts, view, comments = found
    return site.render(request, "document_section.html", facts=facts, section=view, comments=comments)


async def status(request: Request):
    site, number = site_of(request), page_number(request)
    if isinstance(number, list):
        return site.bad(request, number, "/status")
    page = pages.status_page(site.runtime, number)
    # What failed or waits, of this page's dockets only: store-wide, the failed-rows
    # statement scans every row of a store that knows 276,000 dockets.
    ids = [row.docket.id for row in page.rows]
    return site.render(request, "status.html", page=page, problems=browsing.problems(dockets=ids),
                       stage_failures=docket_failures.current(ids),
                       failed_states=browsing.FAILED_STATES, show_docket=True)
