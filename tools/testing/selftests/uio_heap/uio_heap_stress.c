// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap robustness: concurrency, limits, allocation failures, hot-unplug
 * and module unload racing with users of the heaps (UIOHEAP_LONG=1: long
 * forms; UIOHEAP_SEED repeats a run).  The tests that keep the devices come
 * first, then those that remove them, then those that unload the module;
 * each leaves uio_heap loaded and both devices bound.
 */
#include "kselftest_harness.h"
#include "common.h"

#define LONG_TIMEOUT	900		/* long forms run for minutes */

/* A worker thread's check: the first failure is kept for the main thread. */
#define report_if(err, cond, ...) do {					\
	if (cond)							\
		report(err, __VA_ARGS__);				\
} while (0)

EDU_HEAPS_FIXTURE(heaps);

/*
 * Processes x threads allocate, map, check and free random sizes on both
 * heaps.  Every page carries a signature, checked through fresh mappings
 * and before the free; addresses are page aligned, within the mask and
 * stable, and no two live buffers of one heap overlap.
 */
#define STRESS_PROCS	4
#define STRESS_THREADS	4
#define STRESS_LIVE	8
/* Floors on what a run must have done: KASAN's VM does 4x more. */
#define STRESS_FLOOR	50

struct stress_buf {
	uint64_t addr, id;
	size_t len;			/* 0: a free slot */
	int fd, heap;
	unsigned char *map;		/* the owner's mapping, or NULL */
};

/* Shared memory: the overlap check sees the live buffers of every process. */
static struct stress_shared {
	pthread_mutex_t lock;		/* of buf[], process-shared */
	struct stress_buf buf[STRESS_PROCS * STRESS_THREADS * STRESS_LIVE];
	struct first_error err;
	atomic_long allocs[2];
	long long deadline;
	uint64_t seed, mask[2];
	char node[2][64];
	int threads;
} *sh;

struct stress_thread {
	struct stress_buf *live;	/* its STRESS_LIVE slots of sh->buf */
	uint64_t id;			/* of its last buffer */
	int heap_fd[2];
	struct prng rng;
};

/* Takes slot @b for @new, which no live buffer of its heap may overlap. */
static void stress_insert(struct stress_buf *b, const struct stress_buf *new)
{
	const struct stress_buf *o;

	pthread_mutex_lock(&sh->lock);
	for (o = sh->buf; o < sh->buf + ARRAY_SIZE(sh->buf); o++)
		report_if(&sh->err, o->len && o->heap == new->heap &&
			  new->addr < o->addr + o->len && o->addr < new->addr + new->len,
			  "heap %d: buffer at %#llx+%#zx overlaps live %#llx+%#zx",
			  new->heap, (unsigned long long)new->addr, new->len,
			  (unsigned long long)o->addr, o->len);
	*b = *new;
	pthread_mutex_unlock(&sh->lock);
}

static void stress_check(struct stress_buf *b, const unsigned char *p, size_t first,
			 size_t n, const char *what)
{
	uint64_t seen = 0;
	size_t at = 0;
	int ret = sig_pages((volatile unsigned char *)p, first, n, b->id, false, &at, &seen);

	report_if(&sh->err, ret, "%s: page %zu of %zu of buffer %#llx: %s, holds %#llx",
		  what, at, b->len / PAGE_SZ, (unsigned long long)b->id,
		  ret > 0 ? strsignal(ret) : "not its signature", (unsigned long long)seen);
}

static void stress_alloc(struct stress_thread *t, struct stress_buf *b)
{
	uint64_t span = 1ULL << prng_below(&t->rng, 11), addr = 0, seen;
	/* 4 KiB to 4 MiB, mostly small. */
	size_t len = (1 + prng_below(&t->rng, span)) * PAGE_SZ, at;
	int h = prng_below(&t->rng, 2), fd, ret;
	unsigned char *p;

	fd = uioheap_alloc(t->heap_fd[h], len, O_RDWR | O_CLOEXEC);
	/* Contiguous memory within the narrow mask can run out, not 64 KiB below 4 GiB. */
	if (fd == -ENOMEM && (h == 0 || len > SZ_64K))
		return;
	if (fd < 0) {
		report(&sh->err, "alloc of %zu on %s: %s", len, sh->node[h], strerror(-fd));
		return;
	}
	atomic_fetch_add(&sh->allocs[h], 1);
	ret = uioheap_dma_addr(t->heap_fd[h], fd, &addr, NULL);
	report_if(&sh->err, ret || addr & (PAGE_SZ - 1) || addr + len - 1 > sh->mask[h] ||
		  addr + len - 1 < addr, "%s: buffer at %#llx+%#zx, mask %#llx: %s",
		  sh->node[h], (unsigned long long)addr, len,
		  (unsigned long long)sh->mask[h], strerror(-ret));
	stress_insert(b, &(struct stress_buf){ .fd = fd, .heap = h, .len = len,
					       .addr = addr, .id = ++t->id });
	p = uioheap_map(fd, len);
	if (!p) {
		report(&sh->err, "mmap of %zu: %s", len, strerror(errno));
		return;
	}
	report_if(&sh->err, uioheap_sync(fd, 1, 1), "sync start: %s", strerror(errno));
	/* Fresh buffers are zeroed: look at the first and the last page. */
	report_if(&sh->err, p[0] || p[len - 1], "a fresh buffer of %zu is not zeroed", len);
	ret = sig_pages(p, 0, len / PAGE_SZ, b->id, true, &at, &seen);
	report_if(&sh->err, ret, "signal %d writing page %zu of a fresh buffer", ret, at);
	report_if(&sh->err, uioheap_sync(fd, 0, 1), "sync end: %s", strerror(errno));
	if (prng_below(&t->rng, 2))
		b->map = p;
	else
		munmap(p, len);
}

/* A fresh mapping of a random part of @b shows the right pages. */
static void stress_remap(struct stress_thread *t, struct stress_buf *b)
{
	size_t pages = b->len / PAGE_SZ, first = prng_below(&t->rng, pages), n;
	unsigned char *p;

	n = 1 + prng_below(&t->rng, pages - first < 64 ? pages - first : 64);
	p = mmap(NULL, n * PAGE_SZ, PROT_READ, MAP_SHARED, b->fd, first * PAGE_SZ);
	if (p == MAP_FAILED) {
		report(&sh->err, "mmap of pages %zu+%zu of %zu: %s", first, n, pages,
		       strerror(errno));
		return;
	}
	stress_check(b, p, first, n, "remapped");
	munmap(p, n * PAGE_SZ);
}

