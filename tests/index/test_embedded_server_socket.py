"""The embedded index server trusts every connection on its socket, so the socket lives where
only the store's owner can reach it: in pgdata, or, when a deep data folder makes that path
too long for a unix socket, in a short private folder (mode 0700) — never in a folder other
local users may enter. Another user trying the socket is refused by the file system."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import psycopg2
import pytest

from pipeline.index import embedded_server

pytestmark = pytest.mark.postgres

DEEP = "a-rather-long-folder-name-for-the-data-of-docketeer"


def _deep_data_folder(tmp_path: Path) -> Path:
    data = tmp_path / DEEP / DEEP
    assert len(str(data / "index-pg" / ".s.PGSQL.5432")) > 107  # too long: the socket moves
    return data


def _enterable_by_others(socket: Path) -> list[Path]:
    """The folders above the socket that let a user other than their owner through: all of
    them do unless one of them is closed to others (no x bit for group and others)."""
    closed = [folder for folder in socket.parents if os.stat(folder).st_mode & 0o011 == 0]
    return [] if closed else list(socket.parents)


def _connect_as(user: str, url: str) -> str:
    """Try ``url`` in a child process that became ``user``: "connected" or the error."""
    entry = pwd.getpwnam(user)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # libpq is loaded already: the child needs no file of this install
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            try:
                psycopg2.connect(url, connect_timeout=5).close()
                answer = "connected"
            except psycopg2.Error as exc:
                answer = f"refused: {exc}"
            os.write(write, answer.encode()[:4000])
        finally:
            os._exit(0)  # never the parent's exit hooks (they would stop its server)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read().decode()
    os.waitpid(child, 0)
    return answer


def test_a_deep_data_folder_puts_the_socket_in_a_private_folder(tmp_path):
    data = _deep_data_folder(tmp_path)
    server = embedded_server.acquire(data)
    try:
        socket = server.get_postmaster_info().socket_path
        assert socket.is_socket() and len(os.fsencode(socket)) <= 107
        assert not _enterable_by_others(socket), [oct(os.stat(p).st_mode) for p in socket.parents]
        private = socket.parent.parent
        assert stat.S_IMODE(os.lstat(private).st_mode) == 0o700 and not private.is_symlink()
        with psycopg2.connect(embedded_server.database_url(server)) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
    finally:
        embedded_server.release(server)
    again = embedded_server.acquire(data)  # the next start uses the same private folder again
    try:
        assert again.get_postmaster_info().socket_path == socket
    finally:
        embedded_server.release(again)


@pytest.mark.skipif(os.geteuid() != 0, reason="another user is tried as root only")
def test_as_root_with_a_deep_data_folder_another_user_cannot_reach_the_server(tmp_path):
    """Run as root, the server runs as its own account; nobody (another local user) gets
    no connection, where the wheel's fallback folder (mode 0777, trust) let it in as the
    superuser."""
    data = _deep_data_folder(tmp_path)
    server = embedded_server.acquire(data)
    try:
        url = embedded_server.database_url(server)
        assert _connect_as("root", url) == "connected"  # the store's owner is served
        answer = _connect_as("nobody", url)
        assert answer.startswith("refused") and "Permission denied" in answer, answer
    finally:
        embedded_server.release(server)


@pytest.mark.skipif(os.geteuid() != 0, reason="a folder of another user is made as root only")
def test_a_recorded_socket_folder_someone_else_made_is_not_used(tmp_path):
    """The data folder records its private socket folder; a folder of that name that is not
    the server account's own and private (another user made it after /tmp was cleaned) is
    passed over for a new one."""
    data = _deep_data_folder(tmp_path)
    server = embedded_server.acquire(data)
    socket = server.get_postmaster_info().socket_path
    embedded_server.release(server)
    planted = socket.parent.parent
    nobody = pwd.getpwnam("nobody")
    os.chown(planted, nobody.pw_uid, nobody.pw_gid)
    planted.chmod(0o777)
    server = embedded_server.acquire(data)
    try:
        moved = server.get_postmaster_info().socket_path
        assert moved.parent.parent != planted and not _enterable_by_others(moved)
    finally:
        embedded_server.release(server)


def test_a_socket_folder_is_closed_to_others_when_a_folder_on_its_way_is(tmp_path):
    open_chain = tmp_path / "open" / "socket"
    open_chain.mkdir(parents=True)
    for folder in (tmp_path, tmp_path / "open", open_chain):
        folder.chmod(0o755)
    assert embedded_server.closed_to_others(open_chain) is bool(_closed_above(tmp_path))
    (tmp_path / "open").chmod(0o700)
    assert embedded_server.closed_to_others(open_chain)


def _closed_above(folder: Path) -> list[Path]:
    return [f for f in folder.parents if os.stat(f).st_mode & 0o011 == 0]
