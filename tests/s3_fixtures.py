"""A real S3 endpoint for tests: moto's server on loopback, spoken to over HTTP by boto3.

A test module makes them visible by binding them as module attributes
(``s3_client = s3_fixtures.s3_client``), until they move to conftest.py.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """One moto S3 server for the session, on 127.0.0.1 and a free port."""
    server_module = pytest.importorskip("moto.server")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="session")
def s3_client(s3_endpoint):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 2, "mode": "standard"}),
        **FAKE_CREDENTIALS,
    )


@pytest.fixture
def s3_bucket(s3_client) -> str:
    """A fresh, empty bucket per test (the server is shared, so names are unique)."""
    name = f"dkt-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_credentials_env(monkeypatch):
    """Credentials in the environment, for code that builds its own boto3 client."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_CREDENTIALS["aws_secret_access_key"])
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def upload_tree(client, bucket: str, root: Path, prefix: str = "") -> int:
    """Copy every file under ``root`` to ``bucket`` as ``prefix + relative path``."""
    count = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        client.upload_file(str(path), bucket, prefix + path.relative_to(root).as_posix())
        count += 1
    return count
