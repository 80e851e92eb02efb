"""Kubernetes' own value rules and the types built on them: names and labels (``kube``), quantities
(``quantity``), the stack file's value types (``values``), where a workload runs (``placement``),
who reaches the servers (``traffic``), YAML as kubectl reads it (``yaml11``). The manifest read
model, ``manifests/``, is a layer of its own above ``core/capacity/`` (it reads a pod's cards)."""
