// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap ioctl and mmap fuzzer.
 *
 * Random and mutated ioctls on heap fds and dma-buf fds of the uio heaps
 * (and of the system heap, memfds, pipes and closed fds), and random
 * mmap, munmap, mremap, mprotect and madvise of dma-bufs, from a seeded
 * PRNG: UIOHEAP_FUZZ_SEED=N repeats a run.  Where the uAPI fixes the
 * answer (Documentation/uio-heap.rst, the dma-heap and dma-buf cores the
 * heap node imitates) an oracle predicts it; everything else must simply
 * not crash, fault or leak.  Every buffer carries a signature in each
 * page, checked through every mapping at every offset.
 *
 * The loop runs in a child process: a crash fails the test and names the
 * call.  Bounded by count (20 000 calls, 100 000 with UIOHEAP_LONG=1) and
 * time; allocations are capped at 1 MiB (4 MiB rarely).
 */
#include <sys/sysinfo.h>

#include "kselftest_harness.h"
#include "stress_common.h"

#define FZ_BUFS		24		/* dma-bufs kept at a time */
#define FZ_MAPS		24		/* mappings kept at a time */
#define FZ_CAP		SZ_1M
#define FZ_CAP_RARE	SZ_4M
#define FZ_MAX_FD	1024

/* Argument arena: pages 0-4 read-write, 5 none, 6 read-only, 7 none. */
#define ARENA_PAGES	8
#define ARENA_RW	(5 * PAGE_SZ)
#define ARENA_RO	(6 * PAGE_SZ)

enum fz_kind {
	FK_UHEAP,	/* a uio heap fd */
	FK_UBUF,	/* a dma-buf of a uio heap */
	FK_SHEAP,	/* /dev/dma_heap/system */
	FK_SBUF,	/* a system heap dma-buf */
	FK_MEMFD,
	FK_PIPE,
	FK_CLOSED,	/* a number that is not open */
	FK_NR,
};

static const char *const kind_name[] = {
	"uio-heap", "uio-buf", "sys-heap", "sys-buf", "memfd", "pipe", "closed",
};

struct fz_heap {
	int fd;
	int dev;	/* index of the uio device */
};

struct fz_buf {
	int fd;
	int dev;	/* uio device, -1 for the system heap */
	size_t len;
	uint64_t addr;	/* 0 until known */
	uint64_t id;
	int acc;	/* O_ACCMODE of the dma-buf file */
	bool sig;	/* pages carry their signature, else zero */
};

struct fz_map {
	unsigned char *p;
	size_t len;
	size_t pgoff;
	uint64_t id;
	int dev;
	bool sig;
	int prot;
	bool rdonly_fd;	/* shared, of a read-only file: no VM_MAYWRITE */
};

/* Where the fuzzer tells its parent what it was doing. */
struct fz_shared {
	uint64_t seed;
	long calls;
	long by_op[16];
	long mismatches;
	long allocs;
	long maps;
	long unknown_fds;
	bool done;
	char last[240];
	char mismatch[8][300];
};

