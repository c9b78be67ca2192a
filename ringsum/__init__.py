"""The `ringsum` command: the one place that wires the harness (config -> plan -> run -> results,
check, tune) and the analysis (report, collect) together. Imports go one way, ringsum -> analysis
-> harness (tests/test_layout.py)."""
