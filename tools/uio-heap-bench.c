// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap-bench: what a DMA buffer costs, against the alternatives.
 *
 * One "cycle" is what a userspace driver pays for a fresh buffer: allocate,
 * mmap, touch every page (one byte written per page), learn the device
 * address, munmap, close.  It is timed for
 *
 *   uio      /dev/dma_heap/uioN (libuioheap: alloc, map, dma_addr)
 *   cmp      a second uio heap (-c), e.g. one running a module variant
 *   system   /dev/dma_heap/system (same cycle, there is no address)
 *   udmabuf  memfd + F_SEAL_SHRINK + ftruncate + UDMABUF_CREATE, map it
 *   pagemap  anonymous mmap + mlock + /proc/self/pagemap per page + munlock
 *   memset   memset() of the same length on a preallocated buffer: the
 *            floor, as every fresh buffer has to be zeroed by someone
 *
 * The methods run in rounds of one cycle each, in a new random order every
 * round, so that a slow phase of the machine hits them all alike: ratios
 * are what to read, not absolute figures.
 *
 * Usage: uio-heap-bench [-h uioN] [-c uioM] [-m METHOD,...] [-t SECONDS]
 *                       [-s SIZE,...] TEST...
 * Tests: info zero cycle phases addr grow threads bw max (or "all"), and
 * profile (with ftrace set up by tests/bench/run.sh).
 * Results are lines "@ <test> <fields...>" (times in ns) for scripts;
 * lines starting with "#" are for people.  Needs root (pagemap PFNs,
 * RLIMIT_NOFILE, oom_score_adj).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <linux/uio_heap.h>

#include "lib/uioheap.h"

#define PAGE		4096UL
#define KiB		1024UL
#define MiB		(1024UL * 1024)
#define NSEC		1000000000ULL
#define MAX_SAMPLES	4000
#define NR_OUTSTANDING	10000
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum method {
	M_UIO, M_CMP, M_SYSTEM, M_UDMABUF, M_PAGEMAP, M_MEMSET, NR_METHODS
};

static const char *const method_name[NR_METHODS] = {
	"uio", "cmp", "system", "udmabuf", "pagemap", "memset",
};

/* The steps of a cycle, for the "phases" test. */
enum phase { P_ALLOC, P_MMAP, P_TOUCH, P_ADDR, P_MUNMAP, P_CLOSE, NR_PHASES };

static const char *const phase_name[NR_PHASES] = {
	"alloc", "mmap", "touch", "addr", "munmap", "close",
};

static const char *uio_name = "uio1", *cmp_name, *only_methods;
static double budget_s = 2.0;		/* per size, or per figure */
static int uio_heap = -1, cmp_heap = -1, system_heap = -1;
static int udmabuf_dev = -1, pagemap = -1;
static unsigned char *floor_buf;
static bool have[NR_METHODS];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

static bool over_budget(uint64_t start, double s)
{
	return now_ns() - start > (uint64_t)(s * NSEC);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "uio-heap-bench: %s: %s\n", what, strerror(err));
	exit(1);
}

/* Keeps the compiler from dropping stores it thinks nobody reads. */
static void clobber(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	unsigned int n;
	uint64_t min, p10, med, p90, max;
};

/* Sorts @v in place. */
static struct stats stats_of(uint64_t *v, unsigned int n)
{
	struct stats s = { .n = n };

	if (!n)
		return s;
	qsort(v, n, sizeof(*v), cmp_u64);
	s.min = v[0];
	s.p10 = v[n / 10];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.p90 = v[n - 1 - n / 10];
	s.max = v[n - 1];
	return s;
}

/* "@ test what size n min p10 median p90 max" */
static void print_stats(const char *test, const char *what, size_t size,
			const struct stats *s)
{
	printf("@ %s %s %zu %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	       " %" PRIu64 "\n", test, what, size, s->n, s->min, s->p10, s->med,
	       s->p90, s->max);
}

static const char *human(size_t size, char *buf, size_t len)
{
	if (size >= MiB && size % MiB == 0)
		snprintf(buf, len, "%zuM", size / MiB);
	else if (size >= KiB && size % KiB == 0)
		snprintf(buf, len, "%zuK", size / KiB);
	else
		snprintf(buf, len, "%zu", size);
	return buf;
}

static uint32_t rnd_state = 2463534242u;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

/* A random order of the methods, for one round. */
static void shuffle(unsigned int *order, unsigned int n)
{
	unsigned int i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rnd() % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

/*
 * The stores in here and in the other timed loops go through volatile
 * pointers: they are what is measured, the compiler must neither drop nor
 * merge them.
 */
static void touch_pages(unsigned char *p, size_t len)
{
	volatile unsigned char *v = p;
	size_t off;

	for (off = 0; off < len; off += PAGE)
		v[off] = (unsigned char)(off >> 12) | 1;
}

/* System heap (or any dma-heap): DMA_HEAP_IOCTL_ALLOC. */
static int heap_alloc(int heap, size_t len)
{
	struct dma_heap_allocation_data data = {
		.len = len,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};

	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &data) < 0)
		return -errno;
	return data.fd;
}

/* A memfd, sealed against shrinking, wrapped as a udmabuf. */
static int udmabuf_alloc(size_t len)
{
	struct udmabuf_create create = {
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.size = len,
	};
	int memfd, fd, err;

	memfd = memfd_create("uio-heap-bench", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0)
		return -errno;
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0 ||
	    ftruncate(memfd, len) < 0) {
		err = -errno;
		close(memfd);
		return err;
	}
	create.memfd = memfd;
	fd = ioctl(udmabuf_dev, UDMABUF_CREATE, &create);
	err = fd < 0 ? -errno : fd;
	close(memfd);
	return err;
}

