"""docketeer: a Luigi pipeline keeping a local, searchable copy of regulations.gov comments.

``luigi --module pipeline IndexAll`` imports this package; the task classes live in
``pipeline.tasks`` and are re-exported here so Luigi finds them by name.
"""

from pipeline.redrive import Redrive  # noqa: E402,F401
from pipeline.tasks import (  # noqa: F401
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
