"""Results across commits: `ringsum bisect` finds the first slower commit, each revision built in a
directory of its own under the run directory."""
