"""``python -m pipeline.cli``: the same as ``listclean``."""

import sys

from pipeline.cli import main

sys.exit(main())
