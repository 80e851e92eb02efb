"""core/capacity/: see docs/layout.md."""
