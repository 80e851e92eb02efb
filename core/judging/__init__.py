"""How a verdict is recorded and worded: the one message form (``problems``: Problem, ConfigError,
Finding), the rule registry (``registry``: one Rule record a rule, Breach, Setting) and the fix in
the user's own terms (``terms``). The rule families themselves are ``core/rulebook/``."""