/* The PFN of one of our pages, as a pagemap user learns it. */
static int pagemap_pfn(const void *va, uint64_t *pfn)
{
	uint64_t ent;
	off_t off = (uintptr_t)va / PAGE * sizeof(ent);

	if (pread(pagemap, &ent, sizeof(ent), off) != sizeof(ent))
		return -EIO;
	if (!(ent & (1ULL << 63)))
		return -EFAULT;		/* not present */
	*pfn = ent & ((1ULL << 55) - 1);
	return 0;
}

/*
 * One cycle of @m for @len bytes into *@elapsed.  With @t, the timestamps
 * between the steps go to t[0..NR_PHASES] (the "phases" test; the extra
 * clock reads then are part of the cycle).  Returns 0 or -errno.
 */
static int cycle(enum method m, size_t len, uint64_t *elapsed, uint64_t *t)
{
	uint64_t start, addr = 0, pfn, sum = 0;
	int heap = m == M_CMP ? cmp_heap : uio_heap;
	unsigned char *p = NULL;
	int fd = -1, ret = 0;
	size_t off;

#define STAMP(i) do { if (t) t[i] = now_ns(); } while (0)
	start = now_ns();
	STAMP(0);
	switch (m) {
	case M_UIO:
	case M_CMP:
		fd = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return fd;
		STAMP(1);
		p = uioheap_map(fd, len);
		if (!p) {
			ret = -errno;
			break;
		}
		STAMP(2);
		touch_pages(p, len);
		STAMP(3);
		ret = uioheap_dma_addr(heap, fd, &addr, NULL);
		if (!ret && !addr)
			ret = -ERANGE;
		STAMP(4);
		break;
	case M_SYSTEM:
	case M_UDMABUF:
		fd = m == M_SYSTEM ? heap_alloc(system_heap, len) :
				     udmabuf_alloc(len);
		if (fd < 0)
			return fd;
		STAMP(1);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			p = NULL;
			ret = -errno;
			break;
		}
		STAMP(2);
		touch_pages(p, len);
		STAMP(3);
		STAMP(4);
		break;
	case M_PAGEMAP:
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		if (mlock(p, len) < 0) {
			ret = -errno;
			munmap(p, len);
			return ret;
		}
		STAMP(1);
		STAMP(2);
		touch_pages(p, len);
		STAMP(3);
		for (off = 0; off < len && !ret; off += PAGE) {
			ret = pagemap_pfn(p + off, &pfn);
			sum += pfn;
		}
		if (!ret && !sum)
			ret = -EPERM;	/* PFNs hidden: not CAP_SYS_ADMIN */
		STAMP(4);
		munlock(p, len);
		break;
	case M_MEMSET:
		memset(floor_buf, 0, len);
		clobber(floor_buf);
		*elapsed = now_ns() - start;
		if (t)
			for (off = 1; off <= NR_PHASES; off++)
				t[off] = t[0];
		return 0;
	default:
		return -EINVAL;
	}
	if (p)
		munmap(p, len);
	STAMP(5);
	if (fd >= 0)
		close(fd);
	STAMP(6);
	*elapsed = now_ns() - start;
	return ret;
#undef STAMP
}

static void print_info(void)
{
	static const char *const want[] = {
		"erms", "fsrm", "fsrs", "rep_good", "avx2", "avx512f", "pat",
	};
	char line[8192], flags[256] = "", rel[256] = "";
	unsigned int i;
	FILE *f;

	f = fopen("/proc/sys/kernel/osrelease", "re");
	if (f) {
		if (!fgets(rel, sizeof(rel), f))
			rel[0] = 0;
		rel[strcspn(rel, "\n")] = 0;
		fclose(f);
	}
	f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		line[strcspn(line, "\n")] = ' ';
		for (i = 0; i < ARRAY_SIZE(want); i++) {
			char pat[32];

			snprintf(pat, sizeof(pat), " %s ", want[i]);
			if (strstr(line, pat)) {
				strcat(flags, " ");
				strcat(flags, want[i]);
			}
		}
		break;
	}
	if (f)
		fclose(f);
	printf("# kernel %s, heap %s, cpu flags:%s\n", rel, uio_name, flags);
	printf("@ info kernel %s\n@ info cpuflags%s\n@ info methods", rel, flags);
	for (i = 0; i < NR_METHODS; i++)
		if (have[i])
			printf(" %s", method_name[i]);
	printf("\n");
}

/*
 * Zeroing speeds by instruction.  Under TCG "rep stos" is emulated one
 * element at a time, so which instruction the kernel zeroes with (chosen
 * by CPU flags) matters far more than on hardware.
 */
static void test_zero(void)
{
#ifdef __x86_64__
	static const char *const name[] = {
		"memset", "rep-stosb", "rep-stosq", "movq-loop",
	};
#else
	static const char *const name[] = { "memset", "store-loop" };
#endif
	enum { NK = sizeof(name) / sizeof(name[0]), NZ = 64 };
	const size_t len = MiB;
	uint64_t v[NK][NZ], start;
	unsigned int k, n = 0;

	printf("# zero: 1 MiB, by instruction\n");
	start = now_ns();
	while (n < NZ && (n < 5 || !over_budget(start, budget_s))) {
		for (k = 0; k < NK; k++) {
			uint64_t t0 = now_ns();
			void *d __attribute__((unused)) = floor_buf;
			size_t c;

			switch (k) {
			case 0:
				memset(floor_buf, 0, len);
				break;
#ifdef __x86_64__
			case 1:
				c = len;
				__asm__ volatile("rep stosb" : "+D"(d), "+c"(c)
						 : "a"(0) : "memory");
				break;
			case 2:
				c = len / 8;
				__asm__ volatile("rep stosq" : "+D"(d), "+c"(c)
						 : "a"(0) : "memory");
				break;
#endif
			default:
				for (c = 0; c < len / 8; c++)
					((volatile uint64_t *)floor_buf)[c] = 0;
				break;
			}
			clobber(floor_buf);
			v[k][n] = now_ns() - t0;
		}
		n++;
	}
	for (k = 0; k < NK; k++) {
		struct stats s = stats_of(v[k], n);

		print_stats("zero", name[k], len, &s);
		printf("#   %-10s %8.1f us\n", name[k], s.med / 1e3);
	}
}

