"""The obvious Luigi design: one task per comment and stage, each with a LocalTarget file.

    PcAll(dockets, window)            dynamic deps, no output: runs every time
      PcList(docket, window)          lists/<window>/<docket>.json   (the comment ids)
      PcIndex(docket, comment)        vectors/<comment>.json
        PcExtract(docket, comment)    text/<comment>.md
          PcBackfill(docket, comment) detail/<comment>.json, files/<comment>/<attachment>

Completion is "the file exists", so a rerun re-checks one file per comment and stage and
schedules every task again. The per-file work uses the package's own pieces (the API client,
``read_attachment``, ``chunk_text``, the hashing embedder) so that only the *design* differs;
the index output is a JSON file of vectors rather than a database write, which flatters
this design. Benchmarks only: never imported by the package.
"""

from __future__ import annotations

import json
from pathlib import Path

import luigi

from pipeline.extract.readers import read_attachment
from pipeline.fetch.walk import comment_documents
from pipeline.index.chunking import chunk_text
from pipeline.index.embedders import embed_in_batches, make_embedder
from pipeline.sources.regulations_gov import RegulationsGovClient

# Set by the benchmark before luigi.build (one in-process worker, so a module global is fine).
CONFIG: dict = {"work": None, "api_base": None}


def _work(*parts: str) -> Path:
    return Path(CONFIG["work"]).joinpath(*parts)


def _client() -> RegulationsGovClient:
    if "client" not in CONFIG:
        CONFIG["client"] = RegulationsGovClient(CONFIG["api_base"], "DEMO_KEY", pace_seconds=0)
    return CONFIG["client"]


def _write_json(target: luigi.LocalTarget, value) -> None:
    with target.open("w") as handle:  # LocalTarget writes a temp file and renames it
        json.dump(value, handle)


class PcList(luigi.Task):
    docket = luigi.Parameter()
    window = luigi.Parameter()

    def output(self):
        return luigi.LocalTarget(_work("lists", self.window, f"{self.docket}.json"))

    def run(self):
        api = _client()
        ids = []
        for document in comment_documents(api.list_documents(self.docket)):
            for summary in api.iter_comments(document["attributes"]["objectId"]):
                ids.append(summary["id"])
        _write_json(self.output(), sorted(set(ids)))


class PcBackfill(luigi.Task):
    docket = luigi.Parameter()
    comment = luigi.Parameter()

    def output(self):
        return luigi.LocalTarget(_work("detail", f"{self.comment}.json"))

    def run(self):
        api = _client()
        body = api.get_comment(self.comment)
        folder = _work("files", self.comment)
        folder.mkdir(parents=True, exist_ok=True)
        for included in body.get("included") or []:
            for fmt in (included.get("attributes") or {}).get("fileFormats") or []:
                url = fmt["fileUrl"]
                if url.lower().endswith((".pdf", ".docx")):
                    with open(folder / url.rsplit("/", 1)[-1], "wb") as handle:
                        api.download(url, handle, max_bytes=200 * 1024 * 1024)
                    break
        _write_json(self.output(), body)


class PcExtract(luigi.Task):
    docket = luigi.Parameter()
    comment = luigi.Parameter()

    def requires(self):
        return PcBackfill(self.docket, self.comment)

    def output(self):
        return luigi.LocalTarget(_work("text", f"{self.comment}.md"))

    def run(self):
        with self.input().open() as handle:
            body = json.load(handle)
        parts = [(body["data"]["attributes"].get("comment") or "").strip()]
        folder = _work("files", self.comment)
        for path in sorted(folder.iterdir()) if folder.exists() else []:
            parts.append(read_attachment(path, path.name).text)
        with self.output().open("w") as handle:
            handle.write("\n\n".join(p for p in parts if p))


class PcIndex(luigi.Task):
    docket = luigi.Parameter()
    comment = luigi.Parameter()

    def requires(self):
        return PcExtract(self.docket, self.comment)

    def output(self):
        return luigi.LocalTarget(_work("vectors", f"{self.comment}.json"))

    def run(self):
        with self.input().open() as handle:
            text = handle.read()
        chunks = chunk_text([("comment", text)], max_chars=1200, overlap=150)
        embedder = CONFIG.setdefault("embedder", make_embedder("hashing"))
        vectors = embed_in_batches(embedder, [c.text for c in chunks], 64)
        _write_json(self.output(), {"chunks": [c.text for c in chunks], "vectors": vectors})


class PcAll(luigi.Task):
    """Lists each docket once per window, then asks for every comment's index file."""

    dockets = luigi.Parameter()
    window = luigi.Parameter()

    def complete(self):
        return False  # new comments can only be found by running: no output to check

    def run(self):
        lists = yield [PcList(d, self.window) for d in self.dockets.split(",")]
        wanted = []
        for docket, target in zip(self.dockets.split(","), lists, strict=True):
            with target.open() as handle:
                wanted.extend(PcIndex(docket, c) for c in json.load(handle))
        yield wanted


def task_count(work: Path) -> int:
    """Files written by the design: one per comment and stage (plus lists and downloads)."""
    return sum(1 for _ in Path(work).rglob("*") if _.is_file())
