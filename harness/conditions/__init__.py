"""Machine conditions: the same commands measured as other machines would run them (one core, a
read cap, a RAM disk, a SIMD level)."""