static uint64_t samples[NR_METHODS][MAX_SAMPLES];

/*
 * The cycle test: per size, rounds of one cycle of every method, in a new
 * random order each round, until the time budget is spent.
 */
static void test_cycle(const size_t *sizes, int nsizes)
{
	unsigned int n, m, o, warm, order[NR_METHODS];
	uint64_t start, el;
	char hb[32];
	int i, ret;

	printf("# cycle: alloc + mmap + touch + addr + munmap + close, ns\n");
	printf("# %-8s %-8s %6s %12s %12s %12s %12s %12s\n", "size", "method",
	       "n", "min", "p10", "median", "p90", "max");
	for (i = 0; i < nsizes; i++) {
		size_t len = sizes[i];
		/* Small sizes settle quickly; large ones get more time. */
		double b = len >= MiB ? budget_s * 2 : budget_s;

		/* Warm up: page allocator, caches, first-use paths. */
		for (warm = 0; warm < 3; warm++)
			for (m = 0; m < NR_METHODS; m++)
				if (have[m] && cycle(m, len, &el, NULL) < 0)
					have[m] = false;
		start = now_ns();
		n = 0;
		while (n < MAX_SAMPLES && (n < 11 || !over_budget(start, b))) {
			shuffle(order, NR_METHODS);
			for (o = 0; o < NR_METHODS; o++) {
				m = order[o];
				if (!have[m])
					continue;
				ret = cycle(m, len, &el, NULL);
				if (ret < 0) {
					fprintf(stderr, "uio-heap-bench: %s %zu: %s\n",
						method_name[m], len,
						strerror(-ret));
					printf("@ error cycle %s %zu %d\n",
					       method_name[m], len, -ret);
					have[m] = false;
					continue;
				}
				samples[m][n] = el;
			}
			n++;
		}
		for (m = 0; m < NR_METHODS; m++) {
			struct stats s;

			if (!have[m])
				continue;
			s = stats_of(samples[m], n);
			print_stats("cycle", method_name[m], len, &s);
			printf("# %-8s %-8s %6u %12" PRIu64 " %12" PRIu64 " %12"
			       PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
			       human(len, hb, sizeof(hb)), method_name[m], s.n,
			       s.min, s.p10, s.med, s.p90, s.max);
		}
	}
}

/* Medians of each step of a cycle, to see where the time goes. */
/*
 * The "profile" test: 40 cycles of the first size per method with ftrace
 * recording, for tests/bench/run.sh, which sets up the tracer and reads
 * the trace; a marker names the method the following entries belong to.
 * Not part of "all": it needs that set-up.
 */
