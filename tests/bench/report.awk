# SPDX-License-Identifier: GPL-2.0
#
# awk -f report.awk raw-host.txt raw-off.txt raw-on.txt raw-mttcg.txt raw-nvme.txt ...
#
# The results of make bench as plain text: tables, ratios measured side by
# side in one VM run, and the project's targets.  Reads the "@ ..." lines
# that uio-heap-bench and tests/bench.sh write; times in them are ns.
# (POSIX awk: Debian's default is mawk.)

function us(ns) {
	if (ns == "") return "-"
	if (ns < 10000) return sprintf("%.2f", ns / 1e3)
	if (ns < 100000) return sprintf("%.1f", ns / 1e3)
	return sprintf("%.0f", ns / 1e3)
}
function ratio(a, b) {
	if (a == "" || b == "" || b == 0) return "-"
	return sprintf("%.2f", a / b)
}
function hsize(b) {
	if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
	if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
	return b
}
function verdict(ok) { return ok ? "met" : "MISSED" }
function target(what, measured, v) { printf "  %-52s %-24s %s\n", what, measured, v }

FNR == 1 { run = FILENAME; sub(/.*raw-/, "", run); sub(/\.txt$/, "", run) }
$1 != "@" { next }
$2 == "info" { k = $3; $1 = $2 = $3 = ""; sub(/^ +/, ""); info[run, k] = $0; next }
$2 == "error" { $1 = $2 = ""; sub(/^ +/, ""); err[run] = err[run] " [" $0 "]"; next }
$2 == "largest" { largest[run] = $4; next }
$2 == "cycle" {
	m = $3; s = $4
	if (!((run, m) in hasm)) { hasm[run, m] = 1; morder[run, ++nmeth[run]] = m }
	if (!((run, s) in hass)) { hass[run, s] = 1; sorder[run, ++nsize[run]] = s }
	n[run, m, s] = $5; p10[run, m, s] = $7; med[run, m, s] = $8; p90[run, m, s] = $9
	next
}
$2 ~ /^phase-/ {
	ph = substr($2, 7)
	if (!((run, ph) in hasph)) { hasph[run, ph] = 1; phorder[run, ++nph[run]] = ph }
	phase[run, ph, $3, $4] = $8
	next
}
$2 == "addr" {
	na = split($3, a, "-")
	pass = a[na]; var = substr($3, 1, length($3) - length(pass) - 1)
	addr[run, var, pass, $4] = $8
	if (!((run, pass, $4) in haspass)) { haspass[run, pass, $4] = 1; npass[run, $4]++; passes[run, $4, npass[run, $4]] = pass }
	next
}
$2 == "alloc4k" { alloc4k[run, $3] = $8; next }
$2 == "outstanding" { $1 = $2 = ""; sub(/^ +/, ""); outst[run] = $0; next }
$2 == "grow" { grow[run, $3, $4] = $8; hasgrow[run] = 1; next }
$2 == "threads" {
	key = run SUBSEP $3 SUBSEP $4 SUBSEP $5
	tops[key] += $6; tns[key] += $7
	thr[run] = 1
	next
}
$2 == "bw" { bw[run, $3] = $8; bwlen[run] = $4; next }
$2 == "max" {
	maxlo[run] = $4; maxhi[run] = $5; maxtot[run] = $6; maxavail[run] = $7
	maxprobes[run] = $8; maxkills[run] = $9; maxns[run] = $10
	next
}
$2 == "gib-cycle" { gib[run] = $4; for (i = 5; i <= NF; i++) gibph[run, i - 4] = $i; next }
$2 == "zero" { zero[run, $3] = $8; zorder[++nz] = $3; next }
# @ nvme DRIVER PATTERN SIZE QD IOS NS USER_NS SYS_NS BUSY_NS (tests/bench/nvme.sh)
$2 == "nvme" {
	f = $4 SUBSEP $5 SUBSEP $6
	if (!((run, f) in hasfig)) { hasfig[run, f] = 1; figorder[run, ++nfig[run]] = f }
	k = run SUBSEP f SUBSEP $3
	nios[k] += $7; nns[k] += $8; ncpu[k] += $9 + $10; nsys[k] += $10; nbusy[k] += $11
	f = $8 ? $7 / ($8 / 1e9) : 0
	if (!(k in nlo) || f < nlo[k]) nlo[k] = f
	if (!(k in nhi) || f > nhi[k]) nhi[k] = f
	next
}
# @ nvme-irq DRIVER PATTERN SIZE QD IRQS READS: the kernel's nvme interrupts
$2 == "nvme-irq" { k = run SUBSEP $4 SUBSEP $5 SUBSEP $6 SUBSEP $3; nirq[k] += $7; nirqios[k] += $8; next }
# @ dpdk MEMORY SIZE FRAMES NS CPU_NS (tests/bench/dpdk.sh, per round)
$2 == "dpdk" {
	k = run SUBSEP $3 SUBSEP $4
	if (!((run, $4) in dsz)) { dsz[run, $4] = 1; dsizes[run, ++ndsz[run]] = $4 }
	dframes[k] += $5; dns[k] += $6; dcpu[k] += $7
	f = $6 ? $5 / ($6 / 1e9) : 0
	if (!(k in dlo) || f < dlo[k]) dlo[k] = f
	if (!(k in dhi) || f > dhi[k]) dhi[k] = f
	next
}
# @ profile METHOD CALLER>...>FUNCTION CALLS US SELF_US (per cycle)
$2 == "profile" {
	k = run SUBSEP $3
	pn[k]++; ppath[k, pn[k]] = $4
	pcalls[k, $4] = $5; pus[k, $4] = $6; pself[k, $4] = $7
	next
}

