"""The core of llm-serving: plain Python, no Pulumi engine, imported by the program
(``components/``), the policy pack (``policies/``) and the offline tools (``tools/``).

- :mod:`core.facts`: the facts as constants, with sources; the annotation contract;
- :mod:`core.inventory`: nodes, cards, memory;
- :mod:`core.modelfacts`: model facts and the catalog of public models;
- :mod:`core.capacity`: the weights and KV-cache estimator;
- :mod:`core.quantity`: the one Kubernetes quantity parser;
- :mod:`core.allocation`: the one per-node allocation (cards or memory, surge, packing);
- :mod:`core.rules`: every rule the stack file and the pack share, as predicates over plain values.

Nothing here imports ``components``, ``policies``, ``tools``, Pulumi or pulumi_kubernetes.
"""
