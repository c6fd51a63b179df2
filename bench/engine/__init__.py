"""The run engine: grids, problem sets, runs, cells in supervised processes or on Dask, the reference and the verifier."""
