"""core/engines/: see docs/layout.md."""
