// SPDX-License-Identifier: GPL-2.0
/* uio_heap under concurrency, limits and failed allocations; then hot-unplug, module unload. */
#include "kselftest_harness.h"
#include "common.h"

#define LONG_TIMEOUT	900		/* UIOHEAP_LONG=1 forms run for minutes */

/* A worker thread's check: the first failure is kept for the main thread. */
#define report_if(err, cond, ...)	((cond) ? report(err, __VA_ARGS__) : (void)0)

EDU_HEAPS_FIXTURE(heaps);

/* The running test's, for its threads (the harness runs each test in a process). */
static const struct edu_heaps *eh;
static struct first_error errs;
static long long deadline;
static uint64_t seed;

/* Processes x threads allocate, map, check, free: signatures hold, addresses fit, never overlap. */
#define STRESS_PROCS	4
#define STRESS_THREADS	4
#define STRESS_LIVE	8
#define STRESS_FLOOR	50	/* what a run does at least: KASAN's VM does 4x more */

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
} *sh;

struct stress_thread {
	struct stress_buf *live;	/* its STRESS_LIVE slots of sh->buf */
	uint64_t id;			/* of its last buffer */
	int heap_fd[2];
	struct prng rng;
};

/* @b holds its signatures: in its mapping, or in a fresh one of a random part (@remap). */
static void stress_verify(struct stress_thread *t, struct stress_buf *b, bool remap)
{
	size_t pages = b->len / PAGE_SZ, first = 0, n = pages, at = 0;
	unsigned char *p = b->map;
	uint64_t seen = 0;
	int ret;

	if (remap) {
		first = prng_below(&t->rng, pages);
		n = 1 + prng_below(&t->rng, pages - first < 64 ? pages - first : 64);
		p = mmap(NULL, n * PAGE_SZ, PROT_READ, MAP_SHARED, b->fd, first * PAGE_SZ);
		report_if(&sh->err, p == MAP_FAILED, "mmap of pages %zu+%zu of %zu: %s", first, n,
			  pages, strerror(errno));
		if (p == MAP_FAILED)
			return;
	}
	ret = sig_pages(p, first, n, b->id, false, &at, &seen);
	report_if(&sh->err, ret, "%s: page %zu of %zu of buffer %#llx: %s, holds %#llx",
		  remap ? "remapped" : "mapped", at, pages, (unsigned long long)b->id,
		  ret > 0 ? strsignal(ret) : "not its signature", (unsigned long long)seen);
	if (remap)
		munmap(p, n * PAGE_SZ);
}

