#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pdrv.sh ARM64_DIR: uio_pdrv_genirq.ko for the kernel fetch.sh unpacked
# into ARM64_DIR, built from linux-source-6.12 (Debian's arm64 kernel does
# not ship it): a test-only module for the device-tree UIO device of
# dtb.sh.  Prints its path; cached by the source package's version.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

dir=${1:?usage: pdrv.sh ARM64_DIR}
kver=$(cat "$dir/kver")
ksrc=$(ksrc_dir)
ko=$dir/pdrv-${ksrc##*/}/uio_pdrv_genirq.ko
if [ -f "$ko" ]; then
	echo "$ko"
	exit 0
fi
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp "$ksrc/drivers/uio/uio_pdrv_genirq.c" "$src/"
echo 'obj-m := uio_pdrv_genirq.o' >"$src/Kbuild"
msg=$(make -s -C "$dir/usr/src/linux-headers-$kver" M="$src" W=1 modules 2>&1) ||
	die "uio_pdrv_genirq: $msg"
[ -z "$msg" ] || die "uio_pdrv_genirq built with warnings: $msg"
mkdir -p "${ko%/*}"
cp "$src/uio_pdrv_genirq.ko" "$ko.tmp"
mv "$ko.tmp" "$ko"
echo "$ko"
