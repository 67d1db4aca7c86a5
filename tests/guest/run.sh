#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The test payload, run inside the VM by the initramfs' /init after the
# edu devices were bound to uio_pci_generic: checks the setup, loads
# uio_heap, runs the KUnit suite (where there is one), the selftests and
# the demo driver, then the kernel's own state.  Every suite is one TAP
# stream between @@SUITE@@ markers; the host (tests/vm/verdict.sh) checks
# that each expected suite ran to its end, and reads the kernel's console.
cd "$(dirname "$0")" || exit 1

export UIOHEAP_KO=/lib/modules/extra/uio_heap.ko
UIOHEAP_UIO_PCI_GENERIC_KO=$(find /lib/modules -name uio_pci_generic.ko | head -n 1)
export UIOHEAP_UIO_PCI_GENERIC_KO

echo "# kernel $(uname -r), IOMMU ${UIOHEAP_IOMMU:-?}, patched ${UIOHEAP_PATCHED:-?}, suites: ${UIOHEAP_SUITES:-all}"

rc=0
# suite NAME COMMAND...: COMMAND prints one TAP stream.
suite() {
	local name=$1 src
	shift
	echo "@@SUITE $name@@"
	"$@"
	src=$?
	echo "@@SUITE-END $name rc=$src@@"
	[ $src = 0 ] || rc=1
}

# tap RESULT NAME: one result of a stream this script prints itself.
n=0
tap() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fail=1; fi
}
end_stream() { echo "1..$n"; n=0; [ -z "$fail" ]; local r=$?; fail=; return $r; }
fail=

kmemleak=/sys/kernel/debug/kmemleak
if [ -w $kmemleak ]; then
	# Boot's own leaks are not ours: a scan reports them, clear forgets them.
	echo scan >$kmemleak && echo clear >$kmemleak
fi

