"""`ringsum run`'s pipeline, one stage a module: config -> plan -> run -> results -> verdict."""
