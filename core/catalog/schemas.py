"""Every catalog of ``core/data/`` (the model catalog, the card catalog), and the command that
writes their JSON Schemas from the pydantic models they load into:

    python -m core.catalog.schemas
"""

from __future__ import annotations

import sys

from core.catalog import cards, images, modelfacts
from core.catalog.datafile import Catalog


def catalogs() -> tuple[Catalog, ...]:
    """Every data file of core/data/: the model catalog, the card catalog, the image catalog."""
    return (modelfacts.CATALOG_FILE, cards.CARDS_FILE, images.IMAGES_FILE)


def main() -> int:
    """Write every catalog's schema to ``core/data/``."""
    for catalog in catalogs():
        catalog.schema_path.write_text(catalog.schema_text(), encoding="utf-8")
        print(f"wrote core/data/{catalog.schema_path.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
