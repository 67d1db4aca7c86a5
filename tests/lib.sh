# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shared by check.sh, demo.sh and bench.sh: where things are, which stock
# kernels there are, and how to build the module and boot a VM payload.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Expensive results outside the work tree, keyed by their inputs.
cache=${UIOHEAP_CACHE:-/var/cache/uio-heap}
out=${UIOHEAP_OUT:-$top/build}
mkdir -p "$cache" "$out"

# The files a release holds: git's tracked files in a clone (whoever owns
# it), everything but build output in an unpacked tarball.
source_files() {
	if [ -e "$top/.git" ]; then
		git -c safe.directory='*' -C "$top" ls-files -co --exclude-standard
	else
		(cd "$top" && find . -path ./build -prune -o -type f -print | sed 's|^\./||')
	fi
}

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# root_info ROOT KEY: what tests/kernel/root.sh recorded of its root.
root_info() { sed -n "s/^$2=//p" "$1/uio-heap.info"; }

# The release of the kernel a Debian metapackage points at.
kver_of() {
	dpkg-query -W -f='${Depends}' "$1" 2>/dev/null |
		sed -n 's/^linux-image-\([^ ,]*\).*/\1/p'
}

stock_kernels() {
	local k
	for k in $(kver_of linux-image-amd64) $(kver_of linux-image-6.12-amd64); do
		[ -f "/boot/vmlinuz-$k" ] && [ -d "/lib/modules/$k/build" ] && echo "$k"
	done
}

# The linux-source-6.12 tree, unpacked once per package version: the
# kselftest harness, checkpatch.pl, and the base of the patched kernel.
ksrc_dir() {
	local ver dir
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
	dir=$cache/linux-source-6.12_$ver
	# Two runs at once (make check and make bench) unpack it once.
	(
		flock 9
		if [ ! -f "$dir/.unpacked" ]; then
			log "unpacking linux-source-6.12 $ver into $dir"
			rm -rf "$dir" && mkdir -p "$dir"
			tar -C "$dir" --strip-components=1 -xf /usr/src/linux-source-6.12.tar.xz
			touch "$dir/.unpacked"
		fi
	) 9>"$cache/.lock-source"
	echo "$dir"
}

# debug_kernel ROOT: the patched debug kernel's cache directory
# (tests/kernel/build.sh), built in ROOT by one run while any other waits
# for it.  Builds for other inputs are dropped, all but the one used last
# before this one: two trees (a branch, a clean clone) may share the cache.
debug_kernel() {
	local dir d
	dir=$(flock "$cache/.lock-kernel" "$top/tests/kernel/build.sh" "$1") || return
	touch "$dir"
	for d in $(ls -dt "$cache"/kernel-[0-9]* | tail -n +3); do
		[ "$d" = "$dir" ] || [ -L "$d" ] || flock "$cache/.lock-kernel" rm -rf "$d"
	done
	echo "$dir"
}

# in_root ROOT CMD...: CMD in a root of tests/kernel/root.sh, with /proc,
# $cache and $out mounted at their own paths in a mount namespace that
# ends with CMD: nothing stays mounted, however CMD ends.
in_root() {
	local root=$1
	shift
	unshare --mount-proc="$root/proc" sh -ec '
		r=$1 c=$2 o=$3
		shift 3
		for d in "$c" "$o"; do mkdir -p "$r$d" && mount --bind "$d" "$r$d"; done
		exec chroot "$r" env LC_ALL=C \
			PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin "$@"' \
		sh "$root" "$cache" "$out" "$@"
}

# build_module KDIR DEST [make args...]: builds a private copy of the
# sources for one kernel (kbuild writes next to the sources) and prints
# the build log; the module ends up in DEST/drivers/uio_heap/.
build_module() {
	local kdir=$1 dest=$2
	shift 2
	rm -rf "$dest" && mkdir -p "$dest"
	cp -a "$top/Makefile" "$top/Kbuild" "$top/drivers" "$top/include" \
		"$top/scripts" "$dest/"
	# The debug kernel is built in a root: its modules are too, with its gcc.
	if [ -f "$kdir/../root" ]; then
		local root cc
		root=$(cat "$kdir/../root")
		cc=$(root_info "$root" cc)
		in_root "$root" make -s -C "$dest" KDIR="$kdir" CC="$cc" HOSTCC="$cc" "$@" 2>&1
	else
		make -s -C "$dest" KDIR="$kdir" "$@" 2>&1
	fi
}

# build_user DEST KSFT_DIR [make args...]: static userspace (demo,
# selftests) into DEST; e.g. CC=aarch64-linux-gnu-gcc for the arm64 VMs.
build_user() {
	local dest=$1 ksft=$2
	shift 2
	mkdir -p "$dest"
	make -s -C "$top/tools" OUT="$dest/tools" "$@" >&2
	make -s -C "$top/tools/testing/selftests/uio_heap" KSFT_DIR="$ksft" \
		OUT="$dest/selftests" "$@" >&2
}

# run_payload KVER VMLINUZ KO PAYLOAD_DIR IOMMU LOG [run-vm args...]:
# boots the kernel with the payload and prints its output.
run_payload() {
	local kver=$1 vmlinuz=$2 ko=$3 payload=$4 iommu=$5 vmlog=$6
	shift 6
	local initrd=${vmlog%.log}.cpio.gz
	"$top/tests/vm/mkinitramfs.sh" --kver "$kver" --out "$initrd" \
		--payload "$payload" --ko "$ko" ${UIOHEAP_KMODS:-} >&2
	"$top/tests/vm/run-vm.sh" --kernel "$vmlinuz" --initrd "$initrd" \
		--iommu "$iommu" --log "$vmlog" "$@"
}