/* The address again, by either path, and another fd for the buffer. */
static void stress_requery(struct stress_thread *t, struct stress_buf *b)
{
	uint64_t addr = 0;
	int ret, fd;

	ret = prng_below(&t->rng, 2) ? -heap_addr(t->heap_fd[b->heap], b->fd, 0, &addr) :
		uioheap_dma_addr(t->heap_fd[b->heap], b->fd, &addr, NULL);
	report_if(&sh->err, ret || addr != b->addr, "address of a live buffer: %s, %#llx != %#llx",
		  strerror(-ret), (unsigned long long)addr, (unsigned long long)b->addr);
	fd = dup(b->fd);
	report_if(&sh->err, fd < 0 || close(fd), "dup/close: %s", strerror(errno));
}

static void stress_free(struct stress_thread *t, struct stress_buf *b)
{
	if (b->map)
		stress_check(b, b->map, 0, b->len / PAGE_SZ, "before free");
	else
		stress_remap(t, b);
	report_if(&sh->err, b->map && munmap(b->map, b->len), "munmap: %s", strerror(errno));
	b->map = NULL;
	/* Out of the table before the address can be reused. */
	pthread_mutex_lock(&sh->lock);
	b->len = 0;
	pthread_mutex_unlock(&sh->lock);
	report_if(&sh->err, close(b->fd), "close of a buffer: %s", strerror(errno));
}

static void *stress_thread_fn(void *arg)
{
	struct stress_thread *t = arg;
	struct stress_buf *b;
	unsigned int act;
	int i;

	for (i = 0; i < 2; i++) {
		t->heap_fd[i] = open(sh->node[i], O_RDWR | O_CLOEXEC);
		if (t->heap_fd[i] < 0) {
			report(&sh->err, "open %s: %s", sh->node[i], strerror(errno));
			return NULL;
		}
	}
	while (now_ms() < sh->deadline && !atomic_load(&sh->err.count)) {
		act = prng_below(&t->rng, 100);
		b = &t->live[prng_below(&t->rng, STRESS_LIVE)];
		if (!b->len)
			stress_alloc(t, b);
		else if (act < 30)
			stress_free(t, b);
		else if (act < 55 || (act < 70 && !b->map))
			stress_remap(t, b);
		else if (act < 70)
			stress_check(b, b->map, 0, b->len / PAGE_SZ, "mapped");
		else
			stress_requery(t, b);
	}
	for (i = 0; i < STRESS_LIVE; i++)
		if (t->live[i].len)
			stress_free(t, &t->live[i]);
	close(t->heap_fd[0]);
	close(t->heap_fd[1]);
	return NULL;
}

/* A worker process: its threads, then _exit(). */
static void stress_process(int proc)
{
	struct stress_thread th[STRESS_THREADS] = { 0 };
	pthread_t tid[STRESS_THREADS];
	int i, slot;

	for (i = 0; i < sh->threads; i++) {
		slot = proc * STRESS_THREADS + i;
		th[i].live = sh->buf + slot * STRESS_LIVE;
		th[i].id = (uint64_t)slot << 32;
		prng_seed(&th[i].rng, sh->seed ^ (uint64_t)(proc * 64 + i) << 48);
		if (pthread_create(&tid[i], NULL, stress_thread_fn, &th[i])) {
			report(&sh->err, "pthread_create failed");
			break;
		}
	}
	while (i--)
		pthread_join(tid[i], NULL);
	_exit(0);
}

TEST_F_TIMEOUT(heaps, concurrent_alloc_map_free, 300)
{
	unsigned long long bytes[2], bufs[2], b, n;
	int procs = SHORT_LONG(2, 3), i, h;
	pthread_mutexattr_t attr;
	pid_t pid[STRESS_PROCS];

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&sh->lock, &attr);
	first_error_init(&sh->err, true);
	sh->seed = run_seed("UIOHEAP_SEED");
	sh->threads = SHORT_LONG(3, 4);
	edu_heaps_narrow(_metadata, &self->h);
	memcpy(sh->node, self->node, sizeof(sh->node));
	memcpy(sh->mask, self->mask, sizeof(sh->mask));
	for (h = 0; h < self->n; h++)
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
	sh->deadline = now_ms() + SHORT_LONG(10000, 60000);
	for (i = 0; i < procs; i++) {
		fflush(stdout);
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0)
			stress_process(i);
	}
	for (i = 0; i < procs; i++)
		EXPECT_EQ(0, wait_exit(pid[i])) TH_LOG("worker process %d (128 + signal)", i);
	EXPECT_EQ(0, atomic_load(&sh->err.count))
		TH_LOG("%ld errors, first: %s", atomic_load(&sh->err.count), sh->err.msg);
	for (h = 0; h < self->n; h++) {
		EXPECT_LE(STRESS_FLOOR, atomic_load(&sh->allocs[h]))
			TH_LOG("%s: %ld buffers", self->node[h], atomic_load(&sh->allocs[h]));
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(0, b) TH_LOG("%s: %llu bytes left", self->uio[h], b);
		EXPECT_EQ(0, n) TH_LOG("%s: %llu buffers left", self->uio[h], n);
		EXPECT_EQ(bytes[h], b);
		EXPECT_EQ(bufs[h], n);
	}
	summary("buffers_allocated=%ld", atomic_load(&sh->allocs[0]) + atomic_load(&sh->allocs[1]));
}

/*
 * max_bytes under concurrency: threads hold 64 KiB buffers against a 1 MiB
 * limit that another thread lowers and raises while sampling
 * allocated_bytes.  The sum held never exceeds the limit, and every
 * refusal is ENOSPC.
 */
#define LIMIT_THREADS	6
#define LIMIT_HOLD	6

static struct limit_run {
	const char *node, *uio;
	unsigned long long base;	/* allocated_bytes before */
	unsigned long long limit;	/* the highest limit set */
	long long deadline;
	uint64_t seed;
	atomic_ullong held, max_held;
	atomic_long allocs, enospc, samples;
	atomic_int stop, ids;
	struct first_error err;
} lim;

