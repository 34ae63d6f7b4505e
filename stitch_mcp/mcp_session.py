"""Which history an MCP call belongs to (store.py keeps parents, feedback and routing per session)."""

from __future__ import annotations

import hashlib

from mcp.server.mcpserver import Context

from stitch_mcp.config import get_settings


def session_of(ctx: Context | None) -> str | None:
    """The history a call belongs to: the `session` setting when set; else the streamable HTTP
    session (its Mcp-Session-Id); else the server's own (a stdio server serves one client)."""
    configured = get_settings().session
    if configured or ctx is None:
        return configured or None
    try:
        headers, server = ctx.headers, ctx.mcp_server
    except Exception:  # no request context (a direct call): the default session
        return None
    http_session = (headers or {}).get("mcp-session-id")
    if http_session:
        return "mcp-" + hashlib.sha256(http_session.encode()).hexdigest()[:12]
    return getattr(server, "stitch_session", None)