static void stress_alloc(struct stress_thread *t, struct stress_buf *b)
{
	uint64_t span = 1ULL << prng_below(&t->rng, 11), addr = 0, seen;
	/* 4 KiB to 4 MiB, mostly small. */
	size_t len = (1 + prng_below(&t->rng, span)) * PAGE_SZ, at;
	int h = prng_below(&t->rng, 2), fd, ret;
	const struct stress_buf *o;
	unsigned char *p;

	fd = uioheap_alloc(t->heap_fd[h], len, O_RDWR | O_CLOEXEC);
	/* Contiguous memory within the narrow mask can run out, not 64 KiB below 4 GiB. */
	if (fd == -ENOMEM && (h == 0 || len > SZ_64K))
		return;
	report_if(&sh->err, fd < 0, "alloc of %zu on %s: %s", len, eh->node[h], strerror(-fd));
	if (fd < 0)
		return;
	atomic_fetch_add(&sh->allocs[h], 1);
	ret = uioheap_dma_addr(t->heap_fd[h], fd, &addr, NULL);
	report_if(&sh->err, ret || addr & (PAGE_SZ - 1) || addr + len - 1 > eh->mask[h] ||
		  addr + len - 1 < addr, "%s: buffer at %#llx+%#zx, mask %#llx: %s", eh->node[h],
		  (unsigned long long)addr, len, (unsigned long long)eh->mask[h], strerror(-ret));
	/* Into the table, where no live buffer of the heap may overlap it. */
	pthread_mutex_lock(&sh->lock);
	for (o = sh->buf; o < sh->buf + ARRAY_SIZE(sh->buf); o++)
		report_if(&sh->err, o->len && o->heap == h && addr < o->addr + o->len &&
			  o->addr < addr + len, "heap %d: %#llx+%#zx overlaps live %#llx+%#zx", h,
			  (unsigned long long)addr, len, (unsigned long long)o->addr, o->len);
	*b = (struct stress_buf){ .fd = fd, .heap = h, .len = len, .addr = addr, .id = ++t->id };
	pthread_mutex_unlock(&sh->lock);
	p = uioheap_map(fd, len);
	report_if(&sh->err, !p, "mmap of %zu: %s", len, strerror(errno));
	if (!p)
		return;
	report_if(&sh->err, uioheap_sync(fd, 1, 1), "sync start: %s", strerror(errno));
	report_if(&sh->err, p[0] || p[len - 1], "a fresh buffer of %zu is not zeroed", len);
	ret = sig_pages(p, 0, len / PAGE_SZ, b->id, true, &at, &seen);
	report_if(&sh->err, ret, "signal %d writing page %zu of a fresh buffer", ret, at);
	report_if(&sh->err, uioheap_sync(fd, 0, 1), "sync end: %s", strerror(errno));
	if (prng_below(&t->rng, 2))
		b->map = p;
	else
		munmap(p, len);
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
	stress_verify(t, b, !b->map);
	report_if(&sh->err, b->map && munmap(b->map, b->len), "munmap: %s", strerror(errno));
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

	t->heap_fd[0] = open(eh->node[0], O_RDWR | O_CLOEXEC);
	t->heap_fd[1] = open(eh->node[1], O_RDWR | O_CLOEXEC);
	report_if(&sh->err, t->heap_fd[0] < 0 || t->heap_fd[1] < 0, "open: %s", strerror(errno));
	while (now_ms() < deadline && !atomic_load(&sh->err.count)) {
		act = prng_below(&t->rng, 100);
		b = &t->live[prng_below(&t->rng, STRESS_LIVE)];
		if (!b->len)
			stress_alloc(t, b);
		else if (act < 30)
			stress_free(t, b);
		else if (act < 70)
			stress_verify(t, b, act < 55 || !b->map);
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

TEST_F_TIMEOUT(heaps, concurrent_alloc_map_free, 300)
{
	int procs = SHORT_LONG(2, 3), threads = SHORT_LONG(3, 4), i, h, t, slot;
	struct stress_thread th[STRESS_THREADS] = { 0 };
	pthread_t tid[STRESS_THREADS];
	pthread_mutexattr_t attr;
	pid_t pid[STRESS_PROCS];

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&sh->lock, &attr);
	first_error_init(&sh->err, true);
	seed = run_seed("UIOHEAP_SEED");
	eh = &self->h;
	edu_heaps_narrow(_metadata, &self->h);
	for (h = 0; h < self->n; h++)
		expect_usage(_metadata, self->uio[h], 0, 0);
	deadline = now_ms() + SHORT_LONG(10000, 60000);
	for (i = 0; i < procs; i++) {
		fflush(stdout);
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i])
			continue;
		for (t = 0; t < threads; t++) {
			slot = i * STRESS_THREADS + t;
			th[t].live = sh->buf + slot * STRESS_LIVE;
			th[t].id = (uint64_t)slot << 32;
			prng_seed(&th[t].rng, seed ^ (uint64_t)(i * 64 + t) << 48);
			if (pthread_create(&tid[t], NULL, stress_thread_fn, &th[t])) {
				report(&sh->err, "pthread_create failed");
				break;
			}
		}
		while (t--)
			pthread_join(tid[t], NULL);
		_exit(0);
	}
	for (i = 0; i < procs; i++)
		EXPECT_EQ(0, wait_exit(pid[i])) TH_LOG("worker process %d (128 + signal)", i);
	expect_no_report(_metadata, &sh->err);
	for (h = 0; h < self->n; h++) {
		EXPECT_LE(STRESS_FLOOR, atomic_load(&sh->allocs[h])) TH_LOG("%s", self->node[h]);
		expect_usage(_metadata, self->uio[h], 0, 0);
	}
	summary("buffers_allocated=%ld", atomic_load(&sh->allocs[0]) + atomic_load(&sh->allocs[1]));
}

/* Threads hold 64 KiB buffers against a 1 MiB max_bytes that the test lowers and raises. */
#define LIMIT_THREADS	6
#define LIMIT_HOLD	6

static unsigned long long lim_base, lim_max;	/* allocated_bytes before, the highest limit */
static atomic_ullong lim_held, lim_max_held;
static atomic_long lim_allocs, lim_enospc;

