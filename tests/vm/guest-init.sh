#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=dash disable=SC2086,SC2046,SC2155,SC2013
#
# /init of the uio-heap test initramfs (busybox sh, runs as PID 1).
# Loads the in-tree modules, binds QEMU edu devices and the NVMe controller
# (UIOHEAP_NVME, from run-vm.sh) to uio_pci_generic,
# runs /payload/run.sh between markers, dumps dmesg, powers off.  Its own
# output and the payload's go to ttyS0 (UIOHEAP_CONSOLE: the board's
# ttyPS1); the kernel's console is another port (tests/vm/run-vm.sh).  What went wrong while setting up is written to
# /run/setup-failures, which the payload turns into failing results.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root

log() { echo "uioheap-init: $*"; }
setup_failed() { log "$*"; echo "$*" >>/run/setup-failures; }

mount_fs() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	mount -t debugfs debugfs /sys/kernel/debug
	mount -t tmpfs tmpfs /tmp
	mount -t tmpfs tmpfs /run
	mkdir -p /dev/shm /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t devpts devpts /dev/pts
	# DPDK's EAL keeps its runtime directory in /var/run.
	mkdir -p /var && ln -s /run /var/run
	# As udev would: kselftest's runner writes to /dev/stdout.
	ln -s /proc/self/fd /dev/fd && ln -s fd/0 /dev/stdin && ln -s fd/1 /dev/stdout &&
		ln -s fd/2 /dev/stderr
}

# uioheap.args=key=val,key2=a+b  ->  UIOHEAP_KEY=val UIOHEAP_KEY2="a b"
parse_args() {
	local w kv key val
	for w in $(cat /proc/cmdline); do
		case $w in uioheap.args=*) ;; *) continue ;; esac
		local IFS=,
		for kv in ${w#uioheap.args=}; do
			key=$(echo "${kv%%=*}" | tr a-z- A-Z_)
			val=$(echo "${kv#*=}" | tr + ' ')
			case $key in *[!A-Z0-9_]*|'') log "bad arg '$kv'"; continue ;; esac
			export "UIOHEAP_$key=$val"
		done
	done
}

load_modules() {
	local m
	while read -r m; do
		insmod "$m" || setup_failed "insmod ${m##*/} failed"
	done </lib/modules/load-order.txt
}

is_edu() {
	[ "$(cat "$1/vendor")" = 0x1234 ] && [ "$(cat "$1/device")" = 0x11e8 ]
}

# Bind all edu devices to uio_pci_generic; wait up to 5 s for the binding.
bind_edu() {
	local d all
	echo "1234 11e8" >/sys/bus/pci/drivers/uio_pci_generic/new_id ||
		setup_failed "new_id write to uio_pci_generic failed"
	for _ in $(seq 50); do
		all=1
		for d in /sys/bus/pci/devices/*; do
			is_edu "$d" && [ ! -e "$d/driver" ] && all=0
		done
		[ $all = 1 ] && return 0
		usleep 100000
	done
	setup_failed "edu devices not bound to uio_pci_generic after 5 s"
}

# The NVMe controller, QEMU's 1b36:0010.  make bench loads the kernel's
# nvme driver for a second controller (UIOHEAP_NVME_KERNEL); it took both,
# and lets go of this one.  new_id binds every unbound one: only this.
bind_nvme() {
	local d=/sys/bus/pci/devices/${UIOHEAP_NVME:-}
	[ -n "${UIOHEAP_NVME:-}" ] || return 0
	if [ -e "$d/driver" ]; then
		echo "$UIOHEAP_NVME" >"$d/driver/unbind" ||
			setup_failed "NVMe $UIOHEAP_NVME: cannot unbind from its driver"
	fi
	echo "1b36 0010" >/sys/bus/pci/drivers/uio_pci_generic/new_id ||
		setup_failed "new_id write for NVMe to uio_pci_generic failed"
	for _ in $(seq 50); do
		[ -e /sys/bus/pci/devices/$UIOHEAP_NVME/uio ] && return 0
		usleep 100000
	done
	setup_failed "NVMe $UIOHEAP_NVME not bound to uio_pci_generic after 5 s"
}

# uioN names of the given PCI addresses (space separated in, out).
uio_of() {
	local bdf u out=''
	for bdf in "$@"; do
		for u in /sys/bus/pci/devices/"$bdf"/uio/uio*; do
			[ -e "$u" ] && out="$out ${u##*/}"
		done
	done
	echo ${out# }
}

export_env() {
	local d edu=''
	for d in /sys/bus/pci/devices/*; do
		is_edu "$d" && edu="$edu ${d##*/}"
	done
	# UIOHEAP_IOMMU stays what the host asked for: the tests prove it.
	export UIOHEAP_KVER=$(uname -r)
	export UIOHEAP_EDU="${edu# }" UIOHEAP_EDU_UIO="$(uio_of $edu)"
	export UIOHEAP_EDU28_UIO="$(uio_of ${UIOHEAP_EDU28:-})"
	export UIOHEAP_EDU64_UIO="$(uio_of ${UIOHEAP_EDU64:-})"
	export UIOHEAP_NVME_UIO="$(uio_of ${UIOHEAP_NVME:-})"
	env | grep '^UIOHEAP_' | sort | sed 's/^/uioheap-init: /'
}

run_payload() {
	local rc
	log "payload starts at uptime $(cut -d' ' -f1 /proc/uptime)s"
	echo "@@PAYLOAD-BEGIN@@"
	cd /payload || return
	if [ -x run.sh ]; then ./run.sh; else sh run.sh; fi </dev/null 2>&1
	rc=$?
	cd /
	echo "@@PAYLOAD-END rc=$rc@@"
}

mount_fs
parse_args
exec </dev/null >"/dev/${UIOHEAP_CONSOLE:-ttyS0}" 2>&1
load_modules
bind_edu
bind_nvme
export_env
run_payload
sync
# The board's UART loses what its FIFO holds at poweroff -f.
[ -z "${UIOHEAP_CONSOLE:-}" ] || sleep 1
poweroff -f
