"""Serving over stdio or streamable HTTP (loopback by default; a token is required elsewhere)."""

from __future__ import annotations

import hmac
import ipaddress
import logging

from stitch_mcp.errors import UserError

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerTokenMiddleware:
    """Answers 401 to any HTTP request without `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if not (given.startswith(b"Bearer ") and hmac.compare_digest(given[7:].strip(), self.token)):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def http_app(mcp, host: str, port: int, token: str = ""):
    """The ASGI app: DNS-rebinding protection on, bearer token checked when one is set."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host) and not token:
        raise UserError(f"refusing to serve on {host} without an auth token: set STITCH_AUTH_TOKEN or --token, "
                        "or bind 127.0.0.1")
    hosts = {host, f"{host}:{port}", "127.0.0.1", f"127.0.0.1:{port}", "localhost", f"localhost:{port}"}
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=sorted(hosts),
        allowed_origins=sorted({f"http://{h}" for h in hosts}))
    app = mcp.streamable_http_app(transport_security=security, host=host)
    return BearerTokenMiddleware(app, token) if token else app


def serve_http(mcp, host: str, port: int, token: str = "") -> None:
    import uvicorn

    app = http_app(mcp, host, port, token)
    log.info("serving streamable HTTP on http://%s:%d/mcp%s", host, port, " (token required)" if token else "")
    uvicorn.run(app, host=host, port=port, log_level="warning")
