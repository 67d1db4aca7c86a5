#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: everything CI runs.  Installs what it needs from Debian's
# archive, checks style, builds the module warning-free for each stock
# Debian kernel and the newest of trixie-backports and sid, and runs the
# selftests in QEMU on each stock kernel and the newest of trixie-backports
# with the IOMMU off and on: x86 q35, and arm64 virt (tests/arm64/) with
# its SMMU off and on and as a board with non-coherent and device-tree DMA
# masters.
# Prints every TAP stream and one closing line.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$top/tests/deps.sh"
start=$SECONDS
tapdir=$out/tap
rm -rf "$tapdir" && mkdir -p "$tapdir"
ksrc=$(ksrc_dir)
# vgem: an in-tree dma-buf importer for the importer tests; brd and
# null_blk: block devices for O_DIRECT (null_blk's can be made slow).
export UIOHEAP_KMODS=${UIOHEAP_KMODS---kmod vgem --kmod brd --kmod null_blk}
mapfile -t kernels < <(stock_kernels)
[ ${#kernels[@]} -ge 2 ] || die "expected two stock kernels, found: ${kernels[*]}"
# The archive moves (security updates): say what this run tested.
log "kernels ${kernels[*]}, linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12), $(qemu-system-x86_64 --version | head -n 1)"

# For quicker runs while developing (CI sets none of these):
#   UIOHEAP_KERNELS="6.12*"  UIOHEAP_IOMMU_MODES=on  UIOHEAP_SUITES=uio_heap_test
#   UIOHEAP_TESTS="heap.cloexec_honoured ..." (only these tests of the
#   kselftest suites that have one of them, and one KUnit case; the
#   others run whole)
#   UIOHEAP_ARM64_MODES="on nc" (of "off on nc zcu102"; "none": no arm64)
# selected KVER: whether UIOHEAP_KERNELS (unset: all) names the kernel.
selected() {
	local pat
	[ -n "${UIOHEAP_KERNELS:-}" ] || return 0
	for pat in $UIOHEAP_KERNELS; do
		# shellcheck disable=SC2053
		[[ $1 == $pat ]] && return 0
	done
	return 1
}
sel=()
for k in "${kernels[@]}"; do
	selected "$k" && sel+=("$k")
done
kernels=(${sel[@]+"${sel[@]}"})
narrowed=
for v in UIOHEAP_KERNELS UIOHEAP_IOMMU_MODES UIOHEAP_DEBUG_IOMMU_MODES \
	 UIOHEAP_NO_DEBUG_KERNEL UIOHEAP_SUITES UIOHEAP_TESTS UIOHEAP_QUICK UIOHEAP_ARM64_MODES; do
	[ -n "${!v:-}" ] && narrowed="$narrowed $v=${!v}"
done
[ -n "$narrowed" ] && log "partial run, not what CI runs:$narrowed"
# Passed to the guest as UIOHEAP_* variables (tests/vm/guest-init.sh).
guest_args=
[ -n "${UIOHEAP_SUITES:-}" ] && guest_args="$guest_args,suites=${UIOHEAP_SUITES// /+}"
# Each test as SUITE:NAME, its suite from the pinned list; one KUnit case
# narrows the KUnit suite through the kernel's command line.
kunit_only=
if [ -n "${UIOHEAP_TESTS:-}" ]; then
	only=
	for t in $UIOHEAP_TESTS; do
		s=$(awk -v t="$t" '$1 ~ /^(uio_heap_|kunit$)/ && $2 == t { print $1; exit }' \
			"$top/tests/expected-tests")
		[ -n "$s" ] || die "UIOHEAP_TESTS: $t is no test of tests/expected-tests"
		[ "$s" = kunit ] && kunit_only="$kunit_only $t"
		only="$only+$s:$t"
	done
	guest_args="$guest_args,tests=${only#+}"
	[ "$(wc -w <<<"$kunit_only")" -le 1 ] || die "UIOHEAP_TESTS: one KUnit case at most"
fi
[ -n "${UIOHEAP_LONG:-}" ] && guest_args="$guest_args,long=1"
[ -n "${UIOHEAP_FUZZ_SEED:-}" ] && guest_args="$guest_args,fuzz_seed=$UIOHEAP_FUZZ_SEED"
[ -n "${UIOHEAP_SEED:-}" ] && guest_args="$guest_args,seed=$UIOHEAP_SEED"
# The debug kernel's long forms take 23-25 minutes in TCG: an hour for them.
vm_timeout=1500
[ -n "${UIOHEAP_LONG:-}" ] && vm_timeout=3600
vm_append=
[ -n "$guest_args" ] && vm_append="uioheap.args=${guest_args#,}"
[ -n "$kunit_only" ] && vm_append="$vm_append kunit.filter_glob=uio_heap.${kunit_only# }"

# Debian's stock arm64 kernel, unpacked (tests/arm64/fetch.sh): "off" and
# "on" are virt with the SMMUv3 off and on, "nc" the board of
# tests/arm64/dtb.sh (non-coherent PCIe, a device-tree UIO device),
# "zcu102" QEMU's ZynqMP board with Debian's device tree (its ZDMA).
arm64_modes=${UIOHEAP_ARM64_MODES:-off on nc zcu102}
[ "$arm64_modes" = none ] && arm64_modes=
arm64=
if [ -n "$arm64_modes" ]; then
	arm64=$("$top/tests/arm64/fetch.sh")
	arm64_kver=$(cat "$arm64/kver")
	arm64_kdir=$arm64/usr/src/linux-headers-$arm64_kver
	arm64_make=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	log "arm64: ${arm64##*/}, $(qemu-system-aarch64 --version | head -n 1)"
fi

# Debian's newest kernels, each in a root of its suite with the gcc it
# was built with (tests/kernel/root.sh): both are built (host checks), the
# first also boots, x86 with the IOMMU off and on, arm64 with the SMMUv3.
# A UIOHEAP_QUICK run makes only the first, and only if UIOHEAP_KERNELS
# names none or the kernel of its last cached root.
newest_suites=(trixie-backports sid)
declare -A root_of=()
roots=("${newest_suites[@]}")
if [ -n "${UIOHEAP_QUICK:-}" ]; then
	roots=("${newest_suites[0]}")
	k=$(sed -n 's/^kernel=//p' "$cache"/root-"${newest_suites[0]}"-*[0-9a-f]/uio-heap.info \
		2>/dev/null | head -n 1)
	[ -z "${UIOHEAP_KERNELS:-}" ] || { [ -n "$k" ] && selected "$k"; } || roots=()
fi
for s in ${roots[@]+"${roots[@]}"}; do
	root_of[$s]=$("$top/tests/kernel/root.sh" "$s" 2>"$out/root-$s.log") || root_of[$s]=
done
newest=${root_of[${newest_suites[0]}]:-}
if [ -n "$newest" ]; then
	newest_kver=$(root_info "$newest" kernel)
	newest_ko=$out/mod-${newest_suites[0]}/w1/drivers/uio_heap/uio_heap.ko
	log "newest kernel: $newest_kver (${newest_suites[0]}, $(root_info "$newest" cc_version))"
	selected "$newest_kver" || newest=
fi

# The patched debug kernel (tests/kernel/): the newest kernel's source
# with the dma-buf core patch, built in that kernel's root once, then cached.
debug=
if [ -z "${UIOHEAP_NO_DEBUG_KERNEL:-}" ]; then
	s=${newest_suites[0]}
	[ -n "${root_of[$s]:-}" ] || root_of[$s]=$("$top/tests/kernel/root.sh" "$s" 2>"$out/root-$s.log") ||
		die "no $s root for the debug kernel: $(tail -n 5 "$out/root-$s.log")"
	debug=$(debug_kernel "${root_of[$s]}")
	debug_kver=$(cat "$debug/kver")
fi

# tap_line OK|FAIL NAME [DETAILS]: one result of the host stream.
host_n=0 host_rc=0
tap_line() {
	host_n=$((host_n + 1))
	if [ "$1" = OK ]; then
		echo "ok $host_n $2"
	else
		echo "not ok $host_n $2"; host_rc=1
		[ -n "${3:-}" ] && echo "$3" | sed 's/^/# /'
	fi
	return 0
}

# build_check NAME KDIR DEST [make args]: a warning-free module build.
build_check() {
	local name=$1 kdir=$2 dest=$3 msg
	shift 3
	msg=$(build_module "$kdir" "$dest" "$@" 2>&1) || msg="$msg
build failed"
	msg=$(grep -v 'Skipping BTF generation' <<<"$msg" || true)
	if [ -f "$dest/drivers/uio_heap/uio_heap.ko" ] && ! grep -qiE 'warning|error' <<<"$msg"; then
		tap_line OK "$name"
	else
		tap_line FAIL "$name" "$msg"
	fi
}

# The series on the base it started from: it applies to linux-source-6.12,
# whose dma-buf.o then builds warning-free; a success is cached by input.
patched_612() {
	local key dir
	key=$( { echo "$ksrc"; declare -f patched_612; cat "$top"/drivers/dma-buf/patches/000[1-9]-*.patch; } |
		sha256sum | cut -c1-16)
	dir=$cache/dmabuf-6.12-$key
	[ -f "$dir.ok" ] && return 0
	rm -rf "$cache"/dmabuf-6.12-* && mkdir -p "$dir/obj"
	cp -a "$ksrc/." "$dir/src/"
	# (&&: errexit does not hold on the left of ||.)
	(cd "$dir/src" && git apply "$top"/drivers/dma-buf/patches/000[1-9]-*.patch &&
		make -s O="$dir/obj" tinyconfig >/dev/null &&
		scripts/config --file "$dir/obj/.config" -e DMABUF_HEAPS &&
		make -s O="$dir/obj" olddefconfig >/dev/null &&
		make -s O="$dir/obj" -j"$(nproc)" W=1 drivers/dma-buf/dma-buf.o >"$dir.log" 2>&1) ||
		{ tail -n 20 "$dir.log" 2>/dev/null; return 1; }
	! grep -iE 'warning|error' "$dir.log" || return
	rm -rf "$dir" && touch "$dir.ok"
}

host_checks() {
	local msg k files ko deb_rc=0 line
	echo "TAP version 13"

	files=$(source_files | grep -E '^(drivers/.*\.[ch]|include/.*\.h)$' | grep -v 'conftest\.h$')
	msg=$(cd "$top" && perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree \
		--quiet --no-summary --show-types -f $files 2>&1) || true
	[ -z "$msg" ] && tap_line OK "checkpatch --strict (sources)" || tap_line FAIL "checkpatch --strict (sources)" "$msg"

	# From the kernel tree: inside this repo checkpatch takes the patch
	# files for new files and flags their blank context lines.
	msg=$(cd "$ksrc" && perl scripts/checkpatch.pl --strict --quiet \
		--no-summary "$top"/drivers/dma-buf/patches/000[1-9]-*.patch 2>&1) || true
	[ -z "$msg" ] && tap_line OK "checkpatch --strict (dma-buf patches)" || tap_line FAIL "checkpatch --strict (dma-buf patches)" "$msg"
	msg=$(patched_612 2>&1) &&
		tap_line OK "dma-buf patches apply to linux-source-6.12 and its dma-buf.o builds W=1" ||
		tap_line FAIL "dma-buf patches apply to linux-source-6.12 and its dma-buf.o builds W=1" "$msg"
	# And to the newest kernel's source, checkpatch from that tree.
	if [ -n "${root_of[${newest_suites[0]}]:-}" ]; then
		k=${root_of[${newest_suites[0]}]}
		k=$k$(root_info "$k" source)
		msg=$(cd "$k" && git apply --check "$top"/drivers/dma-buf/patches/000[1-9]-*.patch 2>&1 &&
			perl scripts/checkpatch.pl --strict --quiet --no-summary \
			"$top"/drivers/dma-buf/patches/000[1-9]-*.patch 2>&1) &&
			tap_line OK "dma-buf patches apply to ${k##*/} and pass its checkpatch --strict" ||
			tap_line FAIL "dma-buf patches apply to ${k##*/} and pass its checkpatch --strict" "$msg"
	fi

	grep -q "^PACKAGE_VERSION=\"$(cat "$top/VERSION")\"$" "$top/dkms.conf" &&
		tap_line OK "dkms.conf version matches VERSION" ||
		tap_line FAIL "dkms.conf version matches VERSION"

	for k in "${kernels[@]}"; do
		build_check "build $k W=1" "/lib/modules/$k/build" "$out/mod-$k" W=1
		# sparse on a copy, so that the tested module is the plain build
		build_check "sparse $k C=2" "/lib/modules/$k/build" "$out/sparse-$k" C=2
	done
	# Debian's newest kernels, each with its own compiler, in roots made
	# from the archive (tests/kernel/root.sh): built, not booted.
	for k in "${newest_suites[@]}"; do
		if [ -z "${root_of[$k]:-}" ]; then
			tap_line FAIL "root for $k's newest kernel" "$(tail -n 20 "$out/root-$k.log")"
		elif msg=$("$top/tests/kernel/build-in-root.sh" "${root_of[$k]}" \
				"$out/mod-$k" $([ "$k" != "${newest_suites[0]}" ] || echo --arm64) 2>&1); then
			tap_line OK "build $k's newest kernel with its gcc, $(grep -c ': 0 warnings$' <<<"$msg") builds warning-free: $(head -n 2 <<<"$msg" | paste -sd ' ')"
		else
			tap_line FAIL "build $k's newest kernel with its gcc" "$msg"
		fi
	done
	for k in "${kernels[@]}"; do
		if msg=$("$top/tests/dkms.sh" "$k" 2>&1); then
			tap_line OK "dkms add/build/install $k"
			ko=$(tail -n 1 <<<"$msg")
			[ "$(modinfo -F softdep "$ko")" = "pre: uio" ] &&
				tap_line OK "modprobe loads uio first (softdep) $k" ||
				tap_line FAIL "modprobe loads uio first (softdep) $k"
		else
			tap_line FAIL "dkms add/build/install $k" "$msg"
		fi
	done
	# The packages on this host: built, installed, used, purged.
	"$top/tests/deb.sh" "${kernels[@]}" >"$out/deb.tap" 2>&1 || deb_rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) tap_line OK "${line#ok }" ;;
		"not ok "*) tap_line FAIL "${line#not ok }" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$out/deb.tap"
	[ $deb_rc = 0 ] || grep -q '^not ok' "$out/deb.tap" ||
		tap_line FAIL "tests/deb.sh ran to its end (exit status $deb_rc)"
	if [ -n "$debug" ]; then
		build_check "build patched $debug_kver W=1" "$debug/obj" "$out/mod-debug" W=1
		grep -q '^#define HAVE_DMA_BUF_OPS_GET_DMA_ADDR 1' \
			"$out/mod-debug/drivers/uio_heap/conftest.h" &&
			tap_line OK "probe finds get_dma_addr in the patched core" ||
			tap_line FAIL "probe finds get_dma_addr in the patched core"
		[ -f "$out/mod-debug/drivers/uio_heap/uio_heap_test.ko" ] &&
			tap_line OK "KUnit suite built" || tap_line FAIL "KUnit suite built"
	fi
	[ -n "$arm64" ] && arm64_checks
	echo "1..$host_n"
	return $host_rc
}

