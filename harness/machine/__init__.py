"""The machine a run changes and reads: the page cache, system settings, the private state
directory, signals, child processes, and the fingerprint."""