# What /init did, and what every suite relies on.  Loaded after the devices
# are bound: the heaps of pre-bound devices must be discovered at load time.
setup() {
	local f bdf d drv u t r zdma
	echo "TAP version 13"
	if [ -s /run/setup-failures ]; then
		while IFS= read -r f; do tap 1 "boot: $f"; done </run/setup-failures
	else
		tap 0 "boot: modules loaded, edu devices bound"
	fi
	for bdf in $UIOHEAP_EDU28 $UIOHEAP_EDU64; do
		d=/sys/bus/pci/devices/$bdf
		drv=$(readlink $d/driver)
		u=$(ls $d/uio 2>/dev/null)
		[ "${drv##*/}" = uio_pci_generic ] && [ -n "$u" ]
		tap $? "edu $bdf bound to uio_pci_generic (${u:-no uio device})"
		# The IOMMU the host asked for is there (the selftests prove IOVAs),
		# in the kernels' default mode (lazy on x86, strict on arm64) unless
		# the host asked for strict (iommu.strict=1).
		t=$(cat $d/iommu_group/type 2>/dev/null)
		case ${UIOHEAP_IOMMU:-}:$(uname -m):${UIOHEAP_IOMMU_STRICT:-0}:$t in
		on:x86_64:0:DMA-FQ|on:*:1:DMA|on:aarch64:*:DMA|off:*:*:) r=0 ;;
		*) r=1 ;;
		esac
		tap $r "IOMMU ${UIOHEAP_IOMMU:-unset}: edu $bdf domain ${t:-none}"
	done
	if [ "${UIOHEAP_VGEM:-0}" = 1 ]; then
		[ -d /sys/module/vgem ]
		tap $? "vgem loaded"
	fi
	# The device-tree UIO device of the arm64 board VM (tests/arm64/dtb.sh).
	if [ -n "${UIOHEAP_PLATFORM:-}" ]; then
		insmod /lib/modules/extra/uio_pdrv_genirq.ko of_id=uioheap,test-dma
		tap $? "insmod uio_pdrv_genirq of_id=uioheap,test-dma"
		u=$(ls /sys/bus/platform/devices/$UIOHEAP_PLATFORM/uio 2>/dev/null)
		[ -n "$u" ]
		tap $? "$UIOHEAP_PLATFORM bound to uio_pdrv_genirq (${u:-no uio device})"
	fi
	# The ZCU102's eight GDMA channels (tests/arm64/zcu102.sh), as they are
	# in Debian's device tree.
	zdma=
	if [ "${UIOHEAP_BOARD:-}" = zcu102 ]; then
		insmod /lib/modules/extra/uio_pdrv_genirq.ko of_id=xlnx,zynqmp-dma-1.0
		tap $? "insmod uio_pdrv_genirq of_id=xlnx,zynqmp-dma-1.0"
		zdma=$(ls /sys/bus/platform/devices/*.dma-controller/uio 2>/dev/null | grep '^uio')
		[ "$(echo $zdma | wc -w)" = 8 ]
		tap $? "8 ZDMA channels bound to uio_pdrv_genirq ($(echo $zdma))"
	fi
	# The platform device's 1 GiB window draws on the low-zone budget;
	# its default, a quarter of ZONE_DMA, is what a board gets.
	insmod "$UIOHEAP_KO"
	tap $? "insmod uio_heap"
	for u in $UIOHEAP_EDU_UIO $zdma ${UIOHEAP_PLATFORM:+$(ls /sys/bus/platform/devices/$UIOHEAP_PLATFORM/uio)}; do
		[ -c /dev/dma_heap/$u ] && [ -c /dev/dma_heap/$u-cached ]
		tap $? "heap nodes /dev/dma_heap/$u and $u-cached"
	done
	if [ -d /sys/module/brd ]; then
		[ -b /dev/ram0 ]
		tap $? "RAM disk /dev/ram0 for the O_DIRECT tests"
	fi
	end_stream
}
suite setup setup

# The KUnit suite, where the kernel has KUnit (the patched debug kernel):
# with failslab and fail_page_alloc armed for the tasks that ask for it.
# It runs last: an injected failure can hit DMA-API debugging's own
# bookkeeping, which then turns itself off for the rest of the boot.
kunit_ko=/lib/modules/extra/uio_heap_test.ko
kunit() {
	local f d inject=0 r=0
	[ -d /sys/module/uio_heap ] || insmod "$UIOHEAP_KO" || return 1
	echo "uioheap: KUnit suite starts" >/dev/kmsg
	if [ -d /sys/kernel/debug/failslab ] && [ -d /sys/kernel/debug/fail_page_alloc ]; then
		for f in failslab fail_page_alloc; do
			d=/sys/kernel/debug/$f
			echo Y >$d/task-filter
			echo 25 >$d/probability
			echo 1 >$d/interval
			echo -1 >$d/times
			echo 0 >$d/verbose
		done
		echo N >/sys/kernel/debug/failslab/ignore-gfp-wait
		echo N >/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait
		echo 0 >/sys/kernel/debug/fail_page_alloc/min-order
		inject=1
	fi
	if insmod $kunit_ko fail_inject=$inject; then
		cat /sys/kernel/debug/kunit/uio_heap/results
		grep -q '^not ok' /sys/kernel/debug/kunit/uio_heap/results && r=1
		rmmod uio_heap_test || r=1
	else
		r=1
	fi
	for f in failslab fail_page_alloc; do
		[ -d /sys/kernel/debug/$f ] && echo 0 >/sys/kernel/debug/$f/probability
	done
	return $r
}

# The example driver must move the right bytes through both edu heaps.
# The narrow edu's DMA engine has 28 bits (32 on arm64 without an SMMU:
# tests/vm/run-vm.sh), which only userspace knows.
demo() {
	local u out bits=${UIOHEAP_EDU_BITS:-28}
	echo "TAP version 13"
	for u in $UIOHEAP_EDU28_UIO; do
		echo $bits >/sys/class/uio_heap/$u/dma_mask_bits
		tap $? "$u: dma_mask_bits set to $bits"
	done
	for u in $UIOHEAP_EDU_UIO; do
		out=$(./uio-heap-demo "$u" 2>&1)
		tap $? "uio-heap-demo $u"
		echo "$out" | sed 's/^/# /'
	done
	# The ZCU102's ZDMA example (tools/zdma/): a GDMA channel copies
	# through both nodes, by interrupt and by polling.
	u=$(ls /sys/bus/platform/devices/fd500000.dma-controller/uio 2>/dev/null)
	for a in ${u:+65536 --cached+100001 --poll+4097 --poll+--cached+1}; do
		a=$(echo $a | tr + ' ')
		out=$(./uio-zdma $u $a 2>&1)
		tap $? "uio-zdma $u $a"
		echo "$out" | sed 's/^/# /'
	done
	# x86: the same ioctls from a 32-bit program, through compat_ioctl
	# (the debug kernel, a tinyconfig, runs no 32-bit programs).
	u=${UIOHEAP_EDU_UIO##* }
	if [ -x ./uio-heap-demo32 ] && ! grep -qw __ia32_sys_ioctl /proc/kallsyms; then
		n=$((n + 1))
		echo "ok $n uio-heap-demo32 $u # SKIP kernel without IA32 emulation"
	elif [ -x ./uio-heap-demo32 ]; then
		out=$(./uio-heap-demo32 "$u" 2>&1)
		tap $? "uio-heap-demo32 $u"
		echo "$out" | sed 's/^/# /'
	fi
	end_stream
}

# The uio-heap command (tools/uio-heap.c, static), and after the host
# checks (pkg/, from tests/deb.sh) the packaged one through its shared
# libraries and a program built against the installed libuioheap-dev.
tool() {
	local u list r pid n0 n1 out
	echo "TAP version 13"
	u=${UIOHEAP_EDU_UIO%% *}
	list=$(./uio-heap list)
	tap $? "uio-heap list"
	echo "$list" | sed 's/^/# /'
	echo "$list" | grep -qE "^$u +$u +[0-9a-f:.]+ +uio_pci_generic +$(cat /sys/class/uio_heap/$u/iommu) "
	tap $? "list: $u, its PCI parent, uio_pci_generic, IOMMU mode"
	[ "$(echo "$list" | grep -c "^uio")" = "$(ls /sys/class/uio_heap | wc -l)" ]
	tap $? "list: one line per node"
	./uio-heap --json list | grep -q "{\"node\": \"$u-cached\", \"uio\": \"$u\", "
	tap $? "list --json"
	./uio-heap info /dev/dma_heap/$u-cached | grep -qx "dma_mask_bits: *$(cat /sys/class/uio_heap/$u-cached/dma_mask_bits)"
	tap $? "info $u-cached"

	n0=$(cat /sys/class/uio_heap/$u/buffers)
	./uio-heap --json alloc $u 100K >/tmp/alloc.out &
	pid=$!
	for _ in $(seq 50); do [ -s /tmp/alloc.out ] && break; usleep 100000; done
	n1=$(cat /sys/class/uio_heap/$u/buffers)
	sed 's/^/# /' /tmp/alloc.out
	grep -q '"size": 102400, "dma_addr": "0x[0-9a-f]*"' /tmp/alloc.out && [ $n1 = $((n0 + 1)) ]
	tap $? "alloc $u 100K: held ($n0 -> $n1 buffers)"
	kill -TERM $pid
	wait $pid
	r=$?
	[ $r = 0 ] && [ "$(cat /sys/class/uio_heap/$u/buffers)" = $n0 ]
	tap $? "alloc: SIGTERM frees it and exits 0 ($r)"

	./uio-heap info nosuch 2>/dev/null
	[ $? = 4 ]
	tap $? "info of a missing node: exit status 4"
	su -s /bin/sh nobody -c "./uio-heap alloc $u 4K" 2>/dev/null
	[ $? = 5 ]
	tap $? "alloc as nobody: exit status 5"
	./uio-heap alloc $u 0 2>/dev/null
	[ $? = 2 ]
	tap $? "alloc of size 0: exit status 2"

	# The kernel's own kselftest runner, laid out as lib.mk's install does,
	# with the settings file's timeout.
	out=$(./ksft/run_kselftest.sh -t uio_heap:uio_heap_perms 2>&1)
	echo "$out" | sed 's/^/# /'
	echo "$out" | grep -qx 'ok 1 selftests: uio_heap: uio_heap_perms' &&
		echo "$out" | grep -qx "# timeout set to $(sed -n 's/^timeout=//p' ksft/uio_heap/settings)"
	tap $? "run_kselftest.sh -t uio_heap:uio_heap_perms"

	if [ -d pkg ]; then
		r=$(./pkg/ld-linux-x86-64.so.2 --library-path ./pkg ./pkg/uio-heap list)
		tap $? "packaged uio-heap (libuioheap.so.0) list"
		[ "$r" = "$(./uio-heap list)" ]
		tap $? "packaged uio-heap: the same list"
		for r in $u $u-cached; do
			out=$(./pkg/user $r 2>&1)
			tap $? "program built with pkg-config --static uioheap: $r"
			echo "$out" | sed 's/^/# /'
		done
	fi
	end_stream
}

# DPDK (tools/dpdk/uio-dpdk) on the two e1000 NICs of the x86 VMs, on one
# QEMU hub: rings and mbufs in each NIC's heap, every frame checked.
dpdk() {
	local nics=$UIOHEAP_NICS b u uios= eal out r kfd hp
	hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	echo "TAP version 13"
	echo "8086 100e" >/sys/bus/pci/drivers/uio_pci_generic/new_id
	for b in $nics; do
		for _ in $(seq 50); do [ -e /sys/bus/pci/devices/$b/uio ] && break; usleep 100000; done
		u=$(ls /sys/bus/pci/devices/$b/uio 2>/dev/null)
		[ -n "$u" ] && [ -c /dev/dma_heap/$u ]
		tap $? "e1000 $b bound to uio_pci_generic, heap node ${u:-none}"
		uios="${uios:+$uios }$u"
	done
	# EAL's own memory: hugepages, with physical addresses (root).
	echo 64 >$hp
	eal="-l 0 --in-memory --no-telemetry --log-level=lib.eal:notice"
	for b in $nics; do eal="$eal -a $b"; done

	out=$(./uio-dpdk $eal -- --frames 4096 2>&1)
	r=$?
	echo "$out" | sed 's/^/# /'
	[ $r = 0 ] && echo "$out" | grep -q 'memory=heap sent=4096 received=4096 verified=4096 lost=0 corrupt=0 outside_heap=0$'
	tap $? "uio-dpdk: 4096 frames both ways through heap memory, every byte verified"
	# The NIC's rings lie in the buffers (uio-dpdk reads the registers);
	# behind an IOMMU at IOVAs, without one at the pages' physical address.
	echo "$out" | awk -v on=$([ "$UIOHEAP_IOMMU" = on ] && echo 1 || echo 0) '
		/^uio-dpdk: port [01] .*dma_heap/ {
			n++; a = $0; sub(/.* KiB at /, "", a); p = a; sub(/ .*/, "", a)
			sub(/.*physical /, "", p); sub(/\).*/, "", p)
			if ((a != p) != on) bad = 1
		}
		END { exit n != 2 || bad }'
	tap $? "uio-dpdk: heap addresses are $([ "$UIOHEAP_IOMMU" = on ] && echo "IOVAs, not" || echo "the") physical addresses"
	for u in $uios; do
		[ "$(cat /sys/class/uio_heap/$u/buffers)" = 0 ]
		tap $? "$u: no buffer left after the run"
	done

	# The debug kernel, where EAL takes 40 s to start, runs only what its
	# checkers add to: the traffic above and the unbind below.
	if [ ! -e $kmemleak ]; then
		# DPDK's own memory: stock DPDK on UIO.  Without an IOMMU it works;
		# behind one the NICs reach nothing and the IOMMU reports it.
		if [ "$UIOHEAP_IOMMU" = on ]; then
			for b in $nics; do echo "uioheap: expect-fault begin $b" >/dev/kmsg; done
			kfd=$(dmesg | wc -l)
			out=$(./uio-dpdk $eal -- --memory native --frames 64 2>&1)
			r=$?
			echo "$out" | sed 's/^/# /'
			[ $r = 1 ] && echo "$out" | grep -q 'memory=native sent=64 received=0 '
			tap $? "uio-dpdk --memory native behind the IOMMU: no frame arrives"
			r=0
			for b in $nics; do
				dmesg | tail -n +$((kfd + 1)) | grep -q "DMAR: \[DMA [RW].*Request device \[\(0000:\)\?${b#0000:}\]" || r=1
			done
			tap $r "uio-dpdk --memory native: the IOMMU reported both NICs' faults"
			for b in $nics; do echo "uioheap: expect-fault end $b" >/dev/kmsg; done
		else
			out=$(./uio-dpdk $eal -- --memory native --frames 1024 2>&1)
			r=$?
			echo "$out" | sed 's/^/# /'
			[ $r = 0 ] && echo "$out" | grep -q 'memory=native sent=1024 received=1024 verified=1024 '
			tap $? "uio-dpdk --memory native without an IOMMU: 1024 frames"
		fi

		# Bad input: a clear message and exit status 3.
		out=$(./uio-dpdk $eal -- --heap-kib 2048 2>&1)
		r=$?
		echo "$out" | tail -n 1 | sed 's/^/# /'
		[ $r = 3 ] && echo "$out" | grep -q 'no pool of 1023 mbufs.*--heap-kib'
		tap $? "uio-dpdk --heap-kib 2048: too little heap memory, exit status 3"
		out=$(./uio-dpdk ${eal%% -a *} -a ${UIOHEAP_EDU%% *} 2>&1)
		r=$?
		echo "$out" | tail -n 1 | sed 's/^/# /'
		[ $r = 3 ] && echo "$out" | grep -q '0 port(s): two NICs a DPDK PMD drives'
		tap $? "uio-dpdk on an edu device: no NIC it can drive, exit status 3"
		rmmod uio_heap
		out=$(./uio-dpdk $eal 2>&1)
		r=$?
		echo "$out" | tail -n 1 | sed 's/^/# /'
		[ $r = 3 ] && echo "$out" | grep -q 'no heap node /dev/dma_heap/uio'
		tap $? "uio-dpdk without uio_heap: no heap node, exit status 3"
		insmod "$UIOHEAP_KO"
		tap $? "insmod uio_heap again"
	fi

	# Unbinding a NIC under the running application: SIGBUS (128 + 7), and
	# once it is gone nothing is left of its buffers.
	b=${nics##* }
	./uio-dpdk $eal -- --seconds 60 >/tmp/dpdk.out 2>&1 &
	r=$!
	for _ in $(seq 600); do grep -q '^uio-dpdk: port 1 ' /tmp/dpdk.out && break; usleep 100000; done
	sleep 1
	echo $b >/sys/bus/pci/drivers/uio_pci_generic/unbind
	wait $r
	r=$?
	sed 's/^/# /' /tmp/dpdk.out
	[ $r = 135 ]
	tap $? "unbinding $b under uio-dpdk: SIGBUS (exit status $r)"
	u=${uios%% *}
	[ "$(cat /sys/class/uio_heap/$u/buffers)" = 0 ] &&
		[ "$(cat /sys/module/uio_heap/parameters/revoked_bytes)" = 0 ] &&
		[ "$(cat /sys/module/uio_heap/parameters/orphaned_bytes)" = 0 ]
	tap $? "after the SIGBUS: no buffer, revoked or orphaned bytes left"

	echo 0 >$hp
	for b in $nics; do
		[ -e /sys/bus/pci/devices/$b/driver ] && echo $b >/sys/bus/pci/drivers/uio_pci_generic/unbind
	done
	echo "8086 100e" >/sys/bus/pci/drivers/uio_pci_generic/remove_id
	end_stream
}