static void test_profile(const size_t *sizes)
{
	const char *dir = "/sys/kernel/tracing";
	unsigned int m, i, n = 40;
	char path[64];
	int on, mark;
	uint64_t el;

	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	on = open(path, O_WRONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/trace_marker", dir);
	mark = open(path, O_WRONLY | O_CLOEXEC);
	if (on < 0 || mark < 0) {
		printf("# profile: no tracefs at %s\n", dir);
		goto close;
	}
	for (m = 0; m < NR_METHODS; m++) {
		if (!have[m] || m == M_MEMSET)
			continue;
		for (i = 0; i < 3; i++)
			cycle(m, sizes[0], &el, NULL);
		if (write(on, "1", 1) != 1)
			break;
		dprintf(mark, "profile %s %zu %u\n", method_name[m], sizes[0], n);
		for (i = 0; i < n; i++)
			cycle(m, sizes[0], &el, NULL);
		if (write(on, "0", 1) != 1)
			break;
	}
close:
	if (on >= 0)
		close(on);
	if (mark >= 0)
		close(mark);
}

static void test_phases(const size_t *sizes, int nsizes)
{
	enum { CAP = MAX_SAMPLES / 4 };
	static uint64_t ph[NR_METHODS][NR_PHASES][CAP];
	unsigned int n, m, k, o, order[NR_METHODS];
	uint64_t t[NR_PHASES + 1], start, el;
	char hb[32];
	int i;

	printf("# phases: median of each step of a cycle\n");
	for (i = 0; i < nsizes; i++) {
		size_t len = sizes[i];

		start = now_ns();
		n = 0;
		while (n < CAP && (n < 11 || !over_budget(start, budget_s))) {
			shuffle(order, NR_METHODS);
			for (o = 0; o < NR_METHODS; o++) {
				m = order[o];
				if (!have[m] || m == M_MEMSET)
					continue;
				if (cycle(m, len, &el, t) < 0)
					memset(t, 0, sizeof(t));
				for (k = 0; k < NR_PHASES; k++)
					ph[m][k][n] = t[k + 1] - t[k];
			}
			n++;
		}
		for (m = 0; m < NR_METHODS; m++) {
			struct stats s[NR_PHASES];
			char test[32];

			if (!have[m] || m == M_MEMSET)
				continue;
			for (k = 0; k < NR_PHASES; k++) {
				s[k] = stats_of(ph[m][k], n);
				snprintf(test, sizeof(test), "phase-%s",
					 phase_name[k]);
				print_stats(test, method_name[m], len, &s[k]);
			}
			printf("# %-6s %-8s", human(len, hb, sizeof(hb)),
			       method_name[m]);
			for (k = 0; k < NR_PHASES; k++)
				printf(" %s=%.1fus", phase_name[k],
				       s[k].med / 1e3);
			printf("\n");
		}
	}
}

static void raise_nofile(rlim_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit", errno);
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want;
	if (rl.rlim_max < want)
		rl.rlim_max = want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		die("setrlimit(RLIMIT_NOFILE)", errno);
}

/* Are all outstanding buffers' addresses distinct and page aligned? */
static unsigned int addr_overlaps(const int *fds, unsigned int n)
{
	static uint64_t addrs[NR_OUTSTANDING];
	unsigned int j, bad = 0;
	int ret;

	for (j = 0; j < n; j++) {
		ret = uioheap_dma_addr(uio_heap, fds[j], &addrs[j], NULL);
		if (ret)
			die("address of an outstanding buffer", -ret);
	}
	qsort(addrs, n, sizeof(addrs[0]), cmp_u64);
	for (j = 0; j < n; j++)
		if (addrs[j] % PAGE || (j && addrs[j] < addrs[j - 1] + PAGE))
			bad++;
	return bad;
}

/* One call of variant @k of the address test, on buffer @fd. */
static void addr_call(unsigned int k, int fd)
{
	struct uio_heap_dma_addr q = { .fd = fd };
	uint64_t a;
	int ret;

	switch (k) {
	case 0:
	case 1:
		ret = ioctl(uio_heap, UIO_HEAP_IOCTL_GET_DMA_ADDR, &q);
		break;
	case 2:
		ret = uioheap_dma_addr(uio_heap, fd, &a, NULL);
		break;
	case 3:
		ret = ioctl(uio_heap, _IO('H', 0x7f));
		ret = ret < 0 && errno == EINVAL ? 0 : -1;
		break;
	default:
		/* ENOTTY on stock kernels, EINVAL or an address if patched */
		ret = ioctl(fd, DMA_BUF_IOCTL_GET_DMA_ADDR, &a);
		ret = ret < 0 && errno != ENOTTY && errno != EINVAL ? -1 : 0;
		break;
	}
	if (ret < 0)
		die("address ioctl", errno);
}

/*
 * The address ioctl alone, with 1, 1000 and 10000 buffers outstanding on
 * the heap, in passes going up and down twice, so that each count is
 * measured at different times (a slow phase of the host then shows as one
 * slow pass, not as a trend).  Timed in batches of 100 calls, interleaved:
 * on random outstanding buffers, on always the same buffer, through
 * libuioheap (which asks the dma-buf first), a command the heap rejects at
 * once (the cost of entering the kernel, to judge each pass by), and
 * DMA_BUF_IOCTL_GET_DMA_ADDR on a random buffer, which the dma-buf core of
 * a stock kernel rejects (the cost of finding a random dma-buf file).
 * Results "@ addr <variant>-<pass> <count> ...".
 */
static void test_addr(void)
{
	static const unsigned int counts[] = {
		1, 1000, NR_OUTSTANDING, 1000, 1, 1000, NR_OUTSTANDING, 1000, 1,
	};
	static const char *const name[] = {
		"ioctl", "ioctl-samefd", "libuioheap", "null-ioctl", "bufioctl",
	};
	enum { BATCH = 100, NBATCH = 150, NV = 5 };
	static int fds[NR_OUTSTANDING];
	static uint64_t alloc_ns[NR_OUTSTANDING];
	uint64_t v[NV][NBATCH];
	unsigned int have_n = 0, c, b, j, k;
	unsigned long long nbuf = 0;

	raise_nofile(NR_OUTSTANDING + 256);
	printf("# addr: UIO_HEAP_IOCTL_GET_DMA_ADDR alone, per call\n");
	for (c = 0; c < ARRAY_SIZE(counts); c++) {
		struct stats st[NV];
		char what[32];
		uint64_t t0;

		while (have_n < counts[c]) {
			t0 = now_ns();
			fds[have_n] = uioheap_alloc(uio_heap, PAGE,
						    O_RDWR | O_CLOEXEC);
			alloc_ns[have_n] = now_ns() - t0;
			if (fds[have_n] < 0) {
				printf("# addr: allocation %u failed: %s\n",
				       have_n + 1, strerror(-fds[have_n]));
				printf("@ outstanding fail %u %d\n", have_n + 1,
				       -fds[have_n]);
				goto out;
			}
			have_n++;
		}
		while (have_n > counts[c])
			close(fds[--have_n]);
		if (have_n == NR_OUTSTANDING && !nbuf) {
			j = addr_overlaps(fds, have_n);
			uioheap_sysfs_read(uio_name, "buffers", &nbuf);
			printf("# %u buffers outstanding, sysfs buffers=%llu, bad addresses: %u\n",
			       have_n, nbuf, j);
			printf("@ outstanding ok %u %llu %u\n", have_n, nbuf, j);
			/* stats_of() sorts: the slices first, then all */
			st[0] = stats_of(alloc_ns, 100);
			print_stats("alloc4k", "first100", have_n, &st[0]);
			st[0] = stats_of(alloc_ns + have_n - 100, 100);
			print_stats("alloc4k", "last100", have_n, &st[0]);
			st[0] = stats_of(alloc_ns, have_n);
			print_stats("alloc4k", "all", have_n, &st[0]);
		}

		for (b = 0; b < NBATCH; b++) {
			for (k = 0; k < NV; k++) {
				t0 = now_ns();
				for (j = 0; j < BATCH; j++)
					addr_call(k, k == 1 ? fds[0] :
						  fds[rnd() % have_n]);
				v[k][b] = (now_ns() - t0) / BATCH;
			}
		}
		for (k = 0; k < NV; k++) {
			st[k] = stats_of(v[k], NBATCH);
			snprintf(what, sizeof(what), "%s-%u", name[k], c);
			print_stats("addr", what, counts[c], &st[k]);
		}
		printf("#   %5u outstanding (pass %u): ioctl %.2f us (p10 %.2f, p90 %.2f), same fd %.2f, libuioheap %.2f, null ioctl %.2f, dma-buf ioctl %.2f\n",
		       counts[c], c, st[0].med / 1e3, st[0].p10 / 1e3,
		       st[0].p90 / 1e3, st[1].med / 1e3, st[2].med / 1e3,
		       st[3].med / 1e3, st[4].med / 1e3);
	}
out:
	while (have_n)
		close(fds[--have_n]);
}

/*
 * Allocation cost against the number of buffers outstanding: 10000 4 KiB
 * buffers each from the uio heap and the system heap, allocated in turn;
 * medians per block of 1000.
 */
static void test_grow(void)
{
	enum { BLOCK = 1000, NBLK = NR_OUTSTANDING / BLOCK };
	static int fds[2][NR_OUTSTANDING];
	static uint64_t ns[2][NR_OUTSTANDING];
	static const char *const name[2] = { "uio", "system" };
	const int heaps[2] = { uio_heap, system_heap };
	unsigned int i, h, b, nh = system_heap >= 0 ? 2 : 1;

	raise_nofile(2 * NR_OUTSTANDING + 256);
	printf("# grow: 4K allocation, median us per block of %d outstanding\n",
	       BLOCK);
	for (i = 0; i < NR_OUTSTANDING; i++) {
		for (h = 0; h < nh; h++) {
			uint64_t t0 = now_ns();

			fds[h][i] = heap_alloc(heaps[h], PAGE);
			ns[h][i] = now_ns() - t0;
			if (fds[h][i] < 0)
				die("grow: allocation", -fds[h][i]);
		}
	}
	for (h = 0; h < nh; h++) {
		struct stats s[NBLK];

		for (b = 0; b < NBLK; b++) {
			s[b] = stats_of(ns[h] + b * BLOCK, BLOCK);
			print_stats("grow", name[h], (b + 1) * BLOCK, &s[b]);
		}
		printf("#   %-6s", name[h]);
		for (b = 0; b < NBLK; b++)
			printf(" %.0f", s[b].med / 1e3);
		printf("\n");
	}
	for (h = 0; h < nh; h++)
		for (i = 0; i < NR_OUTSTANDING; i++)
			close(fds[h][i]);
}

struct worker {
	pthread_t thread;
	int heap;
	size_t len;
	bool full;			/* whole cycle, or alloc + close only */
	atomic_bool *stop;
	unsigned long ops;
	int err;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned char *p;
	int fd;

	while (!atomic_load(w->stop)) {
		fd = heap_alloc(w->heap, w->len);
		if (fd < 0) {
			w->err = -fd;
			break;
		}
		if (w->full) {
			p = mmap(NULL, w->len, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0);
			if (p != MAP_FAILED) {
				touch_pages(p, w->len);
				munmap(p, w->len);
			}
		}
		close(fd);
		w->ops++;
	}
	return NULL;
}

/*
 * A worker in a process of its own: what it did goes to the parent
 * through @pipe_fd, as "ops err".
 */
static void worker_process(struct worker *w, atomic_bool *stop, int pipe_fd)
{
	char msg[64];
	int n;

	w->stop = stop;
	worker_fn(w);
	n = snprintf(msg, sizeof(msg), "%lu %d\n", w->ops, w->err);
	if (write(pipe_fd, msg, n) != n)
		_exit(1);
	_exit(0);
}

/*
 * @nt threads (or, if @procs, processes) doing @len cycles (or alloc +
 * close) for a while: the first on @heap, the second on @heap2 (the same
 * heap, or another one).  Processes share no fd table and no mm with
 * each other: what threads of one process share there is the kernel's
 * (fd allocation, mmap_lock, TLB shootdowns), not any heap's.
 */
static void run_workers(const char *name, int heap, int heap2,
			const char *load, size_t len, bool full,
			unsigned int nt, bool procs)
{
	struct worker w[2];
	atomic_bool *stop;
	unsigned long total = 0;
	int pfd[2], status;
	pid_t pid[2];
	uint64_t t0, el;
	unsigned int i;
	FILE *f;

	/* Shared with the children, whose own copy would never change. */
	stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stop == MAP_FAILED)
		die("mmap", errno);
	atomic_store(stop, false);
	if (procs && pipe(pfd))
		die("pipe", errno);
	for (i = 0; i < nt; i++)
		w[i] = (struct worker) {
			.heap = i ? heap2 : heap, .len = len, .full = full,
			.stop = stop,
		};
	t0 = now_ns();
	for (i = 0; i < nt; i++) {
		if (!procs) {
			if (pthread_create(&w[i].thread, NULL, worker_fn, &w[i]))
				die("pthread_create", EAGAIN);
			continue;
		}
		fflush(stdout);
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork", errno);
		if (!pid[i]) {
			close(pfd[0]);
			worker_process(&w[i], stop, pfd[1]);
		}
	}
	usleep((useconds_t)(budget_s / 4 * 1e6));
	atomic_store(stop, true);
	if (procs) {
		close(pfd[1]);
		f = fdopen(pfd[0], "r");
		if (!f)
			die("fdopen", errno);
		for (i = 0; i < nt; i++) {
			if (fscanf(f, "%lu %d", &w[i].ops, &w[i].err) != 2)
				die("allocating process", EIO);
			waitpid(pid[i], &status, 0);
		}
		fclose(f);
	}
	for (i = 0; i < nt; i++) {
		if (!procs)
			pthread_join(w[i].thread, NULL);
		total += w[i].ops;
		if (w[i].err)
			die("allocating worker", w[i].err);
	}
	el = now_ns() - t0;
	munmap(stop, sizeof(*stop));
	printf("@ threads %s%s %s %u %lu %" PRIu64 "\n", name,
	       procs ? "-procs" : "", load, nt, total, el);
	printf("#   %-6s %-8s %u %s%s: %8.0f /s\n", name, load, nt,
	       procs ? "process" : "thread", nt > 1 ? (procs ? "es" : "s") : "",
	       total * 1e9 / el);
}

