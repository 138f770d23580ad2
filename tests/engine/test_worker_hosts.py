"""Four worker processes as four hosts on one luigid, over many one-comment dockets: each its own
``host_id`` and OS process (``luigi --module pipeline IndexAll`` with the recipe's
deploy/luigi.cfg, luigid with deploy/luigid.cfg), one PostgreSQL for state and index, moto S3
for blobs, the stand-in API. Every docket's fetch, backfill, extract and index runs exactly
once, clean, and every host does some of it (``benchmarks/workers.py``, the rig both share,
times the same with 1 and with 4 processes over 1,000 dockets).

A bounded share of dockets by default (CI); ``DOCKETEER_RELIABILITY_TRIALS=all`` runs 1,000,
a number runs that many."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from benchmarks.workers import CORPUS_START, STAGES, check, discover, rig_with_luigid, run_hosts
from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from tests.fixtures.state_fixtures import new_pg_database
from tests.fixtures.trials import trials

HOSTS = 4
DOCKETS = trials(default=48, full=1000)


@pytest.fixture
def many_dockets(tmp_path):
    manifest = make_corpus(tmp_path / "mirror", dockets=DOCKETS, comments_per_docket=1, attachment_share=0.0,
                           corrupt_share=0.0, image_only_share=0.0, docx_share=0.0, start=CORPUS_START)
    # one key for every host: the stand-in's hourly limit is not what is tested
    with StandinServer(tmp_path / "mirror", hourly_limit=10_000_000) as server:
        yield server, [d.id for d in manifest.dockets]


@pytest.mark.slow
def test_four_hosts_run_every_docket_once_and_each_does_a_share(
        tmp_path, pg_server, many_dockets, s3_endpoint, s3_client, s3_credentials_env):
    server, dockets = many_dockets
    bucket = f"hosts-{uuid.uuid4().hex[:10]}"
    s3_client.create_bucket(Bucket=bucket)
    with rig_with_luigid(tmp_path / "hosts", new_pg_database(pg_server), new_pg_database(pg_server),
                         f"s3://{bucket}/blobs", s3_endpoint, server.api_base, dockets) as rig:
        discover(rig)
        run = run_hosts(rig, HOSTS, timeout=max(900, 3 * DOCKETS))
    assert check(rig, run) == []
    ran = run.stage_runs()
    assert sorted(ran) == [f"host-{n}" for n in range(1, HOSTS + 1)] and all(ran.values())
    # what the hosts' logs say they ran, together: each (stage, docket) once, by one host
    assert sum(ran.values(), Counter()) == Counter({(s, d): 1 for s in STAGES for d in dockets})
    # the API asked for each docket's one comment once: no backfill ran twice, not even half-way
    assert server.calls("/v4/comments/") == len(dockets)
