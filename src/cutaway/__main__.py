"""`python -m cutaway` is the `cutaway` command."""

import sys

from cutaway.cli.main import main

sys.exit(main())
