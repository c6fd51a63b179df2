"""Jobs for the worker processes of ``bench.engine.execute`` (imported there by name, from tests/)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def dump_environ(path: str, *, parent_pid: int) -> None:
    """Write this worker's environment to ``path`` as JSON."""
    Path(path).write_text(json.dumps(dict(os.environ)))