static void *limit_worker(void *arg)
{
	int fds[LIMIT_HOLD], n = 0, heap, fd, i;
	unsigned long long now, max;
	struct prng rng;

	prng_seed(&rng, lim.seed + atomic_fetch_add(&lim.ids, 1));
	heap = open(lim.node, O_RDWR | O_CLOEXEC);
	report_if(&lim.err, heap < 0, "open %s: %s", lim.node, strerror(errno));
	while (heap >= 0 && now_ms() < lim.deadline) {
		/* Mostly allocate: the heap must be kept at its limit. */
		if (n == LIMIT_HOLD || (n && prng_below(&rng, 4) == 0)) {
			i = prng_below(&rng, n);
			/* Uncounted before the kernel lets go of it. */
			atomic_fetch_sub(&lim.held, SZ_64K);
			close(fds[i]);
			fds[i] = fds[--n];
			continue;
		}
		fd = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		if (fd == -ENOSPC) {
			atomic_fetch_add(&lim.enospc, 1);
			usleep(prng_below(&rng, 500));
			continue;
		}
		if (fd < 0) {
			report(&lim.err, "alloc: %s, not ENOSPC", strerror(-fd));
			continue;
		}
		/* Counted once the kernel has it: held never runs ahead. */
		now = atomic_fetch_add(&lim.held, SZ_64K) + SZ_64K;
		report_if(&lim.err, now > lim.limit - lim.base, "%llu bytes held, limit %llu",
			  now, lim.limit - lim.base);
		max = atomic_load(&lim.max_held);
		while (now > max && !atomic_compare_exchange_weak(&lim.max_held, &max, now))
			;
		atomic_fetch_add(&lim.allocs, 1);
		fds[n++] = fd;
	}
	while (n) {
		atomic_fetch_sub(&lim.held, SZ_64K);
		close(fds[--n]);
	}
	close(heap);
	return NULL;
}

/* Samples allocated_bytes; every 100 ms lowers the limit below the use, or raises it. */
static void *limit_sampler(void *arg)
{
	long long toggled = now_ms();
	unsigned long long v;
	bool low = false;
	int ret;

	while (!atomic_load(&lim.stop)) {
		if (now_ms() - toggled >= 100) {
			toggled = now_ms();
			low = !low;
			ret = uioheap_sysfs_write(lim.uio, "max_bytes",
						  low ? lim.base + SZ_1M / 2 : lim.limit);
			report_if(&lim.err, ret, "max_bytes write: %s", strerror(-ret));
		}
		if (uioheap_sysfs_read(lim.uio, "allocated_bytes", &v)) {
			report(&lim.err, "allocated_bytes unreadable");
			break;
		}
		report_if(&lim.err, v > lim.limit, "allocated_bytes %llu > max_bytes %llu", v,
			  lim.limit);
		atomic_fetch_add(&lim.samples, 1);
	}
	return NULL;
}

TEST_F_TIMEOUT(heaps, max_bytes_under_concurrency, 120)
{
	pthread_t tid[LIMIT_THREADS + 1];
	unsigned long long v, bufs;
	int heap, fds[17], i, n;

	first_error_init(&lim.err, false);
	lim.node = self->node[1];
	lim.uio = self->uio[1];
	lim.seed = run_seed("UIOHEAP_SEED");
	ASSERT_EQ(0, heap_usage(lim.uio, &lim.base, &bufs));
	lim.limit = lim.base + SZ_1M;
	ASSERT_EQ(0, uioheap_sysfs_write(lim.uio, "max_bytes", lim.limit));

	/* Alone first: exactly 16 buffers of 64 KiB fit, the 17th is refused. */
	heap = open(lim.node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	for (n = 0; n < 17; n++) {
		fds[n] = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0)
			break;
	}
	EXPECT_EQ(16, n);
	EXPECT_EQ(-ENOSPC, n < 17 ? fds[n] : 0);
	ASSERT_EQ(0, uioheap_sysfs_read(lim.uio, "allocated_bytes", &v));
	EXPECT_EQ(lim.limit, v);
	for (i = 0; i < n; i++)
		close(fds[i]);

	lim.deadline = now_ms() + SHORT_LONG(3000, 20000);
	for (i = 0; i <= LIMIT_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, i < LIMIT_THREADS ?
					    limit_worker : limit_sampler, NULL));
	for (i = 0; i < LIMIT_THREADS; i++)
		pthread_join(tid[i], NULL);
	atomic_store(&lim.stop, 1);
	pthread_join(tid[LIMIT_THREADS], NULL);
	EXPECT_EQ(0, atomic_load(&lim.err.count))
		TH_LOG("%ld errors, first: %s", atomic_load(&lim.err.count), lim.err.msg);
	EXPECT_LT(0, atomic_load(&lim.enospc)) TH_LOG("the limit never bit");
	EXPECT_LT(0, atomic_load(&lim.samples));
	/* The threads did fill the heap, at least to the lower limit. */
	EXPECT_LE(SZ_1M / 2, atomic_load(&lim.max_held));

	EXPECT_EQ(0, uioheap_sysfs_write(lim.uio, "max_bytes", 0));
	EXPECT_EQ(0, uioheap_sysfs_read(lim.uio, "max_bytes", &v));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, heap_usage(lim.uio, &v, &bufs));
	EXPECT_EQ(lim.base, v);
	EXPECT_EQ(0, bufs);
	/* And without a limit again, more than 1 MiB fits. */
	fds[0] = uioheap_alloc(heap, 2 * SZ_1M, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fds[0]);
	close(fds[0]);
	close(heap);
	EXPECT_LE(STRESS_FLOOR, atomic_load(&lim.allocs));
	EXPECT_LE(STRESS_FLOOR, atomic_load(&lim.enospc));
	summary("max_bytes_allocs=%ld max_bytes_refused=%ld", atomic_load(&lim.allocs),
		atomic_load(&lim.enospc));
}

/*
 * Allocation failure injection (failslab, fail_page_alloc: the debug kernel
 * only): every fault point of one allocation in turn (fail-nth), then
 * random failures.  Each allocation either works fully or fails with
 * ENOMEM, and nothing is left behind.
 */
#define INJECT_TIMES	"1000000"	/* random failures armed per attribute set */

static const char *const inject_attrs[] = {
	"probability", "interval", "times", "space", "verbose",
	"task-filter", "ignore-gfp-wait", "min-order", "ignore-gfp-highmem",
};

