#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# root.sh SUITE: a chroot from Debian's archive holding the newest
# linux-headers-amd64 of SUITE (e.g. trixie-backports, sid), the gcc that
# kernel was built with, make and sparse, for tests/kernel/build-in-root.sh,
# and what the patched debug kernel's build needs (tests/kernel/build.sh);
# that kernel unpacked in /image (boot/, lib/modules/) for the VMs, its
# arm64 flavour in /image-arm64 with its headers, and its linux-source.
#
# The root is cached as $cache/root-SUITE-KEY, KEY hashing the versions it
# installs and this script's code: a new upload of one of them makes a new root
# (and drops the suite's older one), an unchanged archive costs one
# InRelease check per dist.  Without the archive, or with
# UIOHEAP_ROOT_OFFLINE=1, the lists of the last run pick the cached root.
#
# Prints the root's path; its uio-heap.info says what is in it.
set -euo pipefail
# Also inside $(...): unpack_kernel's steps stop it.
shopt -s inherit_errexit
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

suite=${1:?usage: root.sh SUITE (trixie-backports, sid, ...)}
command -v debootstrap >/dev/null || die "root.sh needs debootstrap (apt-get install debootstrap)"

# The host's own Debian mirrors, from one-line or deb822 sources.
mirror_of() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
		if [ -f "$f" ]; then
			sed -nE 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p; s/^URIs:[[:space:]]*//p' "$f"
		fi
	done | tr ' ' '\n' | awk -v d="$1" '$0 ~ "/" d "/?$" && !n++ { sub(/\/$/, ""); print }'
}
mirror=${UIOHEAP_MIRROR:-$(mirror_of debian)}
security=${UIOHEAP_SECURITY_MIRROR:-$(mirror_of debian-security)}
[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list*"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

case $suite in
sid | unstable)
	base=sid dists="$mirror sid" ;;
*-backports)
	base=${suite%-backports}
	dists="$mirror $base,$mirror $base-updates,$mirror $suite,$security $base-security" ;;
*)
	base=$suite
	dists="$mirror $suite,$mirror $suite-updates,$security $suite-security" ;;
esac
sources=$(tr ',' '\n' <<<"$dists" | sed "s|^|deb [signed-by=$keyring] |; s|\$| main|")
# An older suite may need sid's sparse source (below): listed always, so
# that apt keeps its index between runs.
[ "$base" = sid ] || sources+=$'\n'"deb-src [signed-by=$keyring] $mirror sid main"

# The host's apt, pointed at the suite's lists in a directory of its own:
# it reads and verifies the archive without touching the host's apt.
q=$cache/apt-$suite
mkdir -p "$q/empty" "$q/state/lists/partial" "$q/cache/archives/partial"
: >"$q/status"
cat >"$q/apt.conf" <<EOF
Dir::Etc::Main "$q/empty/none";
Dir::Etc::Parts "$q/empty";
Dir::Etc::SourceList "$q/sources.list";
Dir::Etc::SourceParts "$q/empty";
Dir::Etc::Preferences "$q/empty/none";
Dir::Etc::PreferencesParts "$q/empty";
Dir::State "$q/state";
Dir::State::status "$q/status";
Dir::Cache "$q/cache";
APT::Architecture "amd64";
APT::Architectures { "amd64"; "arm64"; };
Acquire::Languages "none";
Acquire::Retries "1";
Acquire::http::Timeout "30";
EOF
# A dist's Release may be past its Valid-Until on a stale mirror (this
# host's sid was, by a month): still signed, so still used.
echo 'Acquire::Check-Valid-Until "false";' >>"$q/apt.conf"
qapt() { APT_CONFIG=$q/apt.conf "$@"; }
echo "$sources" >"$q/sources.list"

exec 9>"$cache/.lock-root-$suite"
flock 9
if [ -n "${UIOHEAP_ROOT_OFFLINE:-}" ] || ! qapt apt-get -q --error-on=any update >"$q/update.log" 2>&1; then
	ls "$q/state/lists/"*_InRelease >/dev/null 2>&1 ||
		{ cat "$q/update.log" >&2 2>/dev/null; die "cannot read $suite from $mirror"; }
	log "$suite: archive not asked or not reached, using the lists of the last run"
