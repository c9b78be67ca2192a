"""ringsum harness: sweep driver for io_uring BLAKE3 file hashers.

Pipeline: config (TOML -> dataclasses) -> plan (grid expansion -> Commands)
-> run (rounds, hyperfine, incremental results) -> results (runs.csv, meta.json).
"""

__version__ = "0.1.0"