static void *limit_worker(void *arg)
{
	int fds[LIMIT_HOLD], n = 0, heap, fd, i;
	unsigned long long now, max;
	struct prng rng;

	prng_seed(&rng, seed + (intptr_t)arg);
	heap = open(eh->node[1], O_RDWR | O_CLOEXEC);
	report_if(&errs, heap < 0, "open %s: %s", eh->node[1], strerror(errno));
	while (heap >= 0 && (n || now_ms() < deadline)) {
		/* Mostly allocate, to keep the heap at its limit; let all go at the end. */
		if (n == LIMIT_HOLD || (n && (now_ms() >= deadline || !prng_below(&rng, 4)))) {
			i = prng_below(&rng, n);
			/* Uncounted before the kernel lets go of it. */
			atomic_fetch_sub(&lim_held, SZ_64K);
			close(fds[i]);
			fds[i] = fds[--n];
			continue;
		}
		fd = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			report_if(&errs, fd != -ENOSPC, "alloc: %s, not ENOSPC", strerror(-fd));
			atomic_fetch_add(&lim_enospc, fd == -ENOSPC);
			usleep(prng_below(&rng, 500));
			continue;
		}
		/* Counted once the kernel has it: held never runs ahead. */
		now = atomic_fetch_add(&lim_held, SZ_64K) + SZ_64K;
		report_if(&errs, now > lim_max - lim_base, "%llu bytes held, limit %llu",
			  now, lim_max - lim_base);
		max = atomic_load(&lim_max_held);
		while (now > max && !atomic_compare_exchange_weak(&lim_max_held, &max, now))
			;
		atomic_fetch_add(&lim_allocs, 1);
		fds[n++] = fd;
	}
	close(heap);
	return NULL;
}

TEST_F_TIMEOUT(heaps, max_bytes_under_concurrency, 120)
{
	unsigned long long v, bufs;
	const char *uio = self->uio[1];
	pthread_t tid[LIMIT_THREADS];
	int heap, fds[17], i, n = 0, ret, toggles = 0;
	long long toggled;

	first_error_init(&errs, false);
	eh = &self->h;
	seed = run_seed("UIOHEAP_SEED");
	ASSERT_EQ(0, heap_usage(uio, &lim_base, &bufs));
	lim_max = lim_base + SZ_1M;
	ASSERT_EQ(0, uioheap_sysfs_write(uio, "max_bytes", lim_max));
	/* Alone first: exactly 16 buffers of 64 KiB fit, the 17th is refused. */
	heap = open(self->node[1], O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	while (n < 17 && (fds[n] = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC)) >= 0)
		n++;
	EXPECT_EQ(16, n);
	EXPECT_EQ(-ENOSPC, n < 17 ? fds[n] : 0);
	ASSERT_EQ(0, uioheap_sysfs_read(uio, "allocated_bytes", &v));
	EXPECT_EQ(lim_max, v);
	while (n--)
		close(fds[n]);
	deadline = now_ms() + SHORT_LONG(3000, 20000);
	for (i = 0; i < LIMIT_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, limit_worker, (void *)(intptr_t)i));
	/*
	 * Every 100 ms the limit goes below the use, or back up, at least ten
	 * times: a starved TCG vCPU may need longer than the deadline for that.
	 */
	for (toggled = now_ms();
	     now_ms() < deadline || (toggles < 10 && now_ms() < deadline + 60000);) {
		if (now_ms() - toggled >= 100) {
			toggled = now_ms();
			ret = uioheap_sysfs_write(uio, "max_bytes",
						  ++toggles % 2 ? lim_base + SZ_1M / 2 : lim_max);
			report_if(&errs, ret, "max_bytes write: %s", strerror(-ret));
		}
		ASSERT_EQ(0, uioheap_sysfs_read(uio, "allocated_bytes", &v));
		report_if(&errs, v > lim_max, "allocated_bytes %llu > max_bytes %llu", v, lim_max);
	}
	for (i = 0; i < LIMIT_THREADS; i++)
		pthread_join(tid[i], NULL);
	expect_no_report(_metadata, &errs);
	EXPECT_LE(STRESS_FLOOR, atomic_load(&lim_enospc)) TH_LOG("the limit bit too rarely");
	EXPECT_LE(10, toggles) TH_LOG("the limit moved %d times", toggles);
	EXPECT_LE(SZ_1M / 2, atomic_load(&lim_max_held)) TH_LOG("the heap was never full");
	EXPECT_EQ(0, uioheap_sysfs_write(uio, "max_bytes", 0));
	EXPECT_EQ(0, heap_ull(uio, "max_bytes"));
	expect_usage(_metadata, uio, lim_base, 0);
	fds[0] = uioheap_alloc(heap, 2 * SZ_1M, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fds[0]) TH_LOG("2 MiB without a limit");
	close(fds[0]);
	close(heap);
	EXPECT_LE(STRESS_FLOOR, atomic_load(&lim_allocs));
	summary("max_bytes_allocs=%ld max_bytes_refused=%ld", atomic_load(&lim_allocs),
		atomic_load(&lim_enospc));
}

/* Fault injection (debug kernel): an allocation fails with ENOMEM or works, leaving nothing. */
#define INJECT_TIMES	"1000000"	/* random failures armed per attribute set */

static const char *const inject_attrs[] = { "probability", "interval", "times", "space",
	"verbose", "task-filter", "ignore-gfp-wait", "min-order", "ignore-gfp-highmem" };

