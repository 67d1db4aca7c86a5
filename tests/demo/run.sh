#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo, inside the VM: load uio_heap and run the example driver.
cd "$(dirname "$0")"
set -o pipefail
echo
echo "--- the VM booted $(uname -r); edu PCI devices are bound to uio_pci_generic:"
for u in /sys/class/uio/uio*; do
	echo "    ${u##*/}: PCI $(basename "$(readlink "$u/device")")"
done
insmod /lib/modules/extra/uio_heap.ko || exit 1
echo "--- loaded uio_heap (on a real system: modprobe uio_heap); its heaps:"
ls /dev/dma_heap/ | sed 's/^/    \/dev\/dma_heap\//'
# uio1 is the edu with a 64-bit DMA engine; uio0 only does 28 bits.
echo "--- running tools/uio-heap-demo on uio1:"
./uio-heap-demo uio1 | sed 's/^/    /'
rc=$?
echo
exit $rc
