"""Run one benchmark by name: ``python -m bench NAME [ARGS...]`` (``python3 dev.py bench NAME``).

NAME is the module ``bench/<NAME>_bench.py``: ``preview`` (the offline preview as a whole
process, prod and a generated 100-node stack) or ``pack`` (policy pack evaluation at 1,000 ..
10,000 resources). Without a NAME, lists them. The remaining arguments go to the benchmark's
own ``main``.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    """The benchmark names: modules ``bench/<name>_bench.py``."""
    return sorted(m.name[: -len("_bench")] for m in pkgutil.iter_modules([str(HERE)]) if m.name.endswith("_bench"))


def main(argv: list[str]) -> int:
    known = names()
    if argv and argv[0] in ("-h", "--help"):
        print(f"usage: python3 dev.py bench NAME [ARGS...], NAME one of: {', '.join(known)}; "
              "python3 dev.py bench NAME --help for its options")
        return 0
    if not argv or argv[0] not in known:
        what = f"unknown benchmark {argv[0]!r}; " if argv else ""
        print(f"{what}usage: python3 dev.py bench NAME [ARGS...], NAME one of: {', '.join(known)}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{argv[0]}_bench")
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
