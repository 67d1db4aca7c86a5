// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap fuzzer: random and mutated ioctls on heap and dma-buf fds, mmap
 * and munmap of the dma-bufs (UIOHEAP_FUZZ_SEED repeats a run).  The oracle
 * holds the module to the errors the uAPI and Documentation/uio-heap.rst
 * promise; the rest must not crash, fault or leak an fd.  Every page
 * carries a signature, checked through every mapping.
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
	long max_calls, ms;
	bool patched;		/* DMA_BUF_IOCTL_GET_DMA_ADDR must exist */
	long calls, mismatches, allocs, maps;
	char last[240];
	char mismatch[8][300];
};

struct fz {
	struct prng rng;
	struct fz_shared *sh;
	int heap[3];		/* node 0, node 1, node 0 read-only: device idx == 1 */
	struct fz_buf buf[FZ_BUFS];
	int nbuf;
	struct fz_map map[FZ_MAPS];
	int nmap;
	int closed_fd;
	unsigned char *arena;
	uint64_t totalram;	/* pages */
	uint64_t next_id;
	bool known[FZ_MAX_FD];	/* fds this process may have open */
	unsigned char kbuf[16384 + 64] __attribute__((aligned(8)));
};

static void __attribute__((format(printf, 2, 3)))
fz_bad(struct fz *f, const char *fmt, ...)
{
	struct fz_shared *sh = f->sh;
	char msg[240];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sh->mismatches < 8)
		snprintf(sh->mismatch[sh->mismatches], sizeof(sh->mismatch[0]),
			 "call %ld: %s [%s]", sh->calls, msg, sh->last);
	sh->mismatches++;
}

#define fz_last(f, ...) snprintf((f)->sh->last, sizeof((f)->sh->last), __VA_ARGS__)

static uint64_t rnd(struct fz *f, uint64_t n)
{
	return prng_below(&f->rng, n);
}

static bool chance(struct fz *f, unsigned int percent)
{
	return rnd(f, 100) < percent;
}

static void fd_known(struct fz *f, int fd, bool known)
{
	if (fd >= 0 && fd < FZ_MAX_FD)
		f->known[fd] = known;
}

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

	if (c < 65)
		return base + 8 * rnd(f, 8);
	if (c < 75)
		return base + ARENA_RW - rnd(f, size + 8);
	if (c < 83)
		return base + ARENA_RO + 8 * rnd(f, 8);
	if (c < 88)
		return 0;
	if (c < 92)
		return 1 + rnd(f, 4095);
	if (c < 96)
		return 0xffff888000000000ULL + 8 * rnd(f, 512);
	return base + 1 + rnd(f, 7);
}

/* Puts f->kbuf[0, size) where the kernel will read it from. */
static void fz_place(struct fz *f, uintptr_t a, size_t size)
{
	uintptr_t base = (uintptr_t)f->arena;
	unsigned char *ro = f->arena + ARENA_RO;
	size_t n;

	if (a >= base && a < base + ARENA_RW) {
		n = base + ARENA_RW - a;
		memcpy((void *)a, f->kbuf, n < size ? n : size);
	} else if (a >= base + ARENA_RO && a < base + ARENA_RO + PAGE_SZ) {
		n = base + ARENA_RO + PAGE_SZ - a;
		mprotect(ro, PAGE_SZ, PROT_READ | PROT_WRITE);
		memcpy((void *)a, f->kbuf, n < size ? n : size);
		mprotect(ro, PAGE_SZ, PROT_READ);
	}
}

/* An fd of @kind, and the index of its object (heap or buffer), or -1. */
static int fz_fd_of(struct fz *f, enum fz_kind kind, int *idx)
{
	if (kind == FK_HEAP) {
		*idx = rnd(f, 3);
		return f->heap[*idx];
	}
	if (!f->nbuf)
		return -1;
	*idx = rnd(f, f->nbuf);
	return f->buf[*idx].fd;
}

/*
 * The generic VFS ioctls (FIOCLEX, FIFREEZE, FS_IOC_*, FICLONE, ...) act
 * on the file or filesystem, not on the driver: never send them.
 */
static bool vfs_type(unsigned int type)
{
	return type == 'X' || type == 'f' || type == 'T' || type == 0x94 ||
	       type == 0x15 || type == 0x00 || type == 0x12;
}

