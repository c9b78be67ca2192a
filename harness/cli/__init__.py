"""The `ringsum` command line: its parsers, and the one place that wires the packages together."""