#define NR_INJECT_ATTRS	ARRAY_SIZE(inject_attrs)

FIXTURE(inject) {
	EDU_HEAPS_FIELDS;
	char saved[2 * NR_INJECT_ATTRS][32];	/* failslab's, then fail_page_alloc's */
	int mif, nth;		/* /proc/self/make-it-fail, /proc/thread-self/fail-nth */
};

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

	/* Only the patched debug kernel is built with fault injection. */
	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	if (!patched && !slab && !page)
		SKIP(return, "kernel without fault injection");
	ASSERT_TRUE(slab && page) TH_LOG("no failslab or fail_page_alloc in debugfs");
	/* Failures may hit DMA-API debugging's own allocations: the host forgives that. */
	write_str("/dev/kmsg", "uioheap: fault injection starts\n");
	EDU_HEAPS_SETUP(self);
	for (a = 0; a < 2 * NR_INJECT_ATTRS; a++)
		read_str(inject_path(a / NR_INJECT_ATTRS, inject_attrs[a % NR_INJECT_ATTRS]),
			 self->saved[a], sizeof(self->saved[a]));
	self->mif = open("/proc/self/make-it-fail", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->mif);
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	/* Failures must hit the module, not copy_to_user() into an absent stack page. */
	ASSERT_EQ(0, mlockall(MCL_CURRENT | MCL_FUTURE));
}

static void inject_disarm(FIXTURE_DATA(inject) *self)
{
	pwrite(self->mif, "0", 1, 0);
	pwrite(self->nth, "0", 1, 0);		/* EBADF without fail-nth */
	write_str(inject_path(0, "probability"), "0");
	write_str(inject_path(1, "probability"), "0");
}

