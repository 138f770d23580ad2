"""RegulationsGovClient and FederalRegisterClient against the stand-in server over loopback HTTP."""

from __future__ import annotations

import hashlib
import io
import logging
import time
import traceback
from datetime import UTC, date, datetime, timedelta

import pytest

from devtools.mirror_builder import MirrorBuilder
from devtools.standin_server import StandinServer
from pipeline.counters import API_CALLS, counters
from pipeline.errors import (
    BadResponse,
    BudgetSpent,
    ConfigError,
    KeyRejected,
    PermanentHTTPError,
    QuotaSpent,
    TransientHTTPError,
)
from pipeline.sources import federal_register
from pipeline.sources.api_time import next_filter_second, parse_api_time, to_eastern_filter
from pipeline.sources.federal_register import FederalRegisterClient, docket_ids_from
from pipeline.sources.http import RequestBudget
from pipeline.sources.regulations_gov import (
    MalformedItem,
    RegulationsGovClient,
    TooLarge,
    check_comment_item,
)

SECRET_KEY = "sEcReT-kEy-0123456789"
PDF_BYTES = b"%PDF-1.4\n" + bytes(range(256)) * 400 + b"\n%%EOF\n"

# 5,600 comments, one every 30 s, placed so that record #5,000 (the 20-page boundary) falls
# at 01:40 EDT on 2025-11-02, inside the hour that repeats when DST ends; the walk also
# crosses two Eastern midnights. 30 s apart keeps every record in its own second.
BIG_BOUNDARY = datetime(2025, 11, 2, 5, 40, tzinfo=UTC)
BIG_STEP = timedelta(seconds=30)
BIG_TIMES = [BIG_BOUNDARY + (i - 4999) * BIG_STEP for i in range(5600)]
# 5,010 comments modified in the same second, then 5 later ones: the walk must not loop.
SAME_SECOND = datetime(2026, 2, 3, 15, 0, 0, tzinfo=UTC)
CLUMP_TIMES = [SAME_SECOND] * 5010 + [SAME_SECOND + timedelta(minutes=m) for m in range(1, 6)]
# Every 10 minutes across Eastern midnight (05:00Z) and the spring-forward gap (07:00Z).
SPRING_TIMES = [
    datetime(2026, 3, 7, 22, 0, tzinfo=UTC) + i * timedelta(minutes=10) for i in range(73)
]


