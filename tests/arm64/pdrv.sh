#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pdrv.sh ARM64_DIR | --root ROOT: uio_pdrv_genirq.ko, which Debian's
# arm64 kernels do not ship: a test-only module for the device-tree UIO
# devices of dtb.sh and zcu102.sh.  For the 6.12 kernel fetch.sh unpacked
# into ARM64_DIR it is built from linux-source-6.12; for the arm64 kernel
# of a root of tests/kernel/root.sh, inside that root from its
# linux-source, with the cross gcc that kernel was built with.  Prints
# its path; cached by the source's version.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ "${1:-}" = --root ]; then
	root=${2:?usage: pdrv.sh --root ROOT}
	c=$root$(root_info "$root" source)/drivers/uio/uio_pdrv_genirq.c
	ko=$cache/pdrv-$(root_info "$root" source_version)-arm64/uio_pdrv_genirq.ko
	kmake() { in_root "$root" make -s -C "$(root_info "$root" arm64_kdir)" "$@"; }
else
	dir=${1:?usage: pdrv.sh ARM64_DIR | --root ROOT}
	ksrc=$(ksrc_dir)
	c=$ksrc/drivers/uio/uio_pdrv_genirq.c
	ko=$dir/pdrv-${ksrc##*/}/uio_pdrv_genirq.ko
	kmake() { make -s -C "$dir/usr/src/linux-headers-$(cat "$dir/kver")" "$@"; }
fi
if [ -f "$ko" ]; then
	echo "$ko"
	exit 0
fi
# Under $cache: a root sees it at the same path.
src=$(mktemp -d "$cache/pdrv.XXXXXX")
trap 'rm -rf "$src"' EXIT
cp "$c" "$src/"
echo 'obj-m := uio_pdrv_genirq.o' >"$src/Kbuild"
msg=$(kmake M="$src" W=1 modules 2>&1) || die "uio_pdrv_genirq: $msg"
[ -z "$msg" ] || die "uio_pdrv_genirq built with warnings: $msg"
mkdir -p "${ko%/*}"
cp "$src/uio_pdrv_genirq.ko" "$ko.tmp"
mv "$ko.tmp" "$ko"
echo "$ko"