struct fz {
	struct prng rng;
	struct fz_shared *sh;
	int ndev;
	uint64_t mask[2];
	struct fz_heap heap[4];
	int nheap;
	int sys_heap;
	struct fz_buf buf[FZ_BUFS];
	int nbuf;
	struct fz_map map[FZ_MAPS];
	int nmap;
	int memfd;
	int pipefd[2];
	int closed_fd;
	unsigned char *arena;
	bool patched;		/* DMA_BUF_IOCTL_GET_DMA_ADDR exists */
	uint64_t totalram;	/* pages */
	uint64_t next_id;
	bool known[FZ_MAX_FD];	/* fds this process may have open */
	unsigned char kbuf[16384 + 64];
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

#define fz_last(f, ...) \
	snprintf((f)->sh->last, sizeof((f)->sh->last), __VA_ARGS__)

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

/* Argument accessibility, from the arena's layout. */
static bool fz_readable(struct fz *f, uintptr_t a, size_t n)
{
	uintptr_t base = (uintptr_t)f->arena;

	if (!n)
		return true;
	if (a >= base && a + n <= base + ARENA_RW && a + n > a)
		return true;
	return a >= base + ARENA_RO && a + n <= base + ARENA_RO + PAGE_SZ;
}

static bool fz_writable(struct fz *f, uintptr_t a, size_t n)
{
	uintptr_t base = (uintptr_t)f->arena;

	return !n || (a >= base && a + n <= base + ARENA_RW && a + n > a);
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

/* An fd of @kind, and the index of its object (heap or buffer) or -1. */
static int fz_fd_of(struct fz *f, enum fz_kind kind, int *idx)
{
	int i, n = 0, cand[FZ_BUFS];

	*idx = -1;
	switch (kind) {
	case FK_UHEAP:
		i = rnd(f, f->nheap);
		*idx = i;
		return f->heap[i].fd;
	case FK_UBUF:
	case FK_SBUF:
		for (i = 0; i < f->nbuf; i++)
			if ((f->buf[i].dev < 0) == (kind == FK_SBUF))
				cand[n++] = i;
		if (!n)
			return -1;
		*idx = cand[rnd(f, n)];
		return f->buf[*idx].fd;
	case FK_SHEAP:
		return f->sys_heap;
	case FK_MEMFD:
		return f->memfd;
	case FK_PIPE:
		return f->pipefd[rnd(f, 2)];
	case FK_CLOSED:
		/* A recently closed number, unless it was handed out again. */
		if (chance(f, 50) && fcntl(f->closed_fd, F_GETFD) < 0)
			return f->closed_fd;
		return 2000 + (int)rnd(f, 100000);
	default:
		return -1;
	}
}

/* A target kind that exists here, weighted towards the uio heap. */
static enum fz_kind fz_pick_kind(struct fz *f, const unsigned int *weights)
{
	unsigned int total = 0, r, k;

	for (k = 0; k < FK_NR; k++)
		total += weights[k];
	for (;;) {
		r = rnd(f, total);
		for (k = 0; k < FK_NR; k++) {
			if (r < weights[k])
				break;
			r -= weights[k];
		}
		if ((k == FK_SHEAP || k == FK_SBUF) && f->sys_heap < 0)
			continue;
		return k;
	}
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

/* What the kernel sees of an ALLOC argument: read bytes, zeroes after. */
struct alloc_view {
	uint64_t len;
	uint32_t fd;
	uint32_t fd_flags;
	uint64_t heap_flags;
};

static void alloc_view(const unsigned char *k, size_t in, struct alloc_view *v)
{
	unsigned char b[24] = { 0 };

	memcpy(b, k, in < 24 ? in : 24);
	memcpy(&v->len, b, 8);
	memcpy(&v->fd, b + 8, 4);
	memcpy(&v->fd_flags, b + 12, 4);
	memcpy(&v->heap_flags, b + 16, 8);
}

static bool alloc_valid(const struct alloc_view *v)
{
	return !v->fd && !(v->fd_flags & ~(O_ACCMODE | O_CLOEXEC)) &&
	       !v->heap_flags && ((v->len + PAGE_SZ - 1) & ~(PAGE_SZ - 1));
}

/* Expected outcome of one call: 0 or an errno, a set, or anything. */
struct expect {
	bool any;
	unsigned int n;
	int err[4];		/* 0 is success */
};

static void exp_set(struct expect *e, int a)
{
	e->any = false;
	e->n = 1;
	e->err[0] = a;
}

static void exp_add(struct expect *e, int a)
{
	if (e->n < 4)
		e->err[e->n++] = a;
}

static bool exp_ok(const struct expect *e, int got)
{
	unsigned int i;

	if (e->any)
		return true;
	for (i = 0; i < e->n; i++)
		if (e->err[i] == got)
			return true;
	return false;
}

static const char *err_name(int e)
{
	return e ? strerror(e) : "success";
}

/* What the fd number @fd in an argument is to a uio heap of device @dev. */
static int addr_oracle_fd(struct fz *f, int fd, int dev, int *bufidx)
{
	int i;

	*bufidx = -1;
	if (fd < 0 || fd >= FZ_MAX_FD)
		return EBADF;
	for (i = 0; i < f->nbuf; i++)
		if (f->buf[i].fd == fd) {
			if (f->buf[i].dev != dev)
				return EINVAL;
			*bufidx = i;
			return 0;
		}
	if (fcntl(fd, F_GETFD) < 0)
		return EBADF;
	/* Open, and not a buffer of ours: not a dma-buf of this heap. */
	return EINVAL;
}

/*
 * Writes a signature into every page of a fresh read-write uio buffer, so
 * that every later mapping can check it sees the right pages.
 */
static void fz_sign(struct fz *f, struct fz_buf *b)
{
	size_t i, at;
	unsigned char *p;
	int sig;

	p = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (p == MAP_FAILED) {
		fz_bad(f, "mmap of a fresh %zu-byte buffer: %s", b->len,
		       strerror(errno));
		return;
	}
	/* It must come zeroed. */
	sig = probe_pages(p, b->len, false, 0, &at);
	if (sig)
		fz_bad(f, "signal %d reading a fresh buffer at %zu", sig, at);
	for (i = 0; !sig && i < b->len; i += PAGE_SZ) {
		if (p[i] || p[i + PAGE_SZ - 1]) {
			fz_bad(f, "fresh buffer not zeroed at %zu", i);
			break;
		}
		*(uint64_t *)(p + i) = b->id << 20 | i / PAGE_SZ;
	}
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
	*b = (struct fz_buf){ .fd = fd, .dev = dev, .len = len,
			      .id = ++f->next_id, .acc = acc };
	if (acc == O_RDWR && dev >= 0)
		fz_sign(f, b);
	f->sh->allocs++;
}

static void fz_drop_buf(struct fz *f, int i)
{
	fd_known(f, f->buf[i].fd, false);
	if (close(f->buf[i].fd))
		fz_bad(f, "close of dma-buf fd %d: %s", f->buf[i].fd,
		       strerror(errno));
	f->closed_fd = f->buf[i].fd;
	f->buf[i] = f->buf[--f->nbuf];
}

/* Lowest free fd: where the kernel will install the next one. */
static int lowest_free_fd(struct fz *f)
{
	int fd = fcntl(f->memfd, F_DUPFD_CLOEXEC, 0);

	if (fd >= 0)
		close(fd);
	return fd;
}

/*
 * One ioctl on (@kind, @idx, @fd) with f->kbuf placed at a chosen argument
 * pointer, checked against what the uAPI says.
 */
static void fz_ioctl(struct fz *f, enum fz_kind kind, int idx, int fd,
		     unsigned int cmd, size_t argsize)
{
	unsigned int nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd), in, out;
	const unsigned int kcmd = DMA_HEAP_IOCTL_ALLOC;
	bool heap = kind == FK_UHEAP || kind == FK_SHEAP;
	int ret, got, newfd = -1, lowest = -1, bidx = -1;
	struct expect e = { .any = true };
	struct alloc_view v = { 0 };
	uintptr_t arg;
	size_t len = 0;
	uint64_t val;

	arg = fz_arg(f, argsize > size ? argsize : size);
	in = (cmd & kcmd & _IOC(_IOC_WRITE, 0, 0, 0)) ? size : 0;
	out = (cmd & kcmd & _IOC(_IOC_READ, 0, 0, 0)) ? size : 0;

	/* A heap allocates for any command number 0: keep that bounded. */
	if (heap && nr == 0) {
		alloc_view(f->kbuf, in, &v);
		if (alloc_valid(&v) && (kind == FK_SHEAP ||
					v.len >> 12 <= 2 * f->totalram)) {
			uint64_t cap = chance(f, 2) ? FZ_CAP_RARE : FZ_CAP;
			uint64_t nl = 1 + rnd(f, cap);
			unsigned int k;

			for (k = 0; k < 8 && k < in; k++)
				f->kbuf[k] = nl >> (8 * k);
			alloc_view(f->kbuf, in, &v);
		}
		len = (v.len + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	}
	fz_place(f, arg, argsize > size ? argsize : size);

	if (kind == FK_CLOSED) {
		exp_set(&e, EBADF);
	} else if (kind == FK_UHEAP && cmd == UIO_HEAP_IOCTL_GET_DMA_ADDR) {
		struct uio_heap_dma_addr a;
		int dev = f->heap[idx].dev, r;

		memcpy(&a, f->kbuf, sizeof(a));
		r = addr_oracle_fd(f, (int)a.fd, dev, &bidx);
		if (!fz_readable(f, arg, sizeof(a)))
			exp_set(&e, EFAULT);
		else if (a.flags)
			exp_set(&e, EINVAL);
		else if (r)
			exp_set(&e, r);
		else
			exp_set(&e, fz_writable(f, arg, sizeof(a)) ? 0 : EFAULT);
	} else if (heap && nr == 0) {
		if (in && !fz_readable(f, arg, in)) {
			exp_set(&e, EFAULT);
		} else if (!alloc_valid(&v)) {
			exp_set(&e, EINVAL);
		} else if (kind == FK_UHEAP && len >> 12 > f->totalram) {
			exp_set(&e, ENOMEM);
		} else {
			/* The allocation itself may run out within the mask. */
			exp_set(&e, fz_writable(f, arg, out) ? 0 : EFAULT);
			exp_add(&e, ENOMEM);
			if (out < 12)
				lowest = lowest_free_fd(f);
		}
	} else if (heap) {
		/* Both the core and the uio heap: unknown numbers are EINVAL. */
		exp_set(&e, EINVAL);
	} else if (kind == FK_UBUF || kind == FK_SBUF) {
		if (cmd == DMA_BUF_IOCTL_SYNC) {
			uint64_t flags;

			memcpy(&flags, f->kbuf, 8);
			if (!fz_readable(f, arg, 8))
				exp_set(&e, EFAULT);
			else if (flags & ~(uint64_t)DMA_BUF_SYNC_VALID_FLAGS_MASK ||
				 !(flags & DMA_BUF_SYNC_RW))
				exp_set(&e, EINVAL);
			else
				exp_set(&e, 0);
		} else if (cmd == DMA_BUF_IOCTL_GET_DMA_ADDR) {
			if (!f->patched)
				exp_set(&e, ENOTTY);
			else if (kind == FK_SBUF)
				exp_set(&e, EINVAL);
			else
				exp_set(&e, fz_writable(f, arg, 8) ? 0 : EFAULT);
		} else if (cmd == DMA_BUF_SET_NAME_A || cmd == DMA_BUF_SET_NAME_B ||
			   cmd == DMA_BUF_IOCTL_EXPORT_SYNC_FILE ||
			   cmd == DMA_BUF_IOCTL_IMPORT_SYNC_FILE) {
			/* Names and sync files: the core's business. */
			e.any = true;
		} else {
			exp_set(&e, ENOTTY);
		}
	}

	fz_last(f, "ioctl(%s fd %d, %#x, arg %#lx) seed %llu", kind_name[kind],
		fd, cmd, (unsigned long)arg, (unsigned long long)f->sh->seed);
	ret = ioctl(fd, cmd, arg);
	got = ret ? errno : 0;
	if (!exp_ok(&e, got))
		fz_bad(f, "%s fd, cmd %#x (nr %u size %u): %s, expected %s%s",
		       kind_name[kind], cmd, nr, size, err_name(got),
		       err_name(e.err[0]), e.n > 1 ? " or ..." : "");
	if (got)
		return;

	/* What a success handed out. */
	if (heap && nr == 0) {
		if (out >= 12)
			memcpy(&newfd, (void *)(arg + 8), 4);
		else
			newfd = lowest;
		if (newfd < 0 || fcntl(newfd, F_GETFD) < 0 ||
		    (newfd < FZ_MAX_FD && f->known[newfd])) {
			fz_bad(f, "allocation returned no new fd (%d)", newfd);
			return;
		}
		fz_adopt(f, newfd, kind == FK_UHEAP ? f->heap[idx].dev : -1,
			 len, v.fd_flags & O_ACCMODE);
	} else if (kind == FK_UHEAP && cmd == UIO_HEAP_IOCTL_GET_DMA_ADDR &&
		   bidx >= 0) {
		struct fz_buf *b = &f->buf[bidx];

		memcpy(&val, (void *)(arg + 8), 8);
		if (val & (PAGE_SZ - 1) || val + b->len - 1 > f->mask[b->dev])
			fz_bad(f, "address %#llx of a %zu-byte buffer, mask %#llx",
			       (unsigned long long)val, b->len,
			       (unsigned long long)f->mask[b->dev]);
		if (b->addr && b->addr != val)
			fz_bad(f, "address changed: %#llx, was %#llx",
			       (unsigned long long)val,
			       (unsigned long long)b->addr);
		b->addr = val;
	} else if (kind == FK_UBUF && cmd == DMA_BUF_IOCTL_GET_DMA_ADDR) {
		struct fz_buf *b = &f->buf[idx];

		memcpy(&val, (void *)arg, 8);
		if (b->addr && b->addr != val)
			fz_bad(f, "DMA_BUF_IOCTL_GET_DMA_ADDR %#llx, heap says %#llx",
			       (unsigned long long)val,
			       (unsigned long long)b->addr);
		b->addr = val;
	} else if ((kind == FK_UBUF || kind == FK_SBUF) &&
		   cmd == DMA_BUF_IOCTL_EXPORT_SYNC_FILE) {
		memcpy(&newfd, (void *)(arg + 4), 4);
		if (newfd >= 0 && (newfd >= FZ_MAX_FD || !f->known[newfd]))
			close(newfd);
	}
}

static void fill_random(struct fz *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i += 8) {
		uint64_t r = prng_next(&f->rng);

		memcpy(f->kbuf + i, &r, n - i < 8 ? n - i : 8);
	}
}

static const unsigned int w_heap[FK_NR] = { 70, 6, 12, 4, 3, 3, 2 };
static const unsigned int w_buf[FK_NR] = { 8, 60, 4, 16, 4, 4, 4 };
static const unsigned int w_any[FK_NR] = { 30, 30, 8, 10, 8, 8, 6 };

/* DMA_HEAP_IOCTL_ALLOC with mutated contents, sizes and directions. */
static bool op_alloc(struct fz *f)
{
	enum fz_kind kind = fz_pick_kind(f, w_heap);
	unsigned int size = fz_size(f, 24), c = rnd(f, 100);
	unsigned int type = chance(f, 85) ? 'H' : 'A' + rnd(f, 26);
	struct alloc_view v = { 0 };
	int idx, fd = fz_fd_of(f, kind, &idx);

	if (fd < 0)
		return false;
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
	memcpy(f->kbuf, &v.len, 8);
	memcpy(f->kbuf + 8, &v.fd, 4);
	memcpy(f->kbuf + 12, &v.fd_flags, 4);
	memcpy(f->kbuf + 16, &v.heap_flags, 8);
	fz_ioctl(f, kind, idx, fd,
		 _IOC(fz_dir(f, _IOC_READ | _IOC_WRITE), type, 0, size), size);
	return true;
}

/* An fd number for an argument field: anything the fuzzer knows. */
static int fz_any_fd(struct fz *f)
{
	static const unsigned int w[FK_NR] = { 8, 55, 3, 10, 6, 6, 12 };
	enum fz_kind kind = fz_pick_kind(f, w);
	int idx, fd;

	if (chance(f, 3))
		return 0x80000000u + rnd(f, 1000);
	fd = fz_fd_of(f, kind, &idx);
	return fd < 0 ? f->closed_fd : fd;
}

/* UIO_HEAP_IOCTL_GET_DMA_ADDR with random fds, flags and shapes. */
static bool op_addr(struct fz *f)
{
	enum fz_kind kind = fz_pick_kind(f, w_heap);
	struct uio_heap_dma_addr a = { 0 };
	unsigned int cmd = UIO_HEAP_IOCTL_GET_DMA_ADDR;
	int idx, fd = fz_fd_of(f, kind, &idx);

	if (fd < 0)
		return false;
	a.fd = fz_any_fd(f);
	a.flags = chance(f, 85) ? 0 : prng_next(&f->rng) | 1;
	a.dma_addr = prng_next(&f->rng);
	if (chance(f, 15))
		cmd = _IOC(fz_dir(f, _IOC_READ | _IOC_WRITE), 'H',
			   chance(f, 50) ? 0x40 : rnd(f, 0x50), fz_size(f, 16));
	fill_random(f, 64);
	memcpy(f->kbuf, &a, sizeof(a));
	fz_ioctl(f, kind, idx, fd, cmd, sizeof(a));
	return true;
}

/* DMA_BUF_IOCTL_SYNC with random flags, on everything. */
static bool op_sync(struct fz *f)
{
	static const uint64_t good[] = {
		DMA_BUF_SYNC_READ, DMA_BUF_SYNC_WRITE, DMA_BUF_SYNC_RW,
		DMA_BUF_SYNC_READ | DMA_BUF_SYNC_END,
		DMA_BUF_SYNC_WRITE | DMA_BUF_SYNC_END,
		DMA_BUF_SYNC_RW | DMA_BUF_SYNC_END, DMA_BUF_SYNC_END, 0,
	};
	enum fz_kind kind = fz_pick_kind(f, w_buf);
	unsigned int cmd = DMA_BUF_IOCTL_SYNC;
	int idx, fd = fz_fd_of(f, kind, &idx);
	uint64_t flags;

	if (fd < 0)
		return false;
	flags = chance(f, 70) ? good[rnd(f, 8)] : prng_next(&f->rng) >>
		rnd(f, 64);
	if (chance(f, 10))
		cmd = _IOC(fz_dir(f, _IOC_WRITE), 'b', rnd(f, 8), fz_size(f, 8));
	fill_random(f, 64);
	memcpy(f->kbuf, &flags, 8);
	fz_ioctl(f, kind, idx, fd, cmd, 8);
	return true;
}

/* DMA_BUF_IOCTL_GET_DMA_ADDR, on everything. */
static bool op_dmabuf_addr(struct fz *f)
{
	enum fz_kind kind = fz_pick_kind(f, w_buf);
	int idx, fd = fz_fd_of(f, kind, &idx);

	if (fd < 0)
		return false;
	fill_random(f, 64);
	fz_ioctl(f, kind, idx, fd, DMA_BUF_IOCTL_GET_DMA_ADDR, 8);
	return true;
}

/* Anything: random type, number, size and direction bits. */
static bool op_random_ioctl(struct fz *f)
{
	enum fz_kind kind = fz_pick_kind(f, w_any);
	int idx, fd = fz_fd_of(f, kind, &idx);
	unsigned int cmd, type, c = rnd(f, 100);

	if (fd < 0)
		return false;
	if (c < 35) {
		cmd = prng_next(&f->rng);
	} else {
		c = rnd(f, 100);
		type = c < 40 ? 'H' : c < 80 ? 'b' : rnd(f, 256);
		c = rnd(f, 100);
		cmd = _IOC(rnd(f, 4), type,
			   c < 50 ? rnd(f, 9) : c < 70 ? 0x40 + rnd(f, 9) :
			   rnd(f, 256), fz_size(f, 8 * rnd(f, 5)));
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
	size_t i, n = m->len / PAGE_SZ;
	volatile uint64_t *w;
	uint64_t want, got;
	int sig;

	if (!(m->prot & (PROT_READ | PROT_WRITE)))
		return;
	for (i = 0; i < n; i++) {
		w = (volatile uint64_t *)(m->p + i * PAGE_SZ);
		want = m->sig ? m->id << 20 | (m->pgoff + i) : 0;
		if (m->dev < 0)		/* system heap: only must not fault */
			want = 0;
		sig = probe_read64(w, &got);
		if (sig) {
			fz_bad(f, "signal %d reading page %zu of a live mapping",
			       sig, m->pgoff + i);
			return;
		}
		if (m->dev >= 0 && got != want) {
			fz_bad(f, "page %zu shows %#llx, expected %#llx",
			       m->pgoff + i, (unsigned long long)got,
			       (unsigned long long)want);
			return;
		}
		if (m->prot & PROT_WRITE) {
			sig = probe_write64(w, got);
			if (sig) {
				fz_bad(f, "signal %d writing page %zu", sig,
				       m->pgoff + i);
				return;
			}
		}
	}
}

static void fz_unmap_all(struct fz *f)
{
	while (f->nmap) {
		struct fz_map *m = &f->map[--f->nmap];

		if (munmap(m->p, m->len))
			fz_bad(f, "munmap: %s", strerror(errno));
	}
}

/* mmap of a dma-buf (or something else) with random length, offset, flags. */
static bool op_mmap(struct fz *f)
{
	static const unsigned int w[FK_NR] = { 3, 75, 0, 15, 0, 3, 4 };
	enum fz_kind kind = fz_pick_kind(f, w);
	int idx, fd = fz_fd_of(f, kind, &idx), prot, flags, got;
	size_t pages = 1, len, off;
	struct expect e = { .any = true };
	unsigned int c;
	struct fz_buf *b = NULL;
	unsigned char *p;

	if (fd < 0)
		return false;
	if (kind == FK_UBUF || kind == FK_SBUF) {
		b = &f->buf[idx];
		pages = b->len / PAGE_SZ;
	}
	c = rnd(f, 100);
	off = c < 60 ? rnd(f, pages) : c < 75 ? 0 : c < 85 ? pages + rnd(f, 3) :
	      c < 92 ? pages : (1 + rnd(f, 1 << 20)) << 20;
	off *= PAGE_SZ;
	if (chance(f, 4))
		off += 1 + rnd(f, PAGE_SZ - 1);
	c = rnd(f, 100);
	len = off / PAGE_SZ < pages ? pages - off / PAGE_SZ : 1;
	len = c < 60 ? 1 + rnd(f, len) : c < 75 ? len : c < 88 ? len + 1 + rnd(f, 3) :
	      c < 93 ? 0 : 1ULL << (40 + rnd(f, 8));
	len *= PAGE_SZ;
	if (len && chance(f, 8))
		len -= rnd(f, PAGE_SZ);
	c = rnd(f, 100);
	prot = c < 50 ? PROT_READ | PROT_WRITE : c < 80 ? PROT_READ :
	       c < 86 ? PROT_WRITE : c < 92 ? PROT_NONE : PROT_READ | PROT_EXEC;
	c = rnd(f, 100);
	flags = c < 80 ? MAP_SHARED : c < 90 ? MAP_PRIVATE :
		c < 95 ? MAP_SHARED_VALIDATE : MAP_SHARED | MAP_POPULATE;

	if (kind == FK_CLOSED) {
		/* The syscall checks the offset before it looks at the fd. */
		exp_set(&e, off & (PAGE_SZ - 1) ? EINVAL : EBADF);
	} else if (kind == FK_UBUF) {
		size_t mpages = (len + PAGE_SZ - 1) / PAGE_SZ;
		bool shared = (flags & MAP_TYPE) != MAP_PRIVATE;

		if (!len || off & (PAGE_SZ - 1)) {
			exp_set(&e, EINVAL);
		} else if (len >= 1ULL << 40) {
			/* The address space is looked for before the file. */
			exp_set(&e, ENOMEM);
			exp_add(&e, EINVAL);
			exp_add(&e, EACCES);
		} else if (b->acc == O_ACCMODE || b->acc == O_WRONLY ||
			   (shared && prot & PROT_WRITE && b->acc != O_RDWR)) {
			exp_set(&e, EACCES);
		} else if (off / PAGE_SZ + mpages > pages) {
			exp_set(&e, EINVAL);
			exp_add(&e, EOVERFLOW);
		} else if (!shared) {
			/* Copy-on-write of device memory is refused. */
			exp_set(&e, EINVAL);
		} else {
			exp_set(&e, 0);
			if (prot & PROT_EXEC) {
				exp_add(&e, EPERM);
				exp_add(&e, EACCES);
			}
		}
	}

	fz_last(f, "mmap(%zu, prot %#x, flags %#x, %s fd %d, off %#zx) seed %llu",
		len, prot, flags, kind_name[kind], fd, off,
		(unsigned long long)f->sh->seed);
	p = mmap(NULL, len, prot, flags, fd, off);
	got = p == MAP_FAILED ? errno : 0;
	if (!exp_ok(&e, got))
		fz_bad(f, "mmap of a %s: %s, expected %s", kind_name[kind],
		       err_name(got), err_name(e.err[0]));
	if (got)
		return false;
	f->sh->maps++;
	if (!b || f->nmap == FZ_MAPS) {
		/* Nothing of ours to check there. */
		munmap(p, len);
		return false;
	}
	len = (len + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	/*
	 * Only a shared mapping of a read-only file loses VM_MAYWRITE: a
	 * private one (the system heap allows them) may still be made
	 * writable, its writes going to copies.
	 */
	f->map[f->nmap] = (struct fz_map){
		.p = p, .len = len, .pgoff = off / PAGE_SZ, .id = b->id,
		.dev = b->dev, .sig = b->sig, .prot = prot,
		.rdonly_fd = b->acc != O_RDWR &&
			     (flags & MAP_TYPE) != MAP_PRIVATE,
	};
	fz_touch(f, &f->map[f->nmap++]);
	return true;
}

/* munmap (whole or part), mremap, mprotect, madvise or a touch of a mapping. */
static bool op_mapping(struct fz *f)
{
	static const int advice[] = {
		MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED,
		MADV_DONTNEED, MADV_DONTFORK, MADV_DOFORK, MADV_DONTDUMP,
		MADV_DODUMP,
	};
	unsigned int c = rnd(f, 100);
	struct fz_map *m, tail;
	size_t pages, s, n;
	int i, ret, prot;
	void *q;

	if (!f->nmap)
		return false;
	i = rnd(f, f->nmap);
	m = &f->map[i];
	pages = m->len / PAGE_SZ;

	if (c < 30) {
		fz_last(f, "touch %p+%zu", m->p, m->len);
		fz_touch(f, m);
	} else if (c < 50) {
		fz_last(f, "munmap(%p, %zu)", m->p, m->len);
		if (munmap(m->p, m->len))
			fz_bad(f, "munmap of a whole mapping: %s", strerror(errno));
		*m = f->map[--f->nmap];
	} else if (c < 60) {
		/* A hole in the middle: two mappings from one. */
		s = rnd(f, pages);
		n = 1 + rnd(f, pages - s);
		fz_last(f, "munmap(%p + %zu pages, %zu pages)", m->p, s, n);
		if (munmap(m->p + s * PAGE_SZ, n * PAGE_SZ))
			fz_bad(f, "munmap of part of a mapping: %s",
			       strerror(errno));
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
	} else if (c < 65) {
		fz_last(f, "munmap(%p + 1, %zu)", m->p, m->len);
		if (munmap(m->p + 1, m->len) != -1 || errno != EINVAL)
			fz_bad(f, "munmap at an unaligned address: %s",
			       strerror(errno));
	} else if (c < 72) {
		/* Shrinking works; the tail goes. */
		if (pages < 2)
			return false;
		n = 1 + rnd(f, pages - 1);
		fz_last(f, "mremap(%p, %zu -> %zu pages)", m->p, pages, n);
		q = mremap(m->p, m->len, n * PAGE_SZ, 0);
		if (q != m->p)
			fz_bad(f, "mremap shrinking: %s", strerror(errno));
		else
			m->len = n * PAGE_SZ;
	} else if (c < 77) {
		/* Growing a VM_DONTEXPAND mapping fails. */
		fz_last(f, "mremap(%p, %zu -> %zu pages, MAYMOVE)", m->p, pages,
			pages + 1);
		q = mremap(m->p, m->len, m->len + PAGE_SZ, MREMAP_MAYMOVE);
		if (q != MAP_FAILED) {
			if (m->dev >= 0)
				fz_bad(f, "mremap grew a dma-buf mapping");
			m->p = q;
			m->len += PAGE_SZ;
		} else if (m->dev >= 0 && errno != EFAULT) {
			fz_bad(f, "mremap growing: %s, expected EFAULT",
			       strerror(errno));
		}
	} else if (c < 83) {
		/* Moving keeps the pages: the next fault must still find them. */
		q = mmap(NULL, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (q == MAP_FAILED)
			return false;
		fz_last(f, "mremap(%p, %zu, FIXED to %p)", m->p, m->len, q);
		q = mremap(m->p, m->len, m->len, MREMAP_MAYMOVE | MREMAP_FIXED, q);
		if (q == MAP_FAILED) {
			fz_bad(f, "mremap moving: %s", strerror(errno));
			return false;
		}
		m->p = q;
		fz_touch(f, m);
	} else if (c < 92) {
		prot = rnd(f, 3) == 0 ? PROT_NONE :
		       chance(f, 50) ? PROT_READ : PROT_READ | PROT_WRITE;
		fz_last(f, "mprotect(%p, %zu, %#x)", m->p, m->len, prot);
		ret = mprotect(m->p, m->len, prot) ? errno : 0;
		if (prot & PROT_WRITE && m->rdonly_fd) {
			if (ret != EACCES)
				fz_bad(f, "mprotect writable of a shared mapping of a read-only %s: %s",
				       m->dev < 0 ? "sys-buf" : "uio-buf",
				       err_name(ret));
		} else if (ret) {
			fz_bad(f, "mprotect %#x: %s", prot, strerror(ret));
		} else {
			m->prot = prot;
		}
	} else {
		c = advice[rnd(f, ARRAY_SIZE(advice))];
		fz_last(f, "madvise(%p, %zu, %u)", m->p, m->len, c);
		madvise(m->p, m->len, c);
		fz_touch(f, m);
	}
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
	} else {
		fz_last(f, "dup(%d)", f->buf[i].fd);
		d = dup(f->buf[i].fd);
		if (d < 0 || close(d))
			fz_bad(f, "dup/close of a dma-buf: %s", strerror(errno));
		f->closed_fd = d;
	}
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
		f->sh->unknown_fds++;
		close(fd);
	}
}

/* Two buffers per heap to start with: read-write and read-only. */
static void fz_seed_pool(struct fz *f)
{
	int h, fd, acc;

	for (h = 0; h < f->nheap; h++) {
		if (f->heap[h].fd < 0)
			continue;
		for (acc = 0; acc < 2; acc++) {
			fd = uioheap_alloc(f->heap[h].fd, (1 + h) * SZ_64K,
					   acc ? O_RDONLY : O_RDWR | O_CLOEXEC);
			if (fd >= 0)
				fz_adopt(f, fd, f->heap[h].dev, (1 + h) * SZ_64K,
					 acc ? O_RDONLY : O_RDWR);
			else
				fz_bad(f, "seeding the pool: %s", strerror(-fd));
		}
	}
	if (f->sys_heap >= 0) {
		struct dma_heap_allocation_data d = {
			.len = SZ_64K, .fd_flags = O_RDWR | O_CLOEXEC,
		};

		if (!ioctl(f->sys_heap, DMA_HEAP_IOCTL_ALLOC, &d))
			fz_adopt(f, d.fd, -1, SZ_64K, O_RDWR);
	}
}

static const struct {
	bool (*fn)(struct fz *f);
	unsigned int weight;	/* percent */
} fz_ops[] = {
	{ op_alloc, 22 },
	{ op_addr, 12 },
	{ op_sync, 8 },
	{ op_dmabuf_addr, 4 },
	{ op_random_ioctl, 22 },
	{ op_mmap, 14 },
	{ op_mapping, 12 },
	{ op_pool, 6 },
};

struct fz_params {
	int ndev;
	char node[2][64];
	uint64_t mask[2];
	long calls;
	long ms;
};

static int fz_run(struct fz_shared *sh, const struct fz_params *p)
{
	static struct fz fz;
	struct fz *f = &fz;
	struct sysinfo si;
	long long deadline = now_ms() + p->ms;
	unsigned int op;
	long iter;
	uint64_t a;
	int fd, i;

	probe_install();
	f->sh = sh;
	prng_seed(&f->rng, sh->seed);
	f->ndev = p->ndev;
	sysinfo(&si);
	f->totalram = (uint64_t)si.totalram * si.mem_unit / PAGE_SZ;
	for (fd = 0; fd < FZ_MAX_FD; fd++)
		f->known[fd] = fcntl(fd, F_GETFD) >= 0;

	for (i = 0; i < p->ndev; i++) {
		f->mask[i] = p->mask[i];
		f->heap[f->nheap].dev = i;
		f->heap[f->nheap++].fd = open(p->node[i], O_RDWR | O_CLOEXEC);
	}
	/* Access control is at open: a read-only heap fd allocates too. */
	f->heap[f->nheap].dev = 0;
	f->heap[f->nheap++].fd = open(p->node[0], O_RDONLY | O_CLOEXEC);
	for (i = 0; i < f->nheap; i++) {
		if (f->heap[i].fd < 0)
			return 2;
		fd_known(f, f->heap[i].fd, true);
	}
	f->sys_heap = open("/dev/dma_heap/system", O_RDWR | O_CLOEXEC);
	fd_known(f, f->sys_heap, true);
	f->memfd = memfd_create("uio_heap_fuzz", MFD_CLOEXEC);
	if (f->memfd < 0 || ftruncate(f->memfd, SZ_64K) ||
	    pipe2(f->pipefd, O_CLOEXEC | O_NONBLOCK))
		return 2;
	fd_known(f, f->memfd, true);
	fd_known(f, f->pipefd[0], true);
	fd_known(f, f->pipefd[1], true);
	f->closed_fd = dup(f->memfd);
	close(f->closed_fd);

	f->arena = mmap(NULL, ARENA_PAGES * PAGE_SZ, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->arena == MAP_FAILED ||
	    mprotect(f->arena, ARENA_RW, PROT_READ | PROT_WRITE) ||
	    mprotect(f->arena + ARENA_RO, PAGE_SZ, PROT_READ))
		return 2;

	fz_seed_pool(f);
	/* Which address ioctl the dma-buf core has. */
	f->patched = f->nbuf && !ioctl(f->buf[0].fd, DMA_BUF_IOCTL_GET_DMA_ADDR, &a);

	for (iter = 0; sh->calls < p->calls && iter < 4 * p->calls &&
	     now_ms() < deadline; iter++) {
		unsigned int r = rnd(f, 100);

		for (op = 0; r >= fz_ops[op].weight; op++)
			r -= fz_ops[op].weight;
		/* Only what made a call counts. */
		if (!fz_ops[op].fn(f))
			continue;
		sh->by_op[op]++;
		if (++sh->calls % 1000 == 0)
			fz_sweep(f);
	}
	fz_last(f, "cleanup after %ld calls", sh->calls);
	fz_unmap_all(f);
	while (f->nbuf)
		fz_drop_buf(f, f->nbuf - 1);
	fz_sweep(f);
	sh->done = true;
	return 0;
}

EDU_HEAPS_FIXTURE(fuzz);

TEST_F_TIMEOUT(fuzz, ioctl_and_mmap, 900)
{
	unsigned long long bytes[2], bufs[2], b, n;
	struct fz_params p = { 0 };
	struct fz_shared *sh;
	long long start;
	const char *why;
	int status, i, h;
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	sh->seed = pick_seed("UIOHEAP_FUZZ_SEED");
	p.ndev = self->n;
	p.calls = SHORT_LONG(20000, 100000);
	p.ms = SHORT_LONG(120000, 600000);
	for (h = 0; h < self->n; h++) {
		strcpy(p.node[h], self->node[h]);
		p.mask[h] = self->mask[h];
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
	}

	start = now_ms();
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(fz_run(sh, &p));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));

	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("fuzzer %s %d at call %ld: %s",
		       WIFSIGNALED(status) ? "killed by signal" : "exited with",
		       WIFSIGNALED(status) ? WTERMSIG(status) :
		       WEXITSTATUS(status), sh->calls, sh->last);
	EXPECT_TRUE(sh->done);
	EXPECT_EQ(0, sh->mismatches);
	for (i = 0; i < sh->mismatches && i < 8; i++)
		TH_LOG("%s", sh->mismatch[i]);
	EXPECT_EQ(0, sh->unknown_fds);
	EXPECT_LT(0, sh->allocs);
	EXPECT_LT(0, sh->maps);

	/* The heaps still work, and hold what they held before. */
	for (h = 0; h < self->n; h++) {
		why = heap_check(self->node[h], SZ_64K);
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(bytes[h], b) TH_LOG("%s: %llu bytes, was %llu",
					      self->uio[h], b, bytes[h]);
		EXPECT_EQ(bufs[h], n);
	}

	printf("# %ld calls in %lld ms (alloc %ld, addr %ld, sync %ld, dma-buf addr %ld, random %ld, mmap %ld, mapping %ld, pool %ld): %ld buffers, %ld mappings\n",
	       sh->calls, now_ms() - start, sh->by_op[0], sh->by_op[1],
	       sh->by_op[2], sh->by_op[3], sh->by_op[4], sh->by_op[5],
	       sh->by_op[6], sh->by_op[7], sh->allocs, sh->maps);
	summary("fuzzed_calls=%ld", sh->calls);
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
