#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-in-root.sh ROOT OUTDIR [--arm64]: builds the module inside a root
# made by tests/kernel/root.sh, for the kernel headers there and with the
# compiler that kernel was built with, as check.sh builds for the stock
# kernels: once with W=1, once with sparse (C=2), and with --arm64 for the
# arm64 flavour with W=1 (sid's cross gcc may lag its kernel's).  Fails on
# a compiler other than the kernel's, a failed build, or any warning.
#
# Prints the kernel, the compilers and one line per build; the build trees
# and their logs end up in OUTDIR/w1, OUTDIR/sparse and OUTDIR/arm64
# (OUTDIR/*.log).
set -euo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

root=${1:?usage: build-in-root.sh ROOT OUTDIR [--arm64]}
outdir=${2:?usage: build-in-root.sh ROOT OUTDIR [--arm64]}
arm64=${3:-}
[ -f "$root/uio-heap.info" ] || die "$root is not a root of tests/kernel/root.sh"
kdir=$(root_info "$root" kdir) cc=$(root_info "$root" cc)
arm64_kdir=$(root_info "$root" arm64_kdir)

# /proc (objtool reads it) is mounted in a mount namespace that ends with
# the command: nothing stays mounted, whatever way the command ends.
in_root() {
	unshare --mount-proc="$root/proc" chroot "$root" \
		env PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin "$@"
}

work=/tmp/uio-heap-build.$$
trap 'rm -rf --one-file-system "${root:?}$work"' EXIT
# Nothing of an earlier run may pass for this one's.
rm -rf "${outdir:?}" && mkdir -p "$outdir"

# Debian's headers turn kbuild's own compiler check off
# (DEBIAN_KERNEL_NO_CC_VERSION_CHECK): compare the version texts here.
cc_version=$(in_root "$cc" --version | head -n 1)
echo "kernel $(root_info "$root" kernel) ($(root_info "$root" suite): $(root_info "$root" packages))"
echo "compiler $cc_version"
echo "sparse $(root_info "$root" sparse)"
[ "$cc_version" = "$(root_info "$root" kernel_cc_version)" ] ||
	die "the kernel was built by $(root_info "$root" kernel_cc_version)"
builds="w1:W=1:$kdir sparse:C=2:$kdir"
if [ "$arm64" = --arm64 ]; then
	# Debian cross-builds arm64: its .config names the cross gcc.
	arm64_cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' "$root$arm64_kdir/.config")
	arm64_cc_version=$(in_root "$arm64_cc" --version | head -n 1)
	echo "arm64 compiler $arm64_cc_version"
	grep -qxF "CONFIG_CC_VERSION_TEXT=\"$arm64_cc_version\"" "$root$arm64_kdir/.config" ||
		die "the arm64 kernel was not built by $arm64_cc_version"
	builds="$builds arm64:W=1:$arm64_kdir"
fi

rc=0
for build in $builds; do
	IFS=: read -r name arg bkdir <<<"$build"
	mkdir -p "$root$work/$name"
	cp -a "$top/Makefile" "$top/Kbuild" "$top/drivers" "$top/include" \
		"$top/scripts" "$root$work/$name/"
	status=
	in_root make -s -C "$work/$name" KDIR="$bkdir" "$arg" >"$outdir/$name.log" 2>&1 ||
		status=", build failed"
	# As check.sh: BTF needs the kernel's vmlinux, which headers lack.
	n=$(grep -v 'Skipping BTF generation' "$outdir/$name.log" | grep -ciE 'warning|error' || true)
	[ -f "$root$work/$name/drivers/uio_heap/uio_heap.ko" ] || status="${status:-, no uio_heap.ko}"
	# kbuild's notice that it turned sparse off has neither word.
	! grep -q 'not available or not up to date' "$outdir/$name.log" || status="$status, sparse did not run"
	echo "$name ($arg): $n warnings$status"
	if [ "$n" != 0 ] || [ -n "$status" ]; then
		grep -v 'Skipping BTF generation' "$outdir/$name.log" | head -n 40
		rc=1
	fi
	rm -rf "${outdir:?}/$name"
	mv "$root$work/$name" "$outdir/$name"
done
exit $rc
