"""The core of llm-serving: plain Python, no Pulumi engine, imported by the program
(``components/``), the policy pack (``policies/``) and the offline tools (``tools/``).

- :mod:`core.base.facts`: the facts as constants, with sources; the annotation contract;
- :mod:`core.capacity.inventory`: nodes, cards, memory;
- :mod:`core.catalog.modelfacts`: model facts and the catalog of public models;
- :mod:`core.capacity.estimator`: the weights and KV-cache estimator;
- :mod:`core.k8s.quantity`: the one Kubernetes quantity parser;
- :mod:`core.capacity.allocation`: the one per-node allocation (cards or memory, surge, packing);
- :mod:`core.rulebook`: every rule the stack file and the pack share, as predicates over plain values.

Nothing here imports ``components``, ``policies``, ``tools``, Pulumi or pulumi_kubernetes.
"""
