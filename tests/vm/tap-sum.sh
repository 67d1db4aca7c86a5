#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Summarise TAP / KTAP / kselftest output (stdin or files) into one line:
#   N passed, N failed, N skipped
# Exit status 1 if anything failed, else 0.
#
# Rules:
#  - Nesting depth = number of leading "# " (kselftest) or 4-space/tab
#    (KTAP) prefixes; "[K]TAP version" and "1..N" start a stream at a depth.
#  - Each result line ("ok"/"not ok" [N] ...) is counted once.  A result that
#    directly follows a nested stream with results is that stream's parent
#    summary and is not counted again; only a failing parent whose children
#    all passed counts as one failure (e.g. a binary that exited non-zero).
#  - "# SKIP" directive: skipped.  "not ok ... # TODO": skipped.
#  - A stream whose plan 1..N promised more results than it printed counts
#    the missing ones as failed (crashed binary, VM timeout).
#  - "# Totals:", "# PASSED:" etc. are comments, not results.
set -euo pipefail

if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
	echo "usage: ${0##*/} [FILE...]   (reads stdin without FILE)" >&2
	exit 2
fi

awk '
function reset(d) { plan[d] = -1; nres[d] = 0; sfail[d] = 0; pend[d] = 0; pfail[d] = 0 }
function finish(d,   miss) {
	miss = plan[d] - nres[d]
	if (plan[d] >= 0 && miss > 0) { failed += miss; sfail[d] += miss } else miss = 0
	if (d > 0) { pend[d - 1] += nres[d] + miss; pfail[d - 1] += sfail[d] }
	reset(d)
}
function close_deeper(d,   e) {
	for (e = maxd; e > d; e--) finish(e)
	if (maxd > d) maxd = d
}
function seen(d,   e) { if (d > maxd) { for (e = maxd + 1; e <= d; e++) reset(e); maxd = d } }
BEGIN { maxd = -1 }
FNR == 1 && NR > 1 { close_deeper(-1) }
{
	sub(/\r$/, "")
	line = $0; d = 0
	while (1) {
		if (substr(line, 1, 2) == "# ") line = substr(line, 3)
		else if (substr(line, 1, 4) == "    ") line = substr(line, 5)
		else if (substr(line, 1, 1) == "\t") line = substr(line, 2)
		else break
		d++
	}
}
line ~ /^K?TAP version / {
	seen(d); close_deeper(d); finish(d); next
}
line ~ /^1\.\.[0-9]+/ {
	seen(d); close_deeper(d)
	if (plan[d] >= 0) finish(d)
	plan[d] = substr(line, 4) + 0; next
}
line ~ /^(not )?ok([ \t]|$)/ {
	seen(d); close_deeper(d)
	bad = (line ~ /^not /)
	low = tolower(line)
	skip = (low ~ /#[ \t]*skip/) || (bad && low ~ /#[ \t]*todo/)
	if (pend[d] > 0) {                      # parent summary of a nested stream
		sfail[d] += pfail[d]
		if (bad && !skip && pfail[d] == 0) { failed++; sfail[d]++ }
	} else if (skip) skipped++
	else if (bad) { failed++; sfail[d]++ }
	else passed++
	nres[d]++; pend[d] = 0; pfail[d] = 0
}
END {
	close_deeper(-1)
	printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
	exit failed > 0
}' "$@"
