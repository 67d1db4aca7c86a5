// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap fuzzer: random and mutated ioctls on heap and dma-buf fds, mmap and munmap of the
 * dma-bufs (UIOHEAP_FUZZ_SEED repeats a run).  The oracle holds the module to the errors the uAPI
 * and Documentation/uio-heap.rst promise; the rest must not crash, fault or leak an fd.  Every
 * page carries a signature, checked through every mapping.
 */
#include <sys/sysinfo.h>

#include "kselftest_harness.h"
#include "common.h"

#define FZ_BUFS		24		/* dma-bufs kept at a time */
#define FZ_MAPS		24		/* mappings kept at a time */
#define FZ_CAP		SZ_1M		/* allocation sizes, and rarely: */
#define FZ_CAP_RARE	SZ_4M
#define FZ_MAX_FD	1024

/* Argument arena: pages 0-4 read-write, 5 none, 6 read-only, 7 none. */
#define ARENA_PAGES	8
#define ARENA_RW	(5 * PAGE_SZ)
#define ARENA_RO	(6 * PAGE_SZ)

/* The outcomes a call may have: bit e for errno e, bit 0 for success. */
#define EB(e)		(1ULL << (e))
#define ANY		(~0ULL)

#define PAGE_UP(n)	(((n) + PAGE_SZ - 1) & ~(PAGE_SZ - 1))

enum fz_kind { FK_HEAP, FK_BUF };	/* a heap node fd, a dma-buf fd */

static const char *const kind_name[] = { "heap", "buf" };

struct fz_buf {
	int fd;
	int dev;	/* index of the uio device */
	size_t len;
	uint64_t addr;	/* 0 until known */
	uint64_t id;
	int acc;	/* O_ACCMODE of the dma-buf file */
	bool sig;	/* pages carry their signature, else zero */
};

struct fz_map {
	unsigned char *p;
	size_t len, pgoff;
	uint64_t id;
	bool sig, writable;
};

/* Shared with the parent: the run's parameters, and what it was doing. */
struct fz_shared {
	uint64_t seed, mask[2];
	char node[2][64];
	long max_calls, ms, calls, allocs, maps;
	bool patched;		/* DMA_BUF_IOCTL_GET_DMA_ADDR must exist */
	char last[240];
	struct first_error err;
};

struct fz {
	struct prng rng;
	struct fz_shared *sh;
	int heap[3];		/* node 0, node 1, node 0 read-only: device idx == 1 */
	int nbuf, nmap, closed_fd;
	struct fz_buf buf[FZ_BUFS];
	struct fz_map map[FZ_MAPS];
	unsigned char *arena;
	uint64_t totalram;	/* pages */
	uint64_t next_id;
	bool known[FZ_MAX_FD];	/* fds this process may have open */
	unsigned char kbuf[16384 + 64] __attribute__((aligned(8)));
};

#define fz_bad(f, fmt, ...) report(&(f)->sh->err, "call %ld: " fmt " [%s]", (f)->sh->calls, \
				   ##__VA_ARGS__, (f)->sh->last)
#define fz_last(f, ...) snprintf((f)->sh->last, sizeof((f)->sh->last), __VA_ARGS__)

#define rnd(f, n)	prng_below(&(f)->rng, (n))
#define chance(f, pct)	(rnd(f, 100) < (pct))

/* Can the kernel read (or @write) @n bytes at @a?  From the arena's layout. */
static bool fz_reach(struct fz *f, uintptr_t a, size_t n, bool write)
{
	uintptr_t base = (uintptr_t)f->arena;

	if (!n || (a >= base && a + n <= base + ARENA_RW && a + n > a))
		return true;
	return !write && a >= base + ARENA_RO && a + n <= base + ARENA_RO + PAGE_SZ;
}

/* An argument pointer: mostly good, sometimes near a guard, read-only or bad. */
static uintptr_t fz_arg(struct fz *f, size_t size)
{
	uintptr_t base = (uintptr_t)f->arena;
	unsigned int c = rnd(f, 100);

	return c < 65 ? base + 8 * rnd(f, 8) :
	       c < 75 ? base + ARENA_RW - rnd(f, size + 8) :
	       c < 83 ? base + ARENA_RO + 8 * rnd(f, 8) :
	       c < 88 ? 0 :
	       c < 92 ? 1 + rnd(f, 4095) :
	       c < 96 ? 0xffff888000000000ULL + 8 * rnd(f, 512) :
	       base + 1 + rnd(f, 7);
}

