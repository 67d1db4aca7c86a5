#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: boots Debian's stock 6.12 kernel in QEMU with an edu PCI
# device, loads uio_heap, and runs tools/uio-heap-demo, a complete
# userspace driver, telling what happened.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$top/tests/deps.sh"
k=$(kver_of linux-image-6.12-amd64)
[ -n "$k" ] || die "linux-image-6.12-amd64 is not installed"
dest=$out/demo
rm -rf "$dest" && mkdir -p "$dest/payload"

log "building uio_heap for $k and the demo driver"
build_module "/lib/modules/$k/build" "$dest/mod" >&2
make -s -C "$top/tools" OUT="$dest/tools" >&2
cp "$top/tests/demo/run.sh" "$dest/tools/uio-heap-demo" "$dest/payload/"

log "booting $k in QEMU (TCG); this takes about 10 s"
run_payload "$k" "/boot/vmlinuz-$k" "$dest/mod/drivers/uio_heap/uio_heap.ko" \
	"$dest/payload" off "$dest/vm.log" --timeout 300 ||
	die "the demo failed; the VM's console is in $dest/vm.log"
