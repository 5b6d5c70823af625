"""``python -m preflight <stack>`` (preflight/cli.py)."""

from __future__ import annotations

import sys

from preflight.cli import main

sys.exit(main())