/* Puts f->kbuf[0, size) where the kernel will read it from. */
static void fz_place(struct fz *f, uintptr_t a, size_t size)
{
	uintptr_t base = (uintptr_t)f->arena;
	uintptr_t end = base + (a < base + ARENA_RO ? ARENA_RW : ARENA_RO + PAGE_SZ);

	if (a < base || a >= end)
		return;
	mprotect(f->arena + ARENA_RO, PAGE_SZ, PROT_READ | PROT_WRITE);
	memcpy((void *)a, f->kbuf, end - a < size ? end - a : size);
	mprotect(f->arena + ARENA_RO, PAGE_SZ, PROT_READ);
}

/* An fd of @kind, and the index of its object (heap or buffer), or -1. */
static int fz_fd_of(struct fz *f, enum fz_kind kind, int *idx)
{
	if (kind == FK_BUF && !f->nbuf)
		return -1;
	*idx = rnd(f, kind == FK_HEAP ? 3 : f->nbuf);
	return kind == FK_HEAP ? f->heap[*idx] : f->buf[*idx].fd;
}

static unsigned int fz_size(struct fz *f, unsigned int want)
{
	unsigned int c = rnd(f, 100);

	return c < 55 ? want :
	       c < 62 ? 0 :
	       c < 70 ? (want > 8 ? want - 8 : 1 + rnd(f, 8)) :
	       c < 78 ? want + 8 :
	       c < 88 ? rnd(f, 256) : rnd(f, 16384);
}

static unsigned int fz_dir(struct fz *f, unsigned int want)
{
	return chance(f, 75) ? want : rnd(f, 4);
}

/* What an ALLOC argument allocates, 0 if invalid: the kernel sees @in bytes of @k, zeroes after. */
static uint64_t alloc_len(const unsigned char *k, size_t in, unsigned int *fd_flags)
{
	struct dma_heap_allocation_data v = { 0 };

	memcpy(&v, k, in < sizeof(v) ? in : sizeof(v));
	*fd_flags = v.fd_flags;
	return v.fd || v.fd_flags & ~(O_ACCMODE | O_CLOEXEC) || v.heap_flags ? 0 : PAGE_UP(v.len);
}

static const char *err_name(int e)
{
	return e ? strerror(e) : "success";
}

/* Checks every page of a mapping: its signature (rewritten if writable), or all zeroes. */
static int fz_touch(struct fz *f, struct fz_map *m)
{
	size_t n = m->len / PAGE_SZ, at = 0, i;
	uint64_t seen = 0;
	int ret = 0;

	if (m->sig) {
		ret = sig_pages(m->p, m->pgoff, n, m->id, false, &at, &seen);
		if (!ret && m->writable)
			ret = sig_pages(m->p, m->pgoff, n, m->id, true, &at, &seen);
	}
	for (i = 0; !m->sig && !ret && i < n; i++) {
		at = m->pgoff + i;
		ret = probe_read64((volatile uint64_t *)(m->p + i * PAGE_SZ), &seen);
		if (!ret && (seen || !is_filled(m->p + i * PAGE_SZ, PAGE_SZ, 0)))
			ret = -1;
	}
	if (ret > 0)
		fz_bad(f, "signal %d at page %zu of a live mapping", ret, at);
	else if (ret < 0)
		fz_bad(f, "page %zu shows %#llx, not its own contents", at,
		       (unsigned long long)seen);
	return ret;
}

