from stitch_mcp.cli import main

raise SystemExit(main())
