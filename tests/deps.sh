#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs, from Debian's archive, what building and testing uio-heap
# needs, unless it is there already.  Needs root for apt-get.
set -euo pipefail

pkgs=(
	build-essential gcc make bc flex bison cpio xz-utils zstd kmod file
	libelf-dev libssl-dev dwarves
	linux-headers-amd64 linux-headers-6.12-amd64
	linux-image-amd64 linux-image-6.12-amd64
	linux-source-6.12
	qemu-system-x86 busybox-static sparse dkms ccache gnuplot-nox
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
	echo "deps: not root; install them by hand: apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
