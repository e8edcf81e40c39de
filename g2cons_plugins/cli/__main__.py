"""``python -m g2cons_plugins.cli``."""

import sys

from . import main

sys.exit(main())