#define NR_INJECT_ATTRS	ARRAY_SIZE(inject_attrs)

FIXTURE(inject) {
	EDU_HEAPS_FIELDS;
	char saved[2][NR_INJECT_ATTRS][32];	/* failslab, fail_page_alloc */
	int mif;				/* /proc/self/make-it-fail */
	int nth;				/* /proc/thread-self/fail-nth */
};

/* Attribute @attr of failslab (@i 0) or fail_page_alloc (@i 1). */
static const char *inject_path(int i, const char *attr)
{
	static char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/debug/%s/%s",
		 i ? "fail_page_alloc" : "failslab", attr);
	return path;
}

FIXTURE_SETUP(inject)
{
	bool slab = path_exists(inject_path(0, "")), page = path_exists(inject_path(1, ""));
	int patched = env_bool("UIOHEAP_PATCHED");
	unsigned int a;
	int i;

	/* Only the patched debug kernel is built with fault injection. */
	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	if (!patched && !slab && !page)
		SKIP(return, "kernel without fault injection");
	ASSERT_TRUE(slab && page) TH_LOG("no failslab or fail_page_alloc in debugfs");
	/* Failures may hit DMA-API debugging's own allocations: the host forgives that. */
	write_str("/dev/kmsg", "uioheap: fault injection starts\n");
	EDU_HEAPS_SETUP(self);
	for (i = 0; i < 2; i++)
		for (a = 0; a < NR_INJECT_ATTRS; a++)
			read_str(inject_path(i, inject_attrs[a]), self->saved[i][a],
				 sizeof(self->saved[i][a]));
	self->mif = open("/proc/self/make-it-fail", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->mif);
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	/* Failures must hit the module, not copy_to_user() into an absent stack page. */
	ASSERT_EQ(0, mlockall(MCL_CURRENT | MCL_FUTURE));
}

static void inject_disarm(FIXTURE_DATA(inject) *self)
{
	pwrite(self->mif, "0", 1, 0);
	if (self->nth >= 0)
		pwrite(self->nth, "0", 1, 0);
	write_str(inject_path(0, "probability"), "0");
	write_str(inject_path(1, "probability"), "0");
}

FIXTURE_TEARDOWN(inject)
{
	unsigned int a;
	int i;

	inject_disarm(self);
	for (i = 0; i < 2; i++)
		for (a = 0; a < NR_INJECT_ATTRS; a++)
			if (self->saved[i][a][0])
				write_str(inject_path(i, inject_attrs[a]), self->saved[i][a]);
	close(self->mif);
	if (self->nth >= 0)
		close(self->nth);
	munlockall();
}

/* Arms attribute set @i (failslab has no min-order, ignore-gfp-highmem): 0 or not. */
static int inject_arm(int i, const char *probability, const char *times)
{
	const char *val[NR_INJECT_ATTRS] = { "0", "1", times, "0", "0", "Y", "N", "0", "N" };
	unsigned int a, n = i ? NR_INJECT_ATTRS : NR_INJECT_ATTRS - 2;
	int ret = 0;

	for (a = 0; a < n; a++)
		ret |= write_str(inject_path(i, inject_attrs[a]), val[a]);
	return ret | write_str(inject_path(i, "probability"), probability);
}

/*
 * A buffer handed out under fault injection is whole: its size, an
 * address, a mapping that reads zeroes and keeps what is written.  Called
 * with injection off.  NULL or what failed.
 */
static const char *inject_buffer_ok(int heap, int fd, size_t len)
{
	const char *why = NULL;
	unsigned char *p;
	struct stat st;
	uint64_t addr;

	if (fstat(fd, &st) || (size_t)st.st_size != len)
		return "size";
	if (uioheap_dma_addr(heap, fd, &addr, NULL) || addr & (PAGE_SZ - 1))
		return "address";
	p = uioheap_map(fd, len);
	if (!p)
		return "mmap";
	if (probe_pages(p, len, false, 0))
		why = "fault reading the mapping";
	else if (!is_filled(p, len, 0))
		why = "not zeroed";
	else if (probe_pages(p, len, true, 0x3c) || p[len - PAGE_SZ] != 0x3c)
		why = "fault writing the mapping";
	munmap(p, len);
	return why;
}

/*
 * fail-nth: fault k = 1, 2, ... of one allocation (@exp < 0) or of one
 * import of the dma-buf @exp by a fresh heap fd (whose first handle takes
 * an xarray node), until the call has no k-th fault; the faults hit.  A
 * failure is ENOMEM, and one that came after the import was mapped
 * flushed the IOTLB in the ioctl (@probed: the kprobes "unmap" and
 * "iotlb_flush" are on; behind a lazy IOMMU only uio-heap flushes there).
 * Adds the failures after a mapping to @unmapped.
 */
static long inject_nth(struct __test_metadata *_metadata, FIXTURE_DATA(inject) *self, int h,
		       int heap, size_t len, int exp, bool probed, long *unmapped)
{
	uint64_t addr = 0, size = 0;
	char val[32], num[16];
	const char *why;
	unsigned int k;
	int fd, hfd;

	for (k = 1; k <= 500; k++) {
		hfd = exp < 0 ? heap : open(self->node[h], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, hfd);
		ASSERT_EQ(0, probed ? tracefs_write("trace", "") : 0);
		snprintf(num, sizeof(num), "%u", k);
		ASSERT_EQ((ssize_t)strlen(num), pwrite(self->nth, num, strlen(num), 0));
		fd = exp < 0 ? uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC) :
			       uioheap_import(hfd, exp, &addr, &size);
		ASSERT_LT(0, pread(self->nth, val, sizeof(val) - 1, 0));
		pwrite(self->nth, "0", 1, 0);
		if (fd >= 0 && exp >= 0) {
			EXPECT_TRUE(size == len && !(addr & (PAGE_SZ - 1)))
				TH_LOG("%s, import, fault %u: %#llx+%#llx", self->node[h], k,
				       (unsigned long long)addr, (unsigned long long)size);
		} else if (fd >= 0) {
			why = inject_buffer_ok(heap, fd, len);
			EXPECT_EQ(NULL, why) TH_LOG("%s, %zu bytes, fault %u: %s", self->node[h],
						    len, k, why);
			close(fd);
		} else {
			EXPECT_EQ(-ENOMEM, fd) TH_LOG("%s, %zu bytes, fault %u: %s", self->node[h],
						      len, k, strerror(-fd));
			if (probed && trace_count(" unmap:") > 0) {
				EXPECT_LE(1, trace_count(" iotlb_flush:"))
					TH_LOG("%s, import, fault %u: unmapped, not flushed",
					       self->node[h], k);
				(*unmapped)++;
			}
		}
		if (exp >= 0)
			close(hfd);
		/* Not consumed: the ioctl has fewer fault points. */
		if (atoi(val)) {
			EXPECT_LE(0, fd);
			break;
		}
	}
	EXPECT_GT(500, k);
	return k - 1;
}