static unsigned int fz_size(struct fz *f, unsigned int want)
{
	unsigned int c = rnd(f, 100);

	if (c < 55)
		return want;
	if (c < 62)
		return 0;
	if (c < 70)
		return want > 8 ? want - 8 : 1 + rnd(f, 8);
	if (c < 78)
		return want + 8;
	if (c < 88)
		return rnd(f, 256);
	return rnd(f, 16384);
}

static unsigned int fz_dir(struct fz *f, unsigned int want)
{
	return chance(f, 75) ? want : rnd(f, 4);
}

/* What the kernel sees of an ALLOC argument: the bytes it read, zeroes after. */
static void alloc_view(const unsigned char *k, size_t in, struct dma_heap_allocation_data *v)
{
	memset(v, 0, sizeof(*v));
	memcpy(v, k, in < sizeof(*v) ? in : sizeof(*v));
}

static bool alloc_valid(const struct dma_heap_allocation_data *v)
{
	return !v->fd && !(v->fd_flags & ~(O_ACCMODE | O_CLOEXEC)) && !v->heap_flags &&
	       ((v->len + PAGE_SZ - 1) & ~(PAGE_SZ - 1));
}

static const char *err_name(int e)
{
	return e ? strerror(e) : "success";
}

/* Signs every page of a fresh read-write buffer, which must read zero. */
static void fz_sign(struct fz *f, struct fz_buf *b)
{
	unsigned char *p = uioheap_map(b->fd, b->len);
	uint64_t seen;
	size_t i, at;
	int sig;

	if (!p) {
		fz_bad(f, "mmap of a fresh %zu-byte buffer: %s", b->len, strerror(errno));
		return;
	}
	sig = probe_pages(p, b->len, false, 0);
	if (sig)
		fz_bad(f, "signal %d reading a fresh buffer", sig);
	for (i = 0; !sig && i < b->len; i += PAGE_SZ) {
		if (p[i] || p[i + PAGE_SZ - 1]) {
			fz_bad(f, "fresh buffer not zeroed at %zu", i);
			break;
		}
	}
	if (!sig)
		sig = sig_pages(p, 0, b->len / PAGE_SZ, b->id, true, &at, &seen);
	munmap(p, b->len);
	b->sig = !sig;
}

/* Keeps a new dma-buf in the pool, or closes it. */
static void fz_adopt(struct fz *f, int fd, int dev, size_t len, int acc)
{
	struct fz_buf *b;
	struct stat st;

	if (fstat(fd, &st) || (size_t)st.st_size != len)
		fz_bad(f, "new dma-buf fd %d: size %lld, expected %zu", fd,
		       (long long)st.st_size, len);
	if (f->nbuf == FZ_BUFS || fd >= FZ_MAX_FD) {
		if (close(fd))
			fz_bad(f, "close of a new dma-buf: %s", strerror(errno));
		return;
	}
	fd_known(f, fd, true);
	b = &f->buf[f->nbuf++];
	*b = (struct fz_buf){ .fd = fd, .dev = dev, .len = len, .id = ++f->next_id, .acc = acc };
	if (acc == O_RDWR)
		fz_sign(f, b);
	f->sh->allocs++;
}

static void fz_drop_buf(struct fz *f, int i)
{
	fd_known(f, f->buf[i].fd, false);
	if (close(f->buf[i].fd))
		fz_bad(f, "close of dma-buf fd %d: %s", f->buf[i].fd, strerror(errno));
	f->closed_fd = f->buf[i].fd;
	f->buf[i] = f->buf[--f->nbuf];
}

