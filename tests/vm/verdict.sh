#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# verdict.sh KIND PAYLOAD KMSG RC [QEMU]: what one VM of make check must
# show, as a TAP stream of named results.
#
#   KIND     the VM's kind, KERNEL-BUILD-IOMMU-MACHINE (e.g.
#            6.12-debug-on-x86), looked up in tests/expectations
#   PAYLOAD  the payload's output (run-vm.sh's stdout): suites between
#            @@SUITE NAME@@ and @@SUITE-END NAME rc=N@@ markers
#   KMSG     the kernel's console (run-vm.sh --klog): every kernel message
#   RC       run-vm.sh's exit status (124: timed out, 125: ended early)
#   QEMU     QEMU's own stdout and stderr (run-vm.sh: LOG's .qemu)
#
# Fails: a VM that did not finish or a payload that exited non-zero; an
# expected suite that is missing, did not end, printed no plan or fewer
# results than planned, or exited non-zero; a SKIP the expectations do not
# allow; a test that reported a failed expectation and then passed or
# skipped; any kernel report on the console, IOMMU faults included unless
# a test declared them (expect-fault markers); any line of QEMU's that is
# not known to be harmless.  UIOHEAP_SUITES and UIOHEAP_TESTS narrow the
# expected suites and tests the way they narrow what the guest runs.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
expect=${UIOHEAP_EXPECTATIONS:-$top/tests/expectations}
pinned=${UIOHEAP_EXPECTED_TESTS:-$top/tests/expected-tests}
kind=$1 payload=$2 kmsg=$3 vmrc=$4 qemu=${5:-}

n=0
tap() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi
	if [ -n "${3:-}" ]; then sed 's/^/# /' <<<"$3"; fi
	return 0
}

# The expectations that apply to this kind, without comments.
rules=$(sed 's/#.*//' "$expect" | while read -r what glob rest; do
	[ -n "$what" ] || continue
	# shellcheck disable=SC2053
	if [[ $kind == $glob ]]; then printf '%s %s\n' "$what" "$rest"; fi
done)
expected=$(awk '$1 == "suites" { for (i = 2; i <= NF; i++) print $i }' <<<"$rules")
if [ -n "${UIOHEAP_SUITES:-}" ]; then
	expected=$(grep -xF -f <(printf '%s\n' setup kernel $UIOHEAP_SUITES) <<<"$expected" || true)
fi

echo "TAP version 13"
case $vmrc in
0) tap 0 "VM $kind: payload exit status 0" ;;
124) tap 1 "VM $kind: finished (timed out)" ;;
125) tap 1 "VM $kind: finished (ended before the payload did)" ;;
*) tap 1 "VM $kind: payload exit status $vmrc" ;;
esac

