#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dtb.sh MEM SMP: the device tree of QEMU's arm64 virt machine (no SMMU)
# changed into a board's: the PCIe host without dma-coherent, so that its
# devices are non-coherent DMA masters, and a platform device for
# uio_pdrv_genirq (compatible "uioheap,test-dma") behind a bus whose
# dma-ranges let it reach only the first GiB of RAM, like the 30-bit
# window of a Raspberry Pi 4's legacy DMA engines.  (A 256 MiB window
# shares ZONE_DMA with the kernel, CMA and swiotlb: too little for the
# upstream selftest's 32 MiB of 1 MiB blocks.)  A second one, outside
# that bus, snoops (dma-coherent): an importer the first one's uioN must
# refuse.  QEMU models no caches:
# this proves the kernel's code paths, not cache effects.
# Prints the DTB's path, cached by QEMU's version and this script; beside
# it, DTB.args holds what the guest is told about the board
# (uioheap.args of tests/vm/guest-init.sh).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

mem=${1:?usage: dtb.sh MEM SMP} smp=${2:?usage: dtb.sh MEM SMP}
key=$( { qemu-system-aarch64 --version; cat "$0"; echo "$mem $smp"; } | sha256sum | cut -c1-16)
dtb=$cache/arm64-dtb-$key/board.dtb
if [ -f "$dtb" ] && [ -f "$dtb.args" ]; then
	echo "$dtb"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
qemu-system-aarch64 -M virt,dumpdtb="$tmp/virt.dtb" -cpu max -m "$mem" -smp "$smp" \
	-nodefaults -nographic >&2
dtc -q -I dtb -O dts -o "$tmp/virt.dts" "$tmp/virt.dtb"
# The first dma-coherent after the PCIe host's node opens is its own.
n=$(grep -c 'dma-coherent;' "$tmp/virt.dts")
awk '/^\tpcie@/ { p = 1 } p && /dma-coherent;/ { p = 0; next } { print }' \
	"$tmp/virt.dts" >"$tmp/board.dts"
[ "$(grep -c 'dma-coherent;' "$tmp/board.dts")" = $((n - 1)) ] ||
	die "no dma-coherent in the PCIe host of QEMU's virt DTB"
# RAM starts at 1 GiB; 0x9100000 and 0x9101000 lie in virt's unused MMIO
# space (UIO only hands them to whoever maps them).
cat >>"$tmp/board.dts" <<'DTS'

/ {
	uioheap-bus {
		compatible = "simple-bus";
		#address-cells = <2>;
		#size-cells = <2>;
		ranges;
		dma-ranges = <0x0 0x40000000 0x0 0x40000000 0x0 0x40000000>;

		uio@9100000 {
			compatible = "uioheap,test-dma";
			reg = <0x0 0x09100000 0x0 0x1000>;
		};
	};

	uio@9101000 {
		compatible = "uioheap,test-dma";
		reg = <0x0 0x09101000 0x0 0x1000>;
		dma-coherent;
	};
};
DTS
mkdir -p "${dtb%/*}"
dtc -q -I dts -O dtb -o "$dtb.tmp" "$tmp/board.dts"
echo "coherent=0,platform=9100000.uio,platform_snoops=9101000.uio,platform_dma_lo=0x40000000,platform_dma_hi=0x7fffffff" >"$dtb.args"
mv "$dtb.tmp" "$dtb"
echo "$dtb"
