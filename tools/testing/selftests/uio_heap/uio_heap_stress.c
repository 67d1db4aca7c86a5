// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap robustness battery: concurrency, limits, allocation failures,
 * device hot-unplug and module unload racing with users of the heaps.
 *
 * Short forms by default; UIOHEAP_LONG=1 runs the long forms.  Random
 * choices come from a seeded PRNG (UIOHEAP_SEED repeats a run).  Figures
 * are printed as "# summary: key=value" lines.
 *
 * Order matters: the tests that keep the devices in place come first, then
 * the ones that remove devices, then the ones that unload the module.
 * Every test leaves uio_heap loaded and both devices bound.
 */
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "common.h"

/* Tests whose long form runs for minutes. */
#define LONG_TIMEOUT	900

/* The heaps of both edu devices. */
EDU_HEAPS_FIXTURE(heaps);

/*
 * Concurrent stress: processes x threads allocate, map, touch, check and
 * free random sizes on every heap.  Each buffer carries a signature in
 * every page, checked through fresh mappings at random offsets and before
 * it is freed; addresses must be page aligned, within the mask, stable,
 * and no two live buffers of one heap may overlap in its address space.
 */
#define STRESS_PROCS_MAX	4
#define STRESS_THREADS_MAX	4
#define STRESS_LIVE		8
#define STRESS_SLOTS		(STRESS_PROCS_MAX * STRESS_THREADS_MAX * STRESS_LIVE)

struct stress_slot {
	uint64_t addr;
	uint64_t len;
	int heap;
	int used;
};

struct stress_shared {
	pthread_mutex_t table_lock;		/* process-shared */
	struct stress_slot table[STRESS_SLOTS];
	struct first_error err;
	atomic_long allocs[2];
	atomic_long enomem[2];
	atomic_long enomem_small;		/* wide heap, <= 64 KiB */
	atomic_long frees;
	atomic_long checks;
	long long deadline;
	uint64_t seed;
	int nheaps;
	int threads;
	uint64_t mask[2];
	char node[2][64];
	bool narrow[2];
};

struct stress_buf {
	int fd;
	int heap;
	size_t len;
	uint64_t addr;
	uint64_t id;
	unsigned char *map;
};

struct stress_thread {
	struct stress_shared *sh;
	int proc;
	int tid;
	int heap_fd[2];
	struct prng rng;
	struct stress_buf live[STRESS_LIVE];
	uint64_t serial;
};

static int stress_slot_of(struct stress_thread *t, int i)
{
	return (t->proc * STRESS_THREADS_MAX + t->tid) * STRESS_LIVE + i;
}

/* Records a live buffer; false if it overlaps another of its heap. */
static bool stress_insert(struct stress_thread *t, int i)
{
	struct stress_shared *sh = t->sh;
	struct stress_buf *b = &t->live[i];
	bool ok = true;
	int s;

	pthread_mutex_lock(&sh->table_lock);
	for (s = 0; s < STRESS_SLOTS; s++) {
		struct stress_slot *o = &sh->table[s];

		if (!o->used || o->heap != b->heap)
			continue;
		if (b->addr < o->addr + o->len && o->addr < b->addr + b->len) {
			report(&sh->err,
			       "heap %d: buffer at %#llx+%#zx overlaps live %#llx+%#llx",
			       b->heap, (unsigned long long)b->addr, b->len,
			       (unsigned long long)o->addr,
			       (unsigned long long)o->len);
			ok = false;
		}
	}
	s = stress_slot_of(t, i);
	sh->table[s] = (struct stress_slot){ b->addr, b->len, b->heap, 1 };
	pthread_mutex_unlock(&sh->table_lock);
	return ok;
}

static void stress_remove(struct stress_thread *t, int i)
{
	pthread_mutex_lock(&t->sh->table_lock);
	t->sh->table[stress_slot_of(t, i)].used = 0;
	pthread_mutex_unlock(&t->sh->table_lock);
}

/* 4 KiB to 4 MiB, mostly small. */
static size_t stress_len(struct prng *r)
{
	uint64_t span = 1ULL << prng_below(r, 11);

	return (1 + prng_below(r, span)) * PAGE_SZ;
}

static void stress_check(struct stress_thread *t, struct stress_buf *b,
			 const unsigned char *p, size_t first, size_t n,
			 const char *what)
{
	uint64_t seen = 0;
	size_t at = 0;
	int ret;

	ret = sig_pages((volatile unsigned char *)p, first, n, b->id, false,
			&at, &seen);
	if (ret > 0)
		report(&t->sh->err, "%s: signal %d at page %zu of %zu", what,
		       ret, at, b->len / PAGE_SZ);
	else if (ret < 0)
		report(&t->sh->err,
		       "%s: page %zu of buffer %#llx holds %#llx, not its signature",
		       what, at, (unsigned long long)b->id,
		       (unsigned long long)seen);
	atomic_fetch_add(&t->sh->checks, 1);
}

static void stress_alloc(struct stress_thread *t, int i)
{
	struct stress_shared *sh = t->sh;
	struct stress_buf *b = &t->live[i];
	int h = prng_below(&t->rng, sh->nheaps), fd, ret;
	size_t len = stress_len(&t->rng), at;
	uint64_t addr = 0, seen;
	unsigned char *p;

	fd = uioheap_alloc(t->heap_fd[h], len, O_RDWR | O_CLOEXEC);
	if (fd == -ENOMEM) {
		/* Contiguous memory within a mask can run out; count it. */
		atomic_fetch_add(&sh->enomem[h], 1);
		if (!sh->narrow[h] && len <= SZ_64K)
			atomic_fetch_add(&sh->enomem_small, 1);
		return;
	}
	if (fd < 0) {
		report(&sh->err, "alloc of %zu on %s: %s", len, sh->node[h],
		       strerror(-fd));
		return;
	}
	atomic_fetch_add(&sh->allocs[h], 1);
	ret = uioheap_dma_addr(t->heap_fd[h], fd, &addr, NULL);
	if (ret) {
		report(&sh->err, "address of a fresh buffer: %s", strerror(-ret));
		close(fd);
		return;
	}
	if (addr & (PAGE_SZ - 1) || addr + len - 1 > sh->mask[h] ||
	    addr + len - 1 < addr)
		report(&sh->err, "%s: buffer at %#llx+%#zx, mask %#llx",
		       sh->node[h], (unsigned long long)addr, len,
		       (unsigned long long)sh->mask[h]);

	*b = (struct stress_buf){
		.fd = fd, .heap = h, .len = len, .addr = addr,
		.id = (uint64_t)(t->proc * STRESS_THREADS_MAX + t->tid) << 32 |
		      ++t->serial,
	};
	stress_insert(t, i);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		report(&sh->err, "mmap of %zu: %s", len, strerror(errno));
		return;
	}
	if (uioheap_sync(fd, 1, 1))
		report(&sh->err, "sync start: %s", strerror(errno));
	/* Fresh buffers are zeroed: look at the first and the last page. */
	if (p[0] || p[len - 1])
		report(&sh->err, "a fresh buffer of %zu is not zeroed", len);
	ret = sig_pages(p, 0, len / PAGE_SZ, b->id, true, &at, &seen);
	if (ret)
		report(&sh->err, "signal %d writing page %zu of a fresh buffer",
		       ret, at);
	if (uioheap_sync(fd, 0, 1))
		report(&sh->err, "sync end: %s", strerror(errno));
	if (prng_below(&t->rng, 2))
		b->map = p;
	else
		munmap(p, len);
}

