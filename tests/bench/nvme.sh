#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make bench's NVMe figures, inside the VM (run.sh hands over for
# tests=nvme).  Two identical QEMU NVMe controllers (tests/vm/run-vm.sh
# --nvme2): UIOHEAP_NVME is bound to uio_pci_generic and driven by the
# example driver, uio-nvme (polled, buffers from uio-heap);
# UIOHEAP_NVME_KERNEL is the kernel's nvme driver's, given a poll queue
# here (poll_queues=1, the controller probed again), and read with
# O_DIRECT by nvme-odirect through Linux AIO and through io_uring.  Each
# figure runs through each reader, one after the other, in three rounds
# (a noisy host then hits all of them alike), and prints per round
#
#   @ nvme DRIVER PATTERN SIZE QD IOS NS USER_NS SYS_NS BUSY_NS
#
# DRIVER is uio, uio-cached (data buffers from uioN-cached, synced per
# read), kernel-aio (Linux AIO, interrupts), kernel-uring-irq (io_uring,
# registered buffers and file, interrupts) or kernel-uring (the same,
# polled: IORING_SETUP_IOPOLL on the poll queue); the report adds up the
# rounds.  The kernel readers verify what they read against the image
# (UIOHEAP_NVME_SEED, tools/nvme/pattern.h).  UIOHEAP_BUDGET: seconds per
# figure, driver and round.
set -eu
cd "$(dirname "$0")"

secs=${UIOHEAP_BUDGET:-2}
echo "@ info kernel $(uname -r)"
echo "# kernel $(uname -r), IOMMU ${UIOHEAP_IOMMU:-?}, NVMe: uio-nvme on ${UIOHEAP_NVME:-?}, kernel nvme on ${UIOHEAP_NVME_KERNEL:-?}"
echo "@ info iommu ${UIOHEAP_IOMMU:-?}"
echo "@ info mem $(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
echo "@ info cpus $(grep -c ^processor /proc/cpuinfo)"
echo "@ info cmdline $(cat /proc/cmdline)"
[ -e /run/setup-failures ] && { sed 's/^/@ error setup: /' /run/setup-failures; exit 1; }
insmod /lib/modules/extra/uio_heap.ko
uio=${UIOHEAP_NVME_UIO:-}
[ -n "$uio" ] || { echo "@ error no UIO device for NVMe ${UIOHEAP_NVME:-?}"; exit 1; }
rc=0
seed=${UIOHEAP_NVME_SEED:-}
[ -n "$seed" ] || { echo "@ error no UIOHEAP_NVME_SEED: cannot verify the reads"; exit 1; }

# The kernel's controller has the only NVMe namespace with a block device
# (nvmeXcYnZ are multipath's hidden per-path disks, without a node).
find_dev() {
	dev=
	for _ in $(seq 100); do
		for b in /sys/block/nvme*n*; do
			case ${b##*/} in *c*) continue ;; esac
			[ -e "$b" ] && dev=/dev/${b##*/}
		done
		[ -n "$dev" ] && [ -b "$dev" ] && return 0
		dev=
		usleep 100000
	done
	echo "@ error no block device of the kernel's nvme driver"
	exit 1
}

# Poll queues are allocated when the controller is probed, and the nvme
# module was loaded at boot with none (insmod, unlike modprobe, does not
# read nvme.poll_queues= from the kernel command line).  Without them a
# polled reader must refuse to run, not measure interrupts: checked
# first.  Then the parameter is set and the kernel's controller probed
# again.
kbdf=${UIOHEAP_NVME_KERNEL:-}
if [ -z "$kbdf" ] || [ ! -e "/sys/bus/pci/drivers/nvme/$kbdf" ]; then
	echo "@ error NVMe ${kbdf:-?} is not the kernel nvme driver's"
	exit 1
fi
find_dev
if out=$(./nvme-odirect -e uring -f -F -p "$dev" rand 4096 1 0.1 2>&1); then
	rc=1; echo "@ error nvme: IOPOLL ran on $dev without poll queues"
fi
echo "$out" | sed 's/^/# without poll queues: /'
{ echo "$kbdf" >/sys/bus/pci/drivers/nvme/unbind &&
  echo 1 >/sys/module/nvme/parameters/poll_queues &&
  echo "$kbdf" >/sys/bus/pci/drivers/nvme/bind; } ||
	{ echo "@ error NVMe $kbdf: cannot probe it again with a poll queue"; exit 1; }
echo "@ info nvme-poll-queues $(cat /sys/module/nvme/parameters/poll_queues)"
find_dev
echo "@ info nvme-kernel $dev $(sed 's/ *$//' "/sys/block/${dev#/dev/}/device/serial" 2>/dev/null || true)"
echo "@ info nvme-io-poll $(cat "/sys/block/${dev#/dev/}/queue/io_poll")"
./uio-nvme "$uio" identify | sed 's/^/# /'
# Interrupts of the kernel's nvme queues so far (the uio controller's
# vectors went with its unbinding): the polled reads must raise none.
nvme_irqs() {
	awk '$NF ~ /^nvme[0-9]+q[0-9]+$/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i }
		END { print n + 0 }' /proc/interrupts
}

# measure CMD...: one run of a reader, its line turned into "@ nvme",
# and for nvme-odirect the kernel's interrupts over all its reads (the
# verified ones too) into "@ nvme-irq DRIVER PATTERN SIZE QD IRQS READS".
measure() {
	irq0=$(nvme_irqs)
	out=$("$@" "$secs" 2>&1) || { rc=1; echo "@ error nvme: $* failed"; }
	irq1=$(nvme_irqs)
	echo "$out" | awk -v irqs=$((irq1 - irq0)) '
		/^bench: / {
			line = "@ nvme"
			for (i = 2; i <= NF; i++) { split($i, kv, "="); v[i] = kv[2]; line = line " " kv[2] }
			print line; ios += v[6]; d = v[2] " " v[3] " " v[4] " " v[5]; next
		}
		/I\/O commands$/ { next }
		/reads verified against the image/ { ios += $3 }
		{ print "# " $0 }
		END {
			if (d !~ /^kernel/) exit
			print "@ nvme-irq " d " " irqs " " ios
			if (d ~ /^kernel-uring / && irqs > ios / 10)
				print "@ error nvme: " d ": " irqs " interrupts for " ios " polled reads"
		}'
}

# figure PATTERN SIZE QD: the same reads through each driver.
figure() {
	measure ./uio-nvme "$uio" bench "$@"
	measure ./uio-nvme -c "$uio" bench "$@"
	measure ./nvme-odirect -c "$seed" -n kernel-aio "$dev" "$@"
	measure ./nvme-odirect -c "$seed" -n kernel-uring-irq -e uring -f -F "$dev" "$@"
	measure ./nvme-odirect -c "$seed" -n kernel-uring -e uring -f -F -p "$dev" "$@"
}

# The hardware contexts of the kernel's disk and their types: one "poll".
for h in /sys/kernel/debug/block/nvme*/hctx*; do
	[ -e "$h/type" ] && echo "# ${h#/sys/kernel/debug/block/}: $(cat "$h/type")"
done
for _ in 1 2 3; do
	figure rand 4096 1
	figure rand 4096 32
	figure seq 131072 1
done

bad=$(dmesg | grep -E 'WARNING|BUG|Oops|general protection|Call Trace' | head -n 20 || true)
if [ -n "$bad" ]; then
	echo "@ error kernel log"
	echo "$bad" | sed 's/^/# dmesg: /'
	rc=1
fi
exit $rc