TEST_F_TIMEOUT(inject, alloc_failures_are_clean, 600)
{
	static const size_t nth_sizes[] = { SZ_4K, SZ_64K + SZ_4K, SZ_1M };
	unsigned long long bytes[2], bufs[2], b, n, injected;
	int attempts = SHORT_LONG(300, 3000), h, i, fd, heap[2];
	long ok = 0, nth_hits = 0;
	unsigned int s, k;
	const char *why;
	struct prng rng;
	char val[32];
	size_t len;

	prng_seed(&rng, run_seed("UIOHEAP_SEED"));
	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
		heap[h] = open(self->node[h], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap[h]);
	}
	for (i = 0; self->nth >= 0 && i < 2; i++)
		ASSERT_EQ(0, inject_arm(i, "0", "-1"));
	for (h = 0; self->nth >= 0 && h < self->n; h++) {
		for (s = 0; s < ARRAY_SIZE(nth_sizes); s++)
			nth_hits += inject_nth(_metadata, self, h, heap[h], nth_sizes[s],
					       -1, false, NULL);
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(bytes[h], b) TH_LOG("%s after fail-nth", self->uio[h]);
		EXPECT_EQ(bufs[h], n);
	}

	/* Random failures, as the brief for the debug kernel arms them. */
	ASSERT_EQ(0, inject_arm(0, "5", INJECT_TIMES));
	ASSERT_EQ(0, inject_arm(1, "2", INJECT_TIMES));
	for (k = 0; k < (unsigned int)attempts; k++) {
		len = (1 + prng_below(&rng, 64)) * PAGE_SZ;
		h = k % self->n;
		ASSERT_EQ(1, pwrite(self->mif, "1", 1, 0));
		fd = uioheap_alloc(heap[h], len, O_RDWR | O_CLOEXEC);
		pwrite(self->mif, "0", 1, 0);
		if (fd < 0) {
			EXPECT_EQ(-ENOMEM, fd) TH_LOG("%s: %s", self->node[h], strerror(-fd));
			continue;
		}
		ok++;
		/* What needs no allocation works even while armed. */
		pwrite(self->mif, "1", 1, 0);
		EXPECT_EQ(0, uioheap_sync(fd, 1, 1));
		EXPECT_EQ(0, uioheap_sync(fd, 0, 1));
		pwrite(self->mif, "0", 1, 0);
		why = inject_buffer_ok(heap[h], fd, len);
		EXPECT_EQ(NULL, why) TH_LOG("%s: %s", self->node[h], why);
		EXPECT_EQ(0, close(fd));
	}
	injected = 2 * strtoull(INJECT_TIMES, NULL, 0);
	for (i = 0; i < 2; i++) {
		ASSERT_LE(0, read_str(inject_path(i, "times"), val, sizeof(val)));
		injected -= strtoull(val, NULL, 0);
	}
	inject_disarm(self);

	EXPECT_LT(0, injected) TH_LOG("no fault was injected");
	EXPECT_LT(0, ok) TH_LOG("no allocation survived the injection");
	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(bytes[h], b) TH_LOG("%s: %llu bytes, was %llu", self->uio[h], b,
					      bytes[h]);
		EXPECT_EQ(bufs[h], n);
		why = heap_check(self->node[h], SZ_1M);
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		close(heap[h]);
	}
	summary("faults_injected=%lld", (long long)injected + nth_hits);
}

/*
 * An import that fails after its mapping (its handle: fail-nth; a range the
 * device cannot use) takes it away from the device and, behind an IOMMU,
 * flushes the IOTLB before the exporter gets the buffer back; any failure
 * leaves nothing charged.  The buffer imported is the other edu's.
 */
TEST_F_TIMEOUT(inject, import_failures_are_clean, 300)
{
	unsigned long long bytes[2], bufs[2], b, n;
	long hits = 0, unmapped = 0;
	char mode[16], path[96];
	bool probed[2];
	int h, heap, exp;

	ASSERT_LE(0, self->nth) TH_LOG("no /proc/thread-self/fail-nth");
	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
		snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/iommu", self->uio[h]);
		ASSERT_LT(0, read_str(path, mode, sizeof(mode)));
		probed[h] = !strncmp(mode, "dma", 3);
	}
	if (probed[0] || probed[1])
		ASSERT_EQ(0, kprobes_start("p:uioheap/unmap iommu_dma_unmap_sg\n"
					   "p:uioheap/iotlb_flush intel_flush_iotlb_all\n"));
	for (h = 0; h < self->n; h++) {
		heap = open(self->node[!h], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap);
		exp = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, exp);
		ASSERT_EQ(0, inject_arm(0, "0", "-1"));
		ASSERT_EQ(0, inject_arm(1, "0", "-1"));
		hits += inject_nth(_metadata, self, h, -1, SZ_64K, exp, probed[h], &unmapped);
		inject_disarm(self);
		close(exp);
		close(heap);
	}
	sync_probe_stop();
	EXPECT_LT(0, hits);
	if (probed[0] || probed[1])
		EXPECT_LT(0, unmapped) TH_LOG("no import failed after its mapping");
	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(bytes[h], b) TH_LOG("%s: %llu bytes, was %llu", self->uio[h], b,
					      bytes[h]);
		EXPECT_EQ(bufs[h], n);
	}
	summary("import_faults_injected=%ld import_failures_after_mapping=%ld", hits, unmapped);
}

/*
 * Hot-unplug races: the holder keeps a mapped buffer the device DMAs into,
 * workers allocate, map, query and free, a toucher faults one buffer in
 * and a closer drops many, while the device goes.
 */
#define UNPLUG_WORKERS		3
#define UNPLUG_CLOSER_BUFS	128

FIXTURE(unplug) {
	struct edu_heaps h;		/* the wide edu's goes */
};

