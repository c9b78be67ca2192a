"""`python -m analysis RUN_DIR [RUN_DIR ...] [-o OUT]`: the same as `ringsum report`."""

import sys

from analysis.cli import main

sys.exit(main())