# What DKMS on an arm64 board would build, for the kernel that board runs.
arm64_checks() {
	local ko=$out/mod-arm64/drivers/uio_heap/uio_heap.ko crc sym bad='' msg
	local stock=$arm64/lib/modules/$arm64_kver/kernel/drivers/uio/uio.ko.xz

	build_check "build arm64 $arm64_kver W=1" "$arm64_kdir" "$out/mod-arm64" W=1 "${arm64_make[@]}"
	build_check "sparse arm64 $arm64_kver C=2" "$arm64_kdir" "$out/sparse-arm64" C=2 "${arm64_make[@]}"
	[ -f "$ko" ] || return 0
	# It loads on the stock kernel: that kernel's vermagic, and the CRC of
	# each symbol it imports as that kernel exports it.
	[ "$(modinfo -F vermagic "$ko")" = "$(modinfo -F vermagic "$stock")" ] &&
		tap_line OK "arm64 module has the stock kernel's vermagic" ||
		tap_line FAIL "arm64 module has the stock kernel's vermagic" \
			"$(modinfo -F vermagic "$ko") != $(modinfo -F vermagic "$stock")"
	msg=$(modprobe --dump-modversions "$ko")
	while read -r crc sym; do
		grep -q "^$crc	$sym	" "$arm64_kdir/Module.symvers" || bad="$bad $sym"
	done <<<"$msg"
	[ -z "$bad" ] && [ "$(wc -l <<<"$msg")" -gt 50 ] &&
		tap_line OK "arm64 module's $(wc -l <<<"$msg") symbol CRCs are the stock kernel's" ||
		tap_line FAIL "arm64 module's symbol CRCs are the stock kernel's" "differ:${bad:- (too few listed)}"
	msg=$("$top/tests/arm64/pdrv.sh" "$arm64" 2>&1) &&
		tap_line OK "uio_pdrv_genirq (test-only) built W=1 for arm64" ||
		tap_line FAIL "uio_pdrv_genirq (test-only) built W=1 for arm64" "$msg"
}

