"""A plug-in that calls ``sys.exit`` at import (every command exited 3 with no output)."""

import sys

sys.exit(3)
