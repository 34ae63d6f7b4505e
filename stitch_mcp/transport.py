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


# ------------------------------------------------------------------ stdio

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def _surrogate_path(value, path: str = "") -> tuple[str, int] | None:
    """(where, character index) of the first lone surrogate in a parsed JSON value, if any."""
    if isinstance(value, str):
        for i, ch in enumerate(value):
            if "\ud800" <= ch <= "\udfff":
                return path or "(value)", i
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _surrogate_path(item, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


def unreadable_reply(line: str) -> dict | None:
    """The JSON-RPC answer to a line the SDK could not read, as a plain dict (None: a notification,
    which gets no answer). Malformed JSON: -32700 with id null. JSON holding a lone surrogate
    (`\\ud800`, valid JSON but not Unicode text): a tools/call gets a tool error naming the argument,
    any other request -32602 naming the field. Anything else: -32600 invalid request."""
    import json

    try:
        message = json.loads(line)
    except (ValueError, TypeError) as exc:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": f"Parse error: {exc}"}}
    if not isinstance(message, dict) or "id" not in message or not isinstance(message["id"], (str, int)):
        return None if isinstance(message, dict) and "method" in message and "id" not in message else {
            "jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "Invalid Request"}}
    found = _surrogate_path(message.get("params"))
    if found is None:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": INVALID_REQUEST, "message": "Invalid Request"}}
    where, index = found
    if message.get("method") == "tools/call" and where.startswith("arguments."):
        field = where[len("arguments."):]
        text = (f"{field}: the text holds a lone surrogate (\\u{ord(message['params']['arguments'][field][index]):04x}"
                f" at character {index}), which is not Unicode text; send the program as UTF-8"
                if isinstance(message["params"]["arguments"].get(field), str) else
                f"{field}: a string in it holds a lone surrogate, which is not Unicode text")
        return {"jsonrpc": "2.0", "id": message["id"],
                "result": {"content": [{"type": "text", "text": text}], "isError": True}}
    return {"jsonrpc": "2.0", "id": message["id"], "error": {
        "code": INVALID_PARAMS, "message": f"params.{where}: a lone surrogate at character {index} is not Unicode text"}}


def _unreadable_line(exc: Exception) -> str | None:
    """The raw line inside the SDK's validation error for a message it could not read."""
    errors = getattr(exc, "errors", None)
    if errors is None:
        return None
    try:
        first = errors()[0]
    except Exception:
        return None
    value = first.get("input")
    return value if isinstance(value, str) else None


async def serve_stdio(mcp) -> None:
    """Serve over stdio like MCPServer.run(), answering the lines the SDK drops silently: malformed
    JSON gets a parse error and a lone surrogate a clear error, and the server keeps answering."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    async with stdio_server() as (read_stream, write_stream):
        to_server_send, to_server_receive = anyio.create_memory_object_stream(0)

        async def sift() -> None:
            async with to_server_send:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        await to_server_send.send(item)
                        continue
                    line = _unreadable_line(item)
                    reply = unreadable_reply(line) if line is not None else None
                    code = (reply or {}).get("error", {}).get("code", "a tool error" if reply else "no reply")
                    log.warning("answered an unreadable line on stdin with %s: %s", code,
                                (str(item).splitlines()[1:2] or [""])[0].strip()[:160])
                    if reply is not None:
                        await write_stream.send(SessionMessage(jsonrpc_message_adapter.validate_python(reply)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(sift)
            server = mcp._lowlevel_server
            await server.run(to_server_receive, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()
