"""The harness: references, verification, the run grid, reports and the CLI."""
