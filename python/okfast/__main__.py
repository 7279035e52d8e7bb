"""``python -m okfast`` runs the CLI."""

from okfast.cli import main

raise SystemExit(main())
