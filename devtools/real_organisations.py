"""The real comments of ``../shared/realdata/mirror`` as backfill leaves them, for the
organisations stage alone: each comment's record read by the pipeline's own parser
(``pipeline.sources.records.detail_fields``: the field, the body as text, the submitter) and
its title, written to the state DB by ``organisation_corpus.seed_store``. No server, no
files: the stage reads nothing else (a docket whose mirror holds no docket record, as the
CDO dockets' does not, is resolved all the same)."""

from __future__ import annotations

import json
from pathlib import Path

from devtools.organisation_corpus import PlantedComment
from pipeline.sources.records import detail_fields


def real_comments(realdata: Path) -> list[PlantedComment]:
    """Every comment record under ``realdata/mirror/raw-data``, in key order (``organisation``
    None: the share holds no truth about them)."""
    found = []
    for path in sorted((realdata / "mirror" / "raw-data").glob("*/*/text-*/comments/*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        data = record["data"]
        fields = detail_fields(record)
        docket = data["attributes"].get("docketId") or path.parts[-4]
        found.append(PlantedComment(data["id"], docket, fields["submitter"] or "", fields["organization"] or "",
                                    data["attributes"].get("title") or "", fields["body"] or "", None))
    return found
