"""Which ``Host`` a request to ``docketeer serve`` may name: the page answers only to the
names it listens under, so a web page the user visits elsewhere cannot read the store through
the browser by pointing a name of its own at 127.0.0.1 (DNS rebinding).

Loopback names always; ``--host`` adds the address it binds and, for an address meaning every
interface (``0.0.0.0``, ``::``), this machine's own names. Anything else is 400.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def allowed_hosts(bind: str | None = None) -> frozenset[str]:
    """The names a request may give for a server bound to ``bind``."""
    names = set(LOOPBACK_NAMES)
    if bind:
        names.add(host_name(bind))
        try:
            everywhere = ipaddress.ip_address(host_name(bind)).is_unspecified
        except ValueError:
            everywhere = False
        if everywhere:
            names |= {host_name(socket.gethostname()), host_name(socket.getfqdn())}
    return frozenset(names)


def host_name(header: str) -> str:
    """A Host header's name without its port, lower case: ``[::1]:8080`` is ``::1``."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


class HostCheck:
    """ASGI middleware: 400 for a request whose Host header is not one of ``hosts``."""

    def __init__(self, app, hosts: Iterable[str]) -> None:
        self.app, self.hosts = app, frozenset(host_name(h) for h in hosts)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            given = Headers(scope=scope).get("host", "")
            if host_name(given) not in self.hosts:
                response = PlainTextResponse(
                    f"400: this server answers to {', '.join(sorted(self.hosts))}, not to the Host "
                    f"{given[:100]!r} (docketeer serve --host NAME adds a name)", status_code=400)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
