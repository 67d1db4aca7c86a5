/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the uio_heap robustness battery (stress, fuzz, perms):
 * run length, a seeded PRNG, fault-safe memory probing from any thread,
 * finding the edu devices by PCI address, module load and unload.
 *
 * Nothing here uses the harness' ASSERT/EXPECT: it runs in worker threads
 * and forked children, which report back to the test's main thread.
 */
#ifndef UIO_HEAP_STRESS_COMMON_H
#define UIO_HEAP_STRESS_COMMON_H

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/uio_heap.h>

#include "common.h"

#define PAGE_SZ		4096UL

/* UIOHEAP_LONG=1 (make check-long) selects the long forms. */
static inline bool long_mode(void)
{
	const char *v = getenv("UIOHEAP_LONG");

	return v && *v && strcmp(v, "0");
}

/* Short or long form of a figure. */
#define SHORT_LONG(s, l)	(long_mode() ? (l) : (s))

/* xoshiro-like 64-bit PRNG (splitmix64): small, fast, reproducible. */
struct prng {
	uint64_t s;
};

static inline uint64_t prng_next(struct prng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void prng_seed(struct prng *r, uint64_t seed)
{
	r->s = seed;
	prng_next(r);
}

/* Uniform in [0, n), n > 0. */
static inline uint64_t prng_below(struct prng *r, uint64_t n)
{
	return prng_next(r) % n;
}

/* The seed from @env, or from the clock; printed so a run can be repeated. */
static inline uint64_t pick_seed(const char *env)
{
	const char *v = getenv(env);
	struct timespec ts;
	uint64_t seed;

	if (v && *v) {
		seed = strtoull(v, NULL, 0);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ ts.tv_nsec ^
		       ((uint64_t)getpid() << 32);
	}
	printf("# seed: %llu (repeat with %s=%llu)\n",
	       (unsigned long long)seed, env, (unsigned long long)seed);
	fflush(stdout);
	return seed;
}

/*
 * "# summary: key=value ..." lines, for the lead's aggregation.  The test
 * child ends with _exit(), so stdout is flushed here.
 */
static inline void summary(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# summary: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

/*
 * Probing memory that may be revoked, from any thread: the handler jumps
 * back into the thread that faulted, if that thread armed it.  A fault
 * outside a probe kills the process, as it should.
 */
static __thread sigjmp_buf *volatile probe_tls_env;

/* Keeps the compiler from moving memory accesses across an arming. */
static inline void probe_barrier(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/*
 * Runs the statement @access with this thread's probe armed and evaluates
 * to 0, or to the signal that cut it short.  A macro, not a function,
 * because sigsetjmp() has to run in the frame that makes the access;
 * what @access changes and the caller reads after a signal must be
 * volatile.
 */
#define PROBE(access) ({						\
	sigjmp_buf probe_env_;						\
	int probe_sig_;							\
									\
	probe_sig_ = sigsetjmp(probe_env_, 1);				\
	if (!probe_sig_) {						\
		probe_tls_env = &probe_env_;				\
		probe_barrier();					\
		access;							\
		probe_barrier();					\
	}								\
	probe_tls_env = NULL;						\
	probe_sig_;							\
})

static inline void probe_tls_handler(int sig)
{
	sigjmp_buf *env = probe_tls_env;

	if (env) {
		probe_tls_env = NULL;
		siglongjmp(*env, sig);
	}
	signal(sig, SIG_DFL);
}

static inline void probe_install(void)
{
	struct sigaction sa = { .sa_handler = probe_tls_handler };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

/*
 * Touches one byte in every page of [p, p + len): writes @val if @write,
 * else reads.  Returns 0, or the signal (SIGBUS, SIGSEGV) that stopped it;
 * *@done (may be NULL) gets the bytes covered before the fault.
 */
static inline int probe_pages(volatile unsigned char *p, size_t len,
			      bool write, unsigned char val, size_t *done)
{
	volatile size_t off = 0;
	int sig;

	sig = PROBE(for (; off < len; off += PAGE_SZ) {
			if (write)
				p[off] = val;
			else
				(void)p[off];
		});
	if (done)
		*done = sig ? off : len;
	return sig;
}

/* Reads one byte at @p; 0 or the signal. */
static inline int probe_read8(volatile unsigned char *p, unsigned char *val)
{
	return PROBE(*val = *p);
}

/* Reads one 64-bit word at @p; 0 or the signal. */
static inline int probe_read64(volatile uint64_t *p, uint64_t *val)
{
	return PROBE(*val = *p);
}

/* Writes one 64-bit word at @p; 0 or the signal. */
static inline int probe_write64(volatile uint64_t *p, uint64_t val)
{
	return PROBE(*p = val);
}

/* The first failure of a group of workers, kept for the main thread. */
struct first_error {
	pthread_mutex_t lock;
	atomic_long count;
	char msg[512];
};

static inline void first_error_init(struct first_error *e, bool shared)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	if (shared)
		pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&e->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	atomic_store(&e->count, 0);
	e->msg[0] = '\0';
}

static inline void __attribute__((format(printf, 2, 3)))
report(struct first_error *e, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&e->count, 1) == 0) {
		pthread_mutex_lock(&e->lock);
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
		pthread_mutex_unlock(&e->lock);
	}
}