# Default order: the basic suite and the kernel's own dma-heap selftest
# first, the others by name, the demo, and
# last the lifetime suite, which unbinds devices and unloads the module.
suites=${UIOHEAP_SUITES:-}
if [ -z "$suites" ]; then
	suites="uio_heap_test dmabuf_heaps"
	for t in uio_heap_*; do
		case $t in uio_heap_test|uio_heap_lifetime|*.*) continue ;; esac
		[ $t = uio_heap_platform ] && [ -z "${UIOHEAP_PLATFORM:-}" ] && continue
		[ $t = uio_heap_zdma ] && [ "${UIOHEAP_BOARD:-}" != zcu102 ] && continue
		[ -x "$t" ] && suites="$suites $t"
	done
	suites="$suites demo tool"
	[ -n "${UIOHEAP_NICS:-}" ] && [ -x ./uio-dpdk ] && suites="$suites dpdk"
	suites="$suites uio_heap_lifetime"
	[ -f $kunit_ko ] && suites="$suites kunit"
fi
# Modules the host wants loaded only after the kernel's own dma-heap
# selftest (on the debug kernel: vgem, whose import of system-heap buffers
# there trips DMA-API debugging upstream).  A module that fails to load
# fails the run.
late_loaded=
load_late() {
	local m
	[ -n "$late_loaded" ] && return 0
	late_loaded=1
	while read -r m; do
		insmod "$m" || { echo "uioheap: insmod $m failed" >&2; rc=1; }
	done </lib/modules/late-order.txt
	if [ -d /sys/module/vgem ]; then export UIOHEAP_VGEM=1; fi
}

