#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tap-names.sh TAP...: the "SUITE<tab>TEST" lines of tests/expected-tests,
# read from the VM streams of a make check run (build/tap/*.tap): every
# result name of the kselftest-harness suites and of the KUnit suite.
set -euo pipefail

awk '
/^@@SUITE [^ ]+@@$/ { name = $2; sub(/@@$/, "", name); next }
/^@@SUITE-END / { name = ""; next }
name ~ /^(uio_heap_[a-z_]+|kunit)$/ {
	l = $0; sub(/^[ \t]+/, "", l)
	if (l !~ /^(not )?ok /) next
	sub(/^(not )?ok [0-9]+ /, "", l); sub(/ *#.*/, "", l)
	print name "\t" l
}' "$@" | sort -u
