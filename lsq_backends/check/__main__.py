"""``python -m lsq_backends.check [--quick] [--backends ...] [--json PATH]``."""

from . import main

raise SystemExit(main())
