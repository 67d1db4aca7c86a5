#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build a busybox initramfs (gzip'd newc cpio) that boots a stock kernel,
# loads uio + uio_pci_generic (+ --kmod extras), and runs PAYLOAD/run.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
busybox=/bin/busybox

usage() {
	cat >&2 <<EOF
usage: ${0##*/} --kver KVER --out FILE.cpio.gz --payload DIR
       [--modules-dir DIR] [--ko FILE.ko ...] [--kmod NAME ...]
       [--kmod-late NAME ...] [--busybox FILE]

  --kver KVER        kernel release the initramfs is for (uname -r)
  --out FILE         output initramfs (gzip'd newc cpio)
  --payload DIR      copied to /payload in the guest; must contain run.sh
  --modules-dir DIR  in-tree module tree (default /lib/modules/KVER)
  --ko FILE.ko       out-of-tree module copied to /lib/modules/extra/ (not loaded)
  --kmod NAME        extra in-tree module loaded at boot, with its deps
                     (uio and uio_pci_generic are always included)
  --kmod-late NAME   in-tree module and deps the payload loads when it wants
                     (listed in /lib/modules/late-order.txt)
  --busybox FILE     static busybox for the guest (default /bin/busybox); its
                     applet list is taken from the host's busybox-static
EOF
	exit 2
}

die() { echo "${0##*/}: $*" >&2; exit 1; }

kver='' out='' payload='' moddir=''
kos=() kmods=(uio uio_pci_generic) late=()
while [ $# -gt 0 ]; do
	case $1 in
	--kver) kver=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--payload) payload=${2:?}; shift 2 ;;
	--modules-dir) moddir=${2:?}; shift 2 ;;
	--ko) kos+=("${2:?}"); shift 2 ;;
	--kmod) kmods+=("${2:?}"); shift 2 ;;
	--kmod-late) late+=("${2:?}"); shift 2 ;;
	--busybox) busybox=${2:?}; shift 2 ;;
	-h|--help) usage ;;
	*) echo "unknown argument: $1" >&2; usage ;;
	esac
done
{ [ -n "$kver" ] && [ -n "$out" ] && [ -n "$payload" ]; } || usage
moddir=${moddir:-/lib/modules/$kver}
[ -f "$moddir/modules.dep" ] || die "no modules.dep in $moddir"
[ -f "$payload/run.sh" ] || die "payload $payload has no run.sh"
file -L "$busybox" | grep -q 'statically linked' || die "$busybox is not static (install busybox-static)"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# Module name as modprobe sees it: basename without .ko*, '-' == '_'.
modname() { local b=${1##*/}; b=${b%%.ko*}; echo "${b//-/_}"; }

declare -A dep_of=() path_of=() seen=()
load_order=()

read_modules_dep() {
	local line m
	while IFS= read -r line; do
		m=${line%%:*}
		path_of[$(modname "$m")]=$m
		dep_of[$m]=${line#*:}
	done <"$moddir/modules.dep"
}

# Depth-first post-order: dependencies before the module itself.
add_module() {
	local rel=$1 i deps
	[ -n "${seen[$rel]:-}" ] && return
	seen[$rel]=1
	# modules.dep lists deps so that the last one must be loaded first.
	read -ra deps <<<"${dep_of[$rel]}"
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
		add_module "${deps[i]}"
	done
	load_order+=("$rel")
}

# install_module REL [LIST]: into the initramfs, listed in LIST (load-order).
install_module() {
	local rel=$1 list=${2:-load-order} src=$moddir/$1 dst
	dst=$root/lib/modules/$kver/${rel%.ko*}.ko
	mkdir -p "${dst%/*}"
	case $src in
	*.ko.xz) xz -dc "$src" >"$dst" ;;
	*.ko.zst) zstd -q -dc "$src" >"$dst" ;;
	*.ko.gz) gzip -dc "$src" >"$dst" ;;
	*.ko) cp "$src" "$dst" ;;
	*) die "unknown module format: $src" ;;
	esac
	echo "/lib/modules/$kver/${rel%.ko*}.ko" >>"$root/lib/modules/$list.txt"
}

install_busybox() {
	local a
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin}
	cp "$busybox" "$root/bin/busybox"
	# The host's busybox answers: the guest's may be another architecture.
	for a in $(/bin/busybox --list-full); do
		case $a in */*) ;; *) continue ;; esac   # skips "linuxrc"
		[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
	done
	# kselftest's runner calls coreutils' "timeout --foreground"; busybox's
	# has no such option (and runs the program in the foreground anyway).
	rm -f "$root/usr/bin/timeout"
	printf '#!/bin/sh\n[ "$1" != --foreground ] || shift\nexec busybox timeout "$@"\n' \
		>"$root/usr/bin/timeout"
	chmod +x "$root/usr/bin/timeout"
}

install_etc() {
	mkdir -p "$root/etc"
	cat >"$root/etc/passwd" <<EOF
root:x:0:0:root:/root:/bin/sh
heapuser:x:1000:1000:uioheap group member:/tmp:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOF
	cat >"$root/etc/group" <<EOF
root:x:0:
uioheap:x:990:heapuser
heapuser:x:1000:
nogroup:x:65534:
EOF
}

# add_modules NAME...: NAMEs and what they need, not yet added, in load_order.
add_modules() {
	local m rel
	load_order=()
	for m; do
		rel=${path_of[$(modname "$m")]:-}
		[ -n "$rel" ] || die "module $m not found in $moddir/modules.dep"
		add_module "$rel"
	done
}

read_modules_dep
add_modules "${kmods[@]}"
boot_order=("${load_order[@]}")
add_modules ${late[@]+"${late[@]}"}
late_order=(${load_order[@]+"${load_order[@]}"})

chmod 755 "$root"
mkdir -p "$root"/{proc,sys,dev,tmp,run,mnt,root,lib/modules/extra}
mknod -m 600 "$root/dev/console" c 5 1
mknod -m 666 "$root/dev/null" c 1 3
install_busybox
install_etc
: >"$root/lib/modules/load-order.txt"
for rel in "${boot_order[@]}"; do install_module "$rel"; done
: >"$root/lib/modules/late-order.txt"
for rel in ${late_order[@]+"${late_order[@]}"}; do install_module "$rel" late-order; done
for ko in ${kos[@]+"${kos[@]}"}; do
	[ -f "$ko" ] || die "no such module: $ko"
	cp "$ko" "$root/lib/modules/extra/"
done
cp -a "$payload" "$root/payload"
install -m 755 "$here/guest-init.sh" "$root/init"

mkdir -p "$(dirname "$out")"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
