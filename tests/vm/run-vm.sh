#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a kernel + initramfs (from mkinitramfs.sh) in QEMU/TCG with edu DMA
# devices and an NVMe controller, optionally behind an emulated IOMMU:
# x86 q35 with an Intel IOMMU, or arm64 virt with an SMMUv3.  Two serial
# ports: ttyS0 carries /init and the payload (--log); the kernel's console
# (ttyS1 on x86, the PL011 ttyAMA0 on arm64, where ttyS0 is a PCI UART)
# carries every kernel message as it is printed (--klog), so that nothing
# depends on the ring buffer.  stdout gets only the payload's output;
# QEMU's own stdout and stderr go to LOG's .qemu (tests/vm/verdict.sh).
# Exit: payload rc; 124 = VM timed out, 125 = VM ended without payload end.
set -euo pipefail

usage() {
	cat >&2 <<EOF
usage: ${0##*/} --kernel VMLINUZ --initrd FILE --iommu on|off --timeout SECONDS
       --log FILE [--klog FILE] [--mem 2G] [--smp 2] [--edu N] [--append "extra cmdline"]
       [--tcg single|multi] [--nvme IMAGE] [--nvme2 IMAGE]
       [--arch x86_64|arm64] [--dtb FILE] [--board zcu102]

  --edu N     number of edu devices (default and minimum 2): 0000:00:10.0 has
              the default 28-bit DMA mask, 0000:00:11.0 ... are 64-bit
  --nvme      raw image behind the NVMe controller at 0000:00:0c.0 (default:
              an empty 64 MiB one, deleted afterwards); QEMU writes to it
  --nvme2     raw image behind a second, identical controller at 0000:00:0d.0
              (serial uioheap1), named to the guest as nvme_kernel: make
              bench leaves it to the kernel's nvme driver
  --klog      the kernel's console (default: LOG with .log replaced by .kmsg)
              (QEMU's own output: LOG with .log replaced by .qemu)
  --append    extra kernel command line (e.g. iommu.strict=1)
  --arch      x86_64 (default): q35; arm64: virt, whose RAM starts at 1 GiB,
              so that without an SMMU its narrow edu is 32-bit (edu_bits=32
              to the guest); 3 GiB by default, all of it below 4 GiB
  --dtb       arm64: boot with this device tree instead of QEMU's own
              (tests/arm64/dtb.sh: a non-coherent PCIe host, a platform
              UIO device)
  --board     arm64: zcu102 is QEMU's xlnx-zcu102 (ZynqMP, 2 GiB below
              4 GiB, no PCI: no edu, no NVMe) with --dtb from
              tests/arm64/zcu102.sh; its UARTs are ttyPS0 and ttyPS1
  --tcg       single (default): one host thread for all vCPUs; multi: MTTCG,
              faster but rarely oopses on int3 while the guest patches its text
EOF
	exit 2
}

die() { echo "${0##*/}: $*" >&2; exit "${2:-2}"; }

kernel='' initrd='' iommu='' tmo='' log='' klog='' mem='' smp=2 nedu=2 append='' tcg=single
nvme='' nvme2='' arch=x86_64 dtb='' board=''
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=${2:?}; shift 2 ;;
	--initrd) initrd=${2:?}; shift 2 ;;
	--iommu) iommu=${2:?}; shift 2 ;;
	--timeout) tmo=${2:?}; shift 2 ;;
	--log) log=${2:?}; shift 2 ;;
	--klog) klog=${2:?}; shift 2 ;;
	--mem) mem=${2:?}; shift 2 ;;
	--smp) smp=${2:?}; shift 2 ;;
	--edu) nedu=${2:?}; shift 2 ;;
	--append) append=${2?}; shift 2 ;;
	--tcg) tcg=${2:?}; shift 2 ;;
	--nvme) nvme=${2:?}; shift 2 ;;
	--nvme2) nvme2=${2:?}; shift 2 ;;
	--arch) arch=${2:?}; shift 2 ;;
	--dtb) dtb=${2:?}; shift 2 ;;
	--board) board=${2:?}; shift 2 ;;
	-h|--help) usage ;;
	*) echo "unknown argument: $1" >&2; usage ;;
	esac
