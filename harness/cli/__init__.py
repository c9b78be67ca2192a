"""The `ringsum` command line: one module per command group (run in main.py, check, tune, info),
and main.py, the one place that wires the packages together."""
