#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: what a uio-heap buffer costs, against the system heap,
# udmabuf, the pagemap hack and a plain memset.  Boots Debian's stock 6.12
# kernel in QEMU (TCG) with the IOMMU off, then on (and once more with
# multi-threaded TCG for the two-thread figure), runs tools/uio-heap-bench
# there.  Then the NVMe example driver against the kernel's nvme driver,
# on two identical controllers in one VM, IOMMU on (tests/bench/nvme.sh),
# and the DPDK example on uio-heap memory against DPDK's own, IOMMU off,
# and on uio-heap memory with the IOMMU on (tests/bench/dpdk.sh).
# Writes to ${UIOHEAP_OUT:-build}/bench/:
#
#   results.txt   the tables, ratios and targets (also printed)
#   cycle.png     cycle cost against size, one line per method (log-log)
#   cycle.dat     the plot's data
#   raw-*.txt     the benchmark's own output per VM run; vm-*.log consoles
#
# The figures are TCG-emulated: compare methods within one run, never
# absolute times with hardware.  Knobs (for development; make bench sets
# none):
#   UIOHEAP_BENCH_BUDGET=2              seconds per size or figure, in the guest
#   UIOHEAP_BENCH_RUNS="off on mttcg nvme dpdk dpdk-on"  which VM runs (also nvme-off:
#                                       the NVMe figures with the IOMMU off)
#   UIOHEAP_BENCH_KO=path.ko            measure this module instead of building
#   UIOHEAP_BENCH_ARGS=k=v,...          more uioheap.args for the guest
#                                       (tests/bench/run.sh), e.g.
#                                       cmp=1,modparams=proto_variant=3
set -euo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

"$top/tests/deps.sh"
start=$SECONDS
bdir=$out/bench
budget=${UIOHEAP_BENCH_BUDGET:-2}
runs=${UIOHEAP_BENCH_RUNS:-off on mttcg nvme dpdk dpdk-on}
extra=${UIOHEAP_BENCH_ARGS:+,$UIOHEAP_BENCH_ARGS}
mkdir -p "$bdir"
rm -f "$bdir"/raw-*.txt "$bdir"/results.txt "$bdir"/cycle.png "$bdir"/cycle.dat

kver=$(stock_kernels | grep '^6\.12\.' | head -n 1) ||
	die "no stock 6.12 kernel (linux-image-6.12-amd64 and its headers)"
load0=$(cut -d' ' -f1-3 /proc/loadavg)

if [ -n "${UIOHEAP_BENCH_KO:-}" ]; then
	ko=$UIOHEAP_BENCH_KO
else
	log "building uio_heap for $kver"
	build_module "/lib/modules/$kver/build" "$bdir/mod" >"$bdir/build.log" ||
		{ cat "$bdir/build.log" >&2; die "module build failed"; }
	ko=$bdir/mod/drivers/uio_heap/uio_heap.ko
fi
[ -f "$ko" ] || die "no module $ko"

log "building uio-heap-bench"
make -s -C "$top/tools" OUT="$bdir/user" >&2
payload=$bdir/payload
rm -rf "$payload" && mkdir -p "$payload"
cp "$top/tests/bench/run.sh" "$top/tests/bench/nvme.sh" "$top/tests/bench/dpdk.sh" \
	"$bdir/user/uio-heap-bench" "$bdir/user/uio-nvme" "$bdir/user/nvme-odirect" \
	"$bdir/user/uio-dpdk" "$payload/"

# vm NAME IOMMU TCG TESTS [run-vm args]: one VM run into raw-NAME.txt.
# Never fatal: the report says what is missing.
vm() {
	local name=$1 iommu=$2 tcg=$3 tests=$4 rc=0 t0=$SECONDS
	shift 4
	log "VM $name: $kver, IOMMU $iommu, TCG $tcg, tests: ${tests//+/ }"
	run_payload "$kver" "/boot/vmlinuz-$kver" "$ko" "$payload" "$iommu" \
		"$bdir/vm-$name.log" --timeout 900 --mem 2G --tcg "$tcg" \
		--append "uioheap.args=tests=$tests,budget=$budget${vm_args:-}$extra" "$@" \
		>"$bdir/raw-$name.txt" || rc=$?
	echo "@ info vm-seconds $((SECONDS - t0))" >>"$bdir/raw-$name.txt"
	[ $rc = 0 ] || log "VM $name failed (rc $rc), see $bdir/vm-$name.log"
	grep -v '^@' "$bdir/raw-$name.txt" | sed "s/^/[$name] /" >&2 || true
}

# nvme_vm NAME IOMMU: the NVMe figures.  Two controllers with the same
# kind of image (check.sh's: tools/nvme/pattern.h), one for uio-nvme, one
# for the kernel's nvme driver, loaded at boot (guest-init.sh takes the
# first one back for uio_pci_generic).  A new seed each run, which the
# guest's readers verify the data against (nvme_seed: UIOHEAP_NVME_SEED).
nvme_vm() {
	local img=$bdir/nvme-$1 seed=$((RANDOM << 15 | RANDOM))
	if ! "$bdir/user/uio-nvme-pattern" "$img-uio.img" 64 "$seed" ||
	   ! "$bdir/user/uio-nvme-pattern" "$img-kernel.img" 64 "$seed"; then
		die "cannot write the NVMe images"
	fi
	vm_args=",nvme_seed=$seed" UIOHEAP_KMODS="--kmod nvme" vm "$@" single nvme \
		--nvme "$img-uio.img" --nvme2 "$img-kernel.img"
	rm -f "$img-uio.img" "$img-kernel.img"
}

for r in $runs; do
	case $r in
	off) vm off off single info+zero+cycle+phases+addr+grow+threads+bw+max,profile=1 ;;
	on) vm on on single cycle+phases+addr+grow+bw+max,profile=1 ;;
	# Single-threaded TCG runs both vCPUs on one host thread, so two guest
	# threads never run at once there; multi-threaded TCG can run them.
	mttcg) vm mttcg off multi threads ;;
	nvme) nvme_vm nvme on ;;
	nvme-off) nvme_vm nvme-off off ;;
	dpdk) vm dpdk off single dpdk ;;
	dpdk-on) vm dpdk-on on single dpdk ;;
	*) die "unknown run $r" ;;
	esac
done

{
	echo "@ info date $(date -u +%Y-%m-%d)"
	echo "@ info host-cpu $(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "@ info qemu $(qemu-system-x86_64 --version | head -n 1)"
	echo "@ info load $load0 / $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "@ info seconds $((SECONDS - start))"
} >"$bdir/raw-host.txt"

"$top/tests/bench/report.sh" "$bdir"
log "make bench: $((SECONDS - start)) s; results in $bdir/results.txt and $bdir/cycle.png"