/* A fresh mapping of a random part of @b must show the right pages. */
static void stress_remap(struct stress_thread *t, struct stress_buf *b)
{
	size_t pages = b->len / PAGE_SZ, first, n;
	unsigned char *p;

	first = prng_below(&t->rng, pages);
	n = 1 + prng_below(&t->rng, pages - first < 64 ? pages - first : 64);
	p = mmap(NULL, n * PAGE_SZ, PROT_READ, MAP_SHARED, b->fd,
		 first * PAGE_SZ);
	if (p == MAP_FAILED) {
		report(&t->sh->err, "mmap of pages %zu+%zu of %zu: %s", first,
		       n, pages, strerror(errno));
		return;
	}
	stress_check(t, b, p, first, n, "remapped");
	munmap(p, n * PAGE_SZ);
}

static void stress_requery(struct stress_thread *t, struct stress_buf *b)
{
	uint64_t addr = 0;
	int ret;

	/* Both paths: the library (dma-buf ioctl first) and the heap's. */
	ret = prng_below(&t->rng, 2) ?
		-heap_addr(t->heap_fd[b->heap], b->fd, 0, &addr) :
		uioheap_dma_addr(t->heap_fd[b->heap], b->fd, &addr, NULL);
	if (ret || addr != b->addr)
		report(&t->sh->err, "address of a live buffer: %s, %#llx != %#llx",
		       strerror(-ret), (unsigned long long)addr,
		       (unsigned long long)b->addr);
}

static void stress_free(struct stress_thread *t, int i)
{
	struct stress_buf *b = &t->live[i];

	if (b->map) {
		stress_check(t, b, b->map, 0, b->len / PAGE_SZ, "before free");
		if (munmap(b->map, b->len))
			report(&t->sh->err, "munmap: %s", strerror(errno));
	} else {
		stress_remap(t, b);
	}
	/* Out of the table before the address can be reused. */
	stress_remove(t, i);
	if (close(b->fd))
		report(&t->sh->err, "close of a buffer: %s", strerror(errno));
	atomic_fetch_add(&t->sh->frees, 1);
	b->fd = -1;
	b->map = NULL;
}

static void *stress_thread_fn(void *arg)
{
	struct stress_thread *t = arg;
	struct stress_shared *sh = t->sh;
	int i, h, dup_fd;

	for (i = 0; i < STRESS_LIVE; i++)
		t->live[i].fd = -1;
	for (h = 0; h < sh->nheaps; h++) {
		t->heap_fd[h] = open(sh->node[h], O_RDWR | O_CLOEXEC);
		if (t->heap_fd[h] < 0) {
			report(&sh->err, "open %s: %s", sh->node[h],
			       strerror(errno));
			return NULL;
		}
	}

	while (now_ms() < sh->deadline && !atomic_load(&sh->err.count)) {
		unsigned int act = prng_below(&t->rng, 100);
		struct stress_buf *b;

		i = prng_below(&t->rng, STRESS_LIVE);
		b = &t->live[i];
		if (b->fd < 0) {
			stress_alloc(t, i);
			continue;
		}
		if (act < 30) {
			stress_free(t, i);
		} else if (act < 55) {
			stress_remap(t, b);
		} else if (act < 70) {
			if (b->map)
				stress_check(t, b, b->map, 0, b->len / PAGE_SZ,
					     "mapped");
		} else if (act < 90) {
			stress_requery(t, b);
		} else {
			/* Another fd for the same buffer, closed at once. */
			dup_fd = dup(b->fd);
			if (dup_fd < 0 || close(dup_fd))
				report(&sh->err, "dup/close: %s", strerror(errno));
		}
	}
	for (i = 0; i < STRESS_LIVE; i++)
		if (t->live[i].fd >= 0)
			stress_free(t, i);
	for (h = 0; h < sh->nheaps; h++)
		close(t->heap_fd[h]);
	return NULL;
}

static int stress_process(struct stress_shared *sh, int proc)
{
	struct stress_thread th[STRESS_THREADS_MAX] = { 0 };
	pthread_t tid[STRESS_THREADS_MAX];
	int i;

	for (i = 0; i < sh->threads; i++) {
		th[i].sh = sh;
		th[i].proc = proc;
		th[i].tid = i;
		prng_seed(&th[i].rng, sh->seed ^ (uint64_t)(proc * 64 + i) << 48);
		if (pthread_create(&tid[i], NULL, stress_thread_fn, &th[i])) {
			report(&sh->err, "pthread_create failed");
			break;
		}
	}
	while (i--)
		pthread_join(tid[i], NULL);
	return atomic_load(&sh->err.count) ? 1 : 0;
}

TEST_F_TIMEOUT(heaps, concurrent_alloc_map_free, 300)
{
	unsigned long long bytes[2], bufs[2], b, n;
	int procs = SHORT_LONG(2, 3), status, i, h;
	long ms = SHORT_LONG(10000, 60000);
	struct stress_shared *sh;
	long long start;
	pid_t pid[STRESS_PROCS_MAX];

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	{
		pthread_mutexattr_t attr;

		pthread_mutexattr_init(&attr);
		pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
		pthread_mutex_init(&sh->table_lock, &attr);
	}
	first_error_init(&sh->err, true);
	sh->seed = run_seed("UIOHEAP_SEED");
	sh->nheaps = self->n;
	sh->threads = SHORT_LONG(3, 4);
	for (h = 0; h < self->n; h++) {
		strcpy(sh->node[h], self->node[h]);
		sh->mask[h] = self->mask[h];
		sh->narrow[h] = h == 0;
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
	}

	start = now_ms();
	sh->deadline = start + ms;
	for (i = 0; i < procs; i++) {
		fflush(stdout);
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0)
			_exit(stress_process(sh, i));
	}
	for (i = 0; i < procs; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status))
			TH_LOG("worker process %d killed by signal %d", i,
			       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	EXPECT_EQ(0, atomic_load(&sh->err.count))
		TH_LOG("%ld errors, first: %s", atomic_load(&sh->err.count),
		       sh->err.msg);

	for (h = 0; h < self->n; h++) {
		/* Something must have been exercised on every heap. */
		EXPECT_LT(0, atomic_load(&sh->allocs[h]))
			TH_LOG("%s: no allocation succeeded", self->node[h]);
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(0, b) TH_LOG("%s: %llu bytes left", self->uio[h], b);
		EXPECT_EQ(0, n) TH_LOG("%s: %llu buffers left", self->uio[h], n);
		EXPECT_EQ(bytes[h], b);
		EXPECT_EQ(bufs[h], n);
	}
	/* The wide heap has plenty below 4 GiB: small buffers never fail. */
	EXPECT_EQ(0, atomic_load(&sh->enomem_small));

	printf("# %d processes x %d threads for %lld ms: %ld checks, ENOMEM %ld/%ld\n",
	       procs, sh->threads, now_ms() - start, atomic_load(&sh->checks),
	       atomic_load(&sh->enomem[0]), atomic_load(&sh->enomem[1]));
	summary("buffers_allocated=%ld",
		atomic_load(&sh->allocs[0]) + atomic_load(&sh->allocs[1]));
	munmap(sh, sizeof(*sh));
}