function ratio_block(r, base,    i, j, m, s, line) {
	line = sprintf("  %-6s", "size")
	for (i = 1; i <= nmeth[r]; i++)
		if (morder[r, i] != base) line = line sprintf(" %-17s", base "/" morder[r, i])
	print line
	for (j = 1; j <= nsize[r]; j++) {
		s = sorder[r, j]
		line = sprintf("  %-6s", hsize(s))
		for (i = 1; i <= nmeth[r]; i++) {
			m = morder[r, i]
			if (m == base) continue
			line = line sprintf(" %-17s", ratio(med[r, base, s], med[r, m, s]) " (" ratio(p10[r, base, s], p10[r, m, s]) ")")
		}
		print line
	}
}

function cycle_table(r, title,    i, j, m, s, line, cell) {
	if (!nsize[r]) return
	print title
	print "  median us [p10..p90] n, methods interleaved in random order per round"
	line = sprintf("  %-6s", "size")
	for (i = 1; i <= nmeth[r]; i++) line = line sprintf(" %-24s", morder[r, i])
	print line
	for (j = 1; j <= nsize[r]; j++) {
		s = sorder[r, j]
		line = sprintf("  %-6s", hsize(s))
		for (i = 1; i <= nmeth[r]; i++) {
			m = morder[r, i]
			cell = "-"
			if ((r, m, s) in med)
				cell = sprintf("%s [%s..%s] %d", us(med[r, m, s]), us(p10[r, m, s]), us(p90[r, m, s]), n[r, m, s])
			line = line sprintf(" %-24s", cell)
		}
		print line
	}
	print ""
	print "  ratios of medians (of p10s in parentheses)"
	ratio_block(r, "uio")
	if ((r, "cmp") in hasm) { print ""; ratio_block(r, "cmp") }
	print ""
}

function phase_table(r, title,    i, j, k, m, s, line) {
	if (!nph[r]) return
	print title
	line = sprintf("  %-6s %-8s", "size", "method")
	for (k = 1; k <= nph[r]; k++) line = line sprintf(" %9s", phorder[r, k])
	print line
	for (j = 1; j <= nsize[r]; j++) {
		s = sorder[r, j]
		for (i = 1; i <= nmeth[r]; i++) {
			m = morder[r, i]
			if (!((r, phorder[r, 1], m, s) in phase)) continue
			line = sprintf("  %-6s %-8s", hsize(s), m)
			for (k = 1; k <= nph[r]; k++) line = line sprintf(" %9s", us(phase[r, phorder[r, k], m, s]))
			print line
		}
	}
	print "  us, median of each step timed on its own.  system/udmabuf \"alloc\" is the"
	print "  allocation ioctl(s), pagemap's is mmap + mlock (faults in and zeroes every"
	print "  page); \"touch\" includes the page faults; \"addr\" is libuioheap's query or"
	print "  the pagemap reads; \"close\" frees the memory."
	print ""
}

# The pass at @c outstanding the host disturbed least: lowest null ioctl.
function quiet(r, c,    i, p, bp) {
	bp = ""
	for (i = 1; i <= npass[r, c]; i++) {
		p = passes[r, c, i]
		if (bp == "" || addr[r, "null-ioctl", p, c] + 0 < addr[r, "null-ioctl", bp, c] + 0) bp = p
	}
	return bp
}
function qv(r, var, c) { return addr[r, var, quiet(r, c), c] }

