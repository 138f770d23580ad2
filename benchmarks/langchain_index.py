"""LangChain's indexing API over the same extracted texts, with the same embedder.

``langchain_core.indexing.index`` with ``SQLRecordManager`` (from ``langchain_classic``; a
SQLite file) and ``cleanup="incremental"``, into LangChain's ``InMemoryVectorStore``. The
documents are the very chunks IndexDocket embeds: every item's ``combined.md`` is loaded
from the blob store (counted as ``combined_reads``) and cut by the package's ``chunk_text``
with the index stage's settings; each chunk is one Document whose ``source`` is the item.
The embedder is ``make_embedder("hashing")`` behind LangChain's ``Embeddings`` interface,
so every embed call is counted by the package's own counter.

Why the in-memory store: pgvector for LangChain (``langchain-postgres``) needs psycopg 3 and
another schema; an in-memory store makes LangChain's writes *cheaper* than ours, so any
time LangChain spends is spent in loading, hashing and its record manager.
"""

from __future__ import annotations

import time
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import index
from langchain_core.vectorstores import InMemoryVectorStore

from pipeline.extract.combined import combined_sections
from pipeline.extract.stage import read_combined
from pipeline.index.chunking import chunk_text
from pipeline.index.embedders import embed_in_batches, make_embedder
from pipeline.index.stage import chunk_overlap

try:  # LangChain >= 1.0 moved the SQL record manager out of langchain proper
    from langchain_classic.indexes import SQLRecordManager
except ImportError:  # pragma: no cover - older LangChain
    from langchain.indexes import SQLRecordManager


class PackageEmbeddings(Embeddings):
    """The package's embedder as a LangChain Embeddings (same vectors, same counter)."""

    def __init__(self, name: str = "hashing", batch: int = 64) -> None:
        self.inner = make_embedder(name)
        self.batch = batch

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return embed_in_batches(self.inner, texts, self.batch)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed([text])[0]


def load_documents(blobs, docket: str, keys: list[str], chunk_chars: int) -> list[Document]:
    """Every item's chunks as Documents, as a LangChain loader over combined.md would."""
    docs = []
    overlap = chunk_overlap(chunk_chars)
    for key in keys:
        _frontmatter, body = read_combined(blobs, docket, key)
        sections = combined_sections(body, skip_placeholders=True)
        for chunk in chunk_text(sections, max_chars=chunk_chars, overlap=overlap):
            docs.append(Document(page_content=chunk.text,
                                 metadata={"source": key, "ordinal": chunk.ordinal}))
    return docs


class LangChainIndex:
    """One vector store + record manager, kept across runs like a long-lived service would."""

    def __init__(self, folder: Path, embedder: str = "hashing") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.store = InMemoryVectorStore(PackageEmbeddings(embedder))
        self.records = SQLRecordManager("docketeer-bench", db_url=f"sqlite:///{folder}/records.sqlite")
        self.records.create_schema()

    def run(self, blobs, docket: str, keys: list[str], chunk_chars: int) -> dict:
        """Load every text and index it; returns LangChain's counts and the two phases' times."""
        started = time.perf_counter()
        docs = load_documents(blobs, docket, keys, chunk_chars)
        loaded = time.perf_counter()
        counts = index(docs, self.records, self.store, cleanup="incremental",
                       source_id_key="source", key_encoder="sha256")
        done = time.perf_counter()
        return {**counts, "documents": len(docs), "load_s": round(loaded - started, 3),
                "index_s": round(done - loaded, 3)}
