from pipekit.cli import main

raise SystemExit(main())
