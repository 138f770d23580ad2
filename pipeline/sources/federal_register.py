"""Federal Register search for proposed rules, to discover the regulations.gov dockets behind them.

Discovery must stay cheap: at most ``MAX_CALLS`` requests per search, whatever the result
count. Retries, budget and error mapping come from the shared transport (``http.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlsplit

import requests

from pipeline import text_validity
from pipeline.errors import BadResponse, InvalidIdentifier
from pipeline.ids import validate_id
from pipeline.sources.http import HttpTransport, RequestBudget
from pipeline.sources.records import RIN_SHAPE

log = logging.getLogger(__name__)

MAX_CALLS = 4
PER_PAGE = 1000
FIELDS = (
    "regulations_dot_gov_info",
    "comments_close_on",
    "document_number",
    "title",
    "publication_date",
)


@dataclass(frozen=True)
class FrRule:
    document_number: str
    title: str
    publication_date: date | None
    comments_close_on: date | None
    docket_ids: list[str] = field(default_factory=list)
    regulations_gov_document_id: str | None = None


class FederalRegisterClient:
    def __init__(
        self,
        base_url: str = "https://www.federalregister.gov/api/v1",
        session: requests.Session | None = None,
        budget: RequestBudget | None = None,
        **transport_options,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.transport = HttpTransport(
            session=session, budget=budget, service="Federal Register", **transport_options
        )

    def __repr__(self) -> str:
        return f"FederalRegisterClient(base_url={self.base_url!r})"

    def stats(self) -> dict[str, int]:
        return self.transport.stats()

    def document(self, number: str) -> FrDocument:
        """``GET /documents/{number}.json``: one call."""
        safe = validate_id(number, "Federal Register document number")
        body = self.transport.get_json("fr.document", f"{self.base_url}/documents/{safe}.json",
                                       params=[("fields[]", name) for name in DOCUMENT_FIELDS])
        if not isinstance(body, dict):
            raise BadResponse("Federal Register document: not an object")
        info = body.get("regulations_dot_gov_info")
        info = info if isinstance(info, dict) else {}
        dockets = docket_ids_from(info, _safe_id(info.get("document_id")))
        listed = body.get("docket_ids")
        for value in listed if isinstance(listed, list) else []:
            docket_id = _docket_id_in(value)
            if docket_id and docket_id.count("-") >= 2 and docket_id not in dockets:
                dockets.append(docket_id)
        rins = body.get("regulation_id_numbers")
        found = [r.strip().upper() for r in (rins if isinstance(rins, list) else [])
                 if isinstance(r, str) and RIN_SHAPE.fullmatch(r.strip().upper())]
        return FrDocument(safe, dockets, list(dict.fromkeys(found)))

    def search_proposed_rules(
        self, agencies: list[str], since: date, until: date | None = None
    ) -> list[FrRule]:
        """Proposed rules of ``agencies`` published in [since, until], following next_page_url."""
        url: str | None = self.base_url + "/documents.json"
        params: list[tuple[str, str]] | None = self._search_params(agencies, since, until)
        rules: list[FrRule] = []
        for _ in range(MAX_CALLS):
            body = self.transport.get_json("fr.documents", url, params=params)
            rules.extend(rule for rule in map(parse_fr_result, _results(body)) if rule is not None)
            url, params = self._next_page(body), None  # next_page_url carries the whole query
            if url is None:
                return rules
        log.warning(
            "Federal Register search truncated after %d calls (%d rules; %s more pages)",
            MAX_CALLS,
            len(rules),
            body.get("total_pages", "?"),
        )
        return rules

    @staticmethod
    def _search_params(
        agencies: list[str], since: date, until: date | None
    ) -> list[tuple[str, str]]:
        params = [("conditions[agencies][]", agency) for agency in agencies]
        params.append(("conditions[type][]", "PRORULE"))
        params.append(("conditions[publication_date][gte]", since.isoformat()))
        if until is not None:
            params.append(("conditions[publication_date][lte]", until.isoformat()))
        params.extend(("fields[]", name) for name in FIELDS)
        params.append(("per_page", str(PER_PAGE)))
        return params

    def _next_page(self, body: dict) -> str | None:
        next_url = body.get("next_page_url")
        if not next_url:
            return None
        # Follow only links back to the same service: a response must not send us elsewhere.
        if not isinstance(next_url, str) or urlsplit(next_url)[:2] != urlsplit(self.base_url)[:2]:
            raise BadResponse(
                f"Federal Register next_page_url points elsewhere: {str(next_url)[:200]!r}"
            )
        return next_url


# What a document's own record is asked for: the dockets and RINs it names.
DOCUMENT_FIELDS = ("document_number", "docket_ids", "regulation_id_numbers", "regulations_dot_gov_info")


@dataclass(frozen=True)
class FrDocument:
    """One Federal Register document as its record names it: the regulations.gov dockets and
    the RINs it belongs to (a final rule names its proposed rule's docket and RIN)."""

    document_number: str
    docket_ids: list[str] = field(default_factory=list)
    rins: list[str] = field(default_factory=list)




def _results(body: dict) -> list[dict]:
    results = body.get("results") or []  # an empty search may omit `results`
    if not isinstance(results, list):
        raise BadResponse("Federal Register response: `results` is not a list")
    return [r for r in results if isinstance(r, dict)]


def parse_fr_result(result: dict) -> FrRule | None:
    """One search result as an FrRule; None (logged) when it names no document number."""
    number = result.get("document_number")
    if not isinstance(number, str) or not number:
        log.warning("Federal Register result without document_number skipped")
        return None
    info = result.get("regulations_dot_gov_info")
    info = info if isinstance(info, dict) else {}
    document_id = _safe_id(info.get("document_id"))
    return FrRule(
        document_number=number,
        title=text_validity.shown(str(result.get("title") or "")),
        publication_date=_date(result.get("publication_date")),
        comments_close_on=_date(result.get("comments_close_on")),
        docket_ids=docket_ids_from(info, document_id),
        regulations_gov_document_id=document_id,
    )


def docket_ids_from(info: dict, document_id: str | None) -> list[str]:
    """Docket ids from ``regulations_dot_gov_info``, leniently: docket_id, docket_ids, or the document id."""
    candidates: list[object] = [info.get("docket_id")]
    many = info.get("docket_ids")
    candidates.extend(many if isinstance(many, list) else [many])
    found: list[str] = []
    for candidate in candidates:
        docket_id = _docket_id_in(candidate)
        if docket_id and docket_id not in found:
            found.append(docket_id)
    if not found and document_id and document_id.count("-") >= 2:
        # A regulations.gov document id is its docket id plus a sequence number: CMS-2026-2377-0001.
        found.append(document_id.rsplit("-", 1)[0])
    return found


def _docket_id_in(value: object) -> str | None:
    # Free text such as "Docket No. FDA-2013-N-0001" appears in older records: take the last word.
    if not isinstance(value, str) or not value.strip():
        return None
    return _safe_id(value.split()[-1].rstrip(".,;"))


def _safe_id(value: object) -> str | None:
    try:
        return validate_id(value)
    except InvalidIdentifier:
        if value:
            log.info("Federal Register: ignoring unusable id %r", str(value)[:80])
        return None


def _date(value: object) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
