from celltable.cli import main

raise SystemExit(main())