done
{ [ -n "$kernel" ] && [ -n "$initrd" ] && [ -n "$tmo" ] && [ -n "$log" ]; } || usage
case $iommu in on|off) ;; *) usage ;; esac
case $tcg in single|multi) ;; *) usage ;; esac
case $arch in x86_64|arm64) ;; *) usage ;; esac
[ -z "$dtb" ] || [ "$arch" = arm64 ] || die "--dtb is for --arch arm64"
case $board in '') ;; zcu102) [ -n "$dtb" ] && [ "$iommu" = off ] || die "zcu102: --dtb, no IOMMU" ;; *) usage ;; esac
[ "$nedu" -ge 2 ] 2>/dev/null || die "--edu must be >= 2"
[ -r "$kernel" ] || die "cannot read kernel $kernel"
[ -r "$initrd" ] || die "cannot read initrd $initrd"
klog=${klog:-${log%.log}.kmsg} qlog=${log%.log}.qemu

# The last console= is /dev/console: /init moves itself to ttyS0.  A ring
# of 16 MiB keeps the payload's closing dmesg dump whole as well.
# TCG has no stolen-time accounting: a starved host must not look like a
# soft lockup, hung task or RCU stall (a real hang hits the VM timeout).
cmdline="loglevel=7 log_buf_len=16M panic=-1"
cmdline+=" watchdog_thresh=60 sysctl.kernel.hung_task_timeout_secs=600 rcupdate.rcu_cpu_stall_timeout=120"
common=(-accel "tcg,thread=$tcg" -nodefaults -nographic -no-reboot -monitor none
	-chardev "file,id=con0,path=$log" -chardev "file,id=con1,path=$klog"
	-kernel "$kernel" -initrd "$initrd")
edu_bits=28
if [ "$arch" = x86_64 ]; then
	qemu=(qemu-system-x86_64 -M q35 -cpu max -m "${mem:-2G}" -smp "$smp" "${common[@]}"
	      -serial chardev:con0 -serial chardev:con1)
	cmdline="console=ttyS1 $cmdline"
	# intel-iommu must come before the PCI devices it translates for.
	if [ "$iommu" = on ]; then
		qemu+=(-device "intel-iommu,intremap=off")
		cmdline+=" intel_iommu=on"
	else
		cmdline+=" intel_iommu=off"
	fi
elif [ "$board" = zcu102 ]; then
	# Its four A53s are fixed; /init and the payload use the second UART.
	# No sound, and its four on-board NICs on a hub that leads nowhere.
	qemu=(qemu-system-aarch64 -M xlnx-zcu102 -m "${mem:-2G}" "${common[@]}"
	      -serial chardev:con1 -serial chardev:con0 -dtb "$dtb" -audiodev none,id=snd0)
	for i in 0 1 2 3; do qemu+=(-nic hubport,hubid=0); done
	cmdline="console=ttyPS0 $cmdline"
else
	# pauth-impdef: QEMU's own pointer-auth hash, far cheaper in TCG.
	machine=virt
	[ "$iommu" = on ] && machine+=,iommu=smmuv3
	qemu=(qemu-system-aarch64 -M "$machine" -cpu max,pauth-impdef=on -m "${mem:-3G}"
	      -smp "$smp" "${common[@]}" -serial chardev:con1 -device "pci-serial,chardev=con0,addr=0x1f")
	[ -n "$dtb" ] && qemu+=(-dtb "$dtb")
	cmdline="console=ttyAMA0 $cmdline"
	# No RAM below 1 GiB: a 28-bit engine reaches nothing without an
	# IOMMU.  (The board VM's platform device has the narrow window.)
	[ "$iommu" = off ] && edu_bits=32