class FakeSleep:
    """Records the waits the client asks for instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(round(seconds, 3))


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    builder = MirrorBuilder(root, "CMS-2025-0100")
    builder.docket()
    objects = {
        "big": builder.document(1),
        "clump": builder.document(2),
        "spring": builder.document(3),
    }
    builder.comments(objects["big"], BIG_TIMES, first_seq=10)
    builder.comments(objects["clump"], CLUMP_TIMES, first_seq=10000)
    builder.comments(objects["spring"], SPRING_TIMES, first_seq=20000)
    with StandinServer(root, api_keys=("test-key",), hourly_limit=100_000) as server:
        server.objects = objects
        yield server


@pytest.fixture
def small_root(tmp_path):
    builder = MirrorBuilder(tmp_path, "EPA-2026-0001")
    builder.docket()
    object_id = builder.document(1, content=PDF_BYTES)
    builder.comment(
        "EPA-2026-0001-0002", object_id, "2026-01-05T15:00:00Z", attachments=[PDF_BYTES]
    )
    builder.comment("EPA-2026-0001-0003", object_id, "2026-01-05T16:00:00Z")
    builder.mark_unavailable("EPA-2026-0001-0004")
    builder.object_id = object_id
    return builder


@pytest.fixture
def server(small_root):
    with StandinServer(small_root.root, api_keys=("test-key", SECRET_KEY)) as standin:
        standin.object_id = small_root.object_id
        yield standin


@pytest.fixture
def sleeps():
    return FakeSleep()


@pytest.fixture
def client(server, sleeps):
    return RegulationsGovClient(server.api_base, "test-key", sleep=sleeps)


def _ids(items):
    return [item["id"] for item in items]


# --------------------------------------------------------------------------- Eastern time


@pytest.mark.parametrize(
    ("utc", "eastern"),
    [
        ("2026-01-15T12:00:00Z", "2026-01-15 07:00:00"),  # EST, UTC-5
        ("2026-07-01T12:00:00Z", "2026-07-01 08:00:00"),  # EDT, UTC-4
        ("2026-07-01T02:00:00Z", "2026-06-30 22:00:00"),  # previous day in Eastern (midnight)
        ("2026-01-01T04:59:59Z", "2025-12-31 23:59:59"),  # previous year
        ("2026-03-08T06:59:59Z", "2026-03-08 01:59:59"),  # last EST second before spring-forward
        ("2026-03-08T07:00:00Z", "2026-03-08 03:00:00"),  # first EDT second: 02:xx does not exist
        ("2025-11-02T04:59:59Z", "2025-11-02 00:59:59"),  # just before the repeated hour
        (
            "2025-11-02T05:40:00Z",
            "2025-11-02 00:59:59",
        ),  # first 01:40 (EDT): clamped, see docstring
        ("2025-11-02T06:40:00Z", "2025-11-02 01:40:00"),  # second 01:40 (EST)
        ("2025-11-02T07:00:00Z", "2025-11-02 02:00:00"),
        ("2026-09-08T12:00:00.123456Z", "2026-09-08 08:00:00"),
    ],
)
def test_to_eastern_filter(utc, eastern):
    assert to_eastern_filter(utc) == eastern


def test_eastern_filter_never_goes_backwards_across_dst_end():
    start = datetime(2025, 11, 2, 3, 0, tzinfo=UTC)
    values = [
        to_eastern_filter((start + timedelta(minutes=m)).isoformat()) for m in range(0, 300, 7)
    ]
    assert values == sorted(values)


def test_parse_api_time_and_next_filter_second():
    assert parse_api_time("2025-09-11T17:58:29Z") == datetime(2025, 9, 11, 17, 58, 29, tzinfo=UTC)
    assert parse_api_time("2025-09-11T13:58:29-04:00") == datetime(
        2025, 9, 11, 17, 58, 29, tzinfo=UTC
    )
    with pytest.raises(ValueError):
        parse_api_time("yesterday")
    assert next_filter_second("2025-12-31 23:59:59") == "2026-01-01 00:00:00"
    assert next_filter_second("2026-03-08 01:59:59") == "2026-03-08 03:00:00"


# --------------------------------------------------------------------------- walking lists


@pytest.mark.parametrize("server_fold", [0, 1], ids=["server-reads-EDT", "server-reads-EST"])
def test_walk_past_5000_across_dst_end_and_midnights(big_server, server_fold):
    big_server.dst_fold = server_fold
    big_server.reset_log()
    client = RegulationsGovClient(big_server.api_base, "test-key")

    items = list(client.iter_comments(big_server.objects["big"]))

    ids = _ids(items)
    assert len(set(ids)) == 5600  # nothing lost
    lists = [q for _, path, q in big_server.request_log if path == "/v4/comments"]
    # 20 pages of 250, then one re-query of 682 records (3 pages): 23 list calls exactly.
    assert len(lists) == 23
    requery = lists[20]
    assert requery["filter[lastModifiedDate][ge]"] == ["2025-11-02 00:59:59"]
    assert requery["page[number]"] == ["1"]
    assert all(
        q["sort"] == ["lastModifiedDate,documentId"] and q["page[size]"] == ["250"] for q in lists
    )
    # Records from the clamped boundary onwards came twice; callers' upserts absorb them.
    assert len(ids) - 5600 == 81
    assert client.stats() == {"comments.list": 23}


def test_walk_does_not_loop_when_5000_records_share_one_second(big_server, caplog):
    big_server.dst_fold = 0
    big_server.reset_log()
    client = RegulationsGovClient(big_server.api_base, "test-key")
    with caplog.at_level(logging.WARNING):
        ids = _ids(client.iter_comments(big_server.objects["clump"]))
    assert len(ids) == 5000 + 5  # 10 same-second records are beyond reach, and logged
    assert big_server.calls("/v4/comments") == 21
    last = big_server.request_log[-1][2]
    assert last["filter[lastModifiedDate][ge]"] == ["2026-02-03 10:00:01"]
    assert "share the filter value" in caplog.text


@pytest.mark.parametrize(
    "since",
    [
        "2026-03-08T04:50:00Z",  # 23:50 EST on the 7th: the filter date is the day before
        "2026-03-08T05:00:00Z",  # Eastern midnight
        "2026-03-08T06:55:00Z",  # minutes before the spring-forward gap
        "2026-03-08T07:00:00Z",  # first second of EDT
        "2026-03-08T07:05:00Z",
    ],
)
def test_since_is_sent_in_eastern_time_across_midnight_and_dst(big_server, since):
    big_server.dst_fold = 0
    client = RegulationsGovClient(big_server.api_base, "test-key")
    got = set(_ids(client.iter_comments(big_server.objects["spring"], since=since)))
    expected = {
        f"CMS-2025-0100-{20000 + i}"
        for i, t in enumerate(SPRING_TIMES)
        if t >= parse_api_time(since)
    }
    assert got == expected
    assert expected  # the case is not vacuous


def test_list_documents_and_details(client, server):
    documents = client.list_documents("EPA-2026-0001")
    assert _ids(documents) == ["EPA-2026-0001-0001"]
    assert documents[0]["attributes"]["objectId"] == server.object_id
    assert client.get_docket("EPA-2026-0001")["id"] == "EPA-2026-0001"
    doc = client.get_document("EPA-2026-0001-0001")
    assert doc["data"]["attributes"]["fileFormats"][0]["fileUrl"].startswith(server.downloads_base)
    comment = client.get_comment("EPA-2026-0001-0002")
    assert comment["included"][0]["type"] == "attachments"
    summaries = list(client.iter_comments(server.object_id, since="2026-01-05T15:30:00Z"))
    assert _ids(summaries) == ["EPA-2026-0001-0003"]
    assert "comment" not in summaries[0]["attributes"]  # list items are summaries only


# --------------------------------------------------------------------------- retries


def test_503_is_retried_with_capped_exponential_backoff(client, server, sleeps):
    server.fail_next_5xx = 3
    assert client.get_docket("EPA-2026-0001")["id"] == "EPA-2026-0001"
    assert sleeps.waits == [0.5, 1.0, 2.0]
    assert server.calls("/v4/dockets") == 4


def test_backoff_is_capped(server, sleeps):
    client = RegulationsGovClient(
        server.api_base, "test-key", sleep=sleeps, backoff_cap=1.5, max_attempts=5
    )
    server.fail_next_5xx = 4
    client.get_docket("EPA-2026-0001")
    assert sleeps.waits == [0.5, 1.0, 1.5, 1.5]


def test_429_honours_retry_after(client, server, sleeps):
    server.burst_429 = 2
    client.get_docket("EPA-2026-0001")
    assert sleeps.waits == [1.0, 1.0]  # Retry-After: 1 beats the 0.5 s first backoff


def test_connection_reset_and_truncated_json_are_retried(client, server, sleeps):
    server.reset_next = 1
    assert client.get_comment("EPA-2026-0001-0002")["data"]["id"] == "EPA-2026-0001-0002"
    server.truncate_next = 1
    assert client.get_comment("EPA-2026-0001-0002")["data"]["id"] == "EPA-2026-0001-0002"
    assert server.calls("/v4/comments/") == 4
    assert sleeps.waits == [0.5, 0.5]


def test_retries_run_out(server, sleeps):
    client = RegulationsGovClient(server.api_base, "test-key", sleep=sleeps, max_attempts=3)
    server.fail_next_5xx = 10
    with pytest.raises(TransientHTTPError, match="HTTP 503"):
        client.get_docket("EPA-2026-0001")
    assert server.calls("/v4/dockets") == 3


def test_long_retry_after_stops_the_run_instead_of_sleeping(server, sleeps):
    client = RegulationsGovClient(server.api_base, "test-key", sleep=sleeps, backoff_cap=0.5)
    server.burst_429 = 1  # Retry-After: 1 is more than the 0.5 s cap
    with pytest.raises(BudgetSpent, match="asked to wait"):
        client.get_docket("EPA-2026-0001")
    assert sleeps.waits == []


# --------------------------------------------------------------------------- permanent failures


def test_404_fails_at_once(client, server, sleeps):
    with pytest.raises(PermanentHTTPError) as err:
        client.get_comment("EPA-2026-0001-0004")  # an _UNAVAILABLE mirror entry
    assert err.value.status == 404
    assert "was not found" in str(err.value)
    assert server.calls("/v4/comments/") == 1
    assert sleeps.waits == []


def test_400_carries_the_api_message(client, server):
    # The recorded real 400 for a wrong filter name.
    with pytest.raises(PermanentHTTPError) as err:
        client._get("comments.list", "/comments", {"filter[SearchTerm]": "1k5-9l2j-gnbc"})
    assert err.value.status == 400
    assert "Invalid filter field name: SearchTerm" in str(err.value)
    assert server.calls("/v4/comments") == 1


def test_rejected_key_is_one_clear_line(server, sleeps):
    client = RegulationsGovClient(server.api_base, "not-a-key", sleep=sleeps)
    with pytest.raises(PermanentHTTPError) as err:
        client.get_docket("EPA-2026-0001")
    assert err.value.status == 403
    assert "the regulations.gov API key was rejected (403 API_KEY_INVALID)" in str(err.value)
    assert "not-a-key" not in str(err.value)
    assert "\n" not in str(err.value)
    assert server.calls("/v4/") == 1


def test_missing_key_is_a_config_error():
    with pytest.raises(ConfigError, match="REGULATIONS_GOV_API_KEY is not set"):
        RegulationsGovClient("http://127.0.0.1:9/v4", None)
    with pytest.raises(ConfigError):
        RegulationsGovClient("http://127.0.0.1:9/v4", "  ")


def test_html_200_is_a_bad_response(client, server):
    server.html_error_next = 1
    with pytest.raises(BadResponse, match="HTML page"):
        client.get_docket("EPA-2026-0001")
    assert server.calls("/v4/dockets") == 1


# --------------------------------------------------------------------------- the key stays secret


def test_key_never_appears_in_urls_logs_or_errors(server, sleeps, caplog):
    client = RegulationsGovClient(server.api_base, SECRET_KEY, sleep=sleeps, max_attempts=2)
    caught: list[BaseException] = []
    with caplog.at_level(logging.DEBUG):
        client.get_docket("EPA-2026-0001")
        for switch, error in (
            ("fail_next_5xx", TransientHTTPError),
            ("reset_next", TransientHTTPError),
            ("html_error_next", BadResponse),
        ):
            setattr(server, switch, 5)
            with pytest.raises(error) as err:
                client.get_docket("EPA-2026-0001")
            caught.append(err.value)
            setattr(server, switch, 0)
    texts = [caplog.text, repr(client), repr(client.transport.session.headers)]
    texts += ["".join(traceback.format_exception(exc)) for exc in caught]
    assert not [t for t in texts if SECRET_KEY in t]
    assert all("api_key" not in query for _, _, query in server.request_log)  # header only


def test_key_is_masked_in_api_error_messages(server, sleeps):
    client = RegulationsGovClient(server.api_base, SECRET_KEY, sleep=sleeps)
    with pytest.raises(PermanentHTTPError) as err:
        # Contrived on purpose: the stand-in echoes a bad filter name, so the body holds the key.
        client._get("comments.list", "/comments", {f"filter[{SECRET_KEY}]": "x"})
    assert "field name: ***" in str(err.value)
    assert SECRET_KEY not in "".join(traceback.format_exception(err.value))


# --------------------------------------------------------------------------- budgets


def test_request_budget_stops_before_the_call(server, sleeps):
    budget = RequestBudget(max_requests=3)
    first = RegulationsGovClient(server.api_base, "test-key", budget=budget, sleep=sleeps)
    second = RegulationsGovClient(server.api_base, "test-key", budget=budget, sleep=sleeps)
    first.get_docket("EPA-2026-0001")
    second.get_docket("EPA-2026-0001")
    first.get_docket("EPA-2026-0001")
    with pytest.raises(BudgetSpent, match=r"request budget spent \(3 requests\)"):
        second.get_docket("EPA-2026-0001")
    assert budget.used == 3
    assert server.calls("/v4/") == 3


def test_retries_spend_the_budget_too(server, sleeps):
    budget = RequestBudget(max_requests=2)
    client = RegulationsGovClient(server.api_base, "test-key", budget=budget, sleep=sleeps)
    server.fail_next_5xx = 5
    with pytest.raises(BudgetSpent):
        client.get_docket("EPA-2026-0001")
    assert server.calls("/v4/") == 2


def test_time_budget(server, sleeps):
    client = RegulationsGovClient(
        server.api_base,
        "test-key",
        sleep=sleeps,
        budget=RequestBudget(deadline=time.monotonic() - 1),
    )
    with pytest.raises(BudgetSpent, match="time budget spent"):
        client.get_docket("EPA-2026-0001")
    assert server.calls("/v4/") == 0


def test_retry_sleep_that_would_pass_the_deadline_stops_cleanly(server, sleeps):
    client = RegulationsGovClient(
        server.api_base,
        "test-key",
        sleep=sleeps,
        backoff_cap=60,
        max_attempts=10,
        budget=RequestBudget(deadline=time.monotonic() + 30),
    )
    server.fail_next_5xx = 10
    with pytest.raises(BudgetSpent, match="time budget spent"):
        client.get_docket("EPA-2026-0001")
    assert sleeps.waits == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        16.0,
    ]  # the next (32 s) would end past the deadline


def test_low_rate_limit_remaining_stops_cleanly(small_root, sleeps):
    with StandinServer(small_root.root, api_keys=("test-key",), hourly_limit=8) as server:
        client = RegulationsGovClient(server.api_base, "test-key", sleep=sleeps, min_remaining=5)
        for _ in range(4):  # remaining after each: 7, 6, 5, 4
            client.get_docket("EPA-2026-0001")
        with pytest.raises(BudgetSpent, match="rate limit nearly spent: 4 requests left this hour"):
            client.get_docket("EPA-2026-0001")
        assert server.calls("/v4/") == 4


def test_pacing_spaces_calls(server, sleeps):
    client = RegulationsGovClient(server.api_base, "test-key", sleep=sleeps, pace_seconds=5.0)
    client.get_docket("EPA-2026-0001")
    client.get_docket("EPA-2026-0001")
    assert len(sleeps.waits) == 1 and 4.0 < sleeps.waits[0] <= 5.0


def test_calls_are_counted(client):
    with counters.measure() as delta:
        client.get_docket("EPA-2026-0001")
        list(client.iter_comments(client_object_id(client)))
    assert delta[API_CALLS] == 3
    assert delta["api.dockets.detail"] == 1 and delta["api.comments.list"] == 1


def client_object_id(client):
    return client.list_documents("EPA-2026-0001")[0]["attributes"]["objectId"]


# --------------------------------------------------------------------------- bad items


def test_bad_ids_from_the_server_are_rejected(small_root, sleeps):
    for n, bad_id in enumerate(
        ["EPA-2026-0001/../../etc", "EPA-2026-0001-..", "EPA-2026\x00-0001"]
    ):
        small_root.comment(
            f"EPA-2026-0001-{90 + n}", small_root.object_id, f"2026-02-0{n + 1}T00:00:00Z"
        )
        path = small_root.folders.comment_file(f"EPA-2026-0001-{90 + n}")
        path.write_text(
            path.read_text().replace(f"EPA-2026-0001-{90 + n}", bad_id.replace("\x00", "\\u0000"))
        )
    with StandinServer(small_root.root, api_keys=("test-key",)) as server:
        client = RegulationsGovClient(server.api_base, "test-key", sleep=sleeps)
        with pytest.raises(MalformedItem, match="unsafe"):
            list(client.iter_comments(small_root.object_id))
        skipped: list[MalformedItem] = []
        ids = _ids(client.iter_comments(small_root.object_id, on_bad_item=skipped.append))
    assert ids == ["EPA-2026-0001-0002", "EPA-2026-0001-0003"]
    assert len(skipped) == 3 and all(isinstance(e, BadResponse) for e in skipped)


@pytest.mark.parametrize(
    "item",
    [
        None,
        {"type": "comments", "attributes": {"lastModifiedDate": "2026-01-01T00:00:00Z"}},
        {"id": "A-1", "type": "comments"},
        {"id": "A-1", "type": "comments", "attributes": []},
        {"id": "A-1", "type": "comments", "attributes": {"lastModifiedDate": 17}},
        {"id": "A-1", "type": "comments", "attributes": {"lastModifiedDate": "soon"}},
        {
            "id": "A-1",
            "type": "comments",
            "attributes": {"lastModifiedDate": "2026-01-01T00:00:00Z", "withdrawn": "no"},
        },
        {
            "id": "A-1",
            "type": "dockets",
            "attributes": {"lastModifiedDate": "2026-01-01T00:00:00Z"},
        },
        {"id": 12, "type": "comments", "attributes": {"lastModifiedDate": "2026-01-01T00:00:00Z"}},
        {
            "id": "a/b",
            "type": "comments",
            "attributes": {"lastModifiedDate": "2026-01-01T00:00:00Z"},
        },
    ],
)
def test_malformed_items(item):
    with pytest.raises(BadResponse):
        check_comment_item(item)


def test_items_of_older_responses_without_lastModifiedDate_are_kept():
    for item in ({"id": "A-1", "type": "comments", "attributes": {}},
                 {"id": "A-1", "type": "comments", "attributes": {"withdrawn": "False"}}):
        assert check_comment_item(item) is item


def test_unsafe_ids_are_refused_before_any_call(client, server):
    for bad in ["a/b", "..", "EPA-2026-0001-..", "x\x00y", ""]:
        with pytest.raises(Exception, match="unsafe"):
            client.get_comment(bad)
    assert server.calls("/") == 0


# --------------------------------------------------------------------------- downloads


def _attachment_url(client) -> str:
    comment = client.get_comment("EPA-2026-0001-0002")
    return comment["included"][0]["attributes"]["fileFormats"][0]["fileUrl"]


def test_download_hashes_while_streaming(client, server):
    buf = io.BytesIO()
    result = client.download(_attachment_url(client), buf, max_bytes=10**6)
    assert result.size == len(PDF_BYTES) == len(buf.getvalue())
    assert result.sha256 == hashlib.sha256(PDF_BYTES).hexdigest()
    assert result.content_type == "application/pdf"
    assert client.stats()["downloads"] == 1


def test_truncated_download_is_retried_from_scratch(client, server, sleeps):
    url = _attachment_url(client)
    buf = io.BytesIO(b"stale bytes from an earlier attempt")
    server.truncate_next = 1
    result = client.download(url, buf, max_bytes=10**6)
    assert buf.getvalue() == PDF_BYTES and result.size == len(PDF_BYTES)
    assert server.calls("/downloads/") == 2
    assert sleeps.waits == [0.5]


def test_truncated_download_is_never_returned(server, sleeps):
    client = RegulationsGovClient(server.api_base, "test-key", sleep=sleeps, max_attempts=3)
    url = _attachment_url(client)
    server.truncate_next = 5
    buf = io.BytesIO()
    with pytest.raises(TransientHTTPError, match="broke off|truncated"):
        client.download(url, buf, max_bytes=10**6)
    assert buf.getvalue() == b""
    assert server.calls("/downloads/") == 3


def test_too_large_download_is_not_retried(client, server, sleeps):
    url = _attachment_url(client)
    buf = io.BytesIO()
    with pytest.raises(TooLarge) as err:
        client.download(url, buf, max_bytes=1000)
    assert isinstance(err.value, PermanentHTTPError)
    assert buf.getvalue() == b""
    assert server.calls("/downloads/") == 1 and sleeps.waits == []


def test_gone_download_is_permanent(client, server):
    url = _attachment_url(client)
    server.gone.add("EPA-2026-0001-0002")
    with pytest.raises(PermanentHTTPError) as err:
        client.download(url, io.BytesIO(), max_bytes=10**6)
    assert err.value.status == 404
    assert server.calls("/downloads/") == 1


def test_document_content_download(client, server):
    doc = client.get_document("EPA-2026-0001-0001")
    url = doc["data"]["attributes"]["fileFormats"][0]["fileUrl"]
    assert client.download(url, io.BytesIO(), max_bytes=10**6).size == len(PDF_BYTES)


# --------------------------------------------------------------------------- Federal Register


@pytest.fixture
def fr_server(tmp_path):
    builder = MirrorBuilder(tmp_path, "CMS-2026-0002")
    builder.docket()
    for seq in range(1, 7):
        builder.document(
            seq, posted=f"2026-0{seq}-10T12:00:00Z", comment_end=f"2026-0{seq + 1}-11T03:59:59Z"
        )
    MirrorBuilder(tmp_path, "EPA-2026-0003").docket()
    MirrorBuilder(tmp_path, "EPA-2026-0003").document(1, posted="2026-02-01T05:00:00Z")
    with StandinServer(tmp_path) as server:
        yield server


def test_federal_register_search(fr_server):
    client = FederalRegisterClient(fr_server.fr_base)
    rules = client.search_proposed_rules(["CMS"], since=date(2026, 2, 1), until=date(2026, 5, 31))
    assert sorted(r.document_number for r in rules) == [
        "2025-10002",
        "2025-10003",
        "2025-10004",
        "2025-10005",
    ]
    rule = next(r for r in rules if r.document_number == "2025-10002")
    assert rule.docket_ids == ["CMS-2026-0002"]
    assert rule.regulations_gov_document_id == "CMS-2026-0002-0002"
    assert rule.publication_date == date(2026, 2, 10)
    assert rule.comments_close_on == date(2026, 3, 10)  # 03:59:59Z is the evening before, Eastern
    query = fr_server.request_log[-1][2]
    assert query["conditions[type][]"] == ["PRORULE"] and query["per_page"] == ["1000"]
    assert set(query["fields[]"]) >= {"regulations_dot_gov_info", "comments_close_on"}
    assert client.stats() == {"fr.documents": 1}


def test_federal_register_paging_is_capped_at_four_calls(fr_server, monkeypatch, caplog):
    monkeypatch.setattr(federal_register, "PER_PAGE", 1)
    client = FederalRegisterClient(fr_server.fr_base)
    with caplog.at_level(logging.WARNING):
        rules = client.search_proposed_rules(["CMS", "EPA"], since=date(2026, 1, 1))
    assert len(rules) == 4
    assert fr_server.calls("/fr/") == 4
    assert "truncated after 4 calls" in caplog.text


def test_federal_register_shares_the_retry_policy(fr_server):
    sleeps = FakeSleep()
    client = FederalRegisterClient(fr_server.fr_base, sleep=sleeps)
    fr_server.fail_next_5xx = 2
    assert client.search_proposed_rules(["EPA"], since=date(2026, 1, 1))
    assert sleeps.waits == [0.5, 1.0]


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        ({"docket_id": "EPA-HQ-OAR-2021-0317"}, ["EPA-HQ-OAR-2021-0317"]),
        (
            {"docket_ids": ["FDA-2013-N-0001", "Docket No. FDA-2013-N-0002"]},
            ["FDA-2013-N-0001", "FDA-2013-N-0002"],
        ),
        ({"document_id": "CMS-2026-2377-0001"}, ["CMS-2026-2377"]),
        ({"docket_id": "../etc/passwd"}, []),
        ({"docket_id": None, "docket_ids": "CMS-2026-2377"}, ["CMS-2026-2377"]),
        ({}, []),
    ],
)
def test_docket_ids_are_read_leniently(info, expected):
    assert docket_ids_from(info, info.get("document_id")) == expected


def test_unauthorized_key_stops_the_run(server, sleeps):
    client = RegulationsGovClient(server.api_base, "not-a-key", sleep=sleeps)
    with pytest.raises(KeyRejected, match="API key was rejected") as err:
        client.get_docket("EPA-2026-0001")
    assert err.value.status == 403 and "not-a-key" not in str(err.value)


def test_a_429_that_outlasts_every_retry_means_the_quota_is_spent(server, sleeps):
    client = RegulationsGovClient(server.api_base, "test-key", sleep=sleeps, max_attempts=3)
    server.burst_429 = 5
    with pytest.raises(QuotaSpent, match="rate limit is spent"):
        client.get_docket("EPA-2026-0001")
    assert server.calls("/v4/dockets") == 3
    server.burst_429 = 0