fi

# The newest headers in any of the suite's dists (backports has the lower
# pin, so it is never apt's candidate), and the gcc the kernel asks for.
hver=$(qapt apt-cache madison linux-headers-amd64 | awk -F '|' 'NR == 1 { gsub(/ /, "", $2); print $2 }')
[ -n "$hver" ] || die "$suite has no linux-headers-amd64"
depends() { qapt apt-cache show "$1=$2" | sed -n 's/^Depends: //p' | head -n 1 | tr ',' '\n'; }
flavour=$(depends linux-headers-amd64 "$hver" | sed -n 's/^ *\(linux-headers-[^ ]*-amd64\) .*/\1/p')
gcc=$(depends "$flavour" "$hver" | sed -n 's/^ *\(gcc-[0-9]*\)-for-host.*/\1/p')
if [ -z "$flavour" ] || [ -z "$gcc" ]; then
	die "cannot tell the flavour or gcc of linux-headers-amd64 $hver"
fi
candidate() { qapt apt-cache policy "$1" | sed -n 's/^ *Candidate: //p'; }
# Named with the versions the key hashes; apt brings their dependencies.
pkgs=("linux-headers-amd64=$hver" "$flavour=$hver")
# The arm64 flavour is cross-built by Debian: its compiler is that cross gcc.
# From bc on: the patched debug kernel's build (tests/kernel/build.sh).
for p in "$gcc" "$gcc-aarch64-linux-gnu" make xz-utils \
	bc bison flex libelf-dev libssl-dev kmod ccache; do
	pkgs+=("$p=$(candidate "$p")")
done
# Under sparse the kernel's headers use __typeof_unqual__, which sparse
# parses from 0.6.5 on: an older suite gets sid's sparse, built in the root.
sparse_src=
if dpkg --compare-versions "$(candidate sparse)" ge 0.6.5~; then
	pkgs+=("sparse=$(candidate sparse)")
else
	sparse_src=$(qapt apt-cache showsrc --only-source sparse | sed -n 's/^Version: //p' | head -n 1)
	[ -n "$sparse_src" ] || die "no sparse source in sid"
	pkgs+=("libc6-dev=$(candidate libc6-dev)")
fi
busybox_arm64_ver=$(qapt apt-cache policy busybox-static:arm64 | sed -n 's/^ *Candidate: //p')
key=$( { echo "${pkgs[*]} $sparse_src busybox-static:arm64=$busybox_arm64_ver"; grep -v '^[[:space:]]*#' "$0"; } |
	sha256sum | cut -c1-16)
root=$cache/root-$suite-$key
krel=${flavour#linux-headers-}

if [ -f "$root/uio-heap.info" ]; then
	echo "$root"
	exit 0
fi

log "$suite: new root for ${pkgs[*]}${sparse_src:+ sparse source $sparse_src}"
start=$SECONDS
tmp=$root.tmp
rm -rf --one-file-system "$tmp"
trap 'rm -rf --one-file-system "$tmp"' EXIT
root_path=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin
# Each in a mount namespace of its own: whatever debootstrap, dpkg or apt
# mount inside goes away with them, however they end.
unshare --mount debootstrap --variant=minbase --keyring="$keyring" \
	"$base" "$tmp" "$mirror" >"$q/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$q/debootstrap.log" >&2; die "debootstrap $base failed"; }
in_tmp() { unshare --mount-proc="$tmp/proc" chroot "$tmp" env PATH="$root_path" "$@"; }
echo "$sources" >"$tmp/etc/apt/sources.list"
cat >"$tmp/etc/apt/apt.conf.d/90uio-heap" <<-EOF
Acquire::Check-Valid-Until "false";
Acquire::Languages "none";
APT::Install-Recommends "false";
APT::Architectures { "amd64"; "arm64"; };
EOF
# The lists the key was computed from: the root gets what was keyed.
cp "$q/state/lists/"*_InRelease "$q/state/lists/"*_Packages "$tmp/var/lib/apt/lists/"
cp "$q/state/lists/"*_Sources "$tmp/var/lib/apt/lists/" 2>/dev/null || true
DEBIAN_FRONTEND=noninteractive in_tmp apt-get -q -y install "${pkgs[@]}" \
	>"$q/install.log" 2>&1 ||
	{ tail -n 30 "$q/install.log" >&2; die "installing into the $suite root failed"; }
