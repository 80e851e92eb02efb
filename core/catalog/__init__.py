"""core/catalog/: see docs/layout.md."""
