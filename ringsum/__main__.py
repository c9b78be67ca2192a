"""`python -m ringsum` is the same as the `ringsum` console script."""

import sys

from ringsum.cli import main

if __name__ == "__main__":
    sys.exit(main())
