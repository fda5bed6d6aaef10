from bankdays.cli import main

raise SystemExit(main())