/*
 * Allocations per second from 1 and 2 threads: both on the same heap fd
 * (uio, system), or the second on the other uio heap (uio2: uioN and the
 * -c heap, by default uioN-cached, whose 1-thread figure is uioN's
 * again).  4 KiB alloc + close, and whole 64 KiB cycles (without the
 * address).  Then the same with processes instead of threads ("-procs"),
 * which share nothing in the kernel but the heaps.  Runs of each
 * configuration alternate, twice.
 */
static void test_threads(void)
{
	const struct { const char *name; int heap, heap2; } heaps[] = {
		{ "uio", uio_heap, uio_heap }, { "uio2", uio_heap, cmp_heap },
		{ "system", system_heap, system_heap },
	};
	const struct { const char *name; size_t len; bool full; } loads[] = {
		{ "alloc4k", 4 * KiB, false }, { "cycle64k", 64 * KiB, true },
	};
	unsigned int h, l, nt, rep, p;

	printf("# threads: operations per second from 1 and 2 threads (or processes), same heap fd or two heaps\n");
	for (p = 0; p < 2; p++)
		for (rep = 0; rep < 2; rep++)
			for (l = 0; l < ARRAY_SIZE(loads); l++)
				for (h = 0; h < ARRAY_SIZE(heaps); h++)
					for (nt = 1; nt <= 2; nt++)
						if (heaps[h].heap >= 0 &&
						    heaps[h].heap2 >= 0)
							run_workers(heaps[h].name,
								    heaps[h].heap,
								    heaps[h].heap2,
								    loads[l].name,
								    loads[l].len,
								    loads[l].full,
								    nt, p);
}