/*
 * max_bytes under concurrency: threads allocate and hold 64 KiB buffers
 * against a 1 MiB limit while another lowers and raises it, and a sampler
 * reads allocated_bytes.  The sum held never exceeds the limit, and every
 * refusal is ENOSPC.
 */
#define LIMIT_THREADS	6
#define LIMIT_HOLD	6

struct limit_run {
	const char *node;
	const char *uio;
	unsigned long long base;	/* allocated_bytes before */
	unsigned long long limit;	/* the highest limit set */
	long long deadline;
	uint64_t seed;
	atomic_ullong held;
	atomic_ullong max_held;
	atomic_ullong max_sysfs;
	atomic_long allocs, enospc, samples, toggles;
	atomic_int stop;
	struct first_error err;
};

struct limit_thread {
	struct limit_run *r;
	int id;
};

static void *limit_worker(void *arg)
{
	struct limit_thread *lt = arg;
	struct limit_run *r = lt->r;
	int fds[LIMIT_HOLD], n = 0, heap;
	unsigned long long now, max;
	struct prng rng;

	prng_seed(&rng, r->seed + lt->id);
	heap = open(r->node, O_RDWR | O_CLOEXEC);
	if (heap < 0) {
		report(&r->err, "open %s: %s", r->node, strerror(errno));
		return NULL;
	}
	while (now_ms() < r->deadline) {
		int fd;

		/* Mostly allocate: the heap must be kept at its limit. */
		if (n == LIMIT_HOLD || (n && prng_below(&rng, 4) == 0)) {
			int i = prng_below(&rng, n);

			/* Uncounted before the kernel lets go of it. */
			atomic_fetch_sub(&r->held, SZ_64K);
			close(fds[i]);
			fds[i] = fds[--n];
			continue;
		}
		fd = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		if (fd == -ENOSPC) {
			atomic_fetch_add(&r->enospc, 1);
			usleep(prng_below(&rng, 500));
			continue;
		}
		if (fd < 0) {
			report(&r->err, "alloc: %s, not ENOSPC", strerror(-fd));
			continue;
		}
		/* Counted once the kernel has it: held never runs ahead. */
		now = atomic_fetch_add(&r->held, SZ_64K) + SZ_64K;
		if (now > r->limit - r->base)
			report(&r->err, "%llu bytes held, limit %llu", now,
			       r->limit - r->base);
		max = atomic_load(&r->max_held);
		while (now > max &&
		       !atomic_compare_exchange_weak(&r->max_held, &max, now))
			;
		atomic_fetch_add(&r->allocs, 1);
		fds[n++] = fd;
	}
	while (n) {
		atomic_fetch_sub(&r->held, SZ_64K);
		close(fds[--n]);
	}
	close(heap);
	return NULL;
}

static void *limit_sampler(void *arg)
{
	struct limit_run *r = arg;
	unsigned long long v, max;

	while (!atomic_load(&r->stop)) {
		if (uioheap_sysfs_read(r->uio, "allocated_bytes", &v)) {
			report(&r->err, "allocated_bytes unreadable");
			break;
		}
		if (v > r->limit)
			report(&r->err, "allocated_bytes %llu > max_bytes %llu",
			       v, r->limit);
		max = atomic_load(&r->max_sysfs);
		if (v > max)
			atomic_store(&r->max_sysfs, v);
		atomic_fetch_add(&r->samples, 1);
	}
	return NULL;
}

/* Lowering the limit below the use only stops new buffers. */
static void *limit_toggler(void *arg)
{
	struct limit_run *r = arg;
	bool low = false;

	while (!atomic_load(&r->stop)) {
		usleep(100000);
		low = !low;
		if (uioheap_sysfs_write(r->uio, "max_bytes",
					low ? r->base + SZ_1M / 2 : r->limit))
			report(&r->err, "max_bytes write failed");
		atomic_fetch_add(&r->toggles, 1);
	}
	return NULL;
}

TEST_F_TIMEOUT(heaps, max_bytes_under_concurrency, 120)
{
	struct limit_thread lt[LIMIT_THREADS];
	pthread_t tid[LIMIT_THREADS], sampler, toggler;
	int h = self->n - 1, heap, fds[17], i, n;
	unsigned long long v, bufs;
	struct limit_run *r;

	r = calloc(1, sizeof(*r));
	ASSERT_NE(NULL, r);
	first_error_init(&r->err, false);
	r->node = self->node[h];
	r->uio = self->uio[h];
	r->seed = run_seed("UIOHEAP_SEED");
	ASSERT_EQ(0, heap_usage(r->uio, &r->base, &bufs));
	r->limit = r->base + SZ_1M;
	ASSERT_EQ(0, uioheap_sysfs_write(r->uio, "max_bytes", r->limit));

	/* Alone first: exactly 16 buffers of 64 KiB fit, the 17th is refused. */
	heap = open(r->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	for (n = 0; n < 17; n++) {
		fds[n] = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0)
			break;
	}
	EXPECT_EQ(16, n);
	EXPECT_EQ(-ENOSPC, n < 17 ? fds[n] : 0);
	ASSERT_EQ(0, uioheap_sysfs_read(r->uio, "allocated_bytes", &v));
	EXPECT_EQ(r->limit, v);
	for (i = 0; i < n; i++)
		close(fds[i]);

	r->deadline = now_ms() + SHORT_LONG(3000, 20000);
	for (i = 0; i < LIMIT_THREADS; i++) {
		lt[i] = (struct limit_thread){ r, i };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, limit_worker, &lt[i]));
	}
	ASSERT_EQ(0, pthread_create(&sampler, NULL, limit_sampler, r));
	ASSERT_EQ(0, pthread_create(&toggler, NULL, limit_toggler, r));
	for (i = 0; i < LIMIT_THREADS; i++)
		pthread_join(tid[i], NULL);
	atomic_store(&r->stop, 1);
	pthread_join(sampler, NULL);
	pthread_join(toggler, NULL);

	EXPECT_EQ(0, atomic_load(&r->err.count))
		TH_LOG("%ld errors, first: %s", atomic_load(&r->err.count),
		       r->err.msg);
	EXPECT_LT(0, atomic_load(&r->enospc)) TH_LOG("the limit never bit");
	EXPECT_LT(0, atomic_load(&r->samples));
	EXPECT_GE(r->limit, atomic_load(&r->max_sysfs));
	/* The threads did fill the heap, at least to the lower limit. */
	EXPECT_LE(SZ_1M / 2, atomic_load(&r->max_held));

	EXPECT_EQ(0, uioheap_sysfs_write(r->uio, "max_bytes", 0));
	EXPECT_EQ(0, uioheap_sysfs_read(r->uio, "max_bytes", &v));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, heap_usage(r->uio, &v, &bufs));
	EXPECT_EQ(r->base, v);
	EXPECT_EQ(0, bufs);
	/* And without a limit again, more than 1 MiB fits. */
	fds[0] = uioheap_alloc(heap, 2 * SZ_1M, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fds[0]);
	close(fds[0]);
	close(heap);

	printf("# max_bytes: %ld allocations, %ld ENOSPC, %ld samples (max %llu), %ld limit changes\n",
	       atomic_load(&r->allocs), atomic_load(&r->enospc),
	       atomic_load(&r->samples),
	       (unsigned long long)atomic_load(&r->max_sysfs),
	       atomic_load(&r->toggles));
	summary("max_bytes_allocs=%ld max_bytes_refused=%ld",
		atomic_load(&r->allocs), atomic_load(&r->enospc));
	free(r);
}

