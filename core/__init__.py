"""The core of llm-serving: plain Python, no Pulumi engine, imported by the program
(``components/``), the policy pack (``policies/``) and the offline tools (``tools/``).

Cut by job, one package a layer; each imports only the layers below it
(``tests/project/test_core_layering.py``; docs/layout.md):

- ``core/base/``: the facts with their sources, the stack config keys, input files, YAML 1.2;
- ``core/judging/``: the message form (problems), the rule registry, the fix in the user's terms;
- ``core/k8s/``: Kubernetes' value rules and types (names, quantities, placement, traffic), YAML 1.1;
- ``core/catalog/``: the catalogs of ``core/data/``: cards, images, models;
- ``core/engines/``: the servers' flags, settings models, the contract per release, served names;
- ``core/capacity/``: inventory, measured figures, per-node allocation, the KV-cache estimator;
- ``core/k8s/manifests/``: the manifest read model (above capacity: it reads a pod's cards);
- ``core/rulebook/``: every rule family, as the stack file, the component args and the pack judge.

Nothing here imports ``components``, ``policies``, ``tools``, Pulumi or pulumi_kubernetes.
"""
