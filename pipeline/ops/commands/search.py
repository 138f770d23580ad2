"""``docketeer search``: asks the warm search service (started on first use) or searches in
this process (``--cold``, or a service that cannot answer the request).

The index's, the store's and the runtime's modules are imported inside the functions: the
warm path must not pay for psycopg2, pgvector and the stages, nor ``docketeer --help``."""

from __future__ import annotations

import json

from pipeline.errors import DocketeerError
from pipeline.ops.commands.command_line import MAX_K, command, open_runtime, parse_day, parse_k
from pipeline.reading import search_arguments


def register(commands) -> None:
    search = commands.add_parser("search", help="semantic search over the index")
    search.add_argument("query", nargs="?")
    search.add_argument("--docket")
    search.add_argument("--kind", choices=tuple(search_arguments.KINDS),
                        help="look in the comments, the documents or both (the default), as the page's kind=")
    search.add_argument("--collection", choices=[k for k, c in search_arguments.KINDS.items() if c],
                        help="the older spelling of --kind comments|documents")
    search.add_argument("-k", type=parse_k, default=10, help=f"hits to show, 1 to {MAX_K}")
    search.add_argument("--from", dest="date_from", type=parse_day, metavar="YYYY-MM-DD",
                        help="only items posted on or after this day (Washington's calendar)")
    search.add_argument("--to", dest="date_to", type=parse_day, metavar="YYYY-MM-DD",
                        help="only items posted on or before this day (Washington's calendar)")
    search.add_argument("--org", help="only items whose submitter's name or organisation contains this (any case)")
    for name, label in (("subtype", "subtype (Public Comment, Mass Mail Campaign, ...)"), ("category", "category"),
                        ("state", "state or province"), ("country", "country")):
        search.add_argument(f"--{name}", help=f"only comments whose record gives exactly this {label}")
    search.add_argument("--topic", metavar="TOPIC_ID",
                        help="only comments on this topic of their docket's topic map (`docketeer topics D` lists them)")
    search.add_argument("--position", metavar="POSITION",
                        help=f"only comments the positions stage placed in this position ({', '.join(search_arguments.POSITIONS)}); "
                             "a comment not estimated yet matches none")
    search.add_argument("--passages", action="store_true",
                        help="every matching passage as a result of its own (by default one result per comment, "
                             "its other matching passages under it)")
    search.add_argument("--cold", action="store_true",
                        help="load the model in this process instead of asking the warm search service")
    search.add_argument("--stop", action="store_true",
                        help="stop the warm search service and the embedded index server of this data folder "
                             "(as `docketeer stop`)")
    search.add_argument("--json", action="store_true",
                        help="one JSON document (query, k, results with docket, item id, score, passage, page, attachment, link)")


@command
def cmd_search(args) -> int:
    from pipeline.config import ensure_data_dir
    from pipeline.runtime import current_settings, index_exists, require_existing_store

    # Settings only: the warm path opens no database here (the service has the index DB).
    settings = current_settings()
    if args.stop:  # the same as `docketeer stop`
        from pipeline.ops.commands.services import stopped_lines

        print("\n".join(stopped_lines()))
        return 0
    if args.query is None:
        raise DocketeerError("search needs a query (or --stop)")
    require_existing_store(settings)
    args.query = search_arguments.query_text(args.query)  # the arguments checked as the page checks them
    args.collection = _collection(args)
    args.position = search_arguments.position(args.position or "")
    search_arguments.day_range(args.date_from or "", args.date_to or "")
    if args.org:
        open_runtime()
        args.org = search_arguments.organisation(args.org)
        from pipeline.reading.organisation_filter import member_keys

        args.org_items = member_keys(args.org, args.docket)  # the index DB knows no organisations
    if args.docket:
        from pipeline.store import dockets

        open_runtime()
        dockets.require_docket(args.docket)
    args.items, args.excluded = _narrowed_to(args)
    answer = None
    if not index_exists(settings):  # no service, no embedded server started to say so
        answer = {"text": f"no results: nothing is indexed yet in {settings.data_path}", "records": [],
                  "best_score": None, "floor": None}
    elif settings.embedder in ("minilm", "minilm-int8") and not args.cold:
        answer = _warm_search(settings, ensure_data_dir(settings), args)
    if answer is None:
        answer = _search_here(args)
    if args.json:
        from pipeline.index.search_results import search_document

        document = search_document(args.query, args.k, args.docket, args.collection, answer["records"],
                                   _search_filters(args), best_score=answer["best_score"], floor=answer["floor"])
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print(answer["text"])
    return 0