function addr_table(r, title,    c, i, j, p, cnt, lo, hi, v) {
	if (!npass[r, 1]) return
	print title
	print "  us per call, median of 150 batches of 100 calls, in the quietest of the"
	print "  passes at that count (lowest null ioctl); the last column: ioctl over all passes"
	printf "  %-11s %7s %8s %10s %10s %9s %11s %10s  %s\n", "outstanding", "ioctl", "same fd", "libuioheap", "null ioctl", "dma-buf", "ioctl/null", "ioctl-null", "ioctl, all passes"
	split("1 1000 10000", cnt, " ")
	for (i = 1; i <= 3; i++) {
		c = cnt[i]
		lo = hi = ""
		for (j = 1; j <= npass[r, c]; j++) {
			v = addr[r, "ioctl", passes[r, c, j], c]
			if (lo == "" || v + 0 < lo + 0) lo = v
			if (hi == "" || v + 0 > hi + 0) hi = v
		}
		printf "  %-11s %7s %8s %10s %10s %9s %11s %10s  %s..%s (%d)\n", c,
			us(qv(r, "ioctl", c)), us(qv(r, "ioctl-samefd", c)), us(qv(r, "libuioheap", c)),
			us(qv(r, "null-ioctl", c)), us(qv(r, "bufioctl", c)),
			ratio(qv(r, "ioctl", c), qv(r, "null-ioctl", c)),
			us(qv(r, "ioctl", c) - qv(r, "null-ioctl", c)), us(lo), us(hi), npass[r, c]
	}
	print "  ioctl: UIO_HEAP_IOCTL_GET_DMA_ADDR on a random outstanding buffer; same fd:"
	print "  always the same buffer; libuioheap: uioheap_dma_addr(), which asks"
	print "  DMA_BUF_IOCTL_GET_DMA_ADDR first (ENOTTY on stock kernels); null ioctl: a"
	print "  command the heap rejects at once, i.e. the cost of entering the kernel;"
	print "  dma-buf: DMA_BUF_IOCTL_GET_DMA_ADDR on a random buffer, refused by a stock"
	print "  kernel's dma-buf core: finding a random dma-buf file, no uio-heap code."
	printf "  outstanding: %s (result, count, sysfs \"buffers\", bad addresses)\n", outst[r]
	print ""
}

function grow_table(r, title,    h, b, line, hs) {
	if (!(r in hasgrow)) return
	print title
	split("uio system", hs, " ")
	for (h = 1; h <= 2; h++) {
		if (!((r, hs[h], 1000) in grow)) continue
		line = sprintf("  %-7s", hs[h])
		for (b = 1000; b <= 10000; b += 1000) line = line sprintf(" %6s", us(grow[r, hs[h], b]))
		print line
	}
	print "  (us, median 4K allocation in each block of 1000, blocks 1..10000 outstanding)"
	print ""
}

function threads_table(r, title,    i, j, hs, ls, k1, k2, r1, r2) {
	if (!(r in thr)) return
	print title
	printf "  %-12s %-10s %12s %12s %8s\n", "heap", "workload", "1 thread/s", "2 threads/s", "2/1"
	split("uio uio2 system uio-procs uio2-procs system-procs", hs, " "); split("alloc4k cycle64k", ls, " ")
	for (j = 1; j <= 2; j++)
		for (i = 1; i <= 6; i++) {
			k1 = r SUBSEP hs[i] SUBSEP ls[j] SUBSEP 1
			k2 = r SUBSEP hs[i] SUBSEP ls[j] SUBSEP 2
			if (!(k1 in tops) || !(k2 in tops)) continue
			r1 = tops[k1] * 1e9 / tns[k1]; r2 = tops[k2] * 1e9 / tns[k2]
			printf "  %-12s %-10s %12.0f %12.0f %8.2f\n", hs[i], ls[j], r1, r2, r2 / r1
		}
	print "  alloc4k: 4 KiB alloc + close; cycle64k: alloc, mmap, touch, munmap, close;"
	print "  uio, system: both threads on one heap fd; uio2: the second thread on the"
	print "  other uio heap (uioN-cached unless told otherwise), two heaps; -procs:"
	print "  processes instead of threads (no shared fd table, mm or TLB shootdowns)"
	print ""
}

# 2/1 of heap @h, workload @l in run @r, or "" if not measured.
function thr_ratio(r, h, l,    k1, k2) {
	k1 = r SUBSEP h SUBSEP l SUBSEP 1; k2 = r SUBSEP h SUBSEP l SUBSEP 2
	if (!(k1 in tops) || !(k2 in tops) || !tops[k1] || !tns[k2]) return ""
	return (tops[k2] / tns[k2]) / (tops[k1] / tns[k1])
}