/*
 * Allocation failure injection (failslab, fail_page_alloc; the project's
 * debug kernel only).  First every fault point of one allocation in turn
 * (fail-nth), then random failures; each allocation either works fully
 * or fails with ENOMEM, and nothing is left behind.
 */
#define FAILSLAB	"/sys/kernel/debug/failslab"
#define FAIL_PAGE	"/sys/kernel/debug/fail_page_alloc"

static const char *const inject_attrs[] = {
	"probability", "interval", "times", "space", "verbose",
	"task-filter", "ignore-gfp-wait", "min-order", "ignore-gfp-highmem",
};

#define NR_INJECT_ATTRS	ARRAY_SIZE(inject_attrs)

FIXTURE(inject) {
	EDU_HEAPS_FIELDS;
	bool have[2];				/* failslab, fail_page_alloc */
	char saved[2][NR_INJECT_ATTRS][32];
	int mif;				/* /proc/self/make-it-fail */
	int nth;				/* /proc/thread-self/fail-nth */
};

static const char *inject_dir(int i)
{
	return i ? FAIL_PAGE : FAILSLAB;
}

static int read_attr(const char *dir, const char *attr, char *val, size_t size)
{
	char path[128];
	int n;

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	n = read_str(path, val, size);
	return n < 0 ? n : 0;
}

static int write_attr(const char *dir, const char *attr, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	return write_str(path, val);
}

FIXTURE_SETUP(inject)
{
	unsigned int a;
	int i;

	int patched = env_bool("UIOHEAP_PATCHED");

	self->mif = -1;
	self->nth = -1;
	self->have[0] = path_exists(FAILSLAB);
	self->have[1] = path_exists(FAIL_PAGE);
	/* Only the patched debug kernel is built with fault injection. */
	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	if (!patched && !self->have[0] && !self->have[1])
		SKIP(return, "kernel without fault injection");
	ASSERT_TRUE(self->have[0] && self->have[1])
		TH_LOG("no failslab or fail_page_alloc in debugfs");
	/*
	 * Injected failures can hit DMA-API debugging's own allocation,
	 * which then turns itself off: the host forgives that from here.
	 */
	write_str("/dev/kmsg", "uioheap: fault injection starts\n");
	EDU_HEAPS_SETUP(self);
	for (i = 0; i < 2; i++) {
		if (!self->have[i])
			continue;
		for (a = 0; a < NR_INJECT_ATTRS; a++)
			if (read_attr(inject_dir(i), inject_attrs[a],
				      self->saved[i][a], sizeof(self->saved[0][0])))
				self->saved[i][a][0] = '\0';
	}
	self->mif = open("/proc/self/make-it-fail", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->mif);
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	/*
	 * Injected failures must hit the module, not our own page faults (the
	 * kernel's copy_to_user() into an absent stack page would fail too).
	 */
	ASSERT_EQ(0, mlockall(MCL_CURRENT | MCL_FUTURE));
}

static void inject_disarm(FIXTURE_DATA(inject) *self)
{
	int i;

	if (self->mif >= 0)
		pwrite(self->mif, "0", 1, 0);
	if (self->nth >= 0)
		pwrite(self->nth, "0", 1, 0);
	for (i = 0; i < 2; i++)
		if (self->have[i])
			write_attr(inject_dir(i), "probability", "0");
}

FIXTURE_TEARDOWN(inject)
{
	unsigned int a;
	int i;

	inject_disarm(self);
	for (i = 0; i < 2; i++) {
		if (!self->have[i])
			continue;
		for (a = 0; a < NR_INJECT_ATTRS; a++)
			if (self->saved[i][a][0])
				write_attr(inject_dir(i), inject_attrs[a],
					   self->saved[i][a]);
	}
	if (self->mif >= 0)
		close(self->mif);
	if (self->nth >= 0)
		close(self->nth);
	munlockall();
}

/* Configures one fault attribute set; 0 or -errno. */
static int inject_arm(int i, const char *probability, const char *times)
{
	const char *dir = inject_dir(i);
	int ret = 0;

	ret |= write_attr(dir, "probability", "0");
	ret |= write_attr(dir, "interval", "1");
	ret |= write_attr(dir, "times", times);
	ret |= write_attr(dir, "space", "0");
	ret |= write_attr(dir, "verbose", "0");
	ret |= write_attr(dir, "task-filter", "Y");
	ret |= write_attr(dir, "ignore-gfp-wait", "N");
	if (i) {
		ret |= write_attr(dir, "min-order", "0");
		ret |= write_attr(dir, "ignore-gfp-highmem", "N");
	}
	ret |= write_attr(dir, "probability", probability);
	return ret;
}

/*
 * A buffer that the heap handed out under fault injection must be whole:
 * its size, a mapping that reads zeroes and keeps what is written, and
 * an address.  Called with injection off.  Returns NULL or what failed.
 */
