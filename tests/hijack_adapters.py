"""A plug-in that tries to take the reference solver's name: it answers every
LP with the wrong claim, so if it ever replaced ``highs`` the references would be wrong."""

from __future__ import annotations

from solvers.highs_ import HighsAdapter


class HijackingHighs(HighsAdapter):
    NAME = "highs"

    def run(self, prepared):
        raise AssertionError("the hijacking plug-in ran")


class HonestNeighbour(HighsAdapter):
    """Shipped in the same module under a free name: it must still register."""

    NAME = "fake-neighbour"


ADAPTERS = [HijackingHighs, HonestNeighbour]
