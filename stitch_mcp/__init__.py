"""stitch-mcp: the Verifier of a Plan -> Code -> Verify loop for GPU programs, served over MCP."""

__version__ = "0.1.0"