/* Lowest free fd: where the kernel will install the next one. */
static int lowest_free_fd(void)
{
	int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* What the fd number @fd in an argument is to a uio heap of device @dev. */
static int addr_oracle_fd(struct fz *f, int fd, int dev, int *bufidx)
{
	int i;

	*bufidx = -1;
	if (fd < 0 || fd >= FZ_MAX_FD)
		return EBADF;
	for (i = 0; i < f->nbuf; i++) {
		if (f->buf[i].fd != fd)
			continue;
		if (f->buf[i].dev != dev)
			return EINVAL;
		*bufidx = i;
		return 0;
	}
	/* Open, and not a buffer of this heap (a heap node, say). */
	return fcntl(fd, F_GETFD) < 0 ? EBADF : EINVAL;
}

/*
 * The outcomes the module promises for ioctl @cmd on (@kind, @idx) with
 * argument @arg (f->kbuf, @in bytes read of it, @out written); what an
 * ALLOC allocates is @v.  *@bidx: the buffer an address query names.
 */
static uint64_t fz_expect(struct fz *f, enum fz_kind kind, int idx, unsigned int cmd,
			  uintptr_t arg, unsigned int in, unsigned int out,
			  const struct dma_heap_allocation_data *v, int *bidx)
{
	size_t len = (v->len + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	struct uio_heap_unimport_data u;
	struct uio_heap_import_data d;
	struct uio_heap_dma_addr a;
	uint64_t val;
	int r;

	if (kind == FK_HEAP && cmd == UIO_HEAP_IOCTL_GET_DMA_ADDR) {
		memcpy(&a, f->kbuf, sizeof(a));
		r = addr_oracle_fd(f, (int)a.fd, idx == 1, bidx);
		if (!fz_reach(f, arg, sizeof(a), false))
			return EB(EFAULT);
		if (a.flags)
			return EB(EINVAL);
		if (r)
			return EB(r);
		return fz_reach(f, arg, sizeof(a), true) ? EB(0) : EB(EFAULT);
	}
	if (kind == FK_HEAP && _IOC_NR(cmd) == 0) {
		if (in && !fz_reach(f, arg, in, false))
			return EB(EFAULT);
		if (!alloc_valid(v))
			return EB(EINVAL);
		if (len >> 12 > f->totalram)
			return EB(ENOMEM);
		/* The allocation itself may run out within the mask. */
		return EB(ENOMEM) | (fz_reach(f, arg, out, true) ? EB(0) : EB(EFAULT));
	}
	if (kind == FK_HEAP && cmd == UIO_HEAP_IOCTL_IMPORT) {
		memcpy(&d, f->kbuf, sizeof(d));
		if (!fz_reach(f, arg, sizeof(d), false))
			return EB(EFAULT);
		if (d.flags & ~UIO_HEAP_VALID_IMPORT_FLAGS)
			return EB(EINVAL);
		/* Any fd: a buffer of any heap imports (or not, in one range). */
		return EB(EBADF) | EB(EINVAL) | EB(ERANGE) | EB(ENOSPC) |
		       (fz_reach(f, arg, sizeof(d), true) ? EB(0) : EB(EFAULT));
	}
	if (kind == FK_HEAP && cmd == UIO_HEAP_IOCTL_UNIMPORT) {
		memcpy(&u, f->kbuf, sizeof(u));
		if (!fz_reach(f, arg, sizeof(u), false))
			return EB(EFAULT);
		/* Success only for an import the fuzzing made by chance. */
		return u.flags ? EB(EINVAL) : EB(ENOENT) | EB(0);
	}
	/* Unknown numbers: EINVAL, as the dma-heap core answers. */
	if (kind == FK_HEAP)
		return EB(EINVAL);
	if (cmd == DMA_BUF_IOCTL_SYNC) {
		/* The exporter's CPU access hooks never fail a live buffer. */
		memcpy(&val, f->kbuf, 8);
		if (!fz_reach(f, arg, 8, false))
			return EB(EFAULT);
		if (!(val & ~(uint64_t)DMA_BUF_SYNC_VALID_FLAGS_MASK) && val & DMA_BUF_SYNC_RW)
			return EB(0);
	}
	if (cmd == DMA_BUF_IOCTL_GET_DMA_ADDR)
		return !f->sh->patched ? EB(ENOTTY) :
		       fz_reach(f, arg, 8, true) ? EB(0) : EB(EFAULT);
	return ANY;
}

/*
 * One ioctl on (@kind, @idx, @fd) with f->kbuf placed at a chosen argument
 * pointer, checked against what the module promises.
 */
static void fz_ioctl(struct fz *f, enum fz_kind kind, int idx, int fd,
		     unsigned int cmd, size_t argsize)
{
	unsigned int nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
	unsigned int in = _IOC_DIR(cmd) & _IOC_WRITE ? size : 0;
	unsigned int out = _IOC_DIR(cmd) & _IOC_READ ? size : 0;
	/* Like the dma-heap core's, the node allocates for any number 0. */
	bool alloc = kind == FK_HEAP && nr == 0;
	struct dma_heap_allocation_data v = { 0 };
	int got, newfd = -1, lowest = -1, bidx = -1;
	uint64_t exp, val, nl;
	uintptr_t arg;

	if (argsize < size)
		argsize = size;
	arg = fz_arg(f, argsize);
	/* Keep what may be allocated bounded. */
	if (alloc) {
		alloc_view(f->kbuf, in, &v);
		if (alloc_valid(&v) && v.len >> 12 <= 2 * f->totalram) {
			nl = 1 + rnd(f, chance(f, 2) ? FZ_CAP_RARE : FZ_CAP);
			memcpy(f->kbuf, &nl, in < 8 ? in : 8);
			alloc_view(f->kbuf, in, &v);
		}
	}
	fz_place(f, arg, argsize);
	exp = fz_expect(f, kind, idx, cmd, arg, in, out, &v, &bidx);
	if (alloc && out < 12)
		lowest = lowest_free_fd();

	fz_last(f, "ioctl(%s fd %d, %#x, arg %#lx) seed %llu", kind_name[kind],
		fd, cmd, (unsigned long)arg, (unsigned long long)f->sh->seed);
	got = ioctl(fd, cmd, arg) ? errno : 0;
	if (exp != ANY && (got >= 64 || !(exp & EB(got))))
		fz_bad(f, "%s fd, cmd %#x (nr %u size %u): %s, expected %s%s",
		       kind_name[kind], cmd, nr, size, err_name(got),
		       err_name(__builtin_ctzll(exp)), exp & (exp - 1) ? " or ..." : "");
	if (got)
		return;

	/* What a success handed out. */
	if (alloc) {
		if (out >= 12)
			memcpy(&newfd, (void *)(arg + 8), 4);
		else
			newfd = lowest;
		if (newfd < 0 || fcntl(newfd, F_GETFD) < 0 ||
		    (newfd < FZ_MAX_FD && f->known[newfd])) {
			fz_bad(f, "allocation returned no new fd (%d)", newfd);
			return;
		}
		fz_adopt(f, newfd, idx == 1, (v.len + PAGE_SZ - 1) & ~(PAGE_SZ - 1),
			 v.fd_flags & O_ACCMODE);
	} else if ((kind == FK_HEAP && cmd == UIO_HEAP_IOCTL_GET_DMA_ADDR && bidx >= 0) ||
		   (kind == FK_BUF && cmd == DMA_BUF_IOCTL_GET_DMA_ADDR)) {
		/* Either ioctl: one address, within the mask, that never changes. */
		struct fz_buf *b = &f->buf[kind == FK_HEAP ? bidx : idx];

		memcpy(&val, (void *)(arg + (kind == FK_HEAP ? 8 : 0)), 8);
		if (kind == FK_HEAP &&
		    (val & (PAGE_SZ - 1) || val + b->len - 1 > f->sh->mask[b->dev]))
			fz_bad(f, "address %#llx of a %zu-byte buffer, mask %#llx",
			       (unsigned long long)val, b->len,
			       (unsigned long long)f->sh->mask[b->dev]);
		if (b->addr && b->addr != val)
			fz_bad(f, "%s: address %#llx, was %#llx", kind_name[kind],
			       (unsigned long long)val, (unsigned long long)b->addr);
		b->addr = val;
	} else if (kind == FK_BUF && cmd == DMA_BUF_IOCTL_EXPORT_SYNC_FILE) {
		memcpy(&newfd, (void *)(arg + 4), 4);
		if (newfd >= 0 && (newfd >= FZ_MAX_FD || !f->known[newfd]))
			close(newfd);
	}
}

/* @n random bytes into f->kbuf. */
static void fill_random(struct fz *f, size_t n)
{
	prng_fill(f->kbuf, (n + 7) & ~7UL, prng_next(&f->rng));
}

/* DMA_HEAP_IOCTL_ALLOC with mutated contents, sizes and directions. */
static bool op_alloc(struct fz *f)
{
	unsigned int size = fz_size(f, 24), c = rnd(f, 100);
	unsigned int type = chance(f, 85) ? 'H' : 'A' + rnd(f, 26);
	struct dma_heap_allocation_data v = { 0 };
	int idx, fd = fz_fd_of(f, FK_HEAP, &idx);

	if (c < 55)
		v.len = (1 + rnd(f, 256)) * PAGE_SZ;
	else if (c < 65)
		v.len = 1 + rnd(f, FZ_CAP);
	else if (c < 70)
		v.len = 0;
	else if (c < 75)
		v.len = ~0ULL - rnd(f, 2 * PAGE_SZ);
	else if (c < 85)
		v.len = (1ULL << (40 + rnd(f, 24))) + rnd(f, PAGE_SZ);
	else
		v.len = prng_next(&f->rng);
	v.fd = chance(f, 88) ? 0 : prng_next(&f->rng);
	c = rnd(f, 100);
	v.fd_flags = c < 60 ? O_RDWR | O_CLOEXEC : c < 70 ? O_RDONLY :
		     c < 74 ? O_WRONLY : c < 77 ? O_ACCMODE :
		     c < 85 ? O_RDWR : prng_next(&f->rng);
	v.heap_flags = chance(f, 90) ? 0 : prng_next(&f->rng) | 1;

	fill_random(f, size + 8);
	memcpy(f->kbuf, &v, sizeof(v));
	fz_ioctl(f, FK_HEAP, idx, fd, _IOC(fz_dir(f, _IOC_READ | _IOC_WRITE), type, 0, size),
		 size);
	return true;
}

/* An fd number for an argument field: ours, closed, or impossible. */
static int fz_any_fd(struct fz *f)
{
	unsigned int c = rnd(f, 100);
	int idx;

	if (c < 3)
		return 0x80000000u + rnd(f, 1000);
	if (c < 15)
		return f->closed_fd;
	if (c < 25)
		return fz_fd_of(f, FK_HEAP, &idx);
	return f->nbuf ? fz_fd_of(f, FK_BUF, &idx) : f->closed_fd;
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
	fill_random(f, 64);
	memcpy(f->kbuf, &a, sizeof(a));
	fz_ioctl(f, FK_HEAP, idx, fd, cmd, sizeof(a));
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
	flags = prng_next(&f->rng) >> rnd(f, 64);
	if (chance(f, 70))
		flags = (rnd(f, 3) + 1) | (chance(f, 50) ? DMA_BUF_SYNC_END : 0);
	if (chance(f, 30))
		cmd = DMA_BUF_IOCTL_GET_DMA_ADDR;
	else if (chance(f, 10))
		cmd = _IOC(fz_dir(f, _IOC_WRITE), 'b', rnd(f, 8), fz_size(f, 8));
	fill_random(f, 64);
	memcpy(f->kbuf, &flags, 8);
	fz_ioctl(f, FK_BUF, idx, fd, cmd, 8);
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
	if (vfs_type(_IOC_TYPE(cmd)))
		cmd = (cmd & ~(0xffU << _IOC_TYPESHIFT)) |
		      (chance(f, 50) ? 'H' : 'b') << _IOC_TYPESHIFT;
	fill_random(f, _IOC_SIZE(cmd) + 8);
	fz_ioctl(f, kind, idx, fd, cmd, 0);
	return true;
}

/* Checks (and rewrites, if writable) every page a mapping shows. */
static void fz_touch(struct fz *f, struct fz_map *m)
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
		if (!ret && seen)
			ret = -1;
	}
	if (ret > 0)
		fz_bad(f, "signal %d at page %zu of a live mapping", ret, at);
	else if (ret < 0)
		fz_bad(f, "page %zu shows %#llx, not its own contents", at,
		       (unsigned long long)seen);
}

