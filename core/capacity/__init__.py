"""What fits on a node and a card: the cluster inventory (``inventory``), what was measured
(``measured``), the per-node allocation of cards or memory (``allocation``), the weights and
KV-cache estimator (``estimator``) and the estimate beside the measurement (``comparison``)."""
