"""What runs: the hasher variants and their knobs, as the hashers describe them, and the baseline
tools with their roles."""
