"""The catalogs as data (``core/data/``) and their readers: GPU cards and compute-capability
thresholds (``cards``), image references (``images``), model facts (``modelfacts``), the data files
(``datafile``) and their JSON Schemas (``schemas``, ``python -m`` writes them)."""