FIXTURE_TEARDOWN(inject)
{
	unsigned int a;

	inject_disarm(self);
	for (a = 0; a < 2 * NR_INJECT_ATTRS; a++)
		if (self->saved[a][0])
			write_str(inject_path(a / NR_INJECT_ATTRS,
					      inject_attrs[a % NR_INJECT_ATTRS]), self->saved[a]);
	close(self->mif);
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

/* @fd, allocated under fault injection, is -ENOMEM or a whole buffer: NULL, or what is not. */
static const char *inject_buffer_ok(int heap, int fd, size_t len)
{
	const char *why = NULL;
	unsigned char *p;
	struct stat st;
	uint64_t addr;

	if (fd < 0)
		return fd == -ENOMEM ? NULL : strerror(-fd);
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

TEST_F_TIMEOUT(inject, alloc_failures_are_clean, 600)
{
	static const size_t nth_sizes[] = { SZ_4K, SZ_64K + SZ_4K, SZ_1M };
	int attempts = SHORT_LONG(300, 3000), h, i, fd, heap[2];
	unsigned long long bytes[2], bufs[2], injected;
	long ok = 0, nth_hits = 0;
	char val[32], num[16];
	unsigned int s, k;
	const char *why;
	struct prng rng;
	size_t len;

	prng_seed(&rng, run_seed("UIOHEAP_SEED"));
	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
		heap[h] = open(self->node[h], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap[h]);
	}
	for (i = 0; self->nth >= 0 && i < 2; i++)
		ASSERT_EQ(0, inject_arm(i, "0", "-1"));
	/* fail-nth: fault k = 1, 2, ... of one allocation, until it has no k-th; they hit. */
	for (h = 0; self->nth >= 0 && h < self->n; h++) {
		for (s = 0; s < ARRAY_SIZE(nth_sizes); s++) {
			len = nth_sizes[s];
			for (k = 1; k <= 500; k++) {
				snprintf(num, sizeof(num), "%u", k);
				ASSERT_EQ(strlen(num), pwrite(self->nth, num, strlen(num), 0));
				fd = uioheap_alloc(heap[h], len, O_RDWR | O_CLOEXEC);
				ASSERT_LT(0, pread(self->nth, val, sizeof(val) - 1, 0));
				pwrite(self->nth, "0", 1, 0);
				why = inject_buffer_ok(heap[h], fd, len);
				EXPECT_EQ(NULL, why) TH_LOG("%s, %zu bytes, fault %u: %s",
							    self->node[h], len, k, why);
				if (fd >= 0)
					close(fd);
				/* Not consumed: the ioctl has fewer fault points. */
				if (atoi(val))
					break;
			}
			EXPECT_LE(0, fd);
			EXPECT_GT(500, k);
			nth_hits += k - 1;
		}
		expect_usage(_metadata, self->uio[h], bytes[h], bufs[h]);
	}
	/* Random failures, as the brief for the debug kernel arms them. */
	ASSERT_EQ(0, inject_arm(0, "5", INJECT_TIMES));
	ASSERT_EQ(0, inject_arm(1, "2", INJECT_TIMES));
	for (k = 0; k < (unsigned int)attempts; k++) {
		len = (1 + prng_below(&rng, 64)) * PAGE_SZ;
		h = k % self->n;
		ASSERT_EQ(1, pwrite(self->mif, "1", 1, 0));
		fd = uioheap_alloc(heap[h], len, O_RDWR | O_CLOEXEC);
		/* What needs no allocation works even while armed. */
		if (fd >= 0) {
			EXPECT_EQ(0, uioheap_sync(fd, 1, 1));
			EXPECT_EQ(0, uioheap_sync(fd, 0, 1));
		}
		pwrite(self->mif, "0", 1, 0);
		ok += fd >= 0;
		why = inject_buffer_ok(heap[h], fd, len);
		EXPECT_EQ(NULL, why) TH_LOG("%s: %s", self->node[h], why);
		EXPECT_EQ(0, fd < 0 ? 0 : close(fd));
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
		expect_usage(_metadata, self->uio[h], bytes[h], bufs[h]);
		why = heap_check(self->node[h], SZ_1M);
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		close(heap[h]);
	}
	summary("faults_injected=%lld", (long long)injected + nth_hits);
}

/*
 * One import of @exp (64 KiB) by a fresh fd of heap @h, failslab failing all past @space bytes:
 * ENOMEM or a whole import.  Behind a translating IOMMU (@probed) a failure after the mapping,
 * counted in *@late, flushed the IOTLB in the ioctl (a lazy IOMMU's own flush comes later).
 */
static int inject_import(struct __test_metadata *_metadata, FIXTURE_DATA(inject) *self, int h,
			 int exp, unsigned long space, bool probed, long *late)
{
	uint64_t addr = 0, size = 0;
	char num[24];
	int hfd, ret;

	hfd = open(self->node[h], O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, hfd);
	ASSERT_EQ(0, probed ? tracefs_write("trace", "") : 0);
	snprintf(num, sizeof(num), "%lu", space);
	ASSERT_EQ(0, write_str(inject_path(0, "space"), num));
	ASSERT_EQ(1, pwrite(self->mif, "1", 1, 0));
	ret = uioheap_import(hfd, exp, &addr, &size);
	pwrite(self->mif, "0", 1, 0);
	if (ret < 0) {
		EXPECT_EQ(-ENOMEM, ret) TH_LOG("%s, space %lu: %s", self->node[h], space,
					       strerror(-ret));
	} else {
		EXPECT_TRUE(size == SZ_64K && !(addr & (PAGE_SZ - 1)))
			TH_LOG("%s: %#llx+%#llx", self->node[h], (unsigned long long)addr,
			       (unsigned long long)size);
	}
	if (ret < 0 && probed && trace_count(" unmap:") > 0) {
		++*late;
		EXPECT_LE(1, trace_count(" iotlb_flush:"))
			TH_LOG("%s, space %lu: unmapped, not flushed", self->node[h], space);
	}
	close(hfd);
	return ret;
}

/*
 * Failures at every point of an import are clean; the last, after the mapping, flushes the IOTLB
 * before the exporter (the other edu's heap) gets the buffer back.  failslab's space budget is
 * bisected to where imports start to work, then walked down to a failure after the mapping.
 */
#define UNMAP_PROBE	"p:uioheap/unmap iommu_dma_unmap_sg\n"

TEST_F_TIMEOUT(inject, import_failures_are_clean, 300)
{
	unsigned long long bytes[2], bufs[2], imported[2], imports[2];
	long tries = 0, late = 0, seen;
	unsigned long lo, hi, mid;
	const char *flush;
	bool probed[2];
	int h, heap, exp;

	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
		imported[h] = heap_ull(self->uio[h], "imported_bytes");
		imports[h] = heap_ull(self->uio[h], "imports");
		probed[h] = heap_translated(_metadata, self->uio[h]);
	}
	if (probed[0] || probed[1])
		ASSERT_EQ(0, iotlb_flush_probe(UNMAP_PROBE, true, &flush));
	ASSERT_EQ(0, inject_arm(0, "100", "-1"));
	for (h = 0; h < self->n; h++) {
		heap = open(self->node[!h], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap);
		exp = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, exp);
		seen = late;
		ASSERT_LE(0, inject_import(_metadata, self, h, exp, SZ_1M, probed[h], &late));
		ASSERT_GT(0, inject_import(_metadata, self, h, exp, 0, probed[h], &late))
			TH_LOG("%s: failslab did not fail an import", self->node[h]);
		for (lo = 0, hi = SZ_1M; hi - lo > 1; tries++) {
			mid = lo + (hi - lo) / 2;
			if (inject_import(_metadata, self, h, exp, mid, probed[h], &late) < 0)
				lo = mid;
			else
				hi = mid;
		}
		/* Allocations vary by a few bytes: walk down from where imports start to work. */
		for (mid = lo; probed[h] && late == seen && mid >= 16 && lo - mid < 2048;
		     mid -= 16, tries++)
			inject_import(_metadata, self, h, exp, mid, true, &late);
		EXPECT_TRUE(!probed[h] || late > seen)
			TH_LOG("%s: no import failed after its mapping", self->node[h]);
		close(exp);
		close(heap);
	}
	inject_disarm(self);
	sync_probe_stop();
	for (h = 0; h < self->n; h++) {
		expect_usage(_metadata, self->uio[h], bytes[h], bufs[h]);
		EXPECT_EQ(imported[h], heap_ull(self->uio[h], "imported_bytes"));
		EXPECT_EQ(imports[h], heap_ull(self->uio[h], "imports"));
	}
	summary("import_attempts=%ld import_failures_after_mapping=%ld", tries, late);
}