static uint64_t read_sum(const uint64_t *p, size_t len)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < len / 8; i++)
		s += p[i];
	return s;
}

static void write_words(uint64_t *p, size_t len, uint64_t val)
{
	volatile uint64_t *v = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		v[i] = val;
}

/*
 * CPU bandwidth through a uio-heap mapping and through anonymous memory
 * (4 KiB pages both): memset() (glibc: "rep stosb" at this size), a loop
 * of 64-bit stores, a loop of 64-bit loads.
 */
static void test_bw(void)
{
	static const char *const op_name[] = { "memset", "store64", "load64" };
	enum { REPS = 15, NOPS = 3 };
	const size_t len = 4 * MiB;
	uint64_t v[2][NOPS][REPS], t0;
	uint64_t sink = 0;
	unsigned int k, op, r;
	unsigned char *p[2];
	int fd;

	fd = uioheap_alloc(uio_heap, len, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("bw: uio alloc", -fd);
	p[0] = uioheap_map(fd, len);
	if (!p[0])
		die("bw: uio map", errno);
	p[1] = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p[1] == MAP_FAILED)
		die("bw: anon mmap", errno);
	madvise(p[1], len, MADV_NOHUGEPAGE);
	for (k = 0; k < 2; k++)
		memset(p[k], 1, len);

	for (r = 0; r < REPS; r++) {
		for (k = 0; k < 2; k++) {
			for (op = 0; op < NOPS; op++) {
				t0 = now_ns();
				if (op == 0) {
					memset(p[k], (int)r, len);
					clobber(p[k]);
				} else if (op == 1) {
					write_words((uint64_t *)p[k], len, r);
				} else {
					sink += read_sum((const uint64_t *)p[k],
							 len);
				}
				v[k][op][r] = now_ns() - t0;
			}
		}
	}
	printf("# bw: 4 MiB through the mapping, MiB/s (median of %d)\n", REPS);
	for (op = 0; op < NOPS; op++) {
		double mbs[2];

		for (k = 0; k < 2; k++) {
			struct stats s = stats_of(v[k][op], REPS);
			char what[32];

			snprintf(what, sizeof(what), "%s-%s", k ? "anon" : "uio",
				 op_name[op]);
			print_stats("bw", what, len, &s);
			mbs[k] = len / (s.med / 1e9) / MiB;
		}
		printf("#   %-8s uio %8.0f  anon %8.0f  uio/anon %.2f\n",
		       op_name[op], mbs[0], mbs[1], mbs[0] / mbs[1]);
	}
	munmap(p[0], len);
	munmap(p[1], len);
	close(fd);
	__asm__ volatile("" : : "r"(sink));	/* the loads are needed */
}

static void oom_adj(int val)
{
	FILE *f = fopen("/proc/self/oom_score_adj", "we");

	if (f) {
		fprintf(f, "%d\n", val);
		fclose(f);
	}
}

