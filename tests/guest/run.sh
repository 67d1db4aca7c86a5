#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The test payload, run inside the VM by the initramfs' /init after the
# edu devices were bound to uio_pci_generic: loads uio_heap, runs the
# selftests (TAP), then checks the kernel log and taint (TAP).
cd "$(dirname "$0")"

export UIOHEAP_KO=/lib/modules/extra/uio_heap.ko
export UIOHEAP_EDU_NARROW=0000:00:10.0
UIOHEAP_UIO_PCI_GENERIC_KO=$(find /lib/modules -name uio_pci_generic.ko | head -n 1)
export UIOHEAP_UIO_PCI_GENERIC_KO

echo "# kernel $(uname -r), IOMMU ${UIOHEAP_IOMMU:-?}, suites: ${UIOHEAP_SUITES:-all}"

kmemleak=/sys/kernel/debug/kmemleak
# Forget what boot leaked (not ours): only leaks from here on count.
[ -w $kmemleak ] && echo clear >$kmemleak

# Loaded after the devices are bound: the heaps of pre-bound devices must
# be discovered at load time.
if ! insmod "$UIOHEAP_KO"; then
	echo "TAP version 13"
	echo "1..1"
	echo "not ok 1 insmod uio_heap"
	exit 1
fi

# Default order: the basic suite first, the others by name, and last the
# lifetime suite, which unbinds devices and unloads the module.
suites=${UIOHEAP_SUITES:-}
if [ -z "$suites" ]; then
	suites=uio_heap_test
	for t in uio_heap_*; do
		case $t in uio_heap_test|uio_heap_lifetime|*.*) continue ;; esac
		[ -x "$t" ] && suites="$suites $t"
	done
	suites="$suites uio_heap_lifetime"
fi

rc=0

# The KUnit suite, where the kernel has KUnit (the patched debug kernel):
# with failslab and fail_page_alloc armed for the tasks that ask for it.
kunit_ko=/lib/modules/extra/uio_heap_test.ko
if [ -f $kunit_ko ] && [ -z "${UIOHEAP_SUITES:-}" ]; then
	inject=0
	if [ -d /sys/kernel/debug/failslab ] && [ -d /sys/kernel/debug/fail_page_alloc ]; then
		for f in failslab fail_page_alloc; do
			d=/sys/kernel/debug/$f
			echo Y >$d/task-filter
			echo 25 >$d/probability
			echo 1 >$d/interval
			echo -1 >$d/times
			echo 0 >$d/verbose
		done
		echo N >/sys/kernel/debug/failslab/ignore-gfp-wait
		echo N >/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait
		echo 0 >/sys/kernel/debug/fail_page_alloc/min-order
		inject=1
	fi
	kunit_ran=1
	if insmod $kunit_ko fail_inject=$inject; then
		cat /sys/kernel/debug/kunit/uio_heap/results
		rmmod uio_heap_test
	else
		printf 'TAP version 13\n1..1\nnot ok 1 insmod uio_heap_test\n'
		rc=1
	fi
	for f in failslab fail_page_alloc; do
		[ -d /sys/kernel/debug/$f ] && echo 0 >/sys/kernel/debug/$f/probability
	done
fi

for t in $suites; do
	if [ ! -x "./$t" ]; then
		printf 'TAP version 13\n1..1\nnot ok 1 suite %s is in the payload\n' "$t"
		rc=1
		continue
	fi
	"./$t" || rc=1
done

# The kernel must have said nothing alarming, whatever the tests did.
echo "TAP version 13"
echo "1..3"
# KASAN and lockdep reports start with BUG: and WARNING: respectively.
bad=$(dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|general protection|blocked for more than|UBSAN' | head -n 20)
# One report each: the first line of a KASAN, lockdep, UBSAN or WARN splat.
reports=$(dmesg | grep -cE 'BUG:|WARNING:|Oops|general protection|UBSAN:|blocked for more than') || true
echo "# summary: kernel_reports=$reports"
if [ -z "$bad" ]; then
	echo "ok 1 kernel log clean"
else
	echo "not ok 1 kernel log clean"
	echo "$bad" | sed 's/^/# /'
	rc=1
fi
# Only O (out-of-tree, bit 12), E (unsigned, bit 13) and, once a KUnit
# suite ran, N (test, bit 18) are expected.
taint=$(cat /proc/sys/kernel/tainted)
allowed=$(((1 << 12) | (1 << 13)))
[ -n "${kunit_ran:-}" ] && allowed=$((allowed | (1 << 18)))
if [ $((taint & ~allowed)) -eq 0 ]; then
	echo "ok 2 taint only O/E${kunit_ran:+/N} ($taint)"
else
	echo "not ok 2 taint only O/E${kunit_ran:+/N} ($taint)"
	rc=1
fi
# kmemleak (debug kernel): everything the tests allocated was freed.
if [ -w $kmemleak ]; then
	# Objects must be unreferenced for two scans to be reported.
	echo scan >$kmemleak; sleep 1; echo scan >$kmemleak
	leaks=$(grep -c '^unreferenced object' $kmemleak) || true
	leaked=$(sed -n 's/^unreferenced object .*(size \([0-9]*\)).*/\1/p' $kmemleak |
		 awk '{ n += $1 } END { print n + 0 }')
	echo "# summary: leaked_objects=$leaks leaked_bytes=$leaked"
	if [ "$leaks" = 0 ]; then
		echo "ok 3 kmemleak: no leaks"
	else
		echo "not ok 3 kmemleak: $leaks leaks"
		head -n 60 $kmemleak | sed 's/^/# /'
		rc=1
	fi
else
	echo "ok 3 kmemleak # SKIP kernel without kmemleak"
fi
exit $rc
