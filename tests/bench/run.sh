#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark payload, run inside the VM by the initramfs' /init after
# the edu devices were bound to uio_pci_generic (tests/vm/guest-init.sh):
# loads uio_heap and runs uio-heap-bench on the 64-bit edu's heap, or for
# tests=nvme hands over to nvme.sh.
#
# From the kernel command line (uioheap.args=, see tests/bench.sh):
#   UIOHEAP_TESTS      tests to run, e.g. "cycle addr" (default: all)
#   UIOHEAP_BUDGET     seconds per size or figure (default 2)
#   UIOHEAP_SIZES      cycle sizes (default: the bench's own)
#   UIOHEAP_METHODS    cycle methods (default: all there are)
#   UIOHEAP_CMP        heap measured as "cmp": "cached" (default) for the
#                      same edu's uioN-cached, "edu28" for the other edu's
#   UIOHEAP_MODPARAMS  insmod parameters for uio_heap.ko
#   UIOHEAP_PROFILE    also profile 1 MiB cycles with ftrace (any value)
set -eu
cd "$(dirname "$0")"
# The NVMe and DPDK VM runs measure drivers, not buffers.
[ "${UIOHEAP_TESTS:-}" = nvme ] && exec ./nvme.sh
[ "${UIOHEAP_TESTS:-}" = dpdk ] && exec ./dpdk.sh

echo "# kernel $(uname -r), IOMMU ${UIOHEAP_IOMMU:-?}, tests: ${UIOHEAP_TESTS:-all}"
echo "@ info iommu ${UIOHEAP_IOMMU:-?}"
echo "@ info mem $(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
echo "@ info cpus $(grep -c ^processor /proc/cpuinfo)"
echo "@ info cmdline $(cat /proc/cmdline)"
# shellcheck disable=SC2086
insmod /lib/modules/extra/uio_heap.ko ${UIOHEAP_MODPARAMS:-}
uio=${UIOHEAP_EDU64_UIO%% *}
[ -n "$uio" ] || { echo "@ error no 64-bit edu heap"; exit 1; }
# The edu at 00:11.0 addresses 64 bits; the heap starts at 32.  The
# largest-buffer test wants more than the default limit, half of the RAM.
echo 64 >"/sys/class/uio_heap/$uio/dma_mask_bits"
echo 0 >"/sys/class/uio_heap/$uio/max_bytes"
[ -e /dev/udmabuf ] || echo "# no /dev/udmabuf: udmabuf not measured"

set -- -h "$uio" -t "${UIOHEAP_BUDGET:-2}"
[ -n "${UIOHEAP_SIZES:-}" ] && set -- "$@" -s "$(echo "$UIOHEAP_SIZES" | tr ' ' ,)"
[ -n "${UIOHEAP_METHODS:-}" ] && set -- "$@" -m "$(echo "$UIOHEAP_METHODS" | tr ' ' ,)"
case ${UIOHEAP_CMP:-cached} in
cached)
	echo 0 >"/sys/class/uio_heap/$uio-cached/max_bytes"
	set -- "$@" -c "$uio-cached" ;;
*)
	# The CPU side is all that is measured: no DMA, so the mask can be 64.
	cmp=${UIOHEAP_EDU28_UIO%% *}
	echo 64 >"/sys/class/uio_heap/$cmp/dma_mask_bits"
	set -- "$@" -c "$cmp" ;;
esac

rc=0
# shellcheck disable=SC2086
./uio-heap-bench "$@" ${UIOHEAP_TESTS:-all} || rc=$?