static const char *inject_buffer_ok(int heap, int fd, size_t len)
{
	unsigned char *p;
	struct stat st;
	uint64_t addr;
	size_t i;

	if (fstat(fd, &st) || (size_t)st.st_size != len)
		return "size";
	if (uioheap_dma_addr(heap, fd, &addr, NULL) || addr & (PAGE_SZ - 1))
		return "address";
	p = uioheap_map(fd, len);
	if (!p)
		return "mmap";
	if (probe_pages(p, len, false, 0)) {
		munmap(p, len);
		return "fault reading the mapping";
	}
	for (i = 0; i < len; i += PAGE_SZ)
		if (p[i]) {
			munmap(p, len);
			return "not zeroed";
		}
	if (probe_pages(p, len, true, 0x3c) || p[len - PAGE_SZ] != 0x3c) {
		munmap(p, len);
		return "fault writing the mapping";
	}
	munmap(p, len);
	return NULL;
}

static int inject_alloc(int mif, int heap, size_t len)
{
	int fd;

	if (mif >= 0 && pwrite(mif, "1", 1, 0) != 1)
		return -EIO;
	fd = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
	if (mif >= 0)
		pwrite(mif, "0", 1, 0);
	return fd;
}

TEST_F_TIMEOUT(inject, alloc_failures_are_clean, 600)
{
	static const size_t nth_sizes[] = { SZ_4K, SZ_64K + SZ_4K, SZ_1M };
	unsigned long long bytes[2], bufs[2], b, n, before, after;
	long ok = 0, enomem = 0, nth_hits = 0, nth_enomem = 0, other = 0;
	int attempts = SHORT_LONG(300, 3000), h, i, fd, heap[2];
	char val[32], num[16];
	const char *why;
	struct prng rng;
	unsigned int s, k;

	prng_seed(&rng, run_seed("UIOHEAP_SEED"));
	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &bytes[h], &bufs[h]));
		heap[h] = open(self->node[h], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap[h]);
	}

	/*
	 * Every fault point in turn: the k-th allocation of one ioctl fails,
	 * for k = 1, 2, ... until the ioctl no longer reaches a k-th one.
	 */
	if (self->nth >= 0) {
		for (i = 0; i < 2; i++)
			if (self->have[i])
				ASSERT_EQ(0, inject_arm(i, "0", "-1"));
		for (h = 0; h < self->n; h++) {
			for (s = 0; s < ARRAY_SIZE(nth_sizes); s++) {
				for (k = 1; k <= 500; k++) {
					snprintf(num, sizeof(num), "%u", k);
					ASSERT_EQ((ssize_t)strlen(num),
						  pwrite(self->nth, num, strlen(num), 0));
					fd = uioheap_alloc(heap[h], nth_sizes[s],
							   O_RDWR | O_CLOEXEC);
					ASSERT_LT(0, pread(self->nth, val, sizeof(val) - 1, 0));
					pwrite(self->nth, "0", 1, 0);
					if (fd >= 0) {
						why = inject_buffer_ok(heap[h], fd, nth_sizes[s]);
						EXPECT_EQ(NULL, why)
							TH_LOG("%s, %zu bytes, fault %u: %s",
							       self->node[h], nth_sizes[s], k, why);
						close(fd);
					} else {
						EXPECT_EQ(-ENOMEM, fd)
							TH_LOG("%s, %zu bytes, fault %u: %s",
							       self->node[h], nth_sizes[s], k,
							       strerror(-fd));
					}
					/* Not consumed: the ioctl has fewer fault points. */
					if (atoi(val)) {
						EXPECT_LE(0, fd);
						break;
					}
					nth_hits++;
					if (fd < 0)
						nth_enomem++;
				}
				EXPECT_GT(500, k);
			}
			ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
			EXPECT_EQ(bytes[h], b) TH_LOG("%s after fail-nth", self->uio[h]);
			EXPECT_EQ(bufs[h], n);
		}
		printf("# fail-nth: %ld fault points hit, %ld ENOMEM, the others recovered\n",
		       nth_hits, nth_enomem);
	}

	/* Random failures, as the brief for the debug kernel arms them. */
	before = 0;
	for (i = 0; i < 2; i++) {
		if (!self->have[i])
			continue;
		ASSERT_EQ(0, inject_arm(i, i ? "2" : "5", "1000000"));
		before += 1000000;
	}
	for (k = 0; k < (unsigned int)attempts; k++) {
		size_t len = (1 + prng_below(&rng, 64)) * PAGE_SZ;
		int hh = k % self->n;

		fd = inject_alloc(self->mif, heap[hh], len);
		if (fd >= 0) {
			ok++;
			/* What needs no allocation works even while armed. */
			pwrite(self->mif, "1", 1, 0);
			EXPECT_EQ(0, uioheap_sync(fd, 1, 1));
			EXPECT_EQ(0, uioheap_sync(fd, 0, 1));
			pwrite(self->mif, "0", 1, 0);
			why = inject_buffer_ok(heap[hh], fd, len);
			EXPECT_EQ(NULL, why) TH_LOG("%s: %s", self->node[hh], why);
			EXPECT_EQ(0, close(fd));
		} else if (fd == -ENOMEM) {
			enomem++;
		} else {
			other++;
			TH_LOG("%s: allocation failed with %s, not ENOMEM",
			       self->node[hh], strerror(-fd));
		}
	}
	after = 0;
	for (i = 0; i < 2; i++) {
		if (!self->have[i])
			continue;
		ASSERT_EQ(0, read_attr(inject_dir(i), "times", val, sizeof(val)));
		after += strtoull(val, NULL, 0);
	}
	inject_disarm(self);

	EXPECT_EQ(0, other);
	EXPECT_LT(0, before - after) TH_LOG("no fault was injected");
	EXPECT_LT(0, ok) TH_LOG("no allocation survived the injection");
	for (h = 0; h < self->n; h++) {
		ASSERT_EQ(0, heap_usage(self->uio[h], &b, &n));
		EXPECT_EQ(bytes[h], b) TH_LOG("%s: %llu bytes, was %llu",
					      self->uio[h], b, bytes[h]);
		EXPECT_EQ(bufs[h], n);
		why = heap_check(self->node[h], SZ_1M);
		EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		close(heap[h]);
	}
	printf("# injection: %d allocations, %ld whole, %ld ENOMEM, %ld other\n",
	       attempts, ok, enomem, other);
	summary("faults_injected=%lld", (long long)(before - after) + nth_hits);
}

/*
 * Hot-unplug races: one thread holds a mapped buffer and its address
 * while the device DMAs into it, others allocate, map, query and free in
 * a loop, and the device goes.
 */
#define UNPLUG_WORKERS	3

FIXTURE(unplug) {
	char pci[32];
	char uio[16];
	char node[64];
};

FIXTURE_SETUP(unplug)
{
	struct edu_heaps h;

	edu_heaps_get(_metadata, &h);
	strcpy(self->pci, h.pci[1]);
	strcpy(self->uio, h.uio[1]);
	strcpy(self->node, h.node[1]);
}

FIXTURE_TEARDOWN(unplug)
{
	replug_pci(self->pci, self->uio, sizeof(self->uio));
}

