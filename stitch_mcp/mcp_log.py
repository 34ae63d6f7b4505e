"""MCP log messages: what the client reads besides results (the logging capability).

Warnings from stitch_mcp's loggers are held and sent with the next tool call; the MCP layer sends
each progress step at level info. A handshake-era client picks the level with logging/setLevel
(default warning); a 2026 client opts in per request and the SDK filters. stderr keeps the full
log for people.
"""

from __future__ import annotations

import logging
import warnings
from collections import deque

from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning

from stitch_mcp.mcp_roots import is_legacy

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class ClientLog(logging.Handler):
    """Warnings from stitch_mcp's loggers, held until a tool call sends them to the client as MCP log
    messages; progress goes the same way at level info. The client picks the level with
    logging/setLevel (default warning); stderr keeps the full log for humans."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.pending: deque[tuple[str, str, str]] = deque(maxlen=100)
        self.level_name = "warning"

    def emit(self, record: logging.LogRecord) -> None:
        level = record.levelname.lower() if record.levelname.lower() in LOG_LEVELS else "warning"
        self.pending.append((level, record.name, record.getMessage()))

    async def send(self, ctx: Context | None, level: str, message: str, logger: str = "stitch_mcp") -> None:
        if ctx is None:
            return
        # Handshake-era clients choose the level with logging/setLevel; 2026 clients per request (SDK-filtered).
        if is_legacy(ctx) and LOG_LEVELS.index(level) < LOG_LEVELS.index(self.level_name):
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            try:
                await ctx.log(level, message, logger_name=logger)  # type: ignore[arg-type]
            except Exception:  # a closed stream: the message stays on stderr
                pass

    async def flush_to(self, ctx: Context | None) -> None:
        while self.pending and ctx is not None:
            level, name, message = self.pending.popleft()
            await self.send(ctx, level, message, name)


client_log = ClientLog()
logging.getLogger("stitch_mcp").addHandler(client_log)
