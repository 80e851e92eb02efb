"""What every layer of core reads, importing nothing of the project: the facts as constants
with their sources (``facts``), the stack config keys (``stackkeys``), the one reader of input
files and the project directory (``inputs``), YAML as the Pulumi CLI reads it (``yaml12``)."""