/* Keeps a new dma-buf in the pool, or closes it. */
static void fz_adopt(struct fz *f, int fd, int dev, size_t len, int acc)
{
	struct fz_map m = { .len = len };
	struct fz_buf *b;
	struct stat st;
	uint64_t seen;
	size_t at;

	if (fstat(fd, &st) || (size_t)st.st_size != len)
		fz_bad(f, "new dma-buf fd %d: size %lld, expected %zu", fd,
		       (long long)st.st_size, len);
	if (f->nbuf == FZ_BUFS || fd >= FZ_MAX_FD) {
		if (close(fd))
			fz_bad(f, "close of a new dma-buf: %s", strerror(errno));
		return;
	}
	f->known[fd] = true;
	b = &f->buf[f->nbuf++];
	*b = (struct fz_buf){ .fd = fd, .dev = dev, .len = len, .id = ++f->next_id, .acc = acc };
	f->sh->allocs++;
	if (acc != O_RDWR)
		return;
	/* A fresh read-write buffer reads zero: every page gets its signature. */
	m.p = uioheap_map(fd, len);
	m.id = b->id;
	if (!m.p) {
		fz_bad(f, "mmap of a fresh %zu-byte buffer: %s", len, strerror(errno));
		return;
	}
	b->sig = !fz_touch(f, &m) && !sig_pages(m.p, 0, len / PAGE_SZ, b->id, true, &at, &seen);
	munmap(m.p, len);
}

static void fz_drop_buf(struct fz *f, int i)
{
	f->known[f->buf[i].fd] = false;
	if (close(f->buf[i].fd))
		fz_bad(f, "close of dma-buf fd %d: %s", f->buf[i].fd, strerror(errno));
	f->closed_fd = f->buf[i].fd;
	f->buf[i] = f->buf[--f->nbuf];
}

/* An fd open that the fuzzer does not know of, or -1; with @leaked, each is reported and closed. */
static int fz_stray(struct fz *f, bool leaked)
{
	int fd;

	for (fd = 0; fd < FZ_MAX_FD; fd++) {
		if (f->known[fd] || fcntl(fd, F_GETFD) < 0)
			continue;
		if (!leaked)
			return fd;
		fz_bad(f, "fd %d open but never handed out", fd);
		close(fd);
	}
	return -1;
}

/*
 * The outcomes promised for ioctl @cmd on (@kind, @idx), argument @arg (f->kbuf, @in bytes read,
 * @out written), an ALLOC of @len.  *@bidx: the buffer an address query names.
 */
static uint64_t fz_expect(struct fz *f, enum fz_kind kind, int idx, unsigned int cmd,
			  uintptr_t arg, unsigned int in, unsigned int out, uint64_t len, int *bidx)
{
	uint64_t ok = fz_reach(f, arg, out, true) ? EB(0) : EB(EFAULT);
	bool rd = fz_reach(f, arg, in, false);
	/* fd and flags lead all three of uio-heap's own arguments. */
	struct uio_heap_dma_addr a;
	uint64_t sync;

	memcpy(&a, f->kbuf, sizeof(a));
	memcpy(&sync, f->kbuf, sizeof(sync));
	if (kind == FK_BUF && cmd == DMA_BUF_IOCTL_GET_DMA_ADDR) {
		*bidx = idx;
		return f->sh->patched ? ok : EB(ENOTTY);
	}
	/* Unknown numbers: EINVAL, as the dma-heap core answers. */
	if (kind == FK_HEAP && _IOC_NR(cmd) && cmd != UIO_HEAP_IOCTL_GET_DMA_ADDR &&
	    cmd != UIO_HEAP_IOCTL_IMPORT && cmd != UIO_HEAP_IOCTL_UNIMPORT)
		return EB(EINVAL);
	if (kind == FK_BUF && cmd != DMA_BUF_IOCTL_SYNC)
		return ANY;
	if (!rd)
		return EB(EFAULT);
	/* The exporter's CPU access hooks never fail a live buffer. */
	if (kind == FK_BUF)
		return sync & DMA_BUF_SYNC_RW && !(sync & ~DMA_BUF_SYNC_VALID_FLAGS_MASK) ?
		       EB(0) : ANY;
	if (!_IOC_NR(cmd)) {
		if (!len)
			return EB(EINVAL);
		/* The allocation itself may run out within the mask. */
		return len >> 12 > f->totalram ? EB(ENOMEM) : EB(ENOMEM) | ok;
	}
	if (a.flags & ~(cmd == UIO_HEAP_IOCTL_IMPORT ? UIO_HEAP_VALID_IMPORT_FLAGS : 0))
		return EB(EINVAL);
	/* Success only for an import the fuzzing made by chance. */
	if (cmd == UIO_HEAP_IOCTL_UNIMPORT)
		return EB(ENOENT) | EB(0);
	/* Any fd: a buffer of any heap imports (or not, in one range). */
	if (cmd == UIO_HEAP_IOCTL_IMPORT)
		return EB(EBADF) | EB(EINVAL) | EB(ERANGE) | EB(ENOSPC) | ok;
	for (*bidx = 0; *bidx < f->nbuf; (*bidx)++)
		if (f->buf[*bidx].fd == (int)a.fd)
			return f->buf[*bidx].dev == (idx == 1) ? ok : EB(EINVAL);
	/* Not open, or open and not a buffer of this heap (a heap node, say). */
	return fcntl((int)a.fd, F_GETFD) < 0 ? EB(EBADF) : EB(EINVAL);
}

