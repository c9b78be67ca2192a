"""A finished run and its judgement: the run directory's files (results.py, their one schema), the
one reader of a run (load.py), the pairing of commands' rounds, the verdict and summary (verdict.py),
the decision (decision.py), looking again --until-decided (sequential.py) and the robust pick across
conditions (robust.py). Below the pipeline, check, tune, compare and analysis, which all judge runs
by it; it runs nothing."""