# only_tests SUITE: "-r NAME" for each SUITE:NAME of UIOHEAP_TESTS;
# nothing (the whole suite) when none is SUITE's.
only_tests() {
	local t
	for t in ${UIOHEAP_TESTS:-}; do
		[ "${t%%:*}" = "$1" ] && printf -- '-r %s ' "${t#*:}"
	done
}

for t in $suites; do
	case $t in uio_heap_import|uio_heap_lifetime) load_late ;; esac
	case $t in
	demo) suite demo demo ;;
	tool) suite tool tool ;;
	dpdk) suite dpdk dpdk ;;
	dmabuf_heaps) suite dmabuf_heaps ./dmabuf-heap ;;
	kunit) kunit_ran=1; suite kunit kunit ;;
	*) suite "$t" "./$t" $(only_tests "$t") ;;
	esac
done

# The kernel's own state after the tests; the host reads its log.
kernel() {
	local taint allowed leaks leaked d
	echo "TAP version 13"
	# Only O (out-of-tree, bit 12), E (unsigned, bit 13), once a KUnit
	# suite ran N (test, bit 18), and once the perms suite handed out
	# physical addresses with unsafe_noiommu_addresses=1, U (bit 6).
	taint=$(cat /proc/sys/kernel/tainted)
	allowed=$(((1 << 12) | (1 << 13))) also=
	[ -n "${kunit_ran:-}" ] && allowed=$((allowed | (1 << 18))) also=/N
	[ -e /run/uioheap-taint-user ] && allowed=$((allowed | (1 << 6))) also=$also/U
	[ $((taint & ~allowed)) -eq 0 ]
	tap $? "taint only O/E$also ($taint)"
	# lockdep turns itself off after its first report.
	if [ -r /proc/lockdep_stats ]; then
		grep -qE '^ *debug_locks: *1$' /proc/lockdep_stats
		tap $? "lockdep still on (debug_locks)"
	fi
	# DMA-API debugging still on.  Fault injection can fail its cacheline
	# tracking's GFP_ATOMIC radix-tree node, which turns it off (sparing it
	# takes failslab's cache-filter): allowed only once injection began.
	d=/sys/kernel/debug/dma-api/disabled
	if [ -r $d ]; then
		if [ "$(cat $d)" = N ]; then
			tap 0 "DMA-API debugging still on"
		else
			dmesg | awk 'BEGIN { r = 1 } /uioheap: (fault injection|KUnit suite) starts/ { k = 1 }
				/DMA-API: .*disabl/ { r = !k; exit } END { exit r }'
			tap $? "DMA-API debugging on until fault injection turned it off"
		fi
	fi
	# kmemleak: reports objects unreferenced for 5 s, found in two scans.
	# Where it is built in it must still be on: off, it refuses the scan
	# (EPERM) and lists nothing.
	if [ -e $kmemleak ]; then
		sleep 6
		echo scan >$kmemleak && echo scan >$kmemleak
		tap $? "kmemleak still on (scan accepted)"
		leaks=$(grep -c '^unreferenced object' $kmemleak)
		leaked=$(sed -n 's/^unreferenced object .*(size \([0-9]*\)).*/\1/p' $kmemleak |
			 awk '{ n += $1 } END { print n + 0 }')
		echo "# summary: leaked_objects=$leaks leaked_bytes=$leaked"
		[ "$leaks" = 0 ]
		tap $? "kmemleak: no leaks"
		[ "$leaks" = 0 ] || head -n 60 $kmemleak | sed 's/^/# /'
	elif zcat /proc/config.gz 2>/dev/null | grep -qx 'CONFIG_DEBUG_KMEMLEAK=y'; then
		tap 1 "kmemleak: $kmemleak exists (CONFIG_DEBUG_KMEMLEAK=y)"
	fi
	end_stream
}
suite kernel kernel
exit $rc
