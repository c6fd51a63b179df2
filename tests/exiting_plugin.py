"""A plug-in that calls ``sys.exit`` at import (issue 12: every command exited 3 with no output)."""

import sys

sys.exit(3)