/*
 * mmap of a dma-buf with random length, offset, protection and flags: a
 * shared mapping within the buffer that the file's mode allows works, and
 * nothing reaching beyond the buffer or private maps.
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
	off *= PAGE_SZ;
	c = rnd(f, 100);
	len = off / PAGE_SZ < pages ? pages - off / PAGE_SZ : 1;
	len = c < 60 ? 1 + rnd(f, len) : c < 80 ? len : len + 1 + rnd(f, 3);
	len *= PAGE_SZ;
	if (chance(f, 8))
		len -= rnd(f, PAGE_SZ);
	c = rnd(f, 100);
	prot = c < 50 ? PROT_READ | PROT_WRITE : c < 85 ? PROT_READ :
	       c < 92 ? PROT_NONE : PROT_WRITE;
	c = rnd(f, 100);
	flags = c < 80 ? MAP_SHARED : c < 90 ? MAP_PRIVATE :
		c < 95 ? MAP_SHARED_VALIDATE : MAP_SHARED | MAP_POPULATE;

	mpages = (len + PAGE_SZ - 1) / PAGE_SZ;
	shared = (flags & MAP_TYPE) != MAP_PRIVATE;
	fits = off / PAGE_SZ + mpages <= pages;
	allowed = b->acc == O_RDWR || (b->acc == O_RDONLY && !(prot & PROT_WRITE));

	fz_last(f, "mmap(%zu, prot %#x, flags %#x, fd %d, off %#zx) seed %llu",
		len, prot, flags, fd, off, (unsigned long long)f->sh->seed);
	p = mmap(NULL, len, prot, flags, fd, off);
	got = p == MAP_FAILED ? errno : 0;
	if (!got && (!fits || !shared))
		fz_bad(f, "mmap of %zu pages at page %zu of a %zu-page buffer%s succeeded",
		       mpages, off / PAGE_SZ, pages, shared ? "" : ", private,");
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
		.p = p, .len = mpages * PAGE_SZ, .pgoff = off / PAGE_SZ,
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
	int i;

	if (!f->nmap)
		return false;
	i = rnd(f, f->nmap);
	m = &f->map[i];
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

/* Every fd open now that the fuzzer does not know of has leaked. */
static void fz_sweep(struct fz *f)
{
	int fd;

	for (fd = 3; fd < FZ_MAX_FD; fd++) {
		if (f->known[fd] || fcntl(fd, F_GETFD) < 0)
			continue;
		fz_bad(f, "fd %d open but never handed out", fd);
		close(fd);
	}
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
		fd_known(f, f->heap[h], true);
	}
	f->closed_fd = dup(0);
	close(f->closed_fd);
	f->arena = mmap(NULL, ARENA_PAGES * PAGE_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	if (f->arena == MAP_FAILED ||
	    mprotect(f->arena, ARENA_RW, PROT_READ | PROT_WRITE) ||
	    mprotect(f->arena + ARENA_RO, PAGE_SZ, PROT_READ))
		return 2;

	/* Two buffers per heap fd to start with: read-write and read-only. */
	for (h = 0; h < 3; h++) {
		for (acc = 0; acc < 2; acc++) {
			fd = uioheap_alloc(f->heap[h], (1 + h) * SZ_64K,
					   acc ? O_RDONLY : O_RDWR | O_CLOEXEC);
			if (fd >= 0)
				fz_adopt(f, fd, h == 1, (1 + h) * SZ_64K,
					 acc ? O_RDONLY : O_RDWR);
			else
				fz_bad(f, "seeding the pool: %s", strerror(-fd));
		}
	}
	for (iter = 0; sh->calls < sh->max_calls && iter < 4 * sh->max_calls &&
	     now_ms() < deadline; iter++) {
		r = rnd(f, 100);
		for (op = 0; r >= fz_ops[op].weight; op++)
			r -= fz_ops[op].weight;
		/* Only what made a call counts. */
		if (fz_ops[op].fn(f) && ++sh->calls % 1000 == 0)
			fz_sweep(f);
	}
	fz_last(f, "cleanup after %ld calls", sh->calls);
	for (h = f->nmap - 1; h >= 0; h--)
		if (munmap(f->map[h].p, f->map[h].len))
			fz_bad(f, "munmap: %s", strerror(errno));
	while (f->nbuf)
		fz_drop_buf(f, f->nbuf - 1);
	fz_sweep(f);
	return 0;
}