# The traced call tree of one method's 1 MiB cycle, callers first.
function profile_tree(r, m,    k, i, j, t, n, path, d, name) {
	k = r SUBSEP m
	n = pn[k]
	for (i = 1; i <= n; i++) sorted[i] = ppath[k, i]
	for (i = 2; i <= n; i++) {
		t = sorted[i]
		for (j = i - 1; j >= 1 && sorted[j] > t; j--) sorted[j + 1] = sorted[j]
		sorted[j + 1] = t
	}
	printf "  %s\n", m
	for (i = 1; i <= n; i++) {
		path = sorted[i]
		d = gsub(/>/, ">", path)
		name = path; sub(/.*>/, "", name)
		if (pus[k, path] < 5) continue
		printf "  %*s%-*s %8.0f %8.0f %7.2f\n", 2 * d + 2, "", 42 - 2 * d, name,
			pus[k, path], pself[k, path], pcalls[k, path]
	}
}
function profile_table(r, title) {
	if (!pn[r SUBSEP "uio"]) return
	print title
	printf "  %-44s %8s %8s %7s\n", "us per cycle, callers first", "total", "self", "calls"
	profile_tree(r, "uio")
	profile_tree(r, "system")
	print "  (self: time not in a traced callee; entries under 5 us left out.  The"
	print "  tracer adds a few us to every traced call: the 256 single-page calls"
	print "  with the IOMMU on are inflated by it.)"
	print ""
}

function iops(k) { return k in nns && nns[k] ? nios[k] / (nns[k] / 1e9) : "" }
function per_io(v, k) { return k in nios && nios[k] ? v / nios[k] : "" }

# The NVMe figures of run r: per read pattern, each driver's IOPS and CPU
# time per I/O, then the example driver's against each kernel reader's and
# against the best of them (the highest IOPS, the lowest CPU per I/O, each
# taken from whichever kernel reader has it), with item 4's verdict.
function nvme_table(r, title,    i, j, f, p, k, kk, d, line, nd, dr, bi, bc, bb, v, ok) {
	if (!nfig[r]) return
	# "kernel": nvme-odirect's Linux AIO before it had a name per engine.
	nd = split("uio uio-cached kernel kernel-aio kernel-uring-irq kernel-uring", dr, " ")
	print title
	printf "  %-14s %-18s %8s %8s %13s %13s %11s %7s %7s\n", "reads", "driver", "IOPS", "MB/s",
		"CPU us/IO", "(of it sys)", "VM CPU us/IO", "irq/IO", "hi/lo"
	for (i = 1; i <= nfig[r]; i++) {
		f = figorder[r, i]; split(f, p, SUBSEP)
		bi = bc = bb = ""
		for (j = 1; j <= nd; j++) {
			k = r SUBSEP f SUBSEP dr[j]
			if (!(k in nios)) continue
			printf "  %-14s %-18s %8.0f %8.1f %13s %13s %11s %7s %7s\n",
				(j == 1 ? p[1] " " hsize(p[2]) " QD" p[3] : ""), dr[j], iops(k),
				iops(k) * p[2] / 1e6, us(per_io(ncpu[k], k)), us(per_io(nsys[k], k)),
				us(per_io(nbusy[k], k)), nirqios[k] ? sprintf("%.2f", nirq[k] / nirqios[k]) : "-",
				ratio(nhi[k], nlo[k])
			if (dr[j] !~ /^kernel/) continue
			if (bi == "" || iops(k) > bi) bi = iops(k)
			if (bc == "" || per_io(ncpu[k], k) < bc) bc = per_io(ncpu[k], k)
			if (bb == "" || per_io(nbusy[k], k) < bb) bb = per_io(nbusy[k], k)
		}
		k = r SUBSEP f SUBSEP "uio"
		for (j = 1; j <= nd; j++) {
			kk = r SUBSEP f SUBSEP dr[j]
			if (dr[j] !~ /^kernel/ || !(kk in nios)) continue
			d = dr[j]; sub(/^kernel-?/, "", d)
			printf "  %-14s %-18s %8s %8s %13s %13s %11s\n", "", "uio/" (d == "" ? "kernel" : d),
				ratio(iops(k), iops(kk)), "", ratio(per_io(ncpu[k], k), per_io(ncpu[kk], kk)), "",
				ratio(per_io(nbusy[k], k), per_io(nbusy[kk], kk))
		}
		if (bi != "")
			printf "  %-14s %-18s %8s %8s %13s %13s %11s\n", "", "uio/best kernel",
				ratio(iops(k), bi), "", ratio(per_io(ncpu[k], k), bc), "",
				ratio(per_io(nbusy[k], k), bb)
		if (bi != "" && (k in nios)) {
			v[i] = sprintf("%s/%s/%s", ratio(iops(k), bi), ratio(per_io(ncpu[k], k), bc),
				ratio(per_io(nbusy[k], k), bb))
			ok[i] = iops(k) >= bi && per_io(ncpu[k], k) <= bc && per_io(nbusy[k], k) <= bb
		}
	}
	print "  uio: tools/nvme/uio-nvme bench on the controller bound to uio_pci_generic"
	print "  (polled, queues and buffers from uioN); uio-cached: its data buffers from"
	print "  uioN-cached, with SYNC END before and START after each read.  kernel-*:"
	print "  nvme-odirect, O_DIRECT reads of the second, identical controller, driven by"
	print "  the kernel's nvme driver with one poll queue: kernel-aio Linux AIO"
	print "  (interrupts), kernel-uring-irq io_uring with registered buffers and file"
	print "  (interrupts), kernel-uring the same with IORING_SETUP_IOPOLL (polled);"
	print "  each checks its data against the image.  CPU us/IO: the process's"
	print "  user + system time (getrusage); VM CPU: all vCPUs' non-idle time"
	print "  (/proc/stat, interrupts included).  uio/X: IOPS ratio (> 1: the example"
	print "  is faster) and CPU-per-I/O ratios (< 1: it is cheaper); best kernel: the"
	print "  highest IOPS and the lowest CPU per I/O of any kernel reader.  irq/IO:"
	print "  the kernel's nvme interrupts per read (/proc/interrupts); hi/lo: the"
	print "  best round's IOPS over the worst's.  TCG distorts all of it: see"
	print "  Documentation/benchmark.md, NVMe."
	print "  Target (issue 32 item 4): IOPS >= 1.0 x, CPU and VM CPU per I/O <= 1.0 x"
	print "  the best kernel path's (IOPS/CPU/VM CPU):"
	for (i = 1; i <= nfig[r]; i++) {
		if (!(i in v)) continue
		f = figorder[r, i]; split(f, p, SUBSEP)
		target("  " p[1] " " hsize(p[2]) " QD" p[3], v[i], verdict(ok[i]))
	}
	print ""
}

