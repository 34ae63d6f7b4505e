"""`python server.py` starts the same server as `stitch-mcp serve` (works from a source checkout)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stitch_mcp.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["serve", *sys.argv[1:]]))