# One line per suite seen: NAME ENDED RC PLAN RESULTS; one per skip:
# "skip SUITE TEST"; one per hidden failure: "hidden SUITE TEST".
facts=$(awk '
function result_name(l) {
	sub(/^(not )?ok [0-9]+ /, "", l); sub(/ *#.*/, "", l)
	return l == "" ? "?" : l
}
/^@@SUITE [^ ]+@@$/ {
	name = $2; sub(/@@$/, "", name); order[++ns] = name
	ended[name] = "no"; rc[name] = "-"; plan[name] = "-"; res[name] = 0
	insuite = 1; expected_fail = 0; next
}
/^@@SUITE-END [^ ]+ rc=[0-9]+@@$/ {
	ended[name] = "yes"; r = $3; sub(/^rc=/, "", r); sub(/@@$/, "", r); rc[name] = r
	insuite = 0; next
}
!insuite { next }
/^1\.\.[0-9]+/ { if (plan[name] == "-") plan[name] = substr($0, 4) + 0; next }
/^(not )?ok / { res[name]++ }
/:Expected |EXPECTATION FAILED|ASSERTION FAILED/ { expected_fail = 1; next }
{ l = $0; sub(/^[ \t]+/, "", l) }
l ~ /^(not )?ok / {
	print "name", name, result_name(l)
	if (tolower(l) ~ /#[ \t]*skip/) print "skip", name, result_name(l)
	if (expected_fail && l ~ /^ok /) print "hidden", name, result_name(l)
	expected_fail = 0
}
END { for (i = 1; i <= ns; i++) { s = order[i]; print "suite", s, ended[s], rc[s], plan[s], res[s] } }
' "$payload")

complete=0
for s in $expected; do
	line=$(grep -m1 "^suite $s " <<<"$facts" || true)
	if [ -z "$line" ]; then
		tap 1 "suite $s ran"
		continue
	fi
	read -r _ _ ended rc plan res <<<"$line"
	if [ "$ended" != yes ]; then
		tap 1 "suite $s ran to its end (stopped after $res results)"
	elif [ "$plan" = - ]; then
		tap 1 "suite $s printed its plan (exit status $rc)"
	elif [ "$res" -lt "$plan" ]; then
		tap 1 "suite $s printed all $plan results (only $res, exit status $rc)"
	elif [ "$plan" = 0 ]; then
		tap 1 "suite $s planned some results (1..0, exit status $rc)"
	else
		case $rc in 0) tap 0 "suite $s: $res of $plan results, exit status $rc"; complete=$((complete + 1)) ;;
		*) tap 1 "suite $s: $res of $plan results, exit status $rc" ;;
		esac
	fi
done
echo "# summary: suites_expected=$(wc -w <<<"$expected") suites_complete=$complete"

# The tests each suite must print, by name (tests/expected-tests): a test
# deleted, renamed, filtered out or printed twice fails.
for s in $expected; do
	want=$(awk -v s="$s" '$1 == s { print $2 }' "$pinned" | sort)
	[ -n "$want" ] || continue
	only=$(grep -xF -f <(printf '%s\n' ${UIOHEAP_TESTS:-} | sed 's/^[^:]*://') <<<"$want" || true)
	# KUnit prints its suite's own result too.
	[ -z "$only" ] || want=$( { echo "$only"; [ "$s" != kunit ] || echo uio_heap; } | sort)
	grep -q "^suite $s " <<<"$facts" || continue
	got=$(awk -v s="$s" '$1 == "name" && $2 == s { print $3 }' <<<"$facts" | sort)
	odd=$( { comm -23 <(echo "$want") <(echo "$got") | sed 's/^/missing: /'
		 comm -13 <(echo "$want") <(echo "$got" | uniq) | sed 's/^/not pinned: /'
		 uniq -d <<<"$got" | sed 's/^/twice: /'; } || true)
	if [ -z "$odd" ]; then
		tap 0 "suite $s: its $(wc -l <<<"$want") pinned tests, once each"
	else
		tap 1 "suite $s: its $(wc -l <<<"$want") pinned tests, once each" "$odd"
	fi
done
while read -r _ s _; do
	grep -qxF "$s" <<<"$expected" || tap 1 "suite $s is expected on $kind"
done < <(grep '^suite ' <<<"$facts" || true)

# Skips: each must match a "skip SUITE TEST-GLOB" rule of this kind.
while read -r _ s t; do
	ok=1
	while read -r what rs rt _; do
		# shellcheck disable=SC2053
		[ "$what" = skip ] && [ "$rs" = "$s" ] && [[ $t == $rt ]] && { ok=0; break; }
	done <<<"$rules"
	[ $ok = 0 ] || tap 1 "SKIP of $s $t is allowed on $kind"
done < <(grep '^skip ' <<<"$facts" || true)
while read -r _ s t; do
	tap 1 "$s $t: a failed expectation was reported as ok or SKIP"
done < <(grep '^hidden ' <<<"$facts" || true)

# The kernel's console, whole: the first line of every report.  Benign
# once fault injection started (the stress suite's inject tests, the KUnit
# suite): an injected failure can hit DMA-API debugging's own allocation,
# which then disables itself.  A negative DMA test brackets the IOMMU
# faults it expects with "uioheap: expect-fault begin|end BDF" (common.h):
# DMAR reports naming that device (bus:dev.fn; 7.3 adds the PCI domain)
# are forgiven only there.
# The module's own allocations that may fail are __GFP_NOWARN, and injected
# failures print nothing: "page allocation failure" is never intended.
benign='DMA-API: cacheline tracking ENOMEM, dma-debug disabled'
if ! grep -aq 'Linux version' "$kmsg" 2>/dev/null; then
	tap 1 "kernel console captured ($kmsg)"
else
	reports=$(tr -d '\r' <"$kmsg" |
		awk -v b="$benign" '/uioheap: fault injection starts|uioheap: KUnit suite starts/ { k = 1 }
			k && index($0, b) { next }
			/uioheap: expect-fault (begin|end) / {
				s = $0; sub(/.*uioheap: expect-fault /, "", s); split(s, w, " ")
				d = w[2]; if (d ~ /^[0-9a-f]+:[0-9a-f]+:/) sub(/^[0-9a-f]+:/, "", d)
				if (w[1] == "begin") { inside[d]++; bdf[d] = w[2]; open++ }
				else if (inside[d] > 0) { inside[d]--; open-- }
				else print "expect-fault: end " w[2] " without its begin"
				next
			}
			/DMAR: \[DMA (Read|Write)/ {
				d = $0; sub(/.*Request device \[/, "", d); sub(/\].*/, "", d)
				if (d ~ /^[0-9a-f]+:[0-9a-f]+:/) sub(/^[0-9a-f]+:/, "", d)
				if (inside[d] > 0) next
			}
			/DMAR: DRHD: handling fault/ && open > 0 { next }
			1
			END { for (d in inside) if (inside[d] > 0) print "expect-fault: begin " bdf[d] " without its end" }' |
		grep -aE \
		-e 'BUG:|WARNING:|Oops|Kernel panic|general protection|UBSAN:|KASAN' \
		-e '(^|\] )BUG [^ :]+ \(' \
		-e 'possible (recursive|circular) locking|possible .*deadlock|inconsistent lock state|lock held when returning' \
		-e 'blocked for more than|rcu: INFO: .*detected stall|soft lockup|hard LOCKUP|Call [Tt]race' \
		-e 'page allocation failure|kmemleak: .*disabled' \
		-e 'DMA-API: ' \
		-e 'DMAR: \[DMA (Read|Write)|DMAR: DRHD: handling fault|arm-smmu.*event|^expect-fault: ' |
		grep -avE 'DMA-API: (preallocated [0-9]+ debug entries|debugging enabled by kernel config)' || true)
	count=$(grep -caE 'BUG:|BUG [^ :]+ \(|WARNING:|Oops|Kernel panic|general protection|UBSAN:|possible .*(locking|deadlock)|inconsistent lock|blocked for more|detected stall|LOCKUP|page allocation failure|kmemleak: .*disabled|DMA-API: |DMAR: \[|^expect-fault: ' <<<"$reports" || true)
	echo "# summary: kernel_reports=$count"
	if [ -z "$reports" ]; then
		tap 0 "kernel log clean ($(wc -l <"$kmsg") lines)"
	else
		tap 1 "kernel log clean" "$(head -n 30 <<<"$reports")"
	fi
fi

# QEMU's own output: nothing in a good run but what is allowed here.
# "terminating on signal": timeout(1) or an interrupted make check killed
# it (the VM's result says so); "TCG doesn't support": a host feature
# -cpu max names that TCG lacks; intel-iommu's vtd_* translation failure
# messages: only where the payload declared expected faults.
if [ -n "$qemu" ]; then
	harmless='^qemu-system-[a-z0-9_]+: (terminating on signal [0-9]+|warning: TCG doesn.t support requested feature)'
	grep -aq 'uioheap: expect-fault begin ' "$kmsg" 2>/dev/null &&
		harmless+='|^qemu-system-x86_64: (vtd_[a-z_]+: |New fault is not recorded due to compression of faults)'
	# NICs on a hub without host ports (run-vm.sh: x86's two e1000s, the
	# ZynqMP's four), and that model's DisplayPort audio, given "none".
	harmless+='|^qemu-system-[a-z0-9_]+: warning: hub 0 is not connected to host network$'
	[[ $kind != *-zcu102 ]] ||
		harmless+='|^audio: Device xlnx_dp.audio: audiodev default parameter is deprecated'
	if [ ! -f "$qemu" ]; then
		tap 1 "QEMU's output captured ($qemu)"
	else
		odd=$(tr -d '\r' <"$qemu" | grep -avE "$harmless" || true)
		if [ -z "$odd" ]; then
			tap 0 "QEMU printed nothing unexpected ($(wc -l <"$qemu") lines)"
		else
			tap 1 "QEMU printed nothing unexpected" "$(head -n 30 <<<"$odd")"
		fi
	fi
fi
echo "1..$n"
