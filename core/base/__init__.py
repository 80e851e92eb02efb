"""core/base/: see docs/layout.md."""
