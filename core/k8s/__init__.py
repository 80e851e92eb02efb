"""core/k8s/: see docs/layout.md."""
