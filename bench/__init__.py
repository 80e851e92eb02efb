"""Benchmarks (not tests): each prints medians of several runs. ``python3 dev.py bench NAME``
runs ``bench/<NAME>_bench.py`` (see ``bench/__main__.py``)."""
