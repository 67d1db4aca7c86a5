#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the patched debug test kernel: Debian's linux-source-6.12 with
# drivers/dma-buf/patches/ applied, configured as tinyconfig plus
# tests/kernel/debug.config.  The result is cached outside the work tree,
# keyed by everything that goes into it, so an unchanged kernel costs
# nothing; ccache makes a changed one cheaper.
#
# Prints the cache directory, which holds:
#   bzImage     the kernel
#   kver        its release string
#   obj/        the O= build tree (KDIR for out-of-tree modules)
#   mods/       modules_install tree (lib/modules/KVER/)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

frag=$top/tests/kernel/debug.config
patches=("$top"/drivers/dma-buf/patches/000[1-9]-*.patch)
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
key=$( { echo "$srcver"; cat "${patches[@]}" "$frag" "$0"; } | sha256sum | cut -c1-16)
dest=$cache/kernel-6.12-$key

if [ -f "$dest/.done" ]; then
	echo "$dest"
	exit 0
fi

log "building the patched debug kernel ($key); the first build takes a while"
start=$SECONDS
rm -rf "$dest" && mkdir -p "$dest"
src=$dest/src obj=$dest/obj
mkdir -p "$src" "$obj"
tar -C "$src" --strip-components=1 -xf /usr/src/linux-source-6.12.tar.xz
(cd "$src" && for p in "${patches[@]}"; do patch -p1 -s --no-backup-if-mismatch <"$p"; done)

export CCACHE_DIR=$cache/ccache CCACHE_BASEDIR=$dest CCACHE_MAXSIZE=5G
kmake() { make -s -C "$src" O="$obj" CC="ccache gcc" -j"$(nproc)" "$@"; }

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
touch "$dest/.done"
log "kernel $(cat "$dest/kver") built in $((SECONDS - start)) s"
echo "$dest"
