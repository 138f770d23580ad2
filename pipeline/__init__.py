"""docketeer: a Luigi pipeline keeping a local, searchable copy of regulations.gov comments.

``luigi --module pipeline IndexAll`` imports this package; the task classes live in
``pipeline.tasks`` and are re-exported here so Luigi finds them by name.
"""

import os

# A PDF or embedding library may bring onnxruntime along (pymupdf 2 does), whose telemetry
# on Linux and macOS writes a device id under ~/.cache and a file in $TMPDIR at import and
# reports to Microsoft: set before anything imports it, this opts out (a user's own
# ORT_DISABLE_TELEMETRY setting wins). docketeer writes only to its data folder.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from pipeline.redrive import Redrive  # noqa: E402,F401
from pipeline.tasks import (  # noqa: E402,F401
    BackfillAll,
    BackfillComments,
    DiscoverDockets,
    DocketStageTask,
    DocketWrapper,
    ExtractAll,
    ExtractText,
    FetchAll,
    FetchComments,
    IndexAll,
    IndexDocket,
    OcrAll,
    OcrText,
)
