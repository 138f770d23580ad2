"""A small real store built by the real pipeline: make_corpus -> stand-in server -> IndexAll.

Used by the operations tests (CLI, verify, Redrive). The state DB is SQLite under the test's
folder; the index DB is a fresh database on the session's embedded PostgreSQL (so no test
waits for a server of its own to start).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devtools.make_corpus import Manifest, make_corpus
from devtools.standin_server import StandinServer
from pipeline.runtime import Runtime, set_runtime
from tests.state_fixtures import make_runtime, new_pg_database, run_invocation


@dataclass
class BuiltStore:
    root: Path
    runtime: Runtime
    manifest: Manifest
    server: StandinServer
    index_url: str

    @property
    def dockets(self) -> list[str]:
        return [d.id for d in self.manifest.dockets]

    def env(self) -> dict[str, str]:
        """The settings of this store as environment variables (for subprocesses)."""
        return {
            "DOCKETEER_DATA_DIR": str(self.root / "data"), "DOCKETEER_INDEX_URL": self.index_url,
            "DOCKETEER_API_BASE": self.server.api_base, "DOCKETEER_FR_BASE": self.server.fr_base,
            "REGULATIONS_GOV_API_KEY": "DEMO_KEY", "DOCKETEER_DISCOVER": "list",
            "DOCKETEER_DOCKETS": ",".join(self.dockets), "DOCKETEER_EMBEDDER": "hashing",
            "DOCKETEER_PACE_SECONDS": "0", "DOCKETEER_EXTRACT_WORKERS": "1",
        }

    def run(self, *tasks) -> bool:
        """One invocation of luigi.build in this process (IndexAll over the store's dockets)."""
        import pipeline

        tasks = tasks or (pipeline.IndexAll(docket=",".join(self.dockets)),)
        return run_invocation(*tasks)


@contextmanager
def built_store(root: Path, pg_server, *, dockets: int = 2, comments: int = 6, build: bool = True):
    """Corpus, stand-in server, runtime installed; IndexAll run once when ``build``."""
    manifest = make_corpus(root / "mirror", dockets=dockets, comments_per_docket=comments)
    index_url = new_pg_database(pg_server)
    with StandinServer(root / "mirror") as server:
        runtime = make_runtime(root, index_url=index_url, api_base=server.api_base,
                               fr_base=server.fr_base, api_key="DEMO_KEY", extract_workers=1)
        runtime.state  # noqa: B018 - open and create the schema
        previous = set_runtime(runtime)
        store = BuiltStore(root, runtime, manifest, server, index_url)
        try:
            if build:
                assert store.run(), "the first IndexAll failed"
            yield store
        finally:
            set_runtime(previous)
            runtime.close()
