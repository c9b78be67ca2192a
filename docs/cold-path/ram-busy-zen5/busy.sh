#!/bin/sh
# busy.sh CMD...: the command's wall time and the whole machine's busy CPU time meanwhile (from /proc/stat)
read _ u n s i w x y z rest < /proc/stat
t0=$(date +%s%N); "$@" > /dev/null; t1=$(date +%s%N)
read _ u2 n2 s2 i2 w2 x2 y2 z2 rest < /proc/stat
echo "wall $(( (t1 - t0) / 1000000 )) ms, busy $(( ((u2+n2+s2+x2+y2+z2) - (u+n+s+x+y+z)) * 10 )) ms (user+nice+sys+irq+softirq+steal)"