/* The unplug races a holder's buffer under DMA, workers, a toucher's faults and a closer. */
#define UNPLUG_WORKERS		3
#define UNPLUG_CLOSER_BUFS	128

EDU_UNPLUG_FIXTURE(unplug);	/* the wide edu goes */

static struct unplug_race {
	atomic_int removing, gone, stop;	/* gone: the remove/unbind write returned */
	atomic_long iters, touches;	/* the workers' rounds, the toucher's */
	atomic_long after_gone[UNPLUG_WORKERS];	/* rounds begun once gone */
	int heap[UNPLUG_WORKERS];	/* the workers', opened before the unplug */
	int touch_buf, closer_fds[UNPLUG_CLOSER_BUFS];
	size_t touch_len;
} race;

/* @op failed with errno @e, or succeeded (0): fails with ENODEV once the unplug began. */
static void unplug_errno(int e, int gone, const char *op)
{
	report_if(&errs, !e && gone, "%s succeeded after the unplug", op);
	report_if(&errs, e && (e != ENODEV || !atomic_load(&race.removing)), "%s: %s", op,
		  strerror(e));
}

/* A fresh open: fails once the removal began (read after), succeeds till it returned. */
static void unplug_reopen(int gone)
{
	int fd = open(eh->node[1], O_RDWR | O_CLOEXEC), e = errno, buf;

	report_if(&errs, fd < 0 && (!atomic_load(&race.removing) ||
		  (e != ENOENT && e != ENXIO && e != ENODEV)), "open: %s", strerror(e));
	if (fd < 0)
		return;
	report_if(&errs, gone, "open of %s succeeded after the unplug", eh->node[1]);
	buf = uioheap_alloc(fd, PAGE_SZ, O_RDWR | O_CLOEXEC);
	unplug_errno(buf < 0 ? -buf : 0, gone, "alloc on a fresh fd");
	report_if(&errs, buf >= 0 && close(buf), "close: %s", strerror(errno));
	report_if(&errs, close(fd), "close of a heap fd: %s", strerror(errno));
}

