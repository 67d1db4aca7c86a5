#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build.sh ROOT: builds the patched debug test kernel from the linux-source
# of ROOT (tests/kernel/root.sh; make check gives the newest of
# trixie-backports) with drivers/dma-buf/patches/ applied, configured as
# tinyconfig plus tests/kernel/debug.config, inside ROOT with the gcc its
# kernel was built with.  The result is cached outside the work tree,
# keyed by everything that goes into it, so an unchanged kernel costs
# nothing; ccache makes a changed one cheaper.
#
# Prints the cache directory, which holds:
#   bzImage     the kernel
#   kver        its release string
#   obj/        the O= build tree (KDIR for out-of-tree modules)
#   mods/       modules_install tree (lib/modules/KVER/)
#   root        ROOT: build_module (tests/lib.sh) builds modules there
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

root=${1:?usage: build.sh ROOT}
frag=$top/tests/kernel/debug.config
patches=("$top"/drivers/dma-buf/patches/000[1-9]-*.patch)
tree=$(root_info "$root" source) cc=$(root_info "$root" cc)
key=$( { root_info "$root" source_version; root_info "$root" cc_version
	 cat "${patches[@]}" "$frag" "$0"; } | sha256sum | cut -c1-16)
dest=$cache/kernel-${tree##*-}-$key

if [ -f "$dest/.done" ]; then
	echo "$root" >"$dest/root"
	echo "$dest"
	exit 0
fi

log "building the patched debug kernel ${tree##*/} ($key); the first build takes a while"
start=$SECONDS
rm -rf "$dest" && mkdir -p "$dest"
src=$dest/src obj=$dest/obj
mkdir -p "$src" "$obj"
cp -a "$root$tree/." "$src/"
(cd "$src" && for p in "${patches[@]}"; do patch -p1 -s --no-backup-if-mismatch <"$p"; done)

export CCACHE_DIR=$cache/ccache-root CCACHE_BASEDIR=$dest CCACHE_MAXSIZE=5G
kmake() { in_root "$root" make -s -C "$src" O="$obj" CC="ccache $cc" HOSTCC="$cc" -j"$(nproc)" "$@"; }

kmake tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag" >/dev/null
kmake olddefconfig >/dev/null

# Every option the fragment asks for must have survived olddefconfig.
bad=0
while IFS= read -r line; do
	case $line in CONFIG_*=*) ;; *) continue ;; esac
	opt=${line%%=*} val=${line#*=}
	if [ "$val" = n ]; then
		grep -q "^$opt=" "$obj/.config" && { echo "config: $opt should be off" >&2; bad=1; }
	else
		grep -qx "$line" "$obj/.config" || { echo "config: $line did not stick" >&2; bad=1; }
	fi
done <"$frag"
[ $bad = 0 ] || die "config fragment does not apply"

kmake bzImage modules >"$dest/build.log" 2>&1 || { tail -40 "$dest/build.log" >&2; die "kernel build failed"; }
kmake INSTALL_MOD_PATH="$dest/mods" modules_install >/dev/null
cp "$obj/arch/x86/boot/bzImage" "$dest/bzImage"
kmake -s kernelrelease >"$dest/kver"
echo "$root" >"$dest/root"
touch "$dest/.done"
log "kernel $(cat "$dest/kver") built in $((SECONDS - start)) s"
echo "$dest"