EDU_HEAPS_FIXTURE(fuzz);

TEST_F_TIMEOUT(fuzz, ioctl_and_mmap, 900)
{
	unsigned long long bytes[2], bufs[2], b, n;
	struct fz_shared *sh;
	const char *why;
	int ret, i, h;
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	sh->seed = run_seed("UIOHEAP_FUZZ_SEED");
	/* What the kernel must have, not what it happens to have. */
	ret = env_bool("UIOHEAP_PATCHED");
	ASSERT_NE(-1, ret) TH_LOG("UIOHEAP_PATCHED is not set");
	sh->patched = ret;
	sh->max_calls = SHORT_LONG(20000, 100000);
	sh->ms = SHORT_LONG(120000, 600000);
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
	EXPECT_EQ(0, sh->mismatches);
	for (i = 0; i < sh->mismatches && i < 8; i++)
		TH_LOG("%s", sh->mismatch[i]);
	EXPECT_LT(0, sh->allocs);
	EXPECT_LT(0, sh->maps);

	/* The heaps still work, and hold what they held before. */
	for (h = 0; h < self->n; h++) {
		why = heap_check(self->node[h], SZ_64K);
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(bytes[h], b) TH_LOG("%s: %llu bytes, was %llu", self->uio[h], b,
					      bytes[h]);
		EXPECT_EQ(bufs[h], n);
	}
	/* A fuzzer that stops early has fuzzed less than it says. */
	EXPECT_EQ(sh->max_calls, sh->calls)
		TH_LOG("%ld of %ld calls before the deadline", sh->calls, sh->max_calls);
	summary("fuzzed_calls=%ld", sh->calls);
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