/* Address and sync (@heap >= 0), mapping, @val written and read back, racing the unplug. */
static void unplug_use(int heap, int buf, size_t len, int gone, unsigned char val)
{
	unsigned char *p, v;
	uint64_t addr;
	size_t off;
	int ret, sig;

	if (heap >= 0) {
		unplug_errno(-uioheap_dma_addr(heap, buf, &addr, NULL), gone, "address query");
		ret = -uioheap_sync(buf, 1, 1);
		unplug_errno(ret, gone, "sync");
		if (!ret)
			uioheap_sync(buf, 0, 1);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	unplug_errno(p == MAP_FAILED ? errno : 0, gone, "mmap");
	if (p == MAP_FAILED)
		return;
	sig = probe_pages(p, len, true, val);
	for (off = 0, v = val; !sig && off < len && v == val; off += PAGE_SZ)
		sig = probe_read8(p + off, &v);
	report_if(&errs, !sig && v != val, "read %#x, wrote %#x", v, val);
	report_if(&errs, sig && (sig != SIGBUS || !atomic_load(&race.removing)), "signal %d", sig);
	/* Once the unplug returned, no mapping may reach the memory. */
	report_if(&errs, atomic_load(&race.gone) && probe_pages(p, PAGE_SZ, false, 0) != SIGBUS,
		  "mapping readable after the unplug");
	report_if(&errs, munmap(p, len), "munmap: %s", strerror(errno));
}

static void *unplug_worker(void *arg)
{
	int id = (int *)arg - race.heap, heap = race.heap[id], buf, gone;
	struct prng rng;
	size_t len;

	prng_seed(&rng, seed * 131 + id);
	while (!atomic_load(&race.stop)) {
		/* Once gone at the start, everything must fail. */
		gone = atomic_load(&race.gone);
		len = PAGE_SZ << prng_below(&rng, 7);
		atomic_fetch_add(&race.after_gone[id], gone);
		if (prng_below(&rng, 8) == 0)
			unplug_reopen(gone);
		buf = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
		unplug_errno(buf < 0 ? -buf : 0, gone, "alloc");
		if (buf >= 0) {
			unplug_use(heap, buf, len, gone, 0xa5);
			report_if(&errs, close(buf), "close of a buffer: %s", strerror(errno));
		}
		atomic_fetch_add(&race.iters, 1);
	}
	report_if(&errs, close(heap), "close of a heap fd: %s", strerror(errno));
	return NULL;
}

/* Page faults on one buffer race with the revocation. */
static void *unplug_toucher(void *arg)
{
	unsigned char val = 0;

	for (; !atomic_load(&race.stop); atomic_fetch_add(&race.touches, 1))
		unplug_use(-1, race.touch_buf, race.touch_len, atomic_load(&race.gone), ++val);
	return NULL;
}

/* As the device goes: a close evicts the inode before ->release() takes it off the heap. */
static void *unplug_closer(void *arg)
{
	int i;

	while (!atomic_load(&race.removing) && !atomic_load(&race.stop))
		usleep(100);
	for (i = 0; i < UNPLUG_CLOSER_BUFS; i++)
		report_if(&errs, close(race.closer_fds[i]), "closer: %s", strerror(errno));
	return NULL;
}

static void unplug_loop(struct __test_metadata *_metadata, FIXTURE_DATA(unplug) *self,
			bool remove)
{
	int iterations = SHORT_LONG(5, 50), it, i, heap, buf;
	pthread_t tid[UNPLUG_WORKERS + 2];
	static struct dma_pump pump;
	unsigned char *p;
	struct prng rng;
	const char *why;
	char cls[96];
	uint64_t addr;
	long dma = 0;

	eh = &self->h;
	prng_seed(&rng, run_seed("UIOHEAP_SEED") + remove);
	for (it = 0; it < iterations; it++) {
		memset(&race, 0, sizeof(race));
		first_error_init(&errs, false);
		seed = prng_next(&rng);
		/* The holder: a mapped, written buffer that the device writes into all along. */
		heap = open(self->node, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap) TH_LOG("iteration %d: %s", it, strerror(errno));
		buf = alloc_map(_metadata, heap, SZ_1M, &p);
		ASSERT_EQ(0, uioheap_dma_addr(heap, buf, &addr, NULL));
		memset(p, 0x6b, SZ_1M);
		why = dma_pump_start(&pump, self->uio, heap, addr);
		ASSERT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);
		race.touch_len = SZ_64K << prng_below(&rng, 3);
		race.touch_buf = alloc_map(_metadata, heap, race.touch_len, NULL);
		for (i = 0; i < UNPLUG_CLOSER_BUFS; i++)
			race.closer_fds[i] = alloc_map(_metadata, heap, PAGE_SZ, NULL);
		/* Opened here: a thread that TCG starts late could find the node gone. */
		for (i = 0; i < UNPLUG_WORKERS; i++) {
			race.heap[i] = open(self->node, O_RDWR | O_CLOEXEC);
			ASSERT_LE(0, race.heap[i]);
			ASSERT_EQ(0, pthread_create(&tid[i], NULL, unplug_worker, &race.heap[i]));
		}
		ASSERT_EQ(0, pthread_create(&tid[i++], NULL, unplug_toucher, NULL));
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, unplug_closer, NULL));
		/* Running, then unplugged at a different point each time. */
		WAIT_MS(atomic_load(&race.iters) >= UNPLUG_WORKERS &&
			atomic_load(&race.touches), 5000);
		EXPECT_LE(UNPLUG_WORKERS, atomic_load(&race.iters)) TH_LOG("workers stuck");
		sleep_ms(prng_below(&rng, 200));
		EXPECT_EQ(0x6b, p[SZ_1M - 1]);
		why = dma_pump_landed(&pump, p);
		EXPECT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);
		atomic_store(&race.removing, 1);
		ASSERT_EQ(0, unplug_pci(self->pci, remove));
		atomic_store(&race.gone, 1);
		expect_revoked(_metadata, heap, buf, p, SZ_1M);
		dma_pump_stop(&pump);
		dma += atomic_load(&pump.ok);
		/* Let every worker run a few rounds against the dead heap. */
		for (deadline = now_ms() + 5000, i = 0; i < UNPLUG_WORKERS; i++)
			while (atomic_load(&race.after_gone[i]) < 3 && now_ms() < deadline)
				sleep_ms(2);
		atomic_store(&race.stop, 1);
		for (i = 0; i < UNPLUG_WORKERS + 2; i++)
			pthread_join(tid[i], NULL);
		for (i = 0; i < UNPLUG_WORKERS; i++)
			EXPECT_LE(3, atomic_load(&race.after_gone[i])) TH_LOG("worker %d stuck", i);
		EXPECT_LT(0, atomic_load(&race.touches));
		EXPECT_EQ(0, close(race.touch_buf));
		expect_no_report(_metadata, &errs);
		EXPECT_EQ(0, munmap(p, SZ_1M));
		EXPECT_EQ(0, close(buf));
		EXPECT_EQ(0, close(heap));
		EXPECT_FALSE(path_exists(self->node));
		snprintf(cls, sizeof(cls), "/sys/class/uio_heap/%s", self->uio);
		EXPECT_FALSE(path_exists(cls));
		wide_edu_back(_metadata, &self->h, remove ? "rescan" : "bind", 10000);
		expect_usage(_metadata, self->uio, 0, 0);
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

