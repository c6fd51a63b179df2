"""asv benchmarks of contactbench (see ``benchmarks.py``; configured by ``asv.conf.json``)."""