if [ -n "${UIOHEAP_QUICK:-}" ]; then
	for k in "${kernels[@]}"; do
		build_module "/lib/modules/$k/build" "$out/mod-$k" >&2
	done
	[ -n "$debug" ] && build_module "$debug/obj" "$out/mod-debug" >&2
	[ -n "$arm64" ] && build_module "$arm64_kdir" "$out/mod-arm64" "${arm64_make[@]}" >&2
	if [ -n "$newest" ]; then
		"$top/tests/kernel/build-in-root.sh" "$newest" "$out/mod-${newest_suites[0]}" --arm64 >&2 || true
	fi
else
	log "host checks"
	host_checks | tee "$tapdir/host.tap" || true
	grep -q '^1\.\.' "$tapdir/host.tap" ||
		printf 'not ok %s host checks ran to their end\n' "$(grep -c '^ok\|^not ok' "$tapdir/host.tap")" |
		tee -a "$tapdir/host.tap"
fi

log "building userspace"
build_user "$out/user" "$ksrc/tools/testing/selftests"
payload=$out/payload
rm -rf "$payload" && mkdir -p "$payload"
cp "$top/tests/guest/run.sh" "$out/user/selftests/"* "$out/user/tools/uio-heap-demo" \
	"$out/user/tools/uio-nvme" "$out/user/tools/uio-heap" "$out/user/tools/uio-dpdk" "$payload/"