/* Load/unload cycles while threads open and allocate: refused while they hold a heap. */
#define MODULE_HAMMERS	2

EDU_UNPLUG_FIXTURE(module);

/* Every heap is back and works (@check); and holds nothing (@idle). */
static void module_heaps_back(struct __test_metadata *_metadata, FIXTURE_DATA(module) *self,
			      bool check, bool idle)
{
	const char *why;
	int i;

	for (i = 0; i < 2; i++) {
		ASSERT_LE(0, wait_path(self->h.node[i], true, 5000))
			TH_LOG("%s did not come back", self->h.node[i]);
		why = check ? heap_check(self->h.node[i], SZ_64K) : NULL;
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		if (idle)
			expect_usage(_metadata, self->h.uio[i], 0, 0);
	}
}

static atomic_long hammer_opens, hammer_stop;

static void *module_hammer_fn(void *arg)
{
	long k = (intptr_t)arg;
	const char *node;
	struct prng rng;
	int heap, buf;

	prng_seed(&rng, seed ^ (0x5eed + k));
	while (!atomic_load(&hammer_stop)) {
		node = eh->node[k++ % 2];
		heap = open(node, O_RDWR | O_CLOEXEC);
		/* Gone, going, or not yet back. */
		report_if(&errs, heap < 0 && errno != ENOENT && errno != ENXIO &&
			  errno != ENODEV, "open %s: %s", node, strerror(errno));
		if (heap >= 0) {
			/* An open heap fd pins the module: the heap stays, unloading loses. */
			buf = uioheap_alloc(heap, PAGE_SZ, O_RDWR | O_CLOEXEC);
			report_if(&errs, buf < 0, "alloc on an open heap: %s", strerror(-buf));
			usleep(prng_below(&rng, 500));
			if (buf >= 0)
				close(buf);
			close(heap);
			atomic_fetch_add(&hammer_opens, 1);
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

	ASSERT_NE(NULL, getenv("UIOHEAP_KO")) TH_LOG("UIOHEAP_KO is not set");
	first_error_init(&errs, false);
	eh = &self->h;
	seed = run_seed("UIOHEAP_SEED");
	for (i = 0; i < MODULE_HAMMERS; i++)
		ASSERT_EQ(0, pthread_create(&hammer[i], NULL, module_hammer_fn, (void *)(long)i));
	for (c = 0; c < cycles; c++) {
		module_heaps_back(_metadata, self, c % 5 == 0, false);
		for (t = now_ms(); (ret = rmmod_nb("uio_heap")); refused++) {
			ASSERT_EQ(EWOULDBLOCK, ret) TH_LOG("cycle %d: %s", c, strerror(ret));
			ASSERT_GT(10000, now_ms() - t) TH_LOG("cycle %d: refused for 10 s", c);
			usleep(200);
		}
		EXPECT_FALSE(module_loaded("uio_heap"));
		for (i = 0; i < 2; i++)
			EXPECT_FALSE(path_exists(self->h.node[i]));
		ret = insmod_file(getenv("UIOHEAP_KO"));
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: insmod: %s", c, strerror(ret));
	}
	atomic_store(&hammer_stop, 1);
	for (i = 0; i < MODULE_HAMMERS; i++)
		pthread_join(hammer[i], NULL);
	expect_no_report(_metadata, &errs);
	EXPECT_LT(0, atomic_load(&hammer_opens));
	module_heaps_back(_metadata, self, true, true);
	EXPECT_LE(1, refused);
	summary("rmmod_refused=%ld rmmod_ok=%d", refused, c);
}

TEST_HARNESS_MAIN
