"""The model servers: each flag declared once (``flags``), the settings models and their argv
(``config``: VllmConfig, CandleConfig, ServerSettings), the settings the rules name (``settings``),
vLLM's contract per release (``contracts``) and its served model names (``served_names``)."""
