#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fetch.sh: Debian's stock arm64 6.12 kernel, its headers and an arm64
# busybox, unpacked under one cache directory keyed by the packages'
# versions; prints that directory.
#
# Installed beside the amd64 toolchain, linux-headers-*-arm64:arm64 would
# pull gcc-12:arm64 (which replaces build-essential and dkms), and
# busybox-static:arm64 conflicts with the amd64 one.  So the packages are
# downloaded and unpacked, not installed.  The headers' build tools come
# from the amd64 linux-kbuild of the same version: what an amd64 host
# cross-building for the arm64 flavour runs anyway.  Layout:
#   boot/vmlinuz-KVER  lib/modules/KVER (with modules.dep)  bin/busybox
#   usr/src/linux-headers-KVER (the KDIR)  kver
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

dep_of() {
	apt-cache depends "$1" | sed -n "s/^ *Depends: \($2[^ :]*\).*/\1/p" | head -n 1
}
version_of() {
	apt-cache show --no-all-versions "$1" | sed -n 's/^Version: //p' | head -n 1
}

image=$(dep_of linux-image-6.12-arm64:arm64 linux-image-)
[ -n "$image" ] || die "apt knows no linux-image-6.12-arm64:arm64 (dpkg --add-architecture arm64; apt-get update)"
kver=${image#linux-image-}
abi=${kver%-arm64}
kver_pkg=$(version_of "$image:arm64")
bb_pkg=$(version_of busybox-static:arm64)
dir=$cache/arm64-$kver-$kver_pkg-bb${bb_pkg#*:}
if [ -f "$dir/.done" ]; then
	echo "$dir"
	exit 0
fi

log "fetching Debian's arm64 kernel $kver ($kver_pkg) and busybox ($bb_pkg)"
rm -rf "$dir" && mkdir -p "$dir/debs"
(cd "$dir/debs" && apt-get download -q -o APT::Sandbox::User=root "$image:arm64" "linux-headers-$kver:arm64" \
	"linux-headers-$abi-common" "linux-kbuild-$abi:amd64" "busybox-static:arm64" >&2)
for d in "$dir"/debs/*.deb; do
	dpkg-deb -x "$d" "$dir"
done
rm -rf "$dir/debs"
# The flavour's Makefile includes the common tree by absolute path.
kdir=$dir/usr/src/linux-headers-$kver
sed -i "s|^include /usr/src/|include $dir/usr/src/|" "$kdir/Makefile"
grep -q "^include $dir/" "$kdir/Makefile" || die "unexpected $kdir/Makefile"
[ -x "$kdir/scripts/mod/modpost" ] || die "no modpost under $kdir/scripts"
depmod -b "$dir" -F "$dir/boot/System.map-$kver" "$kver"
echo "$kver" >"$dir/kver"
touch "$dir/.done"
echo "$dir"