/*
 * A kselftest fixture @name with the heaps of up to two edu devices
 * (edu_heaps(), masks included), skipped without root or without an edu.
 * Needs kselftest_harness.h first.
 */
#define EDU_HEAPS_FIXTURE(name)						\
FIXTURE(name) {								\
	int n;								\
	char uio[2][16];						\
	char node[2][64];						\
	uint64_t mask[2];						\
};									\
FIXTURE_SETUP(name)							\
{									\
	if (geteuid())							\
		SKIP(return, "needs root");				\
	ASSERT_EQ(0, ensure_uio_heap_loaded());				\
	probe_install();						\
	self->n = edu_heaps(self->uio, self->node, self->mask, 2);	\
	if (!self->n)							\
		SKIP(return, "needs an edu device bound to uio_pci_generic"); \
	ASSERT_LT(0, self->n)						\
		TH_LOG("a heap is missing: %s", strerror(-self->n));	\
}									\
FIXTURE_TEARDOWN(name)							\
{									\
}

/*
 * The PCI address of the wide (64-bit) edu: the first of UIOHEAP_EDU64 if
 * the bench says, else the first edu that is not the narrow one.
 */
static inline int wide_edu_pci(char *pci, size_t size)
{
	const char *env = getenv("UIOHEAP_EDU64");
	char names[8][16];
	int n, i;

	if (env && *env) {
		n = strcspn(env, " +,");
		if (n > 0 && (size_t)n < size) {
			memcpy(pci, env, n);
			pci[n] = '\0';
			return 0;
		}
	}
	n = find_edus(names, 8);
	for (i = 0; i < n; i++)
		if (!edu_is_narrow(names[i]))
			return uio_pci_name(names[i], pci, size);
	return -ENODEV;
}

/* The UIO name of PCI device @pci, straight from its sysfs directory. */
static inline int uio_of_pci(const char *pci, char *uio, size_t size)
{
	char path[160];
	struct dirent *de;
	DIR *dir;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/uio", pci);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "uio", 3) || strlen(de->d_name) >= size)
			continue;
		memcpy(uio, de->d_name, strlen(de->d_name) + 1);
		ret = 0;
		break;
	}
	closedir(dir);
	return ret;
}

/*
 * Waits (bounded) until PCI device @pci has a UIO device and that one its
 * heap node; returns the elapsed ms or -1.
 */
static inline long long wait_heap_of(const char *pci, char *uio, size_t size,
				     int ms)
{
	long long start = now_ms();
	char node[64];

	while (uio_of_pci(pci, uio, size)) {
		if (now_ms() - start > ms)
			return -1;
		usleep(5000);
	}
	node_of(node, sizeof(node), uio);
	if (wait_path(node, true, ms - (now_ms() - start)) < 0)
		return -1;
	return now_ms() - start;
}

/*
 * One allocation on @node, mapped, touched and its address asked: the
 * heap works.  Returns NULL, or what failed.
 */
static inline const char *heap_check(const char *node, size_t len)
{
	static __thread char why[160];
	unsigned char *p;
	uint64_t addr;
	int heap, buf, ret;

	heap = open(node, O_RDWR | O_CLOEXEC);
	if (heap < 0) {
		snprintf(why, sizeof(why), "open %s: %s", node, strerror(errno));
		return why;
	}
	buf = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
	if (buf < 0) {
		snprintf(why, sizeof(why), "alloc on %s: %s", node,
			 strerror(-buf));
		close(heap);
		return why;
	}
	ret = uioheap_dma_addr(heap, buf, &addr, NULL);
	p = uioheap_map(buf, len);
	if (ret || !p) {
		snprintf(why, sizeof(why), "%s on %s: %s",
			 ret ? "address" : "mmap", node,
			 strerror(ret ? -ret : errno));
	} else if (probe_pages(p, len, true, 0x5a, NULL) ||
		   probe_pages(p, len, false, 0, NULL) ||
		   p[len - PAGE_SZ] != 0x5a) {
		snprintf(why, sizeof(why), "access to a buffer of %s", node);
	} else {
		why[0] = '\0';
	}
	if (p)
		munmap(p, len);
	close(buf);
	close(heap);
	return why[0] ? why : NULL;
}

/* allocated_bytes + buffers of heap @uio; -errno if unreadable. */
static inline int heap_usage(const char *uio, unsigned long long *bytes,
			     unsigned long long *bufs)
{
	int ret = uioheap_sysfs_read(uio, "allocated_bytes", bytes);

	return ret ? ret : uioheap_sysfs_read(uio, "buffers", bufs);
}

static inline bool module_loaded(const char *name)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/module/%s/initstate", name);
	return path_exists(path);
}

/* Loads $UIOHEAP_KO if uio_heap is not loaded; 0 or an errno. */
static inline int ensure_uio_heap_loaded(void)
{
	const char *ko = getenv("UIOHEAP_KO");

	if (module_loaded("uio_heap"))
		return 0;
	if (!ko)
		return ENOENT;
	return insmod_file(ko);
}

/* Sleeps @ms milliseconds. */
static inline void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#endif
