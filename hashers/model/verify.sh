#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Model-check the ring-buffer protocol (ring.pml) with spin; README.md says what each check proves.
#
#   verify.sh            every check, up to queue depth / buffers 4 and 12 blocks (half an hour or
#                        more, and up to 8 GB for one search: README.md)
#   verify.sh --small    the small configurations only (CI, well under 2 minutes)
#   verify.sh --check EXPECT DESIGN QD BUFFERS BLOCKS CHECK [KNOB[=VALUE]...]
#                        one check, e.g. --check pass MULTI 2 2 5 safety RETRIES=2
#     EXPECT  pass: pan must report errors: 0
#             assertion | deadlock | cycle: pan must find that error (a broken design or a
#             BUG_* knob); for deadlock the counterexample trail is printed
#     CHECK   safety: assertions and invalid end states (pan -DSAFETY)
#             liveness: the LTL claim all_hashed under weak fairness (pan -a -f)
#
# One line per check: PASS|FAIL model=... qd=... buffers=... blocks=... check=... and pan's numbers.
# Exits 1 if any check does not give what it expects.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
model=$here/ring.pml
depth=${RINGSUM_MODEL_DEPTH:-200000}	# pan -m; a search that hits it is a failure
memlim=${RINGSUM_MODEL_MEMLIM:-4096}	# MB; pan stops past it ("reached -DMEMLIM bound"): a failure
# pan.c takes longer to compile with -O2 than a small search takes to run: --small and
# --check compile with -O0, the large searches with -O2.
opt=${RINGSUM_MODEL_OPT:-}
# The large searches store states compressed (-DCOLLAPSE) in up to 8 GB: MULTI 4/4/8 RETRIES=2
# outgrew 4 GB without, and pan then stopped short (which verify.sh once read as a pass).
compress=()

die() { echo "fatal: $*" >&2; exit 1; }
command -v spin >/dev/null || die "spin not found: apt-get install spin (or make deps-apt)"
command -v gcc >/dev/null || die "gcc not found"