# The demo once more as a 32-bit program: the ioctls through compat_ioctl.
make -s -C "$top/tools" OUT="$out/user-i686" CC=i686-linux-gnu-gcc \
	AR=i686-linux-gnu-ar "$out/user-i686/uio-heap-demo" >&2
cp "$out/user-i686/uio-heap-demo" "$payload/uio-heap-demo32"
# The packaged uio-heap with its libraries, and a program built against the
# installed libuioheap-dev (tests/deb.sh, a host check): the tool suite
# runs them where they were built.
if [ -z "${UIOHEAP_QUICK:-}" ] && [ -d "$out/deb/payload" ]; then
	cp -a "$out/deb/payload" "$payload/pkg"
fi
if [ -n "$arm64" ]; then
	build_user "$out/user-arm64" "$ksrc/tools/testing/selftests" \
		CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar
	payload_arm64=$out/payload-arm64
	rm -rf "$payload_arm64" && mkdir -p "$payload_arm64"
	cp "$top/tests/guest/run.sh" "$out/user-arm64/selftests/"* \
		"$out/user-arm64/tools/uio-heap-demo" "$out/user-arm64/tools/uio-nvme" \
		"$out/user-arm64/tools/uio-heap" "$out/user-arm64/tools/uio-zdma" "$payload_arm64/"
	pdrv_ko=$("$top/tests/arm64/pdrv.sh" "$arm64")
	board_dtb=$("$top/tests/arm64/dtb.sh" 3G 2)
