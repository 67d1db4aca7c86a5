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
for t in $suites; do
	[ -x "./$t" ] || continue
	"./$t" || rc=1
done

# The kernel must have said nothing alarming, whatever the tests did.
echo "TAP version 13"
echo "1..2"
bad=$(dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|general protection|KASAN|kmemleak|possible .*(deadlock|recursive locking)|circular locking' | head -n 20)
if [ -z "$bad" ]; then
	echo "ok 1 kernel log clean"
else
	echo "not ok 1 kernel log clean"
	echo "$bad" | sed 's/^/# /'
	rc=1
fi
# Only O (out-of-tree, bit 12) and E (unsigned, bit 13) are expected.
taint=$(cat /proc/sys/kernel/tainted)
if [ $((taint & ~((1 << 12) | (1 << 13)))) -eq 0 ]; then
	echo "ok 2 taint only O/E ($taint)"
else
	echo "not ok 2 taint only O/E ($taint)"
	rc=1
fi
exit $rc