static unsigned long meminfo_mib(const char *key)
{
	unsigned long kb = 0;
	char line[256];
	FILE *f;

	f = fopen("/proc/meminfo", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) &&
		    sscanf(line + strlen(key), " %lu", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb / 1024;
}

/*
 * Can one buffer of @len bytes be had?  Tried in a child, the OOM killer's
 * preferred victim, so that running the machine out of memory costs the
 * child only.  With @t, the child does a whole cycle (every page touched)
 * and reports its timestamps in t[0..NR_PHASES].
 * Returns 0, -errno, or -EINTR if the child was killed.
 */
static int probe(size_t len, uint64_t *elapsed, uint64_t *t)
{
	uint64_t t0 = now_ns(), ts[NR_PHASES + 1];
	int status, pfd[2];
	pid_t pid;

	fflush(stdout);
	if (pipe(pfd))
		die("pipe", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		unsigned char *p;
		uint64_t addr;
		int fd, ret;

		close(pfd[0]);
		oom_adj(1000);
		ts[0] = now_ns();
		fd = uioheap_alloc(uio_heap, len, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(-fd);
		ts[1] = now_ns();
		p = uioheap_map(fd, len);
		if (!p)
			_exit(errno);
		ts[2] = now_ns();
		if (t) {
			touch_pages(p, len);
		} else {
			p[0] = 1;
			p[len - 1] = 1;
		}
		ts[3] = now_ns();
		ret = uioheap_dma_addr(uio_heap, fd, &addr, NULL);
		if (ret)
			_exit(-ret);
		ts[4] = now_ns();
		munmap(p, len);
		ts[5] = now_ns();
		close(fd);
		ts[6] = now_ns();
		if (write(pfd[1], ts, sizeof(ts)) != sizeof(ts))
			_exit(EIO);
		_exit(0);
	}
	close(pfd[1]);
	/* Read before waiting: the child must not write into a closed pipe. */
	if (read(pfd[0], ts, sizeof(ts)) != sizeof(ts))
		memset(ts, 0, sizeof(ts));
	if (t)
		memcpy(t, ts, sizeof(ts));
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid", errno);
	*elapsed = now_ns() - t0;
	if (WIFSIGNALED(status))
		return -EINTR;
	return -WEXITSTATUS(status);
}

static const char *probe_result(int ret)
{
	if (!ret)
		return "ok";
	if (ret == -EINTR)
		return "OOM-killed";
	return strerror(-ret);
}

/*
 * The largest single buffer, in MiB: doubling, then bisection.  Behind an
 * IOMMU the limit is free memory, and a probe past it has the OOM killer
 * take the probing child.  Bisection stops after 60 budgets (2 min by
 * default) and then says which interval it got to.  Then, if 1 GiB could
 * be had, one whole cycle of 1 GiB is timed.
 */
static void test_max(void)
{
	uint64_t el, t0 = now_ns(), t[NR_PHASES + 1];
	unsigned long lo = 0, hi = 0, mib, total_mib, avail_mib;
	unsigned int probes = 0, kills = 0, k;
	int ret;

	total_mib = (unsigned long)sysconf(_SC_PHYS_PAGES) * PAGE / MiB;
	avail_mib = meminfo_mib("MemAvailable:");
	oom_adj(-1000);
	printf("# max: largest single buffer of %s (RAM %lu MiB, MemAvailable %lu MiB)\n",
	       uio_name, total_mib, avail_mib);
	for (mib = 1; !hi; mib *= 2) {
		if (mib > total_mib)
			mib = total_mib + 1;	/* more than RAM: fails at once */
		ret = probe(mib * MiB, &el, NULL);
		probes++;
		kills += ret == -EINTR;
		printf("#   %6lu MiB: %s (%.2f s)\n", mib, probe_result(ret),
		       el / 1e9);
		if (ret)
			hi = mib;
		else
			lo = mib;
	}
	while (hi - lo > 1 && !over_budget(t0, 60 * budget_s)) {
		mib = lo + (hi - lo) / 2;
		ret = probe(mib * MiB, &el, NULL);
		probes++;
		kills += ret == -EINTR;
		printf("#   %6lu MiB: %s (%.2f s)\n", mib, probe_result(ret),
		       el / 1e9);
		if (ret)
			hi = mib;
		else
			lo = mib;
	}
	el = now_ns() - t0;
	printf("@ max %s %lu %lu %lu %lu %u %u %" PRIu64 "\n", uio_name, lo, hi,
	       total_mib, avail_mib, probes, kills, el);
	printf("# largest buffer: %lu MiB (%lu MiB failed), RAM %lu MiB, %u probes (%u OOM-killed), %.1f s\n",
	       lo, hi, total_mib, probes, kills, el / 1e9);

	if (lo < 1024)
		return;
	ret = probe(1024 * MiB, &el, t);
	if (ret || !t[NR_PHASES]) {
		printf("# 1 GiB cycle: %s\n", probe_result(ret));
		return;
	}
	printf("@ gib-cycle %s %" PRIu64, uio_name, t[NR_PHASES] - t[0]);
	for (k = 0; k < NR_PHASES; k++)
		printf(" %" PRIu64, t[k + 1] - t[k]);
	printf("\n# 1 GiB cycle: %.2f s:", (t[NR_PHASES] - t[0]) / 1e9);
	for (k = 0; k < NR_PHASES; k++)
		printf(" %s=%.3fs", phase_name[k], (t[k + 1] - t[k]) / 1e9);
	printf("\n");
}

/*
 * The largest buffer the heap gives, if that is at most 64 MiB (else 0):
 * doubling, then bisection, in pages below 16 MiB and in MiB above.
 */
static size_t largest_cycle_size(void)
{
	size_t lo = 0, hi = 0, len, g;
	uint64_t el;

	for (len = PAGE; len <= 64 * MiB; len *= 2) {
		if (probe(len, &el, NULL)) {
			hi = len;
			break;
		}
		lo = len;
	}
	if (!hi)
		return 0;
	g = lo < 16 * MiB ? PAGE : MiB;
	while (hi - lo > g) {
		len = lo + (hi - lo) / 2 / g * g;
		if (probe(len, &el, NULL))
			hi = len;
		else
			lo = len;
	}
	return lo;
}

static int parse_sizes(const char *arg, size_t *sizes, int max)
{
	char *copy = strdup(arg), *tok, *save = NULL, *end;
	int n = 0;

	if (!copy)
		die("strdup", ENOMEM);
	for (tok = strtok_r(copy, ",", &save); tok && n < max;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long long v = strtoull(tok, &end, 0);

		if (*end == 'K' || *end == 'k')
			v *= KiB;
		else if (*end == 'M' || *end == 'm')
			v *= MiB;
		if (v)
			sizes[n++] = v;
	}
	free(copy);
	return n;
}

static void open_methods(size_t max_len)
{
	size_t floor_len = max_len > MiB ? max_len : MiB;

	have[M_UIO] = true;
	if (cmp_name) {
		cmp_heap = uioheap_open(cmp_name);
		if (cmp_heap < 0)
			die(cmp_name, -cmp_heap);
		have[M_CMP] = true;
	}
	system_heap = open("/dev/dma_heap/system", O_RDWR | O_CLOEXEC);
	have[M_SYSTEM] = system_heap >= 0;
	if (!have[M_SYSTEM])
		printf("# no /dev/dma_heap/system: %s\n", strerror(errno));
	udmabuf_dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	have[M_UDMABUF] = udmabuf_dev >= 0;
	if (!have[M_UDMABUF])
		printf("# no /dev/udmabuf: %s\n", strerror(errno));
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	have[M_PAGEMAP] = pagemap >= 0;

	floor_buf = mmap(NULL, floor_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (floor_buf == MAP_FAILED)
		die("preallocating the memset buffer", errno);
	memset(floor_buf, 1, floor_len);
	have[M_MEMSET] = true;

	/* -m: only these, in the cycle and phases tests */
	if (only_methods) {
		char list[256], pat[32];
		int m;

		snprintf(list, sizeof(list), ",%s,", only_methods);
		for (m = 0; m < NR_METHODS; m++) {
			snprintf(pat, sizeof(pat), ",%s,", method_name[m]);
			if (!strstr(list, pat))
				have[m] = false;
		}
	}
}

static void help(void)
{
	fprintf(stderr,
		"%s [-h uioN] [-c uioM] [-m METHOD,...] [-t SECONDS] [-s SIZE,...] TEST...\n"
		"  -h uioN     heap to measure (default uio1)\n"
		"  -c uioM     a second uio heap measured alongside, as method \"cmp\"\n"
		"  -m LIST     cycle/phases methods, e.g. uio,cmp,system,memset\n"
		"  -t SECONDS  time budget per size or figure (default 2)\n"
		"  -s SIZES    cycle sizes (default 4K,64K,1M,4M; the heap's largest\n"
		"              buffer is added when larger, up to 64M)\n"
		"  TEST        info zero cycle phases addr grow threads bw max, or all;\n"
		"              profile (ftrace set up by the caller, not in all)\n",
		"usage: uio-heap-bench");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t sizes[16] = { 4 * KiB, 64 * KiB, MiB, 4 * MiB }, largest, maxs = 0;
	int nsizes = 4, opt, i;
	bool all = false;

	while ((opt = getopt(argc, argv, "h:c:m:t:s:")) != -1) {
		switch (opt) {
		case 'h':
			uio_name = optarg;
			break;
		case 'c':
			cmp_name = optarg;
			break;
		case 'm':
			only_methods = optarg;
			break;
		case 't':
			budget_s = atof(optarg);
			break;
		case 's':
			nsizes = parse_sizes(optarg, sizes, 15);
			break;
		default:
			help();
		}
	}
	if (optind >= argc || !nsizes)
		help();
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = optind; i < argc; i++)
		all |= !strcmp(argv[i], "all");

	uio_heap = uioheap_open(uio_name);
	if (uio_heap < 0)
		die("opening the heap", -uio_heap);
	for (i = optind; i < argc; i++) {
		if (all || !strcmp(argv[i], "cycle")) {
			largest = largest_cycle_size();
			printf("@ largest %s %zu\n", uio_name, largest);
			if (largest)
				printf("# largest buffer of %s: %zu bytes\n",
				       uio_name, largest);
			else
				printf("# largest buffer of %s: more than 64 MiB (see the max test)\n",
				       uio_name);
			if (largest > sizes[nsizes - 1])
				sizes[nsizes++] = largest;
			break;
		}
	}
	for (i = 0; i < nsizes; i++)
		if (sizes[i] > maxs)
			maxs = sizes[i];
	open_methods(maxs);
	print_info();

	for (i = optind; i < argc; i++) {
		const char *t = argv[i];

		if (all || !strcmp(t, "zero"))
			test_zero();
		if (all || !strcmp(t, "cycle"))
			test_cycle(sizes, nsizes);
		if (all || !strcmp(t, "phases"))
			test_phases(sizes, nsizes);
		if (all || !strcmp(t, "addr"))
			test_addr();
		if (all || !strcmp(t, "grow"))
			test_grow();
		if (all || !strcmp(t, "threads"))
			test_threads();
		if (all || !strcmp(t, "bw"))
			test_bw();
		if (all || !strcmp(t, "max"))
			test_max();
		if (!strcmp(t, "profile"))
			test_profile(sizes);
		if (all)
			break;
	}
	return 0;
}