fi
# ksft_layout PAYLOAD: the kernel's kselftest runner in PAYLOAD/ksft, as
# the selftests' install target would lay it out (for the tool suite).
ksft_layout() {
	mkdir -p "$1/ksft/uio_heap"
	cp -r "$ksrc/tools/testing/selftests/run_kselftest.sh" \
		"$ksrc/tools/testing/selftests/kselftest" "$1/ksft/"
	cp "$top/tools/testing/selftests/uio_heap/settings" "$1/ksft/uio_heap/"
	ln -s ../../uio_heap_perms "$1/ksft/uio_heap/uio_heap_perms"
	echo uio_heap:uio_heap_perms >"$1/ksft/kselftest-list.txt"
}
ksft_layout "$payload"
[ -z "$arm64" ] || ksft_layout "$payload_arm64"
# The NVMe test image's seed (tools/nvme/pattern.h), logged to replay a run.
nvme_seed=${UIOHEAP_NVME_SEED:-$((RANDOM << 15 | RANDOM))}
log "NVMe image seed $nvme_seed"

# vm NAME KIND VMLINUZ KVER MODDIR IOMMU KMODS GUEST_ARGS KO...: one VM, one
# TAP file: the payload's streams, then the host's verdict on them.  The
# payload is $vm_payload; vm_mk and vm_run hold further arguments of
# mkinitramfs.sh and run-vm.sh (the arm64 VMs').
vm_payload=$payload vm_mk=() vm_run=()
vm() {
	local name=$1 kind=$2 vmlinuz=$3 kver=$4 moddir=$5 iommu=$6 kmods=$7 gargs=$8 rc=0 ko
	local append="uioheap.args=$gargs,nvme_seed=$nvme_seed $vm_append"
	shift 8
	[[ ,$gargs, != *,iommu_strict=1,* ]] || append="$append iommu.strict=1"
	local base=$out/vm-$name-$iommu tap=$tapdir/$name-iommu-$iommu.tap
	local args=(--kver "$kver" --modules-dir "$moddir" --payload "$vm_payload"
		    --out "$base.cpio.gz" ${vm_mk[@]+"${vm_mk[@]}"})
	for ko in "$@"; do args+=(--ko "$ko"); done
	# shellcheck disable=SC2206
	args+=($kmods)
	log "VM: $name ($kver, $kind)"
	# A fresh image per VM: the tests write to its scratch area.
	if "$top/tests/vm/mkinitramfs.sh" "${args[@]}" >&2 &&
	   "$out/user/tools/uio-nvme-pattern" "$base.nvme.img" 64 "$nvme_seed"; then
		"$top/tests/vm/run-vm.sh" --kernel "$vmlinuz" --initrd "$base.cpio.gz" \
			--iommu "$iommu" --log "$base.log" --klog "$base.kmsg" \
			--nvme "$base.nvme.img" --timeout "$vm_timeout" ${vm_run[@]+"${vm_run[@]}"} \
			--append "$append" \
			>"$base.out" || rc=$?
	else
		rc=2; : >"$base.out"; : >"$base.kmsg"
	fi
	rm -f "$base.nvme.img"
	{
		cat "$base.out"
		# Its plan comes last: if it dies half-way, say so.
		"$top/tests/vm/verdict.sh" "$kind" "$base.out" "$base.kmsg" $rc "$base.qemu" ||
			echo "not ok - verdict.sh exited $?"
	} >"$tap"
	log "VM: $name ($kind) done: $("$top/tests/vm/tap-sum.sh" "$tap" || true)"
}

