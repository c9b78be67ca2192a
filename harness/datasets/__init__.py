"""What a command reads: a dataset (one file or a tree of many), and making the ones that are missing."""
