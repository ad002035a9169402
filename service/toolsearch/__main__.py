from toolsearch.cli import main

raise SystemExit(main())
