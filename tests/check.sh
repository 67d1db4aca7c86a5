#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: everything CI runs.  Installs what it needs from Debian's
# archive, checks style, builds the module warning-free for each stock
# Debian kernel, and runs the selftests in QEMU on each kernel with the
# IOMMU off and on.  Prints every TAP stream and one closing line.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$top/tests/deps.sh"
start=$SECONDS
tapdir=$out/tap
rm -rf "$tapdir" && mkdir -p "$tapdir"
ksrc=$(ksrc_dir)
# vgem: an in-tree dma-buf importer for the importer tests.
export UIOHEAP_KMODS=${UIOHEAP_KMODS---kmod vgem}
mapfile -t kernels < <(stock_kernels)
[ ${#kernels[@]} -ge 2 ] || die "expected two stock kernels, found: ${kernels[*]}"

# For quicker runs while developing (CI sets none of these):
#   UIOHEAP_KERNELS="6.12*"  UIOHEAP_IOMMU_MODES=on  UIOHEAP_SUITES=uio_heap_test
if [ -n "${UIOHEAP_KERNELS:-}" ]; then
	sel=()
	for k in "${kernels[@]}"; do
		for pat in $UIOHEAP_KERNELS; do
			# shellcheck disable=SC2053
			[[ $k == $pat ]] && sel+=("$k")
		done
	done
	kernels=("${sel[@]}")
fi
# Passed to the guest as UIOHEAP_* variables (tests/vm/guest-init.sh).
guest_args=
[ -n "${UIOHEAP_SUITES:-}" ] && guest_args="$guest_args,suites=${UIOHEAP_SUITES// /+}"
[ -n "${UIOHEAP_LONG:-}" ] && guest_args="$guest_args,long=1"
vm_append=
[ -n "$guest_args" ] && vm_append="uioheap.args=${guest_args#,}"

# Host-side checks, as one TAP stream.
host_tap() {
	local n=0 rc=0 f msg
	ok() { n=$((n + 1)); echo "ok $n $1"; }
	nok() { n=$((n + 1)); echo "not ok $n $1"; rc=1; }

	echo "TAP version 13"
	echo "1..$((1 + 2 * ${#kernels[@]}))"

	msg=$(cd "$top" && git ls-files -co --exclude-standard \
		'drivers/*.c' 'drivers/*.h' 'include/*.h' |
		grep -v 'conftest\.h$' |
		xargs perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree \
			--quiet --no-summary --show-types -f 2>&1) || true
	if [ -z "$msg" ]; then ok "checkpatch --strict"; else nok "checkpatch --strict"; echo "$msg" | sed 's/^/# /'; fi

	for k in "${kernels[@]}"; do
		msg=$(build_module "/lib/modules/$k/build" "$out/mod-$k" W=1) || msg="$msg
build failed"
		if [ -f "$out/mod-$k/drivers/uio_heap/uio_heap.ko" ] && ! grep -qiE 'warning|error' <<<"$msg"; then
			ok "build $k W=1"
		else
			nok "build $k W=1"; echo "$msg" | sed 's/^/# /'
		fi
		# sparse, on a copy so that the tested module is the plain build
		msg=$(build_module "/lib/modules/$k/build" "$out/sparse-$k" C=2) || msg="$msg
build failed"
		if ! grep -qiE 'warning|error' <<<"$msg"; then
			ok "sparse $k C=2"
		else
			nok "sparse $k C=2"; echo "$msg" | sed 's/^/# /'
		fi
	done
	return $rc
}

if [ -n "${UIOHEAP_QUICK:-}" ]; then
	for k in "${kernels[@]}"; do
		build_module "/lib/modules/$k/build" "$out/mod-$k" >&2
	done
else
	log "host checks"
	host_tap | tee "$tapdir/host.tap" || true
fi

log "building userspace"
build_user "$out/user" "$ksrc/tools/testing/selftests"
payload=$out/payload
rm -rf "$payload" && mkdir -p "$payload"
cp "$top/tests/guest/run.sh" "$out/user/selftests/"* "$out/user/tools/uio-heap-demo" "$payload/"

for k in "${kernels[@]}"; do
	for iommu in ${UIOHEAP_IOMMU_MODES:-off on}; do
		log "VM: $k, IOMMU $iommu"
		tap=$tapdir/$k-iommu-$iommu.tap
		rc=0
		run_payload "$k" "/boot/vmlinuz-$k" \
			"$out/mod-$k/drivers/uio_heap/uio_heap.ko" "$payload" "$iommu" \
			"$out/vm-$k-$iommu.log" --timeout 900 --append "$vm_append" >"$tap" || rc=$?
		# 124: timed out, 125: ended without finishing the payload
		if [ $rc = 124 ] || [ $rc = 125 ]; then
			printf 'TAP version 13\n1..1\nnot ok 1 VM %s IOMMU %s finished (rc %s, see %s)\n' \
				"$k" "$iommu" $rc "$out/vm-$k-$iommu.log" >>"$tap"
		fi
		sed "s/^/[$k iommu=$iommu] /" "$tap"
	done
done

log "whole run: $((SECONDS - start)) s"
"$top/tests/vm/tap-sum.sh" "$tapdir"/*.tap