function fps(k) { return k in dns && dns[k] ? dframes[k] / (dns[k] / 1e9) : "" }
function range(k) { return k in dlo ? sprintf("[%.0f..%.0f]", dlo[k], dhi[k]) : "-" }
function per_frame(k) { return k in dframes && dframes[k] ? dcpu[k] / dframes[k] : "" }

# The DPDK figures: frames per second and CPU per frame on uio-heap memory
# (heap) and DPDK's hugepages (native) in the IOMMU-off run, heap in the
# IOMMU-on run beside them.
function dpdk_table(    i, s, h, nat, on) {
	if (!ndsz["dpdk"] && !ndsz["dpdk-on"]) return
	print "15. DPDK: tools/dpdk/uio-dpdk, e1000 to e1000 on a QEMU hub, one queue, 3 rounds"
	printf "  %-6s %-24s %10s %-17s %12s %8s %12s\n", "frame", "memory", "frames/s", "[rounds' range]",
		"CPU ns/frame", "heap/nat", "CPU heap/nat"
	for (i = 1; i <= ndsz["dpdk"] + 0; i++) {
		s = dsizes["dpdk", i]
		h = "dpdk" SUBSEP "heap" SUBSEP s; nat = "dpdk" SUBSEP "native" SUBSEP s
		on = "dpdk-on" SUBSEP "heap" SUBSEP s
		printf "  %-6s %-24s %10.0f %-17s %12.0f %8s %12s\n", s, "heap, IOMMU off", fps(h),
			range(h), per_frame(h), ratio(fps(h), fps(nat)), ratio(per_frame(h), per_frame(nat))
		printf "  %-6s %-24s %10.0f %-17s %12.0f\n", "", "native, IOMMU off", fps(nat), range(nat),
			per_frame(nat)
		if (on in dframes)
			printf "  %-6s %-24s %10.0f %-17s %12.0f %8s %12s\n", "", "heap, IOMMU on (2nd VM)",
				fps(on), range(on), per_frame(on), ratio(fps(on), fps(nat)),
				ratio(per_frame(on), per_frame(nat))
	}
	print "  heap: rings and mbufs in /dev/dma_heap/uioN buffers (external malloc heaps);"
	print "  native: DPDK's hugepages at physical addresses (stock DPDK on UIO, which an"
	print "  IOMMU faults).  Both alternate in one VM; polled, so CPU per frame is ~1/rate."
	print "  QEMU's e1000 model, not memory, sets the rate: see Documentation/benchmark.md."
	for (i = 1; i <= ndsz["dpdk"] + 0; i++) {
		s = dsizes["dpdk", i]
		h = "dpdk" SUBSEP "heap" SUBSEP s; nat = "dpdk" SUBSEP "native" SUBSEP s
		target("DPDK " s " B frames/s, heap/native >= 0.95", ratio(fps(h), fps(nat)),
			verdict(fps(nat) != "" && fps(h) >= 0.95 * fps(nat)))
	}
	print ""
}