/* One ioctl on (@kind, @idx, @fd), @val (@vsize bytes, random after) at a chosen pointer. */
static void fz_ioctl(struct fz *f, enum fz_kind kind, int idx, int fd, unsigned int cmd,
		     const void *val, size_t vsize)
{
	unsigned int nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
	unsigned int in = _IOC_DIR(cmd) & _IOC_WRITE ? size : 0;
	unsigned int out = _IOC_DIR(cmd) & _IOC_READ ? size : 0;
	size_t argsize = vsize > size ? vsize : size;
	/* Like the dma-heap core's, the node allocates for any number 0. */
	bool alloc = kind == FK_HEAP && nr == 0;
	int got, newfd = -1, bidx = -1;
	uint64_t exp, addr, nl, len = 0;
	unsigned int fd_flags = 0;
	uintptr_t arg;

	prng_fill(f->kbuf, (argsize + 15) & ~7UL, prng_next(&f->rng));
	if (vsize)
		memcpy(f->kbuf, val, vsize);
	arg = fz_arg(f, argsize);
	/* Keep what may be allocated bounded. */
	if (alloc)
		len = alloc_len(f->kbuf, in, &fd_flags);
	if (len && len >> 12 <= 2 * f->totalram) {
		nl = 1 + rnd(f, chance(f, 2) ? FZ_CAP_RARE : FZ_CAP);
		memcpy(f->kbuf, &nl, in < 8 ? in : 8);
		len = alloc_len(f->kbuf, in, &fd_flags);
	}
	fz_place(f, arg, argsize);
	exp = fz_expect(f, kind, idx, cmd, arg, in, out, len, &bidx);

	fz_last(f, "ioctl(%s fd %d, %#x, arg %#lx) seed %llu", kind_name[kind],
		fd, cmd, (unsigned long)arg, (unsigned long long)f->sh->seed);
	got = ioctl(fd, cmd, arg) ? errno : 0;
	if (exp != ANY && (got >= 64 || !(exp & EB(got))))
		fz_bad(f, "%s fd, cmd %#x (nr %u size %u): %s, expected %s%s",
		       kind_name[kind], cmd, nr, size, err_name(got),
		       err_name(__builtin_ctzll(exp)), exp & (exp - 1) ? " or ..." : "");
	/* What a promised success handed out. */
	if (got || !(exp & EB(0)))
		return;
	if (alloc) {
		/* An fd the argument has no room for is the one nobody knows of. */
		if (out >= 12)
			memcpy(&newfd, (void *)(arg + 8), 4);
		else
			newfd = fz_stray(f, false);
		if (newfd < 0 || fcntl(newfd, F_GETFD) < 0 ||
		    (newfd < FZ_MAX_FD && f->known[newfd]))
			fz_bad(f, "allocation returned no new fd (%d)", newfd);
		else
			fz_adopt(f, newfd, idx == 1, len, fd_flags & O_ACCMODE);
	} else if (bidx >= 0) {
		/* Either ioctl: one address, within the mask, that never changes. */
		struct fz_buf *b = &f->buf[bidx];

		memcpy(&addr, (void *)(arg + (kind == FK_HEAP ? 8 : 0)), 8);
		if (addr & (PAGE_SZ - 1) || addr + b->len - 1 > f->sh->mask[b->dev])
			fz_bad(f, "address %#llx of a %zu-byte buffer, mask %#llx",
			       (unsigned long long)addr, b->len,
			       (unsigned long long)f->sh->mask[b->dev]);
		if (b->addr && b->addr != addr)
			fz_bad(f, "%s: address %#llx, was %#llx", kind_name[kind],
			       (unsigned long long)addr, (unsigned long long)b->addr);
		b->addr = addr;
	} else if (kind == FK_BUF && cmd == DMA_BUF_IOCTL_EXPORT_SYNC_FILE) {
		memcpy(&newfd, (void *)(arg + 4), 4);
		if (newfd >= 0 && (newfd >= FZ_MAX_FD || !f->known[newfd]))
			close(newfd);
	}
}