if [ -n "$sparse_src" ]; then
	# Upstream's source as Debian ships it, without Debian's patches.
	in_tmp sh -ec "cd /usr/local/src
		apt-get -q source --download-only sparse=$sparse_src
		tar xf sparse_*.orig.tar.*
		make -s -C sparse-*/ CC=$gcc -j$(nproc) sparse
		install sparse-*/sparse /usr/local/bin/
		rm -rf /usr/local/src/*" >"$q/sparse.log" 2>&1 ||
		{ tail -n 30 "$q/sparse.log" >&2; die "building sparse $sparse_src failed"; }
fi
# unpack_kernel ARCH DIR: the kernel of linux-image-ARCH (same version as
# the headers) unpacked, not installed, so that no initramfs hook runs:
# DIR/boot/vmlinuz-KREL and DIR/lib/modules/KREL.  From 7.x Debian splits
# it (linux-binary-*, linux-modules-*, linux-base-*) under
# /usr/lib/modules/KREL.  Prints the packages.
unpack_kernel() {
	local arch=$1 dir=$2 image f p parts
	local krel=${krel%-amd64}-$arch	# the global krel, for ARCH
	image=$(depends "linux-image-$arch:$arch" "$hver" |
		sed -n 's/^ *\(linux-image-[^ ]*\) (= \(.*\))$/\1:'"$arch"'=\2/p')
	[ -n "$image" ] || die "cannot tell the image of linux-image-$arch $hver"
	parts=("$image")
	while read -r p; do
		parts+=("$p")
	done < <(depends "${image%%=*}" "${image#*=}" |
		sed -n "s/^ *\(linux-[a-z]*-$krel\) (= \(.*\))\$/\1:$arch=\2/p")
	in_tmp sh -ec "cd /tmp; apt-get -q download ${parts[*]}
		for d in *.deb; do dpkg-deb -x \$d /${dir#"$tmp"/}; done; rm -f *.deb" \
		>>"$q/image.log" 2>&1 ||
		{ tail -n 30 "$q/image.log" >&2; die "fetching ${parts[*]} failed"; }
	mkdir -p "$dir/boot" "$dir/lib/modules"
	[ ! -d "$dir/usr/lib/modules/$krel" ] || mv "$dir/usr/lib/modules/$krel" "$dir/lib/modules/"
	for f in vmlinuz System.map config; do
		[ ! -f "$dir/lib/modules/$krel/$f" ] || mv "$dir/lib/modules/$krel/$f" "$dir/boot/$f-$krel"
	done
	[ -f "$dir/boot/vmlinuz-$krel" ] || die "no vmlinuz-$krel in ${parts[*]}"
	depmod -b "$dir" -F "$dir/boot/System.map-$krel" "$krel"
	echo "${parts[*]}"
}
: >"$q/image.log"
image=$(unpack_kernel amd64 "$tmp/image")
# arm64: its kernel, an arm64 busybox for its initramfs, and its headers
# over the amd64 root (their scripts are linux-kbuild's, for the host).
image_arm64=$(unpack_kernel arm64 "$tmp/image-arm64")
arm64_krel=${krel%-amd64}-arm64
in_tmp sh -ec "cd /tmp; apt-get -q download linux-headers-$arm64_krel:arm64=$hver busybox-static:arm64=$busybox_arm64_ver
	dpkg-deb -x linux-headers-*.deb /; dpkg-deb -x busybox-static_*.deb /image-arm64; rm -f *.deb" \
	>>"$q/image.log" 2>&1 ||
	{ tail -n 30 "$q/image.log" >&2; die "fetching the arm64 headers and busybox failed"; }
busybox_arm64=
for f in image-arm64/usr/bin/busybox image-arm64/bin/busybox; do
	[ -z "$busybox_arm64" ] && [ -x "$tmp/$f" ] && busybox_arm64=$f
done
[ -n "$busybox_arm64" ] || die "no arm64 busybox"
# The kernel's source, the base check.sh applies the dma-buf core patch to
# (with that tree's checkpatch.pl).
series=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$krel")
in_tmp sh -ec "cd /tmp; apt-get -q download linux-source-$series=$hver
	dpkg-deb --fsys-tarfile linux-source-*.deb | tar -xO ./usr/src/linux-source-$series.tar.xz |
		tar -C /usr/src -xJf -; rm -f *.deb" >>"$q/image.log" 2>&1 ||
	{ tail -n 30 "$q/image.log" >&2; die "fetching linux-source-$series $hver failed"; }
[ -f "$tmp/usr/src/linux-source-$series/scripts/checkpatch.pl" ] || die "no linux-source-$series tree"
in_tmp apt-get clean

kdir=/usr/src/linux-headers-$krel
[ "$(cat "$tmp$kdir/include/config/kernel.release")" = "$krel" ] ||
	die "$kdir is not the tree of $krel"
# Debian's headers-common lack scripts/checker-valid.sh, which kbuild asks
# whether sparse is usable, and without it turns C= off: this one asks the
# same.
for d in "$tmp"/usr/src/linux-headers-*-common/scripts; do
	[ -e "$d/checker-valid.sh" ] && continue
	cat >"$d/checker-valid.sh" <<-'EOF'
	#!/bin/sh
	# Written by uio-heap's tests/kernel/root.sh: prints 1 if the checker
	# "$@" parses __typeof_unqual__ without an error, else 0.
	command -v "$1" >/dev/null || { echo 0; exit 0; }
	f=$(mktemp --suffix=.c)
	trap 'rm -f "$f"' EXIT
	printf 'int f(const int *p);\nint f(const int *p) { __typeof_unqual__(*p) v = *p; return v; }\n' >"$f"
	if "$@" "$f" 2>&1 | grep -q error; then echo 0; else echo 1; fi
	EOF
	chmod +x "$d/checker-valid.sh"
done
# Debian's headers name their compiler in .kernelvariables.
# shellcheck disable=SC2016
cc=$(printf 'include %s/.kernelvariables\nall:\n\t@echo $(CC)\n' "$kdir" |
	in_tmp make -s -f -)
{
	echo "suite=$suite"
	echo "kernel=$krel"
	echo "kdir=$kdir"
	echo "image=$image"
	echo "arm64_kdir=/usr/src/linux-headers-$arm64_krel"
	echo "arm64_image=$image_arm64"
	echo "arm64_busybox=/$busybox_arm64"
	echo "source=/usr/src/linux-source-$series"
	echo "source_version=$hver"
	echo "cc=$cc"
	echo "cc_version=$(in_tmp "$cc" --version | head -n 1)"
	echo "kernel_cc_version=$(sed -n 's/^CONFIG_CC_VERSION_TEXT=//p' "$tmp$kdir/include/config/auto.conf")"
	echo "sparse=$(in_tmp sparse --version)${sparse_src:+, built from sid source $sparse_src}"
	echo "packages=${pkgs[*]}"
	# The archive's state the root was made from, dist by dist.
	echo "archive=$(awk '/^Codename:/ { c = $2 } /^Date:/ { sub(/^Date: /, ""); printf "%s%s %s", s, c, $0; s = "; " }' \
		"$q/state/lists/"*_InRelease)"
} >"$tmp/uio-heap.info"
mv "$tmp" "$root"
log "$suite: root made in $((SECONDS - start)) s"
# One root per suite: the older ones go (the key's 16 hex digits keep a
# suite's glob off its -backports).
hex='[0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
for d in "$cache/root-$suite-"$hex$hex$hex$hex{,.tmp}; do
	[ "$d" = "$root" ] || [ ! -e "$d" ] || rm -rf --one-file-system "$d"
done
echo "$root"