work=$(mktemp -d "${TMPDIR:-/tmp}/ringsum-model.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0

# Print the MULTI_BLOCKING counterexample, trimmed to the protocol's events: the model's
# printf narrative, the cells when the producer decides to wait, and where each process is
# stuck at the end (with the source line), from `spin -t -p -g`.
show_trail() {
	local dir=$1; shift
	echo "  counterexample (spin -t -p -g $* ring.pml, trimmed):"
	(cd "$dir" && spin -t -p -g "$@" ring.pml) | awk -v src="$dir/ring.pml" '
		BEGIN {
			while ((getline line < src) > 0) source[++n] = line
			v["in_flight"] = v["producer_head"] = v["consumer_head"] = 0	# -g prints changes only
		}
		function snapshot(   s, i) {
			s = "cells:"
			for (i = 0; ("state[" i "]") in v; i++) s = s " " i "=" v["state[" i "]"]
			return s "; in_flight=" v["in_flight"] " producer_head=" v["producer_head"] \
				" consumer_head=" v["consumer_head"]
		}
		/^\t\t(state\[[0-9]+\]|in_flight|producer_head|consumer_head) = / {
			split($0, kv, " = "); gsub(/\t/, "", kv[1]); v[kv[1]] = kv[2]; next
		}
		/^ +(producer|consumer|kernel): / {
			sub(/^ +/, ""); print "    " $0
			if (/wait for a completion/) print "      -> " snapshot()
			next
		}
		/^spin: trail ends/ { print "    " $0 "; where each process is stuck:"; ending = 1; next }
		ending && /^ *[0-9]+:\tproc +[0-9]+ \([a-z]/ {	# (not :init:, done at the start)
			name = $0; sub(/^[^(]*\(/, "", name); sub(/:.*/, "", name)
			ln = $0; sub(/.*ring\.pml:/, "", ln); sub(/ .*/, "", ln)
			text = source[ln]; gsub(/\t/, " ", text); sub(/^ +/, "", text)
			printf "      %-9s ring.pml:%-4s %s%s\n", name, ln, text, \
				($0 ~ /valid end state/ ? "   (a valid end state)" : "")
			next
		}
		END { print "    at the end: " snapshot() }'
}

# check EXPECT DESIGN QD BUFFERS BLOCKS CHECK [KNOB[=VALUE]...]
check() {
	local expect=$1 design=$2 qd=$3 buffers=$4 blocks=$5 kind=$6; shift 6
	local defs=(-DDESIGN="$design" -DQUEUE_DEPTH="$qd" -DBUFFERS="$buffers" -DBLOCKS="$blocks")
	local label="model=$design qd=$qd buffers=$buffers blocks=$blocks" knob
	for knob in "$@"; do defs+=("-D${knob#-D}"); label+=" ${knob#-D}"; done
	label+=" check=$kind"
	[[ $expect == pass ]] || label+=" expect=$expect"

	local cflags run
	case $kind in
	safety)   cflags=(-DSAFETY -DNOCLAIM); run=(-m"$depth") ;;
	liveness) cflags=(); run=(-a -f -m"$depth") ;;
	*) die "unknown check '$kind' (safety or liveness)" ;;
	esac
	# a deadlock is shown to a human: ask pan for the shortest trail (-i needs -DREACH)
	[[ $expect == deadlock ]] && { cflags+=(-DREACH); run+=(-i); }

	local dir; dir=$(mktemp -d "$work/check.XXXXXX")
	cp "$model" "$dir/ring.pml"
	if ! (cd "$dir" && spin "${defs[@]}" -a ring.pml >spin.log 2>&1 &&
		gcc -w "$opt" -DMEMLIM="$memlim" "${compress[@]}" "${cflags[@]}" -o pan pan.c 2>gcc.log); then
		echo "FAIL $label (could not build pan)"; cat "$dir/spin.log" "$dir/gcc.log" 2>/dev/null | sed 's/^/  /'
		failed=1; return
	fi
	# pan's exit status says little: read its report
	(cd "$dir" && ./pan "${run[@]}" >pan.log 2>&1) || true
	local log=$dir/pan.log errors states depth_reached elapsed found=none problem=
	errors=$(sed -nE 's/.*errors: ([0-9]+).*/\1/p' "$log" | tail -1)
	states=$(sed -nE 's/^ *([0-9e.+]+) states, stored.*/\1/p' "$log" | tail -1)
	depth_reached=$(sed -nE 's/.*depth reached ([0-9]+).*/\1/p' "$log" | tail -1)
	elapsed=$(sed -nE 's/^pan: elapsed time ([0-9.e+-]+).*/\1/p' "$log" | tail -1)
	if grep -q 'pan:1: invalid end state' "$log"; then found=deadlock
	elif grep -q 'pan:1: assertion violated' "$log"; then found=assertion
	elif grep -q 'pan:1: acceptance cycle' "$log"; then found=cycle
	fi
	if grep -q 'depth too small' "$log"; then problem="search depth too small (-m$depth)"
	elif grep -qE 'out of memory|reached -DMEMLIM bound' "$log"; then problem="out of memory (-DMEMLIM=$memlim)"
	elif [[ -z $errors ]]; then problem="no 'errors:' line in pan's report"
	elif [[ $expect == pass && $errors != 0 ]]; then problem="errors: $errors, found $found"
	elif [[ $expect != pass && $found != "$expect" ]]; then problem="expected $expect, found $found"
	fi
	local numbers="states=${states:-?} depth=${depth_reached:-?} time=${elapsed:-?}s"
	[[ $found == none ]] || numbers+=" found=$found"
	if [[ -n $problem ]]; then
		echo "FAIL $label $numbers: $problem"
		grep -E '^pan:1:|too small|out of memory|MEMLIM bound' "$log" | sed 's/^/  /' | head -5 || true
		failed=1
	else
		echo "PASS $label $numbers"
	fi
	if [[ $expect == deadlock && $found == deadlock ]]; then show_trail "$dir" "${defs[@]}"; fi
	rm -rf "$dir"
}

# Both designs that must be correct, both checks: queue depth x buffers covers
# buffers < depth, = depth, > depth, buffers = 1 and depth = 1; blocks wrap the ring twice.
both() {
	local design=$1 qd=$2 buffers=$3 blocks=$4; shift 4
	check pass "$design" "$qd" "$buffers" "$blocks" safety "$@"
	check pass "$design" "$qd" "$buffers" "$blocks" liveness "$@"
}

small_checks() {
	local design
	for design in SINGLE MULTI; do
		both "$design" 2 2 5
		both "$design" 1 2 5
		both "$design" 2 1 4
		both "$design" 3 2 5
		both "$design" 2 3 6
		both "$design" 2 2 5 RETRIES=2
	done
	both SINGLE 2 2 5 PROCESS_IN_INNER_LOOP=1
	both MULTI 2 3 6 WINDOW=1
	both MULTI 2 3 5 WINDOW=2 GROWS
	both SINGLE 2 3 6 WINDOW=1 GROWS
	both MULTI 1 2 5 DEEPENS FIRST_CELLS=1 DEEP_DEPTH=2
	# the article's broken producer must deadlock, and the trail must show how
	check deadlock MULTI_BLOCKING 2 2 5 safety
	check deadlock MULTI_BLOCKING 1 1 3 safety
	check cycle MULTI_BLOCKING 2 2 5 liveness
	# the checks have teeth: each deliberate bug is caught
	check assertion MULTI 2 2 5 safety BUG_REUSE_UNCONSUMED
	check assertion SINGLE 2 2 5 safety BUG_RETRY_AVAILABLE
	check assertion MULTI 2 2 5 safety BUG_RETRY_AVAILABLE
	check assertion SINGLE 2 2 5 safety BUG_DOUBLE_HASH
	check assertion MULTI 2 2 5 safety BUG_DOUBLE_HASH
	check deadlock MULTI 2 2 5 safety BUG_LOST_WAKEUP
	check assertion MULTI 2 2 5 safety BUG_AHEAD_UNREAD
	check assertion MULTI 2 2 5 safety BUG_AHEAD_MISCOUNT
	check assertion MULTI 2 3 6 safety BUG_RECLAIM_UNHASHED
	check deadlock MULTI 2 3 6 safety WINDOW=1 BUG_WINDOW_LATE
	check assertion MULTI 1 2 5 safety DEEPENS FIRST_CELLS=1 DEEP_DEPTH=2 BUG_DEEPEN_OVER
}

large_checks() {
	local design qd buffers
	for design in SINGLE MULTI; do
		for qd in 1 2 3 4; do
			for buffers in 1 2 3 4; do
				both "$design" "$qd" "$buffers" 8
			done
		done
		both "$design" 4 4 8 RETRIES=2
		both "$design" 2 4 12
		if [[ $design == SINGLE ]]; then both SINGLE 4 4 12; else check pass MULTI 4 4 12 safety; fi
	done
	both SINGLE 4 4 12 RETRIES=2 PROCESS_IN_INNER_LOOP=1
	both MULTI 1 3 6 DEEPENS FIRST_CELLS=2 DEEP_DEPTH=3 WINDOW=2 GROWS
	check pass MULTI 2 4 8 safety DEEPENS FIRST_CELLS=2 DEEP_DEPTH=4	# (liveness: over 4 GB, compressed)
	check deadlock MULTI_BLOCKING 4 4 8 safety
}

case ${1:-} in
--check)
	shift
	(($# >= 6)) || die "usage: $0 --check EXPECT DESIGN QD BUFFERS BLOCKS CHECK [KNOB[=VALUE]...]"
	opt=${opt:--O0}
	check "$@"
	;;
--small)
	opt=${opt:--O0}
	small_checks
	;;
"")
	opt=${opt:--O0}
	small_checks
	opt=${RINGSUM_MODEL_OPT:--O2}
	compress=(-DCOLLAPSE)
	memlim=${RINGSUM_MODEL_MEMLIM:-8192}	# MULTI 4/4/8 RETRIES=2's liveness: 5.7 GB compressed
	large_checks
	;;
*)
	die "usage: $0 [--small | --check EXPECT DESIGN QD BUFFERS BLOCKS CHECK [KNOB[=VALUE]...]]"
	;;
esac
exit "$failed"
