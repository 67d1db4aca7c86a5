#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs, from Debian's archive, what building and testing uio-heap
# needs, unless it is there already.  Needs root for apt-get.
set -euo pipefail

pkgs=(
	build-essential git gcc make bc flex bison cpio xz-utils zstd kmod file
	libelf-dev libssl-dev dwarves
	linux-headers-amd64 linux-headers-6.12-amd64
	linux-image-amd64 linux-image-6.12-amd64
	linux-source-6.12
	qemu-system-x86 busybox-static sparse dkms ccache gnuplot-nox
	debhelper dh-dkms lintian pkgconf adduser
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm device-tree-compiler
	gcc-i686-linux-gnu libc6-dev-i386-cross
	debootstrap
	libdpdk-dev libnuma-dev libbsd-dev libmd-dev
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done
# The arm64 VMs' kernel and busybox are arm64 packages, downloaded by
# tests/arm64/fetch.sh: apt must know that architecture's lists.
lists=
apt-cache show linux-image-6.12-arm64:arm64 >/dev/null 2>&1 || lists=" (and arm64 package lists)"
[ ${#missing[@]} -eq 0 ] && [ -z "$lists" ] && exit 0

echo "deps: installing ${missing[*]}$lists"
if [ "$(id -u)" != 0 ]; then
	echo "deps: not root; install them by hand: dpkg --add-architecture arm64;" \
	     "apt-get update; apt-get install ${missing[*]}" >&2
	exit 1
fi
dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
# The VMs boot the kernels with an initramfs of their own: no initrd for
# the host's /boot.
export DEBIAN_FRONTEND=noninteractive INITRD=No
aptlog=$(mktemp)
trap 'rm -f "$aptlog"' EXIT
{ apt-get update -q && { [ ${#missing[@]} -eq 0 ] ||
	apt-get install -y -q --no-install-recommends "${missing[@]}"; }; } \
	>"$aptlog" 2>&1 || { tail -n 40 "$aptlog" >&2; exit 1; }
