"""Packaging tools: the wheelhouse for offline machines, the solver release checker."""
