#!/bin/bash
# make-demo-branch.sh NAME SLOW_AT SLEEP_US BASE: nine commits on top of BASE, the SLOW_AT-th (0: none)
# making every hash wait SLEEP_US microseconds first; the branches docs/history.md bisects.
# Run it in a scratch worktree (git worktree add --detach DIR BASE), never in a checkout with work.
set -e
name=$1 at=$2 us=$3 base=${4:?BASE}
git checkout -q --detach "$base"
for i in 1 2 3 4 5 6 7 8 9; do
  echo "demo commit $i of $name" >> docs/demo-bisect-notes.md
  if [ "$i" = "$at" ]; then
    python3 - "$us" <<'PY'
import sys
from pathlib import Path
p = Path("hashers/main.c"); t = p.read_text()
t = t.replace("\tret = parse_options(&opts, argc, argv, v);\n\tif (ret >= 0)\n\t\treturn ret;\n",
              "\tret = parse_options(&opts, argc, argv, v);\n\tif (ret >= 0)\n\t\treturn ret;\n\tusleep(%s); /* demo: an injected slowdown */\n" % sys.argv[1], 1)
p.write_text(t)
PY
    git commit -q -am "demo $name $i: every hash waits ${us} us first (the injected slowdown)"
  else
    git add -A && git commit -q -m "demo $name $i: a note, nothing else"
  fi
done
git branch -f "$name" HEAD