struct unplug_race {
	const char *node;
	uint64_t seed;
	atomic_int removing;		/* the remove/unbind write started */
	atomic_int gone;		/* ... and returned */
	atomic_int stop;
	atomic_long iters, allocs, enodev, sigbus;
	atomic_long open_enoent, open_enxio, open_enodev;
	struct first_error err;
};

struct unplug_worker {
	struct unplug_race *r;
	int id;
	int heap;			/* opened for it before the unplug */
	atomic_long after_gone;		/* iterations begun once gone */
};

/*
 * A fresh open of the node, racing with its removal.  Failures are fine
 * only once the removal has begun (r->removing, read after the fact);
 * after it returned (@gone, read before) success is wrong.
 */
static void unplug_reopen(struct unplug_race *r, int gone)
{
	int fd, buf;

	fd = open(r->node, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (!atomic_load(&r->removing))
			report(&r->err, "open before the unplug: %s",
			       strerror(errno));
		else if (errno == ENOENT)
			atomic_fetch_add(&r->open_enoent, 1);
		else if (errno == ENXIO)
			atomic_fetch_add(&r->open_enxio, 1);
		else if (errno == ENODEV)
			atomic_fetch_add(&r->open_enodev, 1);
		else
			report(&r->err, "open during the unplug: %s",
			       strerror(errno));
		return;
	}
	if (gone)
		report(&r->err, "open of %s succeeded after the unplug", r->node);
	buf = uioheap_alloc(fd, PAGE_SZ, O_RDWR | O_CLOEXEC);
	if (buf >= 0) {
		if (gone)
			report(&r->err, "alloc succeeded after the unplug");
		if (close(buf))
			report(&r->err, "close: %s", strerror(errno));
	} else if (buf != -ENODEV || !atomic_load(&r->removing)) {
		report(&r->err, "alloc on a fresh fd: %s", strerror(-buf));
	}
	if (close(fd))
		report(&r->err, "close of a heap fd: %s", strerror(errno));
}

/* Address, mapping, access and sync of a buffer, racing with the unplug. */
static void unplug_use(struct unplug_race *r, int heap, int buf, size_t len,
		       int gone)
{
	unsigned char *p, v = 0;
	uint64_t addr;
	int ret, sig;

	ret = uioheap_dma_addr(heap, buf, &addr, NULL);
	if (ret == 0 && gone)
		report(&r->err, "address query succeeded after the unplug");
	else if (ret && (ret != -ENODEV || !atomic_load(&r->removing)))
		report(&r->err, "address query: %s", strerror(-ret));

	ret = -uioheap_sync(buf, 1, 1);
	if (ret == 0 && gone)
		report(&r->err, "sync succeeded after the unplug");
	else if (ret && (ret != ENODEV || !atomic_load(&r->removing)))
		report(&r->err, "sync: %s", strerror(ret));
	if (ret == 0)
		uioheap_sync(buf, 0, 1);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	if (p == MAP_FAILED) {
		if (errno != ENODEV || !atomic_load(&r->removing))
			report(&r->err, "mmap: %s", strerror(errno));
		return;
	}
	if (gone)
		report(&r->err, "mmap succeeded after the unplug");
	sig = probe_pages(p, len, true, 0xa5);
	if (!sig)
		sig = probe_read8(p + len - PAGE_SZ, &v);
	if (sig) {
		if (sig != SIGBUS || !atomic_load(&r->removing))
			report(&r->err, "signal %d touching a buffer", sig);
		atomic_fetch_add(&r->sigbus, 1);
	} else if (v != 0xa5) {
		/* Revoked memory faults, it never reads as something else. */
		report(&r->err, "a buffer did not keep what was written: %#x", v);
	}
	/* Once the unplug returned, no mapping may reach the memory. */
	if (atomic_load(&r->gone)) {
		sig = probe_pages(p, PAGE_SZ, false, 0);
		if (sig != SIGBUS)
			report(&r->err, "mapping readable after the unplug (%d)",
			       sig);
	}
	if (munmap(p, len))
		report(&r->err, "munmap: %s", strerror(errno));
}

static void *unplug_worker_fn(void *arg)
{
	struct unplug_worker *w = arg;
	struct unplug_race *r = w->r;
	struct prng rng;
	int heap, buf;

	prng_seed(&rng, r->seed * 131 + w->id);
	heap = w->heap;
	while (!atomic_load(&r->stop)) {
		/* Once gone at the start, everything must fail. */
		int gone = atomic_load(&r->gone);
		size_t len = PAGE_SZ << prng_below(&rng, 7);

		if (gone)
			atomic_fetch_add(&w->after_gone, 1);
		if (prng_below(&rng, 8) == 0)
			unplug_reopen(r, gone);

		buf = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
		if (buf < 0) {
			if (buf != -ENODEV || !atomic_load(&r->removing))
				report(&r->err, "alloc: %s", strerror(-buf));
			else
				atomic_fetch_add(&r->enodev, 1);
		} else {
			if (gone)
				report(&r->err, "alloc succeeded after the unplug");
			atomic_fetch_add(&r->allocs, 1);
			unplug_use(r, heap, buf, len, gone);
			if (close(buf))
				report(&r->err, "close of a buffer: %s",
				       strerror(errno));
		}
		atomic_fetch_add(&r->iters, 1);
	}
	if (close(heap))
		report(&r->err, "close of a heap fd: %s", strerror(errno));
	return NULL;
}

/*
 * The toucher maps, writes and reads back one buffer in a loop, so that
 * page faults race with the revocation: it must see its own data or
 * SIGBUS, never anything else, and only SIGBUS once the device is gone.
 */
struct unplug_toucher {
	struct unplug_race *r;
	int buf;
	size_t len;
	atomic_long rounds;
	atomic_long sigbus;
};

static void *unplug_toucher_fn(void *arg)
{
	struct unplug_toucher *t = arg;
	struct unplug_race *r = t->r;
	unsigned char val = 0, v;
	unsigned char *p;
	size_t off;
	int sig, gone;

	while (!atomic_load(&r->stop)) {
		gone = atomic_load(&r->gone);
		p = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 t->buf, 0);
		if (p == MAP_FAILED) {
			if (errno != ENODEV || !atomic_load(&r->removing))
				report(&r->err, "toucher mmap: %s",
				       strerror(errno));
			atomic_fetch_add(&t->rounds, 1);
			continue;
		}
		if (gone)
			report(&r->err, "toucher mmap succeeded after the unplug");
		val++;
		sig = probe_pages(p, t->len, true, val);
		for (off = 0; !sig && off < t->len; off += PAGE_SZ) {
			sig = probe_read8(p + off, &v);
			if (!sig && v != val) {
				report(&r->err, "toucher read %#x, wrote %#x", v,
				       val);
				break;
			}
		}
		if (sig) {
			if (sig != SIGBUS || !atomic_load(&r->removing))
				report(&r->err, "toucher got signal %d", sig);
			atomic_fetch_add(&t->sigbus, 1);
		}
		if (munmap(p, t->len))
			report(&r->err, "toucher munmap: %s", strerror(errno));
		atomic_fetch_add(&t->rounds, 1);
	}
	return NULL;
}