/* DMA_HEAP_IOCTL_ALLOC with mutated contents, sizes and directions. */
static bool op_alloc(struct fz *f)
{
	unsigned int size = fz_size(f, 24), c = rnd(f, 100);
	unsigned int type = chance(f, 85) ? 'H' : 'A' + rnd(f, 26);
	struct dma_heap_allocation_data v = { 0 };
	int idx, fd = fz_fd_of(f, FK_HEAP, &idx);

	v.len = c < 55 ? (1 + rnd(f, 256)) * PAGE_SZ :
		c < 65 ? 1 + rnd(f, FZ_CAP) :
		c < 70 ? 0 :
		c < 75 ? ~0ULL - rnd(f, 2 * PAGE_SZ) :
		c < 85 ? (1ULL << (40 + rnd(f, 24))) + rnd(f, PAGE_SZ) : prng_next(&f->rng);
	v.fd = chance(f, 88) ? 0 : prng_next(&f->rng);
	c = rnd(f, 100);
	v.fd_flags = c < 60 ? O_RDWR | O_CLOEXEC : c < 70 ? O_RDONLY :
		     c < 74 ? O_WRONLY : c < 77 ? O_ACCMODE :
		     c < 85 ? O_RDWR : prng_next(&f->rng);
	v.heap_flags = chance(f, 90) ? 0 : prng_next(&f->rng) | 1;
	fz_ioctl(f, FK_HEAP, idx, fd, _IOC(fz_dir(f, _IOC_READ | _IOC_WRITE), type, 0, size),
		 &v, sizeof(v));
	return true;
}

/* An fd number for an argument field: ours, closed, or impossible. */
static int fz_any_fd(struct fz *f)
{
	unsigned int c = rnd(f, 100);
	int idx;

	return c < 3 ? 0x80000000u + rnd(f, 1000) :
	       c < 15 ? f->closed_fd :
	       c < 25 ? fz_fd_of(f, FK_HEAP, &idx) :
	       f->nbuf ? fz_fd_of(f, FK_BUF, &idx) : f->closed_fd;
}

/* UIO_HEAP_IOCTL_GET_DMA_ADDR with random fds, flags and shapes. */
static bool op_addr(struct fz *f)
{
	struct uio_heap_dma_addr a = { 0 };
	unsigned int cmd = UIO_HEAP_IOCTL_GET_DMA_ADDR;
	int idx, fd = fz_fd_of(f, FK_HEAP, &idx);

	a.fd = fz_any_fd(f);
	a.flags = chance(f, 85) ? 0 : prng_next(&f->rng) | 1;
	a.dma_addr = prng_next(&f->rng);
	if (chance(f, 15))
		cmd = _IOC(fz_dir(f, _IOC_READ | _IOC_WRITE),
			   chance(f, 50) ? UIO_HEAP_IOC_MAGIC : 'H',
			   chance(f, 50) ? 0x40 : rnd(f, 0x50), fz_size(f, 16));
	fz_ioctl(f, FK_HEAP, idx, fd, cmd, &a, sizeof(a));
	return true;
}

