"""Building the source clients a stage needs from the settings (one place, secrets included)."""

from __future__ import annotations

from pipeline.config import Settings
from pipeline.sources.http import RequestBudget
from pipeline.sources.regulations_gov import RegulationsGovClient, download_headers_of


def request_budget(settings: Settings, deadline: float | None) -> RequestBudget:
    return RequestBudget(settings.request_budget or None, deadline)


def regulations_gov(settings: Settings, budget: RequestBudget) -> RegulationsGovClient:
    return RegulationsGovClient(
        settings.api_base, settings.api_key, pace_seconds=settings.pace_seconds, budget=budget,
        max_attempts=settings.http_attempts, request_seconds=settings.request_seconds,
        download_hosts=tuple(settings.download_hosts.split(",")),
        download_headers=download_headers_of(settings.download_headers),
        max_json_bytes=settings.max_json_bytes, max_json_depth=settings.max_json_depth,
    )


def federal_register(settings: Settings, budget: RequestBudget):
    from pipeline.sources.federal_register import FederalRegisterClient

    return FederalRegisterClient(settings.fr_base, budget=budget, pace_seconds=settings.pace_seconds,
                                 max_attempts=settings.http_attempts, request_seconds=settings.request_seconds)


def list_source(settings: Settings) -> str:
    """"api" or "mirror": where fetch lists a docket. The mirror needs no key, so a mirror
    user without one lists from it; anyone with a key gets the API's fresher list."""
    if settings.list_source != "auto":
        return settings.list_source
    return "mirror" if settings.source == "mirror" and not settings.api_key else "api"


def mirror(settings: Settings):
    from pipeline.sources.mirror import open_mirror
    from pipeline.sources.s3 import UNSIGNED_MODES

    opened = open_mirror(
        settings.mirror_url,
        s3_endpoint_url=settings.s3_endpoint_url or None,
        unsigned=UNSIGNED_MODES[settings.mirror_unsigned],
        concurrency=settings.mirror_concurrency,
        retry_mode=settings.s3_retry_mode,
        max_attempts=settings.s3_max_attempts,
    )
    opened.max_json_bytes, opened.max_json_depth = settings.max_json_bytes, settings.max_json_depth
    return opened
