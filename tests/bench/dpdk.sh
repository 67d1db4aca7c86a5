#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make bench's DPDK figures, inside the VM (run.sh hands over for
# tests=dpdk): tools/dpdk/uio-dpdk sends frames out of one e1000 into the
# other (tests/vm/run-vm.sh puts both on one QEMU hub) for UIOHEAP_BUDGET
# seconds, with rings and mbufs in uio-heap memory and, where the NICs can
# reach it (IOMMU off), in DPDK's own hugepages.  Three rounds, the two
# kinds of memory alternating, per frame size; per run it prints
#
#   @ dpdk MEMORY SIZE FRAMES NS CPU_NS
set -eu
cd "$(dirname "$0")"

secs=${UIOHEAP_BUDGET:-2}
echo "@ info kernel $(uname -r)"
echo "# kernel $(uname -r), IOMMU ${UIOHEAP_IOMMU:-?}, DPDK on ${UIOHEAP_NICS:-?}"
echo "@ info iommu ${UIOHEAP_IOMMU:-?}"
echo "@ info cpus $(grep -c ^processor /proc/cpuinfo)"
insmod /lib/modules/extra/uio_heap.ko
echo "8086 100e" >/sys/bus/pci/drivers/uio_pci_generic/new_id
eal="-l 0 --in-memory --no-telemetry --log-level=lib.eal:warning"
for b in $UIOHEAP_NICS; do
	for _ in $(seq 50); do [ -e /sys/bus/pci/devices/$b/uio ] && break; usleep 100000; done
	eal="$eal -a $b"
done
echo 64 >/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages

memories=heap
[ "${UIOHEAP_IOMMU:-}" = on ] || memories="heap native"
rc=0
for _ in 1 2 3; do
	for size in 64 1514; do
		for m in $memories; do
			# shellcheck disable=SC2086
			out=$(./uio-dpdk $eal -- --memory $m --size $size --seconds "$secs" 2>&1) ||
				{ rc=1; echo "@ error dpdk: --memory $m --size $size failed"; }
			# "first frame after S s, then N frames in T s: R frames/s, C ns ..."
			echo "$out" | awk -v m=$m -v size=$size '
				/^uio-dpdk: first frame after / { n = $8; ns = $11 * 1e9; cpu = $15 * $8 }
				/ memory=/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
				/^uio-dpdk: / { print "# " $0 }
				END {
					if (f["verified"] != f["sent"] || !n) print "@ error dpdk: " m " " size " frames lost"
					else printf "@ dpdk %s %s %d %.0f %.0f\n", m, size, n, ns, cpu
				}'
		done
	done
done
exit $rc