function bw_table(r, title,    ops, i, a, b) {
	if (!((r, "uio-memset") in bw)) return
	print title
	printf "  %-8s %12s %12s %9s\n", "access", "uio MiB/s", "anon MiB/s", "uio/anon"
	split("memset store64 load64", ops, " ")
	for (i = 1; i <= 3; i++) {
		a = bwlen[r] / (bw[r, "uio-" ops[i]] / 1e9) / 1048576
		b = bwlen[r] / (bw[r, "anon-" ops[i]] / 1e9) / 1048576
		printf "  %-8s %12.0f %12.0f %9.2f\n", ops[i], a, b, a / b
	}
	print ""
}

END {
	printf "uio-heap benchmark (make bench), %s\n", info["host", "date"]
	printf "kernel %s in QEMU TCG (%s): EMULATED, not hardware\n", info["off", "kernel"], info["host", "qemu"]
	printf "guest: %s vCPUs, %s kB RAM, cpu flags:%s\n", info["off", "cpus"], info["off", "mem"], info["off", "cpuflags"]
	printf "host: %s; load average at start / end: %s\n", info["host", "host-cpu"], info["host", "load"]
	print "Figures compare methods measured side by side (interleaved) in one VM"
	print "run; absolute times are those of an emulated CPU on a shared, noisy host"
	print "and say nothing about hardware."
	for (r in err) printf "ERRORS in run %s:%s\n", r, err[r]
	print ""

	cycle_table("off", "1. Full cycle (alloc, mmap, touch every page, address, munmap, close), IOMMU off")
	if ("off" in largest) {
		if (largest["off"] > 0)
			printf "  largest buffer with the IOMMU off (doubling + bisection): %s\n\n", hsize(largest["off"])
		else
			print "  largest buffer with the IOMMU off: more than 64M (see 10.)\n"
	}
	cycle_table("on", "2. Full cycle, IOMMU on (intel-iommu, Debian's default lazy mode)")
	if (("on" in largest) && largest["on"] == 0)
		print "  largest buffer with the IOMMU on: more than 64M, see 10.\n"
	phase_table("off", "3. Where the time goes, IOMMU off")
	phase_table("on", "4. Where the time goes, IOMMU on")
	addr_table("off", "5. Address ioctl alone, IOMMU off")
	addr_table("on", "6. Address ioctl alone, IOMMU on")
	grow_table("off", "7a. Allocation cost while 10000 buffers accumulate, IOMMU off")
	grow_table("on", "7b. Allocation cost while 10000 buffers accumulate, IOMMU on")
	threads_table("off", "8a. Two allocator threads, single-threaded TCG (both vCPUs on one host thread: 2/1 is 1.0 at best)")
	threads_table("mttcg", "8b. Two allocator threads, multi-threaded TCG (2 host threads, if the host has them free)")
	bw_table("off", "9. CPU bandwidth through the mapping of a 4 MiB buffer, IOMMU off (4 KiB pages both)")

	print "10. Largest single buffer (doubling, then bisection in MiB)"
	for (i = 1; i <= 2; i++) {
		r = i == 1 ? "off" : "on"
		if (!(r in maxlo)) continue
		printf "  IOMMU %-3s: %s MiB (%s MiB failed); RAM %s MiB, MemAvailable %s MiB; %s probes, %s OOM-killed, %.0f s\n",
			r, maxlo[r], maxhi[r], maxtot[r], maxavail[r], maxprobes[r], maxkills[r], maxns[r] / 1e9
		if (r in gib)
			printf "    one 1 GiB cycle: %.2f s (alloc %.2f, mmap %.4f, touch %.2f, addr %.4f, munmap %.3f, close %.2f)\n",
				gib[r] / 1e9, gibph[r, 1] / 1e9, gibph[r, 2] / 1e9, gibph[r, 3] / 1e9,
				gibph[r, 4] / 1e9, gibph[r, 5] / 1e9, gibph[r, 6] / 1e9
	}
	print ""

	if (nz) {
		print "11. Zeroing 1 MiB in this emulator, by instruction (us, median)"
		for (i = 1; i <= nz; i++) printf "  %-10s %8s\n", zorder[i], us(zero["off", zorder[i]])
		print "  The kernel zeroes pages with clear_page(), \"rep stosb\" when the CPU has"
		print "  erms; the kernel's memset() is memset_orig (a movq loop) without fsrs;"
		print "  glibc's memset() is \"rep stosb\" at these sizes.  TCG emulates \"rep"
		print "  stos\" an element at a time, so who zeroes how weighs differently here"
		print "  than on hardware."
		print ""
	}

	profile_table("off", "12a. Kernel profile of a 1 MiB cycle (ftrace function_graph, 40 cycles), IOMMU off")
	profile_table("on", "12b. Kernel profile of a 1 MiB cycle (ftrace function_graph, 40 cycles), IOMMU on")

	print "13. Targets"
	target("target", "measured", "verdict")
	s = 1048576
	if (("off", "uio", s) in med) {
		x = med["off", "uio", s] / med["off", "memset", s]
		target("1M cycle <= 1.3 x memset(1M), IOMMU off", sprintf("%.2f x (p10 %s)", x, ratio(p10["off", "uio", s], p10["off", "memset", s])), verdict(x <= 1.3))
		target("  the system heap's own cycle, for scale", sprintf("%.2f x memset", med["off", "system", s] / med["off", "memset", s]), "")
		x = med["off", "uio", s] / med["off", "system", s]
		target("1M cycle <= 1.0 x system heap, IOMMU off", sprintf("%.2f x (p10 %s)", x, ratio(p10["off", "uio", s], p10["off", "system", s])), verdict(x <= 1.0))
	}
	# "cmp" is the same edu's uioN-cached node unless make bench was told otherwise.
	if (("off", "cmp", s) in med) {
		x = med["off", "cmp", s] / med["off", "system", s]
		target("1M cycle, uioN-cached <= 1.0 x system heap, IOMMU off", sprintf("%.2f x (p10 %s)", x, ratio(p10["off", "cmp", s], p10["off", "system", s])), verdict(x <= 1.0))
	}
	if (("on", "cmp", s) in med) {
		x = med["on", "cmp", s] / med["on", "system", s]
		target("1M cycle, uioN-cached <= 1.1 x system heap, IOMMU on", sprintf("%.2f x (p10 %s)", x, ratio(p10["on", "cmp", s], p10["on", "system", s])), verdict(x <= 1.1))
	}
	if (("on", "uio", s) in med) {
		x = med["on", "uio", s] / med["on", "memset", s]
		target("  the same, IOMMU on: <= 1.3 x memset", sprintf("%.2f x (p10 %s)", x, ratio(p10["on", "uio", s], p10["on", "memset", s])), verdict(x <= 1.3))
		x = med["on", "uio", s] / med["on", "system", s]
		target("  the same, IOMMU on: <= 1.0 x system heap", sprintf("%.2f x (p10 %s)", x, ratio(p10["on", "uio", s], p10["on", "system", s])), verdict(x <= 1.0))
	}
	for (i = 1; i <= 2; i++) {
		r = i == 1 ? "off" : "on"
		if (!npass[r, 1]) continue
		a1 = qv(r, "ioctl", 1); a2 = qv(r, "ioctl", 1000); a3 = qv(r, "ioctl", 10000)
		worst = a1 + 0 > a2 + 0 ? a1 : a2; worst = worst + 0 > a3 + 0 ? worst : a3
		target("address ioctl < 2 us (1/1000/10000), IOMMU " r, sprintf("%s/%s/%s us", us(a1), us(a2), us(a3)), verdict(worst < 2000))
		target("  of which entering the kernel (null ioctl)", sprintf("%s/%s/%s us", us(qv(r, "null-ioctl", 1)), us(qv(r, "null-ioctl", 1000)), us(qv(r, "null-ioctl", 10000))), "")
		f = (a3 / qv(r, "null-ioctl", 10000)) / (a1 / qv(r, "null-ioctl", 1))
		target("  flat 1->10000 (ioctl/null, <= 1.25 x), random fd", sprintf("%.2f x", f), verdict(f <= 1.25))
		f = (qv(r, "ioctl-samefd", 10000) / qv(r, "null-ioctl", 10000)) / (qv(r, "ioctl-samefd", 1) / qv(r, "null-ioctl", 1))
		target("  flat 1->10000 (ioctl/null, <= 1.25 x), same fd", sprintf("%.2f x", f), verdict(f <= 1.25))
		# The core finding a random dma-buf file costs the same with no
		# uio-heap code: what remains is the module's own part.
		o1 = qv(r, "ioctl", 1) - qv(r, "bufioctl", 1)
		o3 = qv(r, "ioctl", 10000) - qv(r, "bufioctl", 10000)
		if (o1 > 0) {
			target("  uio-heap's own part (ioctl - dma-buf), random fd", sprintf("%s/%s/%s us", us(o1), us(qv(r, "ioctl", 1000) - qv(r, "bufioctl", 1000)), us(o3)), "")
			target("  flat 1->10000 (own part, <= 1.25 x)", sprintf("%.2f x", o3 / o1), verdict(o3 / o1 <= 1.25))
		}
	}
	for (i = 1; i <= 2; i++) {
		r = i == 1 ? "off" : "on"
		if (!npass[r, 1]) continue
		a1 = qv(r, "ioctl", 1) / qv(r, "null-ioctl", 1)
		a2 = qv(r, "ioctl", 1000) / qv(r, "null-ioctl", 1000)
		a3 = qv(r, "ioctl", 10000) / qv(r, "null-ioctl", 10000)
		worst = a1 > a2 ? a1 : a2; worst = worst > a3 ? worst : a3
		target("address ioctl <= 1.5 x null (1/1000/10000), IOMMU " r, sprintf("%.2f/%.2f/%.2f x", a1, a2, a3), verdict(worst <= 1.5))
		# The stock core refusing its own ioctl on the same random fds:
		# what finding the file costs with no uio-heap code at all.
		target("  floor: the dma-buf core's refusal / null", sprintf("%.2f/%.2f/%.2f x",
			qv(r, "bufioctl", 1) / qv(r, "null-ioctl", 1), qv(r, "bufioctl", 1000) / qv(r, "null-ioctl", 1000),
			qv(r, "bufioctl", 10000) / qv(r, "null-ioctl", 10000)), "")
	}
	if ("mttcg" in thr) {
		split("uio uio2 system uio-procs uio2-procs system-procs", hs, " ")
		for (i = 1; i <= 6; i++) {
			a1 = thr_ratio("mttcg", hs[i], "alloc4k"); a2 = thr_ratio("mttcg", hs[i], "cycle64k")
			if (a1 == "" || a2 == "") continue
			worst = a1 < a2 ? a1 : a2
			h = hs[i]; sub(/-procs/, "", h)
			target(sprintf("%s (alloc4k/cycle64k), %s", i <= 3 ? "2 threads >= 1.8 x 1" : "  2 processes / 1", h == "uio" ? "one heap" : h == "uio2" ? "two heaps" : "system heap"),
				sprintf("%.2f/%.2f x", a1, a2), i == 1 || i == 2 ? verdict(worst >= 1.8) : "")
		}
	}
	for (i = 1; i <= 2; i++) {
		r = i == 1 ? "off" : "on"
		if (outst[r] == "") continue
		split(outst[r], o, " ")
		target("10000 outstanding buffers per heap, IOMMU " r, outst[r], verdict(o[1] == "ok" && o[2] == 10000 && o[3] == 10000 && o[4] == 0))
	}
	if ("on" in maxlo)
		target("single buffer >= 1 GiB behind the IOMMU (2 GiB VM)", maxlo["on"] " MiB", verdict(maxlo["on"] >= 1024))
	if ("off" in maxlo)
		target("  IOMMU off (no target: physically contiguous)", maxlo["off"] " MiB", "")
	print ""
	nvme_table("nvme", "14a. NVMe: the example driver against the kernel's nvme driver, one VM, IOMMU on")
	nvme_table("nvme-off", "14b. NVMe: the example driver against the kernel's nvme driver, one VM, IOMMU off")
	dpdk_table()
	printf "make bench took %s s (VM runs:", info["host", "seconds"]
	for (i = 1; i <= 7; i++) {
		r = i == 1 ? "off" : i == 2 ? "on" : i == 3 ? "mttcg" : i == 4 ? "nvme" : i == 5 ? "nvme-off" : i == 6 ? "dpdk" : "dpdk-on"
		if ((r, "vm-seconds") in info) printf " %s %s s", r, info[r, "vm-seconds"]
	}
	print ")"
}
