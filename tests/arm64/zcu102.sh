#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# zcu102.sh DTB: the device tree Debian ships for the ZCU102 board (its
# zynqmp-zcu102-rev1.0.dtb, DTB) changed only as far as QEMU's
# xlnx-zcu102 model needs: no PMU firmware answers behind SMC there, so
# the firmware node is disabled, its clock controller becomes a fixed
# clock, and the power domains, resets and pin control it provides are
# dropped (with them, the UARTs' probes stay deferred).  Everything else,
# the ZDMA channels included, is Debian's.
# Prints the DTB's path, cached by the source DTB and this script.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

src=${1:?usage: zcu102.sh DTB}
[ -f "$src" ] || die "no $src"
key=$( { cat "$src" "$0"; } | sha256sum | cut -c1-16)
dtb=$cache/zcu102-dtb-$key/zcu102.dtb
if [ -f "$dtb" ]; then
	echo "$dtb"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dtc -q -I dtb -O dts -o "$tmp/in.dts" "$src"
# Pass 1 collects the phandles of the nodes under /firmware; pass 2 drops
# the references to them, disables the firmware and replaces the clocks.
awk '
function cell(s) { sub(/^[^<]*</, "", s); sub(/[ >].*/, "", s); return s }
FNR == NR {
	if ($0 ~ /{$/ && ++depth == 2 && $1 == "firmware") fw = depth
	if (fw && $1 == "phandle") fwph[cell($0)] = 1
	if ($0 ~ /^[ \t]*};$/ && depth-- == fw) fw = 0
	next
}
/^[ \t]*(power-domains|resets|pinctrl-[0-9]+) = </ && cell($0) in fwph { next }
/^[ \t]*(reset-names|pinctrl-names) = / { next }
/compatible = "xlnx,zynqmp-firmware";/ { print; sub(/compatible = .*/, "status = \"disabled\";"); nfw++ }
/compatible = "xlnx,zynqmp-clk";/ {
	ind = $0; sub(/[^ \t].*/, "", ind)
	print ind "compatible = \"fixed-clock\";"; print ind "clock-frequency = <100000000>;"
	nclk++; next
}
{ print }
END { if (nfw != 1 || nclk != 1) { print "zcu102.sh: no firmware or clock node" > "/dev/stderr"; exit 1 } }
' "$tmp/in.dts" "$tmp/in.dts" >"$tmp/out.dts"
# Every provider of those properties lives under /firmware.
! grep -qE '^[[:space:]]*(power-domains|resets) = ' "$tmp/out.dts" ||
	die "$src: power domains or resets outside /firmware"
mkdir -p "${dtb%/*}"
dtc -q -I dts -O dtb -o "$dtb.tmp" "$tmp/out.dts"
mv "$dtb.tmp" "$dtb"
echo "$dtb"