def _collection(args) -> str | None:
    """The index collection ``--kind`` (or its older spelling ``--collection``) asks for: None
    looks in both, as the page's ``kind=both``."""
    kind = search_arguments.KINDS[args.kind or "both"]
    if args.kind and args.collection and kind != args.collection:
        raise search_arguments.BadSearch(f"--kind {args.kind} and --collection {args.collection} disagree: give one")
    return args.collection or kind


def _search_here(args) -> dict:
    """The search done in this process: the answer the warm service would give."""
    # Imported only here: the warm path must not pay for psycopg2, pgvector and the stages.
    from pipeline.reading.search import (
        answer_fields,
        answer_text,
        embedder_from,
        filters_of,
        hit_records,
        search_answer,
    )

    runtime = open_runtime()
    answer = search_answer(runtime.index_db(), embedder_from(runtime.settings), args.query,
                           collection=args.collection, docket=args.docket, k=args.k,
                           filters=filters_of(_search_filters(args)), per_item=not args.passages)
    return {"text": answer_text(answer), "records": hit_records(answer.hits), **answer_fields(answer)}


def _search_filters(args) -> dict:
    """The filters of ``docketeer search``, as its request to the warm service carries them
    (``pipeline.index.search.filters_of`` reads them, here and there)."""
    return {"from": args.date_from, "to": args.date_to, "org": args.org, "org_items": getattr(args, "org_items", None),
            **{name: getattr(args, name, None) for name in search_arguments.ATTRIBUTES}, "topic": getattr(args, "topic", None),
            "position": getattr(args, "position", None) or None, "items": getattr(args, "items", None),
            "excluded": getattr(args, "excluded", None)}


def _narrowed_to(args) -> tuple[list[str] | None, list[str] | None]:
    """(the comments an attribute filter allows, or those it does not: the shorter list) when
    ``--subtype``, ``--category``, ``--state``, ``--country``, ``--topic`` or ``--position`` is
    given, read from the state DB (the index DB holds neither those attributes, nor the topic
    maps, nor the positions); (None, None) when none is. Each value is checked as the search
    page checks it (a value no comment has, a topic no map holds: exit 2). Only comments have
    these: such a search is of comments."""
    given = {name: getattr(args, name) for name in search_arguments.ATTRIBUTES if getattr(args, name, None)}
    wanted_topic, wanted_position = getattr(args, "topic", None), getattr(args, "position", None)
    if not given and not wanted_topic and not wanted_position:
        return None, None
    if args.collection == "documents":
        named = next(iter(given), "topic" if wanted_topic else "position")
        raise search_arguments.BadSearch(f"--{named} narrows comments: documents have no {named}")
    args.collection = "comments"
    from pipeline.reading import browsing

    open_runtime()
    checked = {name: search_arguments.attribute(name, value) for name, value in given.items()}
    for name, value in checked.items():
        setattr(args, name, value)
    return browsing.narrowing(browsing.BrowseFilters(docket=args.docket, topic=search_arguments.topic(wanted_topic or "") or None,
                                                     position=wanted_position or None, **checked))


def _warm_search(settings, data_dir, args) -> dict | None:
    """The answer of the warm search service (started on first use), or None: search here."""
    from pipeline.index import search_service
    from pipeline.index.embedders import MiniLMEmbedder, MiniLMInt8Embedder

    # Known without loading the model: a service embedding with another refuses the request.
    model = MiniLMInt8Embedder if settings.embedder == "minilm-int8" else MiniLMEmbedder
    request = {"query": args.query, "collection": args.collection, "docket": args.docket, "k": args.k,
               "passages": args.passages, **_search_filters(args),
               "embedder": model.model_id(), "index": search_service.index_key(settings, data_dir)}
    answer = search_service.ask(data_dir, request)
    # A service started by an older docketeer answers text only, or ignores the filters (or
    # the list of comments an attribute narrows to, or the resolved organisations' comments,
    # or shows results under the relevance floor): search here instead.
    current = answer and "records" in answer and "filtered" in answer and "folded" in answer and "floor" in answer
    narrowed = getattr(args, "items", None) is not None or getattr(args, "excluded", None) is not None
    resolved = bool(getattr(args, "org_items", None))
    return answer if (current and (not narrowed or "narrowed" in answer)
                      and (not resolved or "org_items" in answer)) else None

