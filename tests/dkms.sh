#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms.sh KVER: the DKMS round trip (add, build, install) for one kernel,
# in a private DKMS tree so that the host's own stays untouched.  Prints
# the installed module's path.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kver=$1
ver=$(cat "$top/VERSION")
root=$out/dkms-$kver
rm -rf "$root" && mkdir -p "$root/tree" "$root/src" "$root/install/$kver"
cp /lib/modules/"$kver"/modules.* "$root/install/$kver/" 2>/dev/null || true

# What a release tarball holds: the tracked files.
(cd "$top" && source_files | tr '\n' '\0' | xargs -0 cp --parents -t "$root/src/")
mv "$root/src" "$root/uio-heap-$ver" && mkdir "$root/src" && mv "$root/uio-heap-$ver" "$root/src/"

# No depmod on the host's /lib/modules, and a signing key of its own
# rather than /var/lib/dkms/mok.* (dkms takes these from the environment).
export mok_signing_key=$root/mok.key mok_certificate=$root/mok.pub
d() {
	dkms --no-depmod --dkmstree "$root/tree" --sourcetree "$root/src" \
		--installtree "$root/install" "$@" -m uio-heap -v "$ver" -k "$kver"
}
d add >"$root/log" 2>&1
d build >>"$root/log" 2>&1 || { cat "$root/log" >&2; exit 1; }
d install >>"$root/log" 2>&1 || { cat "$root/log" >&2; exit 1; }
find "$root/install/$kver" -name 'uio_heap.ko*' | grep . ||
	{ cat "$root/log" >&2; exit 1; }