FIXTURE_SETUP(unplug)
{
	edu_heaps_get(_metadata, &self->h);
}

FIXTURE_TEARDOWN(unplug)
{
	replug_pci(self->h.pci[1], self->h.uio[1], sizeof(self->h.uio[1]));
}

static struct unplug_race {
	const char *node;
	uint64_t seed;
	atomic_int removing;		/* the remove/unbind write started */
	atomic_int gone;		/* ... and returned */
	atomic_int stop;
	atomic_long iters, touches;	/* the workers' rounds, the toucher's */
	atomic_long after_gone[UNPLUG_WORKERS];	/* rounds begun once gone */
	int heap[UNPLUG_WORKERS];	/* the workers', opened before the unplug */
	int touch_buf;
	size_t touch_len;
	int closer_fds[UNPLUG_CLOSER_BUFS];
	struct first_error err;
} race;

/* Failed with @e (errno or signal), which only a begun unplug excuses, as @excused. */
static bool unplug_bad(int e, int excused)
{
	return e && (e != excused || !atomic_load(&race.removing));
}

/*
 * A fresh open of the node, racing with its removal: failures are fine
 * once the removal began (read after the fact), success is wrong once it
 * returned (@gone, read before).
 */
static void unplug_reopen(int gone)
{
	int fd, buf;

	fd = open(race.node, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		report_if(&race.err, !atomic_load(&race.removing) ||
			  (errno != ENOENT && errno != ENXIO && errno != ENODEV),
			  "open %s the unplug: %s",
			  atomic_load(&race.removing) ? "during" : "before", strerror(errno));
		return;
	}
	report_if(&race.err, gone, "open of %s succeeded after the unplug", race.node);
	buf = uioheap_alloc(fd, PAGE_SZ, O_RDWR | O_CLOEXEC);
	report_if(&race.err, buf >= 0 && gone, "alloc succeeded after the unplug");
	report_if(&race.err, buf >= 0 && close(buf), "close: %s", strerror(errno));
	report_if(&race.err, buf < 0 && unplug_bad(-buf, ENODEV), "alloc on a fresh fd: %s",
		  strerror(-buf));
	report_if(&race.err, close(fd), "close of a heap fd: %s", strerror(errno));
}

/* Address, sync, mapping and access of a buffer, racing with the unplug. */
static void unplug_use(int heap, int buf, size_t len, int gone)
{
	unsigned char *p, v = 0;
	uint64_t addr;
	int ret, sig;

	ret = -uioheap_dma_addr(heap, buf, &addr, NULL);
	report_if(&race.err, !ret && gone, "address query succeeded after the unplug");
	report_if(&race.err, unplug_bad(ret, ENODEV), "address query: %s", strerror(ret));
	ret = -uioheap_sync(buf, 1, 1);
	report_if(&race.err, !ret && gone, "sync succeeded after the unplug");
	report_if(&race.err, unplug_bad(ret, ENODEV), "sync: %s", strerror(ret));
	if (!ret)
		uioheap_sync(buf, 0, 1);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	if (p == MAP_FAILED) {
		report_if(&race.err, unplug_bad(errno, ENODEV), "mmap: %s", strerror(errno));
		return;
	}
	report_if(&race.err, gone, "mmap succeeded after the unplug");
	sig = probe_pages(p, len, true, 0xa5);
	if (!sig)
		sig = probe_read8(p + len - PAGE_SZ, &v);
	/* Revoked memory faults, it never reads as something else. */
	report_if(&race.err, unplug_bad(sig, SIGBUS), "signal %d touching a buffer", sig);
	report_if(&race.err, !sig && v != 0xa5, "a buffer did not keep what was written: %#x", v);
	/* Once the unplug returned, no mapping may reach the memory. */
	if (atomic_load(&race.gone)) {
		sig = probe_pages(p, PAGE_SZ, false, 0);
		report_if(&race.err, sig != SIGBUS, "mapping readable after the unplug (%d)", sig);
	}
	report_if(&race.err, munmap(p, len), "munmap: %s", strerror(errno));
}

static void *unplug_worker_fn(void *arg)
{
	int id = (intptr_t)arg, heap = race.heap[id], buf, gone;
	struct prng rng;
	size_t len;

	prng_seed(&rng, race.seed * 131 + id);
	while (!atomic_load(&race.stop)) {
		/* Once gone at the start, everything must fail. */
		gone = atomic_load(&race.gone);
		len = PAGE_SZ << prng_below(&rng, 7);
		if (gone)
			atomic_fetch_add(&race.after_gone[id], 1);
		if (prng_below(&rng, 8) == 0)
			unplug_reopen(gone);
		buf = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
		if (buf < 0) {
			report_if(&race.err, unplug_bad(-buf, ENODEV), "alloc: %s", strerror(-buf));
		} else {
			report_if(&race.err, gone, "alloc succeeded after the unplug");
			unplug_use(heap, buf, len, gone);
			report_if(&race.err, close(buf), "close of a buffer: %s", strerror(errno));
		}
		atomic_fetch_add(&race.iters, 1);
	}
	report_if(&race.err, close(heap), "close of a heap fd: %s", strerror(errno));
	return NULL;
}

/* Maps, writes and reads back one buffer, so that page faults race with the revocation. */
static void *unplug_toucher_fn(void *arg)
{
	unsigned char val = 0, v, *p;
	size_t off, len = race.touch_len;
	int sig, gone;

	for (; !atomic_load(&race.stop); atomic_fetch_add(&race.touches, 1)) {
		gone = atomic_load(&race.gone);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, race.touch_buf, 0);
		if (p == MAP_FAILED) {
			report_if(&race.err, unplug_bad(errno, ENODEV), "toucher mmap: %s",
				  strerror(errno));
			continue;
		}
		report_if(&race.err, gone, "toucher mmap succeeded after the unplug");
		sig = probe_pages(p, len, true, ++val);
		for (off = 0; !sig && off < len; off += PAGE_SZ) {
			sig = probe_read8(p + off, &v);
			if (!sig && v != val) {
				report(&race.err, "toucher read %#x, wrote %#x", v, val);
				break;
			}
		}
		report_if(&race.err, unplug_bad(sig, SIGBUS), "toucher got signal %d", sig);
		report_if(&race.err, munmap(p, len), "toucher munmap: %s", strerror(errno));
	}
	return NULL;
}

