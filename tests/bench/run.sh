#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark payload, run inside the VM by the initramfs' /init after
# the edu devices were bound to uio_pci_generic (tests/vm/guest-init.sh):
# loads uio_heap and runs uio-heap-bench on the 64-bit edu's heap.
#
# From the kernel command line (uioheap.args=, see tests/bench.sh):
#   UIOHEAP_TESTS      tests to run, e.g. "cycle addr" (default: all)
#   UIOHEAP_BUDGET     seconds per size or figure (default 2)
#   UIOHEAP_SIZES      cycle sizes (default: the bench's own)
#   UIOHEAP_METHODS    cycle methods (default: all there are)
#   UIOHEAP_CMP        also measure the 28-bit edu's heap as "cmp" (any value)
#   UIOHEAP_MODPARAMS  insmod parameters for uio_heap.ko
set -eu
cd "$(dirname "$0")"

echo "# kernel $(uname -r), IOMMU ${UIOHEAP_IOMMU:-?}, tests: ${UIOHEAP_TESTS:-all}"
echo "@ info iommu ${UIOHEAP_IOMMU:-?}"
echo "@ info mem $(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
echo "@ info cpus $(grep -c ^processor /proc/cpuinfo)"
echo "@ info cmdline $(cat /proc/cmdline)"
# shellcheck disable=SC2086
insmod /lib/modules/extra/uio_heap.ko ${UIOHEAP_MODPARAMS:-}
uio=${UIOHEAP_EDU64_UIO%% *}
[ -n "$uio" ] || { echo "@ error no 64-bit edu heap"; exit 1; }
# The edu at 00:11.0 addresses 64 bits; the heap starts at 32.
echo 64 >"/sys/class/uio_heap/$uio/dma_mask_bits"
[ -e /dev/udmabuf ] || echo "# no /dev/udmabuf: udmabuf not measured"

set -- -h "$uio" -t "${UIOHEAP_BUDGET:-2}"
[ -n "${UIOHEAP_SIZES:-}" ] && set -- "$@" -s "$(echo "$UIOHEAP_SIZES" | tr ' ' ,)"
[ -n "${UIOHEAP_METHODS:-}" ] && set -- "$@" -m "$(echo "$UIOHEAP_METHODS" | tr ' ' ,)"
if [ -n "${UIOHEAP_CMP:-}" ]; then
	# The CPU side is all that is measured: no DMA, so the mask can be 64.
	cmp=${UIOHEAP_EDU28_UIO%% *}
	echo 64 >"/sys/class/uio_heap/$cmp/dma_mask_bits"
	set -- "$@" -c "$cmp"
fi

rc=0
# shellcheck disable=SC2086
./uio-heap-bench "$@" ${UIOHEAP_TESTS:-all} || rc=$?

# The max test has the OOM killer take its probes: their reports are
# expected, anything else alarming is not.
oom=$(dmesg | grep -c 'Out of memory: Killed process' || true)
echo "@ info oom-kills $oom"
bad=$(dmesg | grep -E 'WARNING|BUG|Oops|general protection|Call Trace' |
	grep -v 'Call Trace' | head -n 20 || true)
traces=$(dmesg | grep -c 'Call Trace' || true)
if [ -n "$bad" ] || [ "$traces" -gt "$oom" ]; then
	echo "@ error kernel log"
	dmesg | grep -E -A 12 'WARNING|BUG|Oops|general protection' | head -n 40 | sed 's/^/# dmesg: /'
	rc=1
fi
exit $rc
