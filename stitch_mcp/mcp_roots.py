"""The client's MCP roots as the allowed folders for paths (the MCP side of sources.allowed_roots).

A tool that reads a path argument takes a `ClientRoots` parameter: the SDK resolves it before the
tool runs, and the tool hands it to `use_client_roots`, which sets sources.client_roots for the
call and the jobs it starts. The allowed_roots setting, when set, wins and no roots are asked for.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Resolve
from mcp.server.mcpserver.resolve import ListRoots
from mcp.shared.message import ServerMessageMetadata
from mcp.types import ListRootsRequest, ListRootsResult

from stitch_mcp.config import get_settings

log = logging.getLogger(__name__)

ROOTS_TIMEOUT_S = 10.0  # a client that declares roots but never answers must not stall every call
MODERN_PROTOCOL = "2026-07-28"  # and later: server requests ride the call (input-required), no back-channel


def is_legacy(ctx: Context) -> bool:
    return (ctx.protocol_version or "") < MODERN_PROTOCOL


async def client_roots_resolver(ctx: Context):
    """Resolver: the client's roots when it offers them and the allowed_roots setting is unset. On a
    handshake-era connection a client that fails roots/list leaves the default folders (with a warning)
    instead of failing the call."""
    caps = ctx.client_capabilities
    if get_settings().allowed_roots or caps is None or caps.roots is None:
        return None
    if not is_legacy(ctx):
        return ListRoots()
    if not getattr(ctx.session, "can_send_request", True):
        return None
    try:  # on the call's own stream (streamable HTTP: no standalone stream needed), never for long
        with anyio.fail_after(ROOTS_TIMEOUT_S):
            return await ctx.session.send_request(
                ListRootsRequest(), ListRootsResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
    except Exception as exc:
        log.warning("the client offers roots but roots/list failed (%s): using the default allowed folders",
                    exc or type(exc).__name__)
        return None


# Every tool that reads a path argument takes the client's roots through this parameter.
ClientRoots = Annotated[ListRootsResult | None, Resolve(client_roots_resolver)]


def use_client_roots(roots: ListRootsResult | None) -> None:
    """Use the client's file:// roots as the allowed folders for this call (and the jobs it starts)."""
    from urllib.parse import unquote, urlparse

    from stitch_mcp.sources import client_roots

    if roots is None:
        return
    folders = tuple(Path(unquote(urlparse(str(r.uri)).path)).resolve() for r in roots.roots
                    if str(r.uri).startswith("file://"))
    client_roots.set(folders or None)