/*
 * Drops many unmapped buffers as the device goes: a close evicts the
 * dma-buf's inode before ->release() takes the buffer off the heap that
 * the revocation walks.
 */
static void *unplug_closer_fn(void *arg)
{
	int i;

	while (!atomic_load(&race.removing) && !atomic_load(&race.stop))
		usleep(100);
	for (i = 0; i < UNPLUG_CLOSER_BUFS; i++)
		report_if(&race.err, close(race.closer_fds[i]), "closer: %s", strerror(errno));
	return NULL;
}

/* The holder's buffer after the device went: revoked, and closable. */
static void unplug_check_holder(struct __test_metadata *_metadata, int heap,
				int buf, volatile unsigned char *p, size_t len)
{
	struct stat st;
	uint64_t addr;

	EXPECT_EQ(SIGBUS, probe_pages(p, PAGE_SZ, false, 0));
	EXPECT_EQ(SIGBUS, probe_pages(p + len - PAGE_SZ, PAGE_SZ, true, 1));
	EXPECT_EQ(-ENODEV, uioheap_dma_addr(heap, buf, &addr, NULL));
	EXPECT_EQ(ENODEV, heap_addr(heap, buf, 0, &addr));
	EXPECT_EQ(ENODEV, -uioheap_sync(buf, 1, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE_SZ, PROT_READ, MAP_SHARED, buf, 0));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(-ENODEV, uioheap_alloc(heap, PAGE_SZ, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(0, fstat(buf, &st));
	EXPECT_EQ(len, (size_t)st.st_size);
}

static void unplug_loop(struct __test_metadata *_metadata, FIXTURE_DATA(unplug) *self,
			bool remove)
{
	int iterations = SHORT_LONG(5, 50), it, i, heap, buf;
	char *pci = self->h.pci[1], *uio = self->h.uio[1], *node = self->h.node[1];
	pthread_t tid[UNPLUG_WORKERS + 2];
	unsigned long long bytes, bufs;
	static struct dma_pump pump;
	unsigned char *p;
	struct prng rng;
	const char *why;
	char cls[96];
	uint64_t addr;
	long dma = 0;
	long long t;

	prng_seed(&rng, run_seed("UIOHEAP_SEED") + remove);
	for (it = 0; it < iterations; it++) {
		memset(&race, 0, sizeof(race));
		first_error_init(&race.err, false);
		race.node = node;
		race.seed = prng_next(&rng);

		/* The holder: a mapped, written buffer that the device writes into all along. */
		heap = open(node, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap) TH_LOG("iteration %d: %s", it, strerror(errno));
		buf = uioheap_alloc(heap, SZ_1M, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf);
		ASSERT_EQ(0, uioheap_dma_addr(heap, buf, &addr, NULL));
		p = uioheap_map(buf, SZ_1M);
		ASSERT_NE(NULL, p);
		memset(p, 0x6b, SZ_1M);
		why = dma_pump_start(&pump, uio, heap, addr);
		ASSERT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);

		race.touch_len = SZ_64K << prng_below(&rng, 3);
		race.touch_buf = uioheap_alloc(heap, race.touch_len, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, race.touch_buf);
		for (i = 0; i < UNPLUG_CLOSER_BUFS; i++) {
			race.closer_fds[i] = uioheap_alloc(heap, PAGE_SZ, O_RDWR | O_CLOEXEC);
			ASSERT_LE(0, race.closer_fds[i]);
		}
		/* Opened here: a thread that TCG starts late could find the node gone. */
		for (i = 0; i < UNPLUG_WORKERS; i++) {
			race.heap[i] = open(node, O_RDWR | O_CLOEXEC);
			ASSERT_LE(0, race.heap[i]);
		}
		for (i = 0; i < UNPLUG_WORKERS + 2; i++)
			ASSERT_EQ(0, pthread_create(&tid[i], NULL, i < UNPLUG_WORKERS ?
						    unplug_worker_fn : i == UNPLUG_WORKERS ?
						    unplug_toucher_fn : unplug_closer_fn,
						    (void *)(intptr_t)i));
		/* Running, then unplugged at a different point each time. */
		t = now_ms();
		while ((atomic_load(&race.iters) < UNPLUG_WORKERS || !atomic_load(&race.touches)) &&
		       now_ms() - t < 5000)
			sleep_ms(1);
		EXPECT_LE(UNPLUG_WORKERS, atomic_load(&race.iters)) TH_LOG("workers stuck");
		sleep_ms(prng_below(&rng, 200));
		EXPECT_EQ(0x6b, p[SZ_1M - 1]);
		why = dma_pump_landed(&pump, p);
		EXPECT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);

		atomic_store(&race.removing, 1);
		ASSERT_EQ(0, unplug_pci(pci, remove));
		atomic_store(&race.gone, 1);

		unplug_check_holder(_metadata, heap, buf, p, SZ_1M);
		dma_pump_stop(&pump);
		dma += atomic_load(&pump.ok);
		/* Let every worker run a few rounds against the dead heap. */
		t = now_ms();
		for (i = 0; i < UNPLUG_WORKERS; i++)
			while (atomic_load(&race.after_gone[i]) < 3 && now_ms() - t < 5000)
				sleep_ms(2);
		atomic_store(&race.stop, 1);
		for (i = 0; i < UNPLUG_WORKERS + 2; i++)
			pthread_join(tid[i], NULL);
		for (i = 0; i < UNPLUG_WORKERS; i++)
			EXPECT_LE(3, atomic_load(&race.after_gone[i]))
				TH_LOG("worker %d stuck after the unplug", i);
		EXPECT_LT(0, atomic_load(&race.touches));
		EXPECT_EQ(0, close(race.touch_buf));
		EXPECT_EQ(0, atomic_load(&race.err.count))
			TH_LOG("iteration %d: %ld errors, first: %s", it,
			       atomic_load(&race.err.count), race.err.msg);

		EXPECT_EQ(0, munmap(p, SZ_1M));
		EXPECT_EQ(0, close(buf));
		EXPECT_EQ(0, close(heap));
		EXPECT_FALSE(path_exists(node));
		snprintf(cls, sizeof(cls), "/sys/class/uio_heap/%s", uio);
		EXPECT_FALSE(path_exists(cls));

		ASSERT_EQ(0, write_str(remove ? "/sys/bus/pci/rescan" : UIO_PCI_GENERIC "/bind",
				       remove ? "1" : pci));
		ASSERT_LE(0, wait_heap_of(pci, uio, sizeof(self->h.uio[1]), 10000))
			TH_LOG("iteration %d: no heap for %s after %s", it, pci,
			       remove ? "rescan" : "bind");
		node_of(node, sizeof(self->h.node[1]), uio);
		why = heap_check(node, SZ_64K);
		ASSERT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);
		ASSERT_EQ(0, heap_usage(uio, &bytes, &bufs));
		EXPECT_EQ(0, bytes);
		EXPECT_EQ(0, bufs);
		if (_metadata->exit_code)
			break;
	}
	EXPECT_EQ(iterations, it);
	EXPECT_LE(iterations, dma) TH_LOG("%ld transfers in %d unplugs", dma, it);
	summary("unplugs=%d dma_transfers=%ld", it, dma);
}

