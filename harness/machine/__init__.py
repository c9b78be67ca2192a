"""The machine a run changes and reads: page cache, system settings, the private state directory, signals, child processes, the fingerprint."""
