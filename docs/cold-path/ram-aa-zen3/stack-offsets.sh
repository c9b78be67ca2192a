#!/bin/sh
# Where a new process's stack starts, modulo a 4 KiB page, over N executions of one command line
# (field 28 of /proc/PID/stat, the start of the stack): with randomize_va_space = 2 the kernel moves
# the stack pointer down by a random 0-8 KiB (16-byte steps) at every exec, below the arguments and
# environment, so their length cannot fix where the stack lands. Prints the setting, then
# "distinct offsets of N", for the bare command line and for one with a 1000-byte variable.
n=${1:-400}
echo "randomize_va_space $(cat /proc/sys/kernel/randomize_va_space)"
bare=$(for i in $(seq "$n"); do awk '{print $28 % 4096}' /proc/self/stat; done | sort -u | wc -l)
pad=$(head -c 1000 /dev/zero | tr '\0' x)
padded=$(for i in $(seq "$n"); do env PAD="$pad" awk '{print $28 % 4096}' /proc/self/stat; done | sort -u | wc -l)
echo "bare: $bare distinct offsets of $n (256 possible)"
echo "1000-byte variable: $padded distinct offsets of $n (256 possible)"
