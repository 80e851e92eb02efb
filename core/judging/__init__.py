"""core/judging/: see docs/layout.md."""