# Each VM is one TCG thread: UIOHEAP_JOBS of them at a time (default: one
# per host CPU), longest first; their streams are printed in that order.
jobs=${UIOHEAP_JOBS:-$(nproc)}
started=()
# An interrupted run leaves no QEMU behind.  (|| true: under set -e a
# failing command in the EXIT trap would become the run's exit status.)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
vm_bg() {
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	vm "$@" &
	started+=("$1 $6")
}

# The release's major.minor: the kernel part of a VM's kind.
kseries() { sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$1"; }

vgem=0
[[ " $UIOHEAP_KMODS " == *" vgem "* ]] && vgem=1
# KASAN, lockdep and DMA-API debugging with the IOMMU off and on.
if [ -n "$debug" ]; then
	for iommu in ${UIOHEAP_DEBUG_IOMMU_MODES:-${UIOHEAP_IOMMU_MODES:-off on}}; do
		vm_bg patched-debug "$(kseries "$debug_kver")-debug-$iommu-x86" "$debug/bzImage" \
			"$debug_kver" "$debug/mods/lib/modules/$debug_kver" "$iommu" \
			"--kmod uio_pdrv_genirq --kmod uio_dmem_genirq --kmod null_blk --kmod-late vgem" "patched=1,vgem=0" \
			"$out/mod-debug/drivers/uio_heap/uio_heap.ko" \
			"$out/mod-debug/drivers/uio_heap/uio_heap_test.ko"
	done
fi
# IOMMU on: Debian's lazy mode (a flush queue), but strict on 6.1, so
# that the tests see both: an IOVA freed in strict mode is gone at once.
for k in "${kernels[@]}" ${newest:+"$newest_kver"}; do
	strict=0
	[ "$(kseries "$k")" != 6.1 ] || strict=1
	img= ko=$out/mod-$k/drivers/uio_heap/uio_heap.ko
	[ "$k" != "${newest_kver:-}" ] || img=$newest/image ko=$newest_ko
	for iommu in ${UIOHEAP_IOMMU_MODES:-off on}; do
		vm_bg "$k" "$(kseries "$k")-stock-$iommu-x86" "$img/boot/vmlinuz-$k" "$k" \
			"$img/lib/modules/$k" "$iommu" "$UIOHEAP_KMODS" "patched=0,vgem=$vgem,iommu_strict=$strict" \
			"$ko"
	done
done
if [ -n "$arm64" ]; then
	vm_payload=$payload_arm64
	vm_mk=(--busybox "$arm64/bin/busybox")
	for mode in $arm64_modes; do
		iommu=$mode name=arm64-$arm64_kver kind=arm64 kos=()
		gargs="patched=0,vgem=$vgem"
		vm_run=(--arch arm64)
		if [ "$mode" = nc ]; then
			iommu=off name=arm64nc-$arm64_kver kind=arm64nc kos=("$pdrv_ko")
			gargs="$gargs,$(cat "$board_dtb.args")"
			vm_run+=(--dtb "$board_dtb")
		elif [ "$mode" = zcu102 ]; then
			# No PCI there: its ZDMA suite and example, the kernel's dma-heap test.
			iommu=off name=zcu102-$arm64_kver kind=zcu102 kos=("$pdrv_ko")
			gargs="$gargs,suites=uio_heap_zdma+dmabuf_heaps+demo"
			vm_run+=(--board zcu102 --dtb "$("$top/tests/arm64/zcu102.sh" \
				"$arm64/usr/lib/linux-image-$arm64_kver/xilinx/zynqmp-zcu102-rev1.0.dtb")")
		fi
		vm_bg "$name" "$(kseries "$arm64_kver")-stock-$iommu-$kind" \
			"$arm64/boot/vmlinuz-$arm64_kver" "$arm64_kver" \
			"$arm64/lib/modules/$arm64_kver" "$iommu" "$UIOHEAP_KMODS" "$gargs" \
			"$out/mod-arm64/drivers/uio_heap/uio_heap.ko" ${kos[@]+"${kos[@]}"}
	done
	# The newest kernel's arm64 flavour from the same root: SMMUv3 on, and
	# the ZynqMP board.
	if [ -n "$newest" ]; then
		k=$(root_info "$newest" arm64_kdir) k=${k##*/linux-headers-}
		kimg=$newest/image-arm64 ko=$out/mod-${newest_suites[0]}/arm64/drivers/uio_heap/uio_heap.ko
		vm_mk=(--busybox "$newest$(root_info "$newest" arm64_busybox)")
		if [[ " $arm64_modes " == *" on "* ]]; then
			vm_run=(--arch arm64)
			vm_bg "arm64-$k" "$(kseries "$k")-stock-on-arm64" "$kimg/boot/vmlinuz-$k" "$k" \
				"$kimg/lib/modules/$k" on "$UIOHEAP_KMODS" "patched=0,vgem=$vgem" "$ko"
		fi
		if [[ " $arm64_modes " == *" zcu102 "* ]]; then
			vm_run=(--arch arm64 --board zcu102 --dtb "$("$top/tests/arm64/zcu102.sh" \
				"$kimg/lib/modules/$k/dtb/xilinx/zynqmp-zcu102-rev1.0.dtb")")
			vm_bg "zcu102-$k" "$(kseries "$k")-stock-off-zcu102" "$kimg/boot/vmlinuz-$k" "$k" \
				"$kimg/lib/modules/$k" off "$UIOHEAP_KMODS" \
				"patched=0,vgem=$vgem,suites=uio_heap_zdma+dmabuf_heaps+demo" \
				"$ko" "$("$top/tests/arm64/pdrv.sh" --root "$newest")"
		fi
	fi
fi
wait
for v in ${started[@]+"${started[@]}"}; do
	read -r name iommu <<<"$v"
	f=$tapdir/$name-iommu-$iommu.tap
	[ -s "$f" ] || printf 'TAP version 13\n1..1\nnot ok 1 VM %s IOMMU %s left a result file\n' \
		"$name" "$iommu" >"$f"
	sed "s/^/[$name iommu=$iommu] /" "$f"
done

log "whole run: $((SECONDS - start)) s"
"$top/tests/vm/summary.sh" "$tapdir"/*.tap | tee "$out/summary.txt"
for f in "$tapdir"/*.tap; do
	printf '# %-40s %s\n' "$(basename "$f" .tap)" "$("$top/tests/vm/tap-sum.sh" "$f" || true)"
done | tee -a "$out/summary.txt"
"$top/tests/vm/tap-sum.sh" "$tapdir"/*.tap
