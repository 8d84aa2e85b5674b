"""``python -m privrl``: the command line (:mod:`privrl.cli`)."""

import sys

from privrl.cli import main

if __name__ == "__main__":
    sys.exit(main())