fi
if [ "$board" = zcu102 ]; then
	args="iommu=off,arch=arm64,board=zcu102,console=ttyPS1"
else
	qemu+=(-device "edu,addr=0x10,dma_mask=$(printf '%#x' $(((1 << edu_bits) - 1)))")
	edu64=
	for ((i = 1; i < nedu; i++)); do
		slot=$(printf '%02x' $((0x10 + i)))
		qemu+=(-device "edu,addr=0x$slot,dma_mask=0xffffffffffffffff")
		edu64+="${edu64:++}0000:00:$slot.0"
	done
	# An NVMe controller below the edu slots, which grow from 0x10 with --edu.
	if [ -z "$nvme" ]; then
		nvme=$(mktemp)
		trap 'rm -f "$nvme"' EXIT
		truncate -s 64M "$nvme"
	fi
	[ -w "$nvme" ] || die "cannot write NVMe image $nvme"
	qemu+=(-drive "file=$nvme,if=none,format=raw,id=nvm0"
	       -device "nvme,serial=uioheap0,drive=nvm0,addr=0x0c")
	args="iommu=$iommu,arch=$arch,edu_bits=$edu_bits,edu28=0000:00:10.0,edu64=$edu64,nvme=0000:00:0c.0"
	# x86: two e1000 NICs on a QEMU hub, a link of their own (the DPDK suite).
	if [ "$arch" = x86_64 ]; then
		qemu+=(-netdev hubport,hubid=0,id=nic0 -device e1000,netdev=nic0,addr=0x08
		       -netdev hubport,hubid=0,id=nic1 -device e1000,netdev=nic1,addr=0x09)
		args+=",nics=0000:00:08.0+0000:00:09.0"
	fi
	if [ -n "$nvme2" ]; then
		[ -w "$nvme2" ] || die "cannot write NVMe image $nvme2"
		qemu+=(-drive "file=$nvme2,if=none,format=raw,id=nvm1"
		       -device "nvme,serial=uioheap1,drive=nvm1,addr=0x0d")
		args+=",nvme_kernel=0000:00:0d.0"
	fi
fi
cmdline+=" uioheap.args=$args $append"
qemu+=(-append "$cmdline")
: >"$log"; : >"$klog"; : >"$qlog"
start=$(date +%s)
qrc=0
timeout --kill-after=10 "$tmo" "${qemu[@]}" </dev/null >"$qlog" 2>&1 || qrc=$?
elapsed=$(($(date +%s) - start))
# Payload lines go to stdout; the payload rc is the awk exit status
# (200 = no begin marker, 201 = no end marker).
prc=0
tr -d '\r' <"$log" | awk '
	done { next }
	!inside && /@@PAYLOAD-BEGIN@@/ { inside = 1; next }
	inside && match($0, /@@PAYLOAD-END rc=[0-9]+@@/) {
		if (RSTART > 1) print substr($0, 1, RSTART - 1)
		rc = substr($0, RSTART + 17, RLENGTH - 19); done = 1; next
	}
	inside { print }
	END { exit done ? rc : (inside ? 201 : 200) }' || prc=$?

fail() {
	echo "${0##*/}: FAIL: $1 (qemu rc=$qrc, ${elapsed}s); console log: $log" >&2
	tail -n 20 "$log" | sed 's/^/  | /' >&2
	tail -n 5 "$qlog" | sed 's/^/  qemu| /' >&2
	exit "$2"
}
if [ $prc -ge 200 ]; then
	msg="VM ended without @@PAYLOAD-END@@"
	[ $prc = 200 ] && msg="VM never reached the payload"
	case $qrc in 124|137) fail "timeout after ${tmo}s: $msg" 124 ;; esac
	fail "$msg" 125
fi
[ $qrc = 0 ] || echo "${0##*/}: warning: qemu rc=$qrc after payload end" >&2
echo "${0##*/}: payload rc=$prc in ${elapsed}s" >&2
exit $prc
