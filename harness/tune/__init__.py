"""`ringsum tune`: the best hasher configuration for this machine without running the full grid."""
