#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make deb: the Debian packages (uio-heap-dkms, libuioheap0,
# libuioheap-dev, uio-heap-tools), built by dpkg-buildpackage from a copy
# of the release's files under $UIOHEAP_OUT/deb (default build/deb), so
# that the source tree stays as it was.  Needs no network and no root.
# Prints the path of the .changes file, which names the packages.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${UIOHEAP_OUT:-$top/build}/deb
ver=$(cat "$top/VERSION")
src=$out/uio-heap-$ver

# A release: git's tracked files in a clone, else everything but build/.
rm -rf "$out" && mkdir -p "$src"
if [ -e "$top/.git" ]; then
	git -c safe.directory='*' -C "$top" ls-files -z
else
	(cd "$top" && find . -path ./build -prune -o -type f -print0)
fi | (cd "$top" && xargs -0 cp --parents -t "$src/")

(cd "$src" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 ||
	{ tail -n 40 "$out/build.log" >&2; exit 1; }
ls "$out"/uio-heap_"$ver"_*.changes