/*
 * The closer holds many unmapped buffers and closes them all as the
 * device goes: last closes racing with the revocation walking the heap's
 * buffers (a close evicts the dma-buf's inode before the exporter's
 * ->release() gets to take the buffer off the heap).
 */
#define UNPLUG_CLOSER_BUFS	128

struct unplug_closer {
	struct unplug_race *r;
	int fds[UNPLUG_CLOSER_BUFS];
	int n;
	atomic_long closed;
};

static void *unplug_closer_fn(void *arg)
{
	struct unplug_closer *c = arg;
	int i;

	while (!atomic_load(&c->r->removing) && !atomic_load(&c->r->stop))
		usleep(100);
	for (i = 0; i < c->n; i++) {
		if (close(c->fds[i]))
			report(&c->r->err, "closer: close: %s", strerror(errno));
		atomic_fetch_add(&c->closed, 1);
	}
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

static void unplug_loop(struct __test_metadata *_metadata,
			FIXTURE_DATA(unplug) *self, bool remove)
{
	int iterations = SHORT_LONG(5, 50), it, i, heap, buf;
	struct unplug_worker w[UNPLUG_WORKERS];
	pthread_t tid[UNPLUG_WORKERS], toucher, closer;
	struct unplug_toucher tt;
	struct unplug_closer cl;
	unsigned long long bytes, bufs;
	long long start = now_ms(), t;
	long sigbus = 0, enodev = 0, opens[3] = { 0 }, touch_sigbus = 0, dma = 0;
	char cls[96];
	static struct dma_pump pump;
	struct unplug_race *r;
	unsigned char *p;
	struct prng rng;
	uint64_t addr;
	const char *why;

	prng_seed(&rng, run_seed("UIOHEAP_SEED") + remove);
	r = calloc(1, sizeof(*r));
	ASSERT_NE(NULL, r);
	for (it = 0; it < iterations; it++) {
		memset(r, 0, sizeof(*r));
		first_error_init(&r->err, false);
		r->node = self->node;
		r->seed = prng_next(&rng);

		/* The holder: a mapped, written buffer whose address it knows. */
		heap = open(self->node, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, heap) TH_LOG("iteration %d: %s", it, strerror(errno));
		buf = uioheap_alloc(heap, SZ_1M, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf);
		ASSERT_EQ(0, uioheap_dma_addr(heap, buf, &addr, NULL));
		p = uioheap_map(buf, SZ_1M);
		ASSERT_NE(NULL, p);
		memset(p, 0x6b, SZ_1M);
		/* The device writes into its first page all along. */
		why = dma_pump_start(&pump, self->uio, heap, addr);
		ASSERT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);

		memset(&tt, 0, sizeof(tt));
		tt.r = r;
		tt.len = SZ_64K << prng_below(&rng, 3);
		tt.buf = uioheap_alloc(heap, tt.len, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, tt.buf);
		ASSERT_EQ(0, pthread_create(&toucher, NULL, unplug_toucher_fn, &tt));

		memset(&cl, 0, sizeof(cl));
		cl.r = r;
		for (cl.n = 0; cl.n < UNPLUG_CLOSER_BUFS; cl.n++) {
			cl.fds[cl.n] = uioheap_alloc(heap, PAGE_SZ, O_RDWR | O_CLOEXEC);
			ASSERT_LE(0, cl.fds[cl.n]);
		}
		ASSERT_EQ(0, pthread_create(&closer, NULL, unplug_closer_fn, &cl));

		for (i = 0; i < UNPLUG_WORKERS; i++) {
			w[i].r = r;
			w[i].id = i;
			atomic_store(&w[i].after_gone, 0);
			/*
			 * Here, not in the thread: a thread that TCG starts
			 * late would otherwise find the node already gone.
			 */
			w[i].heap = open(self->node, O_RDWR | O_CLOEXEC);
			ASSERT_LE(0, w[i].heap);
			ASSERT_EQ(0, pthread_create(&tid[i], NULL,
						    unplug_worker_fn, &w[i]));
		}
		/* Running, then unplugged at a different point each time. */
		t = now_ms();
		while ((atomic_load(&r->iters) < UNPLUG_WORKERS ||
			!atomic_load(&tt.rounds)) && now_ms() - t < 5000)
			sleep_ms(1);
		EXPECT_LE(UNPLUG_WORKERS, atomic_load(&r->iters))
			TH_LOG("workers stuck");
		sleep_ms(prng_below(&rng, 200));
		EXPECT_EQ(0x6b, p[SZ_1M - 1]);
		why = dma_pump_landed(&pump, p);
		EXPECT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);

		atomic_store(&r->removing, 1);
		ASSERT_EQ(0, unplug_pci(self->pci, remove));
		atomic_store(&r->gone, 1);

		unplug_check_holder(_metadata, heap, buf, p, SZ_1M);
		dma_pump_stop(&pump);
		dma += atomic_load(&pump.ok);
		/* Let every worker run a few rounds against the dead heap. */
		t = now_ms();
		for (i = 0; i < UNPLUG_WORKERS; i++)
			while (atomic_load(&w[i].after_gone) < 3 &&
			       now_ms() - t < 5000)
				sleep_ms(2);
		atomic_store(&r->stop, 1);
		for (i = 0; i < UNPLUG_WORKERS; i++) {
			pthread_join(tid[i], NULL);
			EXPECT_LE(3, atomic_load(&w[i].after_gone))
				TH_LOG("worker %d stuck after the unplug", i);
		}
		pthread_join(toucher, NULL);
		pthread_join(closer, NULL);
		EXPECT_EQ(UNPLUG_CLOSER_BUFS, atomic_load(&cl.closed));
		EXPECT_LT(0, atomic_load(&tt.rounds));
		EXPECT_EQ(0, close(tt.buf));
		touch_sigbus += atomic_load(&tt.sigbus);
		EXPECT_EQ(0, atomic_load(&r->err.count))
			TH_LOG("iteration %d: %ld errors, first: %s", it,
			       atomic_load(&r->err.count), r->err.msg);

		EXPECT_EQ(0, munmap(p, SZ_1M));
		EXPECT_EQ(0, close(buf));
		EXPECT_EQ(0, close(heap));
		EXPECT_FALSE(path_exists(self->node));
		snprintf(cls, sizeof(cls), "/sys/class/uio_heap/%s", self->uio);
		EXPECT_FALSE(path_exists(cls));
		sigbus += atomic_load(&r->sigbus);
		enodev += atomic_load(&r->enodev);
		opens[0] += atomic_load(&r->open_enoent);
		opens[1] += atomic_load(&r->open_enxio);
		opens[2] += atomic_load(&r->open_enodev);

		/* Braces: the harness' ASSERT_*() cannot precede an else. */
		if (remove) {
			ASSERT_EQ(0, write_str("/sys/bus/pci/rescan", "1"));
		} else {
			ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
		}
		ASSERT_LE(0, wait_heap_of(self->pci, self->uio,
					  sizeof(self->uio), 10000))
			TH_LOG("iteration %d: no heap for %s after %s", it,
			       self->pci, remove ? "rescan" : "bind");
		node_of(self->node, sizeof(self->node), self->uio);
		why = heap_check(self->node, SZ_64K);
		ASSERT_EQ(NULL, why) TH_LOG("iteration %d: %s", it, why);
		ASSERT_EQ(0, heap_usage(self->uio, &bytes, &bufs));
		EXPECT_EQ(0, bytes);
		EXPECT_EQ(0, bufs);
		if (_metadata->exit_code)
			break;
	}
	printf("# %s: %d unplugs in %lld ms; workers saw %ld SIGBUS (toucher %ld), %ld ENODEV allocs; open failed ENOENT %ld ENXIO %ld ENODEV %ld; %ld device DMA transfers\n",
	       remove ? "remove" : "unbind", it, now_ms() - start, sigbus,
	       touch_sigbus, enodev, opens[0], opens[1], opens[2], dma);
	summary("unplugs=%d dma_transfers=%ld", it, dma);
	free(r);
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
 * Module races: load/unload cycles with bound devices, with threads
 * opening and allocating all along: every unload attempt is refused
 * while they hold a heap, and the heaps come back every time.  (Refusal
 * while only a buffer fd or a mapping holds it: uio_heap_lifetime.)
 */
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