# Where a 1 MiB cycle spends its time in the kernel: ftrace's
# function_graph tracer, limited to the functions below that this kernel
# can trace, while uio-heap-bench runs its profile test.  Prints
# "@ profile METHOD CALLER>...>FUNCTION CALLS US SELF_US" per cycle (SELF:
# not in traced callees); the tracer adds a few us per traced call, so
# only the large figures mean much.
profile_funcs="uio_heap_buffer_alloc uio_heap_buffer_release uio_heap_mmap uio_heap_vm_fault
vm_insert_pages dma_map_sgtable dma_unmap_sg_attrs iommu_dma_map_sg iommu_dma_unmap_sg
system_heap_allocate system_heap_dma_buf_release system_heap_mmap
dma_alloc_attrs dma_direct_alloc iommu_dma_alloc dma_free_attrs dma_direct_free
iommu_dma_free __alloc_pages_noprof __free_pages dma_common_pages_remap vunmap
iommu_map_sg __iommu_dma_map iommu_unmap dma_get_sgtable_attrs dma_buf_export
dma_buf_release release_pages iput"
profile() {
	local t=/sys/kernel/tracing f

	[ -d $t/options ] || mount -t tracefs nodev $t 2>/dev/null
	grep -q function_graph $t/available_tracers 2>/dev/null ||
		{ echo "# profile: no function_graph tracer"; return 0; }
	echo 0 >$t/tracing_on
	for f in $profile_funcs; do
		grep -qE "^$f( |\$)" $t/available_filter_functions &&
			echo "$f" >>$t/set_ftrace_filter
	done
	echo function_graph >$t/current_tracer
	echo funcgraph-tail >$t/trace_options
	echo 32768 >$t/buffer_size_kb
	: >$t/trace
	./uio-heap-bench -h "$uio" -m uio,system -s 1M profile
	# Leaf calls read "NAME();", others open with "NAME() {" and close
	# with "} /* NAME */"; the path is the chain of traced callers.
	awk '
	/\/\* profile / {
		s = $0; sub(/.*\/\* profile /, "", s); split(s, w, " ")
		m = w[1]; n[m] = w[3]; next
	}
	m == "" || !match($0, /^ *[0-9]+\)/) { next }
	{
		cpu = substr($0, RSTART, RLENGTH) + 0
		f = $0; sub(/^[^|]*\| */, "", f)
		d = ""
		if ($0 ~ / us +\|/) {
			d = $0; sub(/ us +\|.*/, "", d); sub(/.*[ !+#*@$]/, "", d)
		}
	}
	f ~ /\) \{ *$/ {
		sub(/\(\) \{.*/, "", f); sub(/ \[.*/, "", f)
		top[cpu]++; name[cpu, top[cpu]] = f; kids[cpu, top[cpu]] = 0
		next
	}
	d == "" { next }
	{
		if (f ~ /^\} /) {
			if (!top[cpu])
				next
			f = name[cpu, top[cpu]]; self = d - kids[cpu, top[cpu]]
			top[cpu]--
		} else if (f ~ /\(\);/) {
			sub(/\(\);.*/, "", f); sub(/ \[.*/, "", f); self = d
		} else {
			next
		}
		path = f
		for (l = top[cpu]; l >= 1; l--) path = name[cpu, l] ">" path
		if (top[cpu]) kids[cpu, top[cpu]] += d
		key = m SUBSEP path
		if (!(key in calls)) order[++k] = key
		calls[key]++; tot[key] += d; own[key] += self
	}
	END {
		for (i = 1; i <= k; i++) {
			split(order[i], p, SUBSEP)
			printf "@ profile %s %s %.2f %.1f %.1f\n", p[1], p[2],
				calls[order[i]] / n[p[1]], tot[order[i]] / n[p[1]],
				own[order[i]] / n[p[1]]
		}
	}' $t/trace
	echo nop >$t/current_tracer
	: >$t/set_ftrace_filter
}
[ -n "${UIOHEAP_PROFILE:-}" ] && profile

# The max test has the OOM killer take its probes: their reports are
# expected, anything else alarming is not.
oom=$(dmesg | grep -c 'Out of memory: Killed process' || true)
echo "@ info oom-kills $oom"
bad=$(dmesg | grep -E 'WARNING|BUG|Oops|general protection|Call Trace' |
	grep -v 'Call Trace' | head -n 20 || true)
traces=$(dmesg | grep -c 'Call Trace' || true)
if [ -n "$bad" ] || [ "$traces" -gt "$oom" ]; then
	echo "@ error kernel log"
	dmesg | grep -E -A 12 'WARNING|BUG|Oops|general protection' | head -n 40 | sed 's/^/# dmesg: /'
	rc=1
fi
exit $rc