/* DMA_BUF_IOCTL_SYNC with random flags, and DMA_BUF_IOCTL_GET_DMA_ADDR. */
static bool op_buf_ioctl(struct fz *f)
{
	int idx, fd = fz_fd_of(f, FK_BUF, &idx);
	unsigned int cmd = DMA_BUF_IOCTL_SYNC;
	uint64_t flags;

	if (fd < 0)
		return false;
	flags = chance(f, 70) ? (rnd(f, 3) + 1) | (chance(f, 50) ? DMA_BUF_SYNC_END : 0) :
		prng_next(&f->rng) >> rnd(f, 64);
	if (chance(f, 30))
		cmd = DMA_BUF_IOCTL_GET_DMA_ADDR;
	else if (chance(f, 10))
		cmd = _IOC(fz_dir(f, _IOC_WRITE), 'b', rnd(f, 8), fz_size(f, 8));
	fz_ioctl(f, FK_BUF, idx, fd, cmd, &flags, 8);
	return true;
}

/* Anything: random type, number, size and direction bits. */
static bool op_random_ioctl(struct fz *f)
{
	enum fz_kind kind = chance(f, 50) ? FK_HEAP : FK_BUF;
	int idx, fd = fz_fd_of(f, kind, &idx);
	unsigned int cmd, type, c = rnd(f, 100);

	if (fd < 0)
		return false;
	if (c < 35) {
		cmd = prng_next(&f->rng);
	} else {
		c = rnd(f, 100);
		type = c < 30 ? 'H' : c < 45 ? UIO_HEAP_IOC_MAGIC : c < 80 ? 'b' : rnd(f, 256);
		c = rnd(f, 100);
		cmd = _IOC(rnd(f, 4), type,
			   c < 50 ? rnd(f, 9) : c < 70 ? 0x40 + rnd(f, 9) : rnd(f, 256),
			   fz_size(f, 8 * rnd(f, 5)));
	}
	/* Never the VFS's ioctls (FIOCLEX, FS_IOC_*...): types XfT, 0x94, 0x15, 0x12, 0 (NUL). */
	if (strchr("XfT\x94\x15\x12", _IOC_TYPE(cmd)))
		cmd = (cmd & ~(0xffU << _IOC_TYPESHIFT)) |
		      (chance(f, 50) ? 'H' : 'b') << _IOC_TYPESHIFT;
	fz_ioctl(f, kind, idx, fd, cmd, NULL, 0);
	return true;
}

/*
 * mmap of a dma-buf, random length, offset, protection and flags: shared within the buffer, as
 * the file's mode allows, works; nothing beyond the buffer, nor private, does.
 */
static bool op_mmap(struct fz *f)
{
	int idx, fd = fz_fd_of(f, FK_BUF, &idx), prot, flags, got;
	size_t pages, len, off, mpages;
	bool shared, fits, allowed;
	struct fz_buf *b;
	unsigned char *p;
	unsigned int c;

	if (fd < 0)
		return false;
	b = &f->buf[idx];
	pages = b->len / PAGE_SZ;
	c = rnd(f, 100);
	off = c < 60 ? rnd(f, pages) : c < 75 ? 0 : c < 85 ? pages + rnd(f, 3) :
	      c < 92 ? pages : (1 + rnd(f, 1 << 20)) << 20;
	c = rnd(f, 100);
	len = off < pages ? pages - off : 1;
	len = c < 60 ? 1 + rnd(f, len) : c < 80 ? len : len + 1 + rnd(f, 3);
	len = len * PAGE_SZ - (chance(f, 8) ? rnd(f, PAGE_SZ) : 0);
	c = rnd(f, 100);
	prot = c < 50 ? PROT_READ | PROT_WRITE : c < 85 ? PROT_READ :
	       c < 92 ? PROT_NONE : PROT_WRITE;
	c = rnd(f, 100);
	flags = c < 80 ? MAP_SHARED : c < 90 ? MAP_PRIVATE :
		c < 95 ? MAP_SHARED_VALIDATE : MAP_SHARED | MAP_POPULATE;

	mpages = PAGE_UP(len) / PAGE_SZ;
	shared = (flags & MAP_TYPE) != MAP_PRIVATE;
	fits = off + mpages <= pages;
	allowed = b->acc == O_RDWR || (b->acc == O_RDONLY && !(prot & PROT_WRITE));

	fz_last(f, "mmap(%zu, prot %#x, flags %#x, fd %d, off %#zx) seed %llu",
		len, prot, flags, fd, off * PAGE_SZ, (unsigned long long)f->sh->seed);
	p = mmap(NULL, len, prot, flags, fd, off * PAGE_SZ);
	got = p == MAP_FAILED ? errno : 0;
	if (!got && (!fits || !shared))
		fz_bad(f, "mmap of %zu pages at page %zu of a %zu-page buffer%s succeeded",
		       mpages, off, pages, shared ? "" : ", private,");
	else if (got && fits && shared && allowed)
		fz_bad(f, "mmap within a buffer: %s", strerror(got));
	if (got)
		return true;
	f->sh->maps++;
	if (f->nmap == FZ_MAPS || !(prot & PROT_READ)) {
		munmap(p, len);
		return true;
	}
	f->map[f->nmap] = (struct fz_map){
		.p = p, .len = mpages * PAGE_SZ, .pgoff = off,
		.id = b->id, .sig = b->sig, .writable = prot & PROT_WRITE,
	};
	fz_touch(f, &f->map[f->nmap++]);
	return true;
}