/*
 * Every heap is back and works (@check); and holds nothing (@idle, when
 * no other thread uses the heaps).
 */
static void module_heaps_back(struct __test_metadata *_metadata,
			      FIXTURE_DATA(module) *self, bool check, bool idle)
{
	unsigned long long bytes, bufs;
	const char *why;
	int i;

	for (i = 0; i < self->n; i++) {
		ASSERT_LE(0, wait_path(self->node[i], true, 5000))
			TH_LOG("%s did not come back", self->node[i]);
		if (check) {
			why = heap_check(self->node[i], SZ_64K);
			EXPECT_EQ(NULL, why) TH_LOG("%s", why);
		}
		if (!idle)
			continue;
		ASSERT_EQ(0, heap_usage(self->uio[i], &bytes, &bufs));
		EXPECT_EQ(0, bytes);
		EXPECT_EQ(0, bufs);
	}
}

struct module_load {
	FIXTURE_DATA(module) *self;
	uint64_t seed;
	atomic_int stop;
	atomic_long opens, open_fail;
	struct first_error err;
};

struct module_worker {
	struct module_load *m;
	int id;
};

/* Opens and allocates all along, unloads or not. */
static void *module_hammer_fn(void *arg)
{
	struct module_worker *w = arg;
	struct module_load *m = w->m;
	int n = m->self->n, heap, buf;
	struct prng rng;
	long k = w->id;

	prng_seed(&rng, m->seed ^ (0x5eed + w->id));
	while (!atomic_load(&m->stop)) {
		const char *node = m->self->node[k++ % n];

		heap = open(node, O_RDWR | O_CLOEXEC);
		if (heap < 0) {
			/* Gone, going, or not yet back. */
			if (errno != ENOENT && errno != ENXIO && errno != ENODEV)
				report(&m->err, "open %s: %s", node,
				       strerror(errno));
			atomic_fetch_add(&m->open_fail, 1);
		} else {
			/* An open heap fd pins the module: the heap stays. */
			buf = uioheap_alloc(heap, PAGE_SZ, O_RDWR | O_CLOEXEC);
			if (buf < 0)
				report(&m->err, "alloc on an open heap: %s",
				       strerror(-buf));
			/* Held for a while: unloading must lose then. */
			usleep(prng_below(&rng, 500));
			if (buf >= 0)
				close(buf);
			close(heap);
			atomic_fetch_add(&m->opens, 1);
		}
		/* Leave gaps, so that unloading can win. */
		usleep(prng_below(&rng, 300));
	}
	return NULL;
}

#define MODULE_HAMMERS	2

TEST_F_TIMEOUT(module, load_unload_cycles, LONG_TIMEOUT)
{
	int cycles = SHORT_LONG(10, 100), c, ret, i;
	struct module_worker w[MODULE_HAMMERS];
	pthread_t hammer[MODULE_HAMMERS];
	long refused = 0, ok = 0;
	struct module_load *m;
	long long start = now_ms(), t;

	m = calloc(1, sizeof(*m));
	ASSERT_NE(NULL, m);
	first_error_init(&m->err, false);
	m->self = self;
	m->seed = run_seed("UIOHEAP_SEED");
	for (i = 0; i < MODULE_HAMMERS; i++) {
		w[i] = (struct module_worker){ m, i };
		ASSERT_EQ(0, pthread_create(&hammer[i], NULL, module_hammer_fn,
					    &w[i]));
	}

	for (c = 0; c < cycles; c++) {
		module_heaps_back(_metadata, self, c % 5 == 0, false);
		t = now_ms();
		for (;;) {
			ret = rmmod_nb("uio_heap");
			if (ret == 0)
				break;
			ASSERT_EQ(EWOULDBLOCK, ret)
				TH_LOG("cycle %d: %s", c, strerror(ret));
			refused++;
			ASSERT_GT(10000, now_ms() - t)
				TH_LOG("cycle %d: unload refused for 10 s", c);
			usleep(200);
		}
		ok++;
		EXPECT_FALSE(module_loaded("uio_heap"));
		for (i = 0; i < self->n; i++)
			EXPECT_FALSE(path_exists(self->node[i]));
		ret = insmod_file(self->ko);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: insmod: %s", c, strerror(ret));
	}
	atomic_store(&m->stop, 1);
	for (i = 0; i < MODULE_HAMMERS; i++)
		pthread_join(hammer[i], NULL);
	EXPECT_EQ(0, atomic_load(&m->err.count))
		TH_LOG("%ld errors, first: %s", atomic_load(&m->err.count),
		       m->err.msg);
	EXPECT_LT(0, atomic_load(&m->opens));
	module_heaps_back(_metadata, self, true, true);

	printf("# %d load/unload cycles in %lld ms; the openers got %ld fds, %ld failed opens\n",
	       c, now_ms() - start, atomic_load(&m->opens),
	       atomic_load(&m->open_fail));
	summary("rmmod_refused=%ld rmmod_ok=%ld", refused, ok);
	free(m);
}

TEST_HARNESS_MAIN
