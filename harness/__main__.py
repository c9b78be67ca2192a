"""`python -m harness` is the same as the `ringsum` console script."""

import sys

from harness.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
