"""``python -m dedup.cli``: the ``dedup`` console script without installing it."""
from . import main

raise SystemExit(main())
