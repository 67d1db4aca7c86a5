#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make bench's NVMe figures, inside the VM (run.sh hands over for
# tests=nvme).  Two identical QEMU NVMe controllers (tests/vm/run-vm.sh
# --nvme2): UIOHEAP_NVME is bound to uio_pci_generic and driven by the
# example driver, uio-nvme (polled, buffers from uio-heap);
# UIOHEAP_NVME_KERNEL is the kernel's nvme driver's, read with O_DIRECT
# by nvme-odirect (Linux AIO, interrupts).  Each figure runs on both,
# one after the other, in three rounds (a noisy host then hits all of
# them alike), and prints per round
#
#   @ nvme DRIVER PATTERN SIZE QD IOS NS USER_NS SYS_NS BUSY_NS
#
# DRIVER is uio, uio-cached (data buffers from uioN-cached, synced per
# read) or kernel; the report adds up the rounds.  UIOHEAP_BUDGET:
# seconds per figure, driver and round.
set -eu
cd "$(dirname "$0")"

secs=${UIOHEAP_BUDGET:-2}
echo "@ info kernel $(uname -r)"
echo "# kernel $(uname -r), IOMMU ${UIOHEAP_IOMMU:-?}, NVMe: uio-nvme on ${UIOHEAP_NVME:-?}, kernel nvme on ${UIOHEAP_NVME_KERNEL:-?}"
echo "@ info iommu ${UIOHEAP_IOMMU:-?}"
echo "@ info mem $(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
echo "@ info cpus $(grep -c ^processor /proc/cpuinfo)"
echo "@ info cmdline $(cat /proc/cmdline)"
[ -e /run/setup-failures ] && { sed 's/^/@ error setup: /' /run/setup-failures; exit 1; }
insmod /lib/modules/extra/uio_heap.ko
uio=${UIOHEAP_NVME_UIO:-}
[ -n "$uio" ] || { echo "@ error no UIO device for NVMe ${UIOHEAP_NVME:-?}"; exit 1; }

# The kernel's controller has the only NVMe namespace with a block device
# (nvmeXcYnZ are multipath's hidden per-path disks, without a node).
dev=
for _ in $(seq 100); do
	for b in /sys/block/nvme*n*; do
		case ${b##*/} in *c*) continue ;; esac
		[ -e "$b" ] && dev=/dev/${b##*/}
	done
	[ -n "$dev" ] && [ -b "$dev" ] && break
	dev=
	usleep 100000
done
[ -n "$dev" ] || { echo "@ error no block device of the kernel's nvme driver"; exit 1; }
echo "@ info nvme-kernel $dev $(sed 's/ *$//' "/sys/block/${dev#/dev/}/device/serial" 2>/dev/null || true)"
./uio-nvme "$uio" identify | sed 's/^/# /'
# measure CMD...: one run of a reader, its line turned into "@ nvme".
rc=0
measure() {
	out=$("$@" "$secs" 2>&1) || { rc=1; echo "@ error nvme: $* failed"; }
	echo "$out" | awk '
		/^bench: / {
			line = "@ nvme"
			for (i = 2; i <= NF; i++) { split($i, kv, "="); line = line " " kv[2] }
			print line; next
		}
		/I\/O commands$/ { next }
		{ print "# " $0 }'
}

# figure PATTERN SIZE QD: the same reads through each driver.
figure() {
	measure ./uio-nvme "$uio" bench "$@"
	measure ./uio-nvme -c "$uio" bench "$@"
	measure ./nvme-odirect "$dev" "$@"
}
for _ in 1 2 3; do
	figure rand 4096 1
	figure rand 4096 32
	figure seq 131072 1
done

bad=$(dmesg | grep -E 'WARNING|BUG|Oops|general protection|Call Trace' | head -n 20 || true)
if [ -n "$bad" ]; then
	echo "@ error kernel log"
	echo "$bad" | sed 's/^/# dmesg: /'
	rc=1
fi
exit $rc
