"""Errors that the calling model should read.

Stages raise `UserError` for anything the caller can fix (a bad path, an unknown id, a source
that is too large); the MCP layer turns it into a `ToolError`, the CLI into a message and exit 2.
Any other exception is a bug and is logged with its traceback.
"""


class UserError(Exception):
    """A problem with the caller's input, worded for the caller."""


class NotFound(UserError):
    """An id (task, candidate, job, document) that the workspace does not hold."""