/* A touch, or munmap of a whole mapping or of a part of it. */
static bool op_mapping(struct fz *f)
{
	unsigned int c = rnd(f, 100);
	struct fz_map *m, tail;
	size_t pages, s, n;

	if (!f->nmap)
		return false;
	m = &f->map[rnd(f, f->nmap)];
	pages = m->len / PAGE_SZ;
	if (c < 50) {
		fz_last(f, "touch %p+%zu", m->p, m->len);
		fz_touch(f, m);
		return true;
	}
	/* All of it, or a hole in the middle: two mappings from one. */
	s = c < 75 ? 0 : rnd(f, pages);
	n = c < 75 ? pages : 1 + rnd(f, pages - s);
	fz_last(f, "munmap(%p + %zu pages, %zu pages)", m->p, s, n);
	if (munmap(m->p + s * PAGE_SZ, n * PAGE_SZ))
		fz_bad(f, "munmap of %zu of %zu pages: %s", n, pages, strerror(errno));
	tail = *m;
	tail.p += (s + n) * PAGE_SZ;
	tail.pgoff += s + n;
	tail.len -= (s + n) * PAGE_SZ;
	m->len = s * PAGE_SZ;
	if (!m->len)
		*m = f->map[--f->nmap];
	if (tail.len && f->nmap < FZ_MAPS)
		f->map[f->nmap++] = tail;
	else if (tail.len)
		munmap(tail.p, tail.len);
	return true;
}

/* Closing buffers (mappings keep theirs alive), dup. */
static bool op_pool(struct fz *f)
{
	int i, d;

	if (!f->nbuf)
		return false;
	i = rnd(f, f->nbuf);
	if (chance(f, 70) && f->nbuf > 4) {
		fz_last(f, "close(%d)", f->buf[i].fd);
		fz_drop_buf(f, i);
		return true;
	}
	fz_last(f, "dup(%d)", f->buf[i].fd);
	d = dup(f->buf[i].fd);
	if (d < 0 || close(d))
		fz_bad(f, "dup/close of a dma-buf: %s", strerror(errno));
	f->closed_fd = d;
	return true;
}

static const struct {
	bool (*fn)(struct fz *f);
	unsigned int weight;	/* percent */
} fz_ops[] = {
	{ op_alloc, 24 }, { op_addr, 14 }, { op_buf_ioctl, 12 }, { op_random_ioctl, 20 },
	{ op_mmap, 14 }, { op_mapping, 10 }, { op_pool, 6 },
};

