"""``import pipeline`` is cheap: an extract worker reads a PDF without luigi, peewee or requests,
and ``luigi --module pipeline IndexAll`` still finds its tasks (see pipeline/__init__.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The top of the stack: none of it has any business in a process that only reads files.
HEAVY = ("luigi", "peewee", "requests", "tenacity", "psycopg2", "boto3", "botocore", "pgvector")


def run_python(*args: str, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess:
    """A clean interpreter with this checkout first on the path."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, *args], cwd=cwd, env={**base, "PYTHONPATH": path, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def loaded(statement: str, roots: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules under ``roots`` that a fresh interpreter has after ``statement``."""
    report = f"import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in {roots!r}))"
    return json.loads(run_python("-c", f"{statement}; {report}").stdout.replace("'", '"'))


def test_importing_the_readers_imports_none_of_the_stack():
    assert loaded("import pipeline.extract.readers") == []
    assert loaded("import pipeline.extract.pool, pipeline.ocr.tesseract") == []
    assert loaded("import pipeline.extract.readers", ("pipeline",)) == [
        "pipeline", "pipeline.counters", "pipeline.extract", "pipeline.extract.combined",
        "pipeline.extract.frontmatter", "pipeline.extract.readers", "pipeline.extract.text_caps", "pipeline.fingerprints"]


def test_the_extract_pool_leaves_pymupdf_to_its_fork_server():
    """The stage's own process reads no file: PyMuPDF (about 15 MiB, warmed up) is imported
    by the fork server's preload alone, never by importing the pool."""
    assert loaded("import pipeline.extract.pool", ("pymupdf", "fitz")) == []
    assert "pymupdf" in loaded("import pipeline.extract.server_preload", ("pymupdf",))


def test_the_package_still_sets_the_onnxruntime_telemetry_default():
    check = "import os, pipeline.extract.readers; print(os.environ['ORT_DISABLE_TELEMETRY'])"
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    done = subprocess.run([sys.executable, "-c", check], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "1", done.stderr


def test_task_names_load_on_first_use():
    assert loaded("import pipeline", ("luigi", "pipeline")) == ["pipeline"]
    after = loaded("from pipeline import IndexAll, Redrive", ("pipeline",))
    assert {"pipeline.tasks", "pipeline.ops.redrive"} <= set(after)
    check = ("import luigi.task_register as r; from pipeline import IndexAll; "
             "assert r.Register.get_task_cls('IndexAll') is IndexAll; "
             "import pipeline; assert pipeline.OcrText.__module__ == 'pipeline.tasks'")
    run_python("-c", check)


def test_luigi_module_pipeline_finds_every_task():
    for task in ("IndexAll", "Redrive"):  # from pipeline.tasks and from pipeline.ops.redrive
        done = run_python("-m", "luigi", "--module", "pipeline", task, "--help")
        assert "--docket" in done.stdout, (task, done.stdout)


# The parent runs as a Luigi process would: luigi and the tasks imported, then an extract
# pool. Each worker reads the PDF with the real reader and reports its own sys.modules.
# (The reader is defined at the top of this script: workers find it in their copy of the
# main script, which has nothing else at its top level.)
POOL_SCRIPT = '''
import dataclasses
import json
import sys

from pipeline.extract.readers import read_attachment


def read_and_report(path, filename, limits):
    text = read_attachment(path, filename, limits)
    return dataclasses.replace(text, reason=json.dumps(sorted(sys.modules)))


if __name__ == "__main__":
    import luigi  # noqa: F401
    from pipeline import IndexAll  # noqa: F401
    from pipeline.extract.pool import ExtractPool, FileJob, ItemJob
    from pipeline.extract.readers import ExtractLimits

    assert "pipeline.tasks" in sys.modules and "peewee" in sys.modules  # a heavy parent
    with ExtractPool(ExtractLimits(), 1, reader=read_and_report) as pool:
        [result] = pool.map([ItemJob("item", (FileJob(sys.argv[1], "letter.pdf"),))])
    [text] = result.texts
    print(json.dumps({"status": text.status, "pages": text.pages, "modules": json.loads(text.reason)}))
'''


def test_an_extract_worker_reads_a_pdf_without_the_stack(tmp_path):
    import pymupdf

    pdf = tmp_path / "letter.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "A letter long enough to be a comment of its own, not a stub.")
        doc.save(pdf)
    script = tmp_path / "pool_imports.py"
    script.write_text(POOL_SCRIPT)

    report = json.loads(run_python(str(script), str(pdf), cwd=tmp_path).stdout)

    assert (report["status"], report["pages"]) == ("ok", 1)
    modules = set(report["modules"])
    assert "pymupdf" in modules  # the worker really read the PDF itself
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert not {"pipeline.tasks", "pipeline.store", "pipeline.runtime"} & modules