TEST_F_TIMEOUT(unplug, remove_while_in_use, LONG_TIMEOUT)
{
	unplug_loop(_metadata, self, true);
}

TEST_F_TIMEOUT(unplug, unbind_while_in_use, LONG_TIMEOUT)
{
	unplug_loop(_metadata, self, false);
}

/*
 * Module races: load/unload cycles while threads open and allocate all
 * along.  Every unload is refused while they hold a heap, and the heaps
 * come back every time.  (A buffer or a mapping holding it:
 * uio_heap_lifetime.)
 */
#define MODULE_HAMMERS	2

FIXTURE(module) {
	EDU_HEAPS_FIELDS;
	const char *ko;
};

FIXTURE_SETUP(module)
{
	self->ko = getenv("UIOHEAP_KO");
	ASSERT_NE(NULL, self->ko) TH_LOG("UIOHEAP_KO is not set");
	EDU_HEAPS_SETUP(self);
}

FIXTURE_TEARDOWN(module)
{
	int i;

	/* Later tests and suites need the module. */
	ensure_uio_heap_loaded();
	for (i = 0; i < self->n; i++)
		wait_path(self->node[i], true, 5000);
}

/* Every heap is back and works (@check); and holds nothing (@idle). */
static void module_heaps_back(struct __test_metadata *_metadata,
			      FIXTURE_DATA(module) *self, bool check, bool idle)
{
	unsigned long long bytes, bufs;
	const char *why;
	int i;

	for (i = 0; i < self->n; i++) {
		ASSERT_LE(0, wait_path(self->node[i], true, 5000))
			TH_LOG("%s did not come back", self->node[i]);
		why = check ? heap_check(self->node[i], SZ_64K) : NULL;
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		if (!idle)
			continue;
		ASSERT_EQ(0, heap_usage(self->uio[i], &bytes, &bufs));
		EXPECT_EQ(0, bytes);
		EXPECT_EQ(0, bufs);
	}
}

static struct module_load {
	FIXTURE_DATA(module) *self;
	uint64_t seed;
	atomic_int stop, ids;
	atomic_long opens;
	struct first_error err;
} mod;

/* Opens and allocates all along, unloads or not. */
static void *module_hammer_fn(void *arg)
{
	int id = atomic_fetch_add(&mod.ids, 1), heap, buf;
	const char *node;
	struct prng rng;
	long k = id;

	prng_seed(&rng, mod.seed ^ (0x5eed + id));
	while (!atomic_load(&mod.stop)) {
		node = mod.self->node[k++ % mod.self->n];
		heap = open(node, O_RDWR | O_CLOEXEC);
		/* Gone, going, or not yet back. */
		report_if(&mod.err, heap < 0 && errno != ENOENT && errno != ENXIO &&
			  errno != ENODEV, "open %s: %s", node, strerror(errno));
		if (heap >= 0) {
			/* An open heap fd pins the module: the heap stays. */
			buf = uioheap_alloc(heap, PAGE_SZ, O_RDWR | O_CLOEXEC);
			report_if(&mod.err, buf < 0, "alloc on an open heap: %s", strerror(-buf));
			/* Held for a while: unloading must lose then. */
			usleep(prng_below(&rng, 500));
			if (buf >= 0)
				close(buf);
			close(heap);
			atomic_fetch_add(&mod.opens, 1);
		}
		/* Leave gaps, so that unloading can win. */
		usleep(prng_below(&rng, 300));
	}
	return NULL;
}

TEST_F_TIMEOUT(module, load_unload_cycles, LONG_TIMEOUT)
{
	int cycles = SHORT_LONG(10, 100), c, ret, i;
	pthread_t hammer[MODULE_HAMMERS];
	long refused = 0;
	long long t;

	first_error_init(&mod.err, false);
	mod.self = self;
	mod.seed = run_seed("UIOHEAP_SEED");
	for (i = 0; i < MODULE_HAMMERS; i++)
		ASSERT_EQ(0, pthread_create(&hammer[i], NULL, module_hammer_fn, NULL));
	for (c = 0; c < cycles; c++) {
		module_heaps_back(_metadata, self, c % 5 == 0, false);
		for (t = now_ms(); (ret = rmmod_nb("uio_heap")); refused++) {
			ASSERT_EQ(EWOULDBLOCK, ret) TH_LOG("cycle %d: %s", c, strerror(ret));
			ASSERT_GT(10000, now_ms() - t) TH_LOG("cycle %d: refused for 10 s", c);
			usleep(200);
		}
		EXPECT_FALSE(module_loaded("uio_heap"));
		for (i = 0; i < self->n; i++)
			EXPECT_FALSE(path_exists(self->node[i]));
		ret = insmod_file(self->ko);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: insmod: %s", c, strerror(ret));
	}
	atomic_store(&mod.stop, 1);
	for (i = 0; i < MODULE_HAMMERS; i++)
		pthread_join(hammer[i], NULL);
	EXPECT_EQ(0, atomic_load(&mod.err.count))
		TH_LOG("%ld errors, first: %s", atomic_load(&mod.err.count), mod.err.msg);
	EXPECT_LT(0, atomic_load(&mod.opens));
	module_heaps_back(_metadata, self, true, true);
	/* Each cycle unloaded once, and rmmod met a busy module. */
	EXPECT_LE(1, refused);
	summary("rmmod_refused=%ld rmmod_ok=%d", refused, c);
}

TEST_HARNESS_MAIN