static int fz_run(struct fz_shared *sh)
{
	static struct fz fz;
	struct fz *f = &fz;
	long long deadline = now_ms() + sh->ms;
	struct sysinfo si;
	unsigned int op, r;
	int fd, h, acc;
	long iter;

	f->sh = sh;
	prng_seed(&f->rng, sh->seed);
	sysinfo(&si);
	f->totalram = (uint64_t)si.totalram * si.mem_unit / PAGE_SZ;
	for (fd = 0; fd < FZ_MAX_FD; fd++)
		f->known[fd] = fcntl(fd, F_GETFD) >= 0;
	/* Access control is at open: a read-only heap fd allocates too. */
	for (h = 0; h < 3; h++) {
		f->heap[h] = open(sh->node[h == 1], (h < 2 ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (f->heap[h] < 0)
			return 2;
		f->known[f->heap[h]] = true;
	}
	f->closed_fd = dup(0);
	close(f->closed_fd);
	f->arena = mmap(NULL, ARENA_PAGES * PAGE_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->arena == MAP_FAILED || mprotect(f->arena, ARENA_RW, PROT_READ | PROT_WRITE) ||
	    mprotect(f->arena + ARENA_RO, PAGE_SZ, PROT_READ))
		return 2;

	/* Two buffers per heap fd to start with: read-write and read-only. */
	for (h = 0; h < 6; h++) {
		acc = h & 1 ? O_RDONLY : O_RDWR;
		fd = uioheap_alloc(f->heap[h / 2], (1 + h / 2) * SZ_64K, acc | O_CLOEXEC);
		if (fd >= 0)
			fz_adopt(f, fd, h / 2 == 1, (1 + h / 2) * SZ_64K, acc);
		else
			fz_bad(f, "seeding the pool: %s", strerror(-fd));
	}
	for (iter = 0; sh->calls < sh->max_calls && iter < 4 * sh->max_calls &&
	     now_ms() < deadline; iter++) {
		r = rnd(f, 100);
		for (op = 0; r >= fz_ops[op].weight; op++)
			r -= fz_ops[op].weight;
		/* Only what made a call counts. */
		if (fz_ops[op].fn(f) && ++sh->calls % 1000 == 0)
			fz_stray(f, true);
	}
	fz_last(f, "cleanup after %ld calls", sh->calls);
	for (h = f->nmap - 1; h >= 0; h--)
		if (munmap(f->map[h].p, f->map[h].len))
			fz_bad(f, "munmap: %s", strerror(errno));
	while (f->nbuf)
		fz_drop_buf(f, f->nbuf - 1);
	fz_stray(f, true);
	return 0;
}

EDU_HEAPS_FIXTURE(fuzz);

TEST_F_TIMEOUT(fuzz, ioctl_and_mmap, 900)
{
	unsigned long long bytes[2], bufs[2];
	struct fz_shared *sh;
	const char *why;
	int ret, h;
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	first_error_init(&sh->err, true);
	sh->seed = run_seed("UIOHEAP_FUZZ_SEED");
	/* What the kernel must have, not what it happens to have. */
	ret = env_bool("UIOHEAP_PATCHED");
	ASSERT_NE(-1, ret) TH_LOG("UIOHEAP_PATCHED is not set");
	sh->patched = ret;
	sh->max_calls = SHORT_LONG(20000, 100000);
	/* Only a hang meets the deadline: a starved TCG host halves the pace. */
	sh->ms = SHORT_LONG(400000, 900000);
	memcpy(sh->node, self->node, sizeof(sh->node));
	edu_heaps_narrow(_metadata, &self->h);
	memcpy(sh->mask, self->mask, sizeof(sh->mask));
	for (h = 0; h < self->n; h++)
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));

	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(fz_run(sh));
	ret = wait_exit(pid);
	EXPECT_EQ(0, ret) TH_LOG("fuzzer exited with %d (128 + signal) at call %ld: %s",
				 ret, sh->calls, sh->last);
	expect_no_report(_metadata, &sh->err);
	EXPECT_LT(0, sh->allocs);
	EXPECT_LT(0, sh->maps);

	for (h = 0; h < self->n; h++) {
		why = heap_check(self->node[h], SZ_64K);
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		expect_usage(_metadata, self->uio[h], bytes[h], bufs[h]);
	}
	/* A fuzzer that stops early has fuzzed less than it says. */
	EXPECT_EQ(sh->max_calls, sh->calls)
		TH_LOG("%ld of %ld calls before the deadline", sh->calls, sh->max_calls);
	summary("fuzzed_calls=%ld", sh->calls);
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
