// SPDX-License-Identifier: GPL-2.0
/*
 * The uio_heap selftests' helpers, declared in common.h.  kselftest_harness.h is written for one
 * file per program: this file's copies of its global definitions get unused names, and an ASSERT
 * here longjmp()s to the test's own wrapper, as in the test.
 */
#define _fixture_global		common_fixture_global_unused
#define __active_test		common_active_test_unused
#define __wait_for_test		common_wait_for_test_unused
#define __run_test		common_run_test_unused
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop
#undef _fixture_global
#undef __active_test
#undef __wait_for_test
#undef __run_test

#include "common.h"

bool path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Writes @text, truncating as the shell's > does (clears kprobe_events): 0 or -errno. */
int write_str(const char *path, const char *text)
{
	ssize_t n, len = strlen(text);
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	n = n == len ? 0 : -errno;
	close(fd);
	return n;
}

/* Reads a one-line file into @buf, without the newline: length or -errno. */
int read_str(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return strlen(buf);
}

/* One unsigned decimal from a file (sysfs, procfs), or @fallback. */
unsigned long long read_ull(const char *path, unsigned long long fallback)
{
	unsigned long long v;
	char buf[32], *end;

	if (read_str(path, buf, sizeof(buf)) <= 0)
		return fallback;
	errno = 0;
	v = strtoull(buf, &end, 10);
	return *end || errno ? fallback : v;
}

/* Attribute @attr of heap @uio as text (the "iommu" mode): length or -errno. */
int heap_attr(const char *uio, const char *attr, char *buf, size_t size)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/%s", uio, attr);
	return read_str(path, buf, size);
}

/* Memory of revoked buffers that still waits for its last user. */
unsigned long long revoked_bytes(void)
{
	return read_ull(UIO_HEAP_PARAMS "revoked_bytes", 0);
}

long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Waits up to @ms for @path to exist (@want) or not; elapsed ms or -1. */
long long wait_path(const char *path, bool want, int ms)
{
	return WAIT_MS(path_exists(path) == want, ms);
}

/* 1 or 0 from the VM bench's @name, -1 if unset (fail: a skip would hide a regression). */
int env_bool(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return -1;
	return strcmp(v, "0") != 0;
}

uint64_t prng_next(struct prng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void prng_seed(struct prng *r, uint64_t seed)
{
	r->s = seed;
	prng_next(r);
}

/* Uniform in [0, n), n > 0. */
uint64_t prng_below(struct prng *r, uint64_t n)
{
	return prng_next(r) % n;
}

/* @len bytes (a multiple of 8) of the sequence @seed starts. */
void prng_fill(unsigned char *p, size_t len, uint64_t seed)
{
	struct prng r;
	size_t i;

	prng_seed(&r, seed);
	for (i = 0; i < len / 8; i++)
		((uint64_t *)p)[i] = prng_next(&r);
}

bool prng_holds(const unsigned char *p, size_t len, uint64_t seed)
{
	unsigned char *want = malloc(len);
	bool same;

	prng_fill(want, len, seed);
	same = !memcmp(p, want, len);
	free(want);
	return same;
}

bool is_filled(const void *p, size_t len, unsigned char byte)
{
	const unsigned char *c = p;

	return !len || (c[0] == byte && !memcmp(c, c + 1, len - 1));
}

/* A child's exit status, or 128 + the signal that ended it. */
int wait_exit(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Picked before the harness forks the first test: one seed per run replays it all. */
static uint64_t clock_seed;

static void __attribute__((constructor)) clock_seed_init(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	clock_seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ ts.tv_nsec ^
		     ((uint64_t)getpid() << 32);
}

/* The seed from @env, else the run's; printed so a run can be repeated. */
uint64_t run_seed(const char *env)
{
	const char *v = getenv(env);
	uint64_t seed = v && *v ? strtoull(v, NULL, 0) : clock_seed;

	printf("# seed: %llu (repeat with %s=%llu)\n",
	       (unsigned long long)seed, env, (unsigned long long)seed);
	fflush(stdout);
	return seed;
}

/* "# summary: key=value ..." lines, which tests/vm/summary.sh sums. */
void summary(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# summary: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

__thread sigjmp_buf *volatile probe_tls_env;

static void probe_tls_handler(int sig)
{
	sigjmp_buf *env = probe_tls_env;

	if (env) {
		probe_tls_env = NULL;
		siglongjmp(*env, sig);
	}
	signal(sig, SIG_DFL);
}

static void __attribute__((constructor)) probe_install(void)
{
	struct sigaction sa = { .sa_handler = probe_tls_handler };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

/* Reads, or writes @val to, a byte of each page of [p, p + len): 0 or the signal. */
int probe_pages(volatile unsigned char *p, size_t len, bool write, unsigned char val)
{
	volatile size_t off = 0;

	return PROBE(for (; off < len; off += PAGE_SZ) {
			if (write)
				p[off] = val;
			else
				(void)p[off];
		});
}

int probe_read8(volatile unsigned char *p, unsigned char *val)
{
	return PROBE(*val = *p);
}

int probe_read64(volatile uint64_t *p, uint64_t *val)
{
	return PROBE(*val = *p);
}

/*
 * Writes (@write) or checks id << 20 | i in the first word of pages [first, first + n)
 * of a mapping at @p from page @first: 0, the signal, or -1 (*@at: where, *@seen: what).
 */
int sig_pages(volatile unsigned char *p, size_t first, size_t n,
	      uint64_t id, bool write, size_t *at, uint64_t *seen)
{
	volatile bool bad = false;
	volatile size_t i = 0;
	int sig;

	sig = PROBE(for (; i < n; i++) {
			volatile uint64_t *w = (volatile uint64_t *)(p + i * PAGE_SZ);
			uint64_t want = id << 20 | (first + i);

			if (write) {
				*w = want;
			} else if (*w != want) {
				*seen = *w;
				bad = true;
				break;
			}
		});
	*at = first + i;
	return sig ? sig : bad ? -1 : 0;
}

void first_error_init(struct first_error *e, bool shared)
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

void report(struct first_error *e, const char *fmt, ...)
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

/* UIO_HEAP_IOCTL_GET_DMA_ADDR, and only it: 0 or the errno. */
int heap_addr(int heap, int buf, uint32_t flags, uint64_t *addr)
{
	struct uio_heap_dma_addr arg = { .fd = buf, .flags = flags };

	if (ioctl(heap, UIO_HEAP_IOCTL_GET_DMA_ADDR, &arg))
		return errno;
	if (addr)
		*addr = arg.dma_addr;
	return 0;
}

/* DMA_BUF_IOCTL_GET_DMA_ADDR, and only it: 0 or the errno. */
int dmabuf_addr(int buf, uint64_t *addr)
{
	return ioctl(buf, DMA_BUF_IOCTL_GET_DMA_ADDR, addr) ? errno : 0;
}

void node_of(char *node, size_t size, const char *uio)
{
	snprintf(node, size, "/dev/dma_heap/%s", uio);
}

/* The width of the narrow edu's DMA engine, which only userspace knows. */
int edu_narrow_bits(void)
{
	const char *env = getenv("UIOHEAP_EDU_BITS");

	return env ? atoi(env) : 28;
}

uint64_t edu_narrow_mask(void)
{
	return (1ULL << edu_narrow_bits()) - 1;
}

/* The PCI address of the narrow (@narrow) or the wide edu: 0 or -ENOENT. */
int edu_pci(bool narrow, char *pci, size_t size)
{
	const char *env = getenv(narrow ? "UIOHEAP_EDU28" : "UIOHEAP_EDU64");
	size_t n = env ? strcspn(env, " +,") : 0;

	if (!n || n >= size)
		return -ENOENT;
	memcpy(pci, env, n);
	pci[n] = '\0';
	return 0;
}

/* Waits up to @ms until device @pci has a UIO device; elapsed ms or -1. */
long long wait_uio_of(const char *pci, char *uio, size_t size, int ms)
{
	return WAIT_MS(!uio_of_pci(pci, uio, size), ms);
}

/* Waits up to @ms until device @pci has a UIO device and a heap node; ms or -1. */
long long wait_heap_of(const char *pci, char *uio, size_t size, int ms)
{
	char node[64];

	return WAIT_MS(!uio_of_pci(pci, uio, size) &&
		       (node_of(node, sizeof(node), uio), path_exists(node)), ms);
}

uint64_t pagemap_phys(int fd, const void *va)
{
	uint64_t e;

	if (fd < 0 || pread(fd, &e, 8, (uintptr_t)va / PAGE_SZ * 8) != 8 || !(e >> 63))
		return 0;
	return (e & ((1ULL << 55) - 1)) * PAGE_SZ;
}

/* Where DMA-API debug ("... P=phys D=dma L=len") saw @pci's mapping at @dma, or 0. */
uint64_t dma_debug_phys(const char *pci, uint64_t dma)
{
	unsigned long long p, d;
	char line[256], dev[40], *at;
	uint64_t phys = 0;
	FILE *f = fopen(DMA_API_DUMP, "re");

	snprintf(dev, sizeof(dev), " %s ", pci);
	while (f && !phys && fgets(line, sizeof(line), f)) {
		at = strstr(line, " P=");
		if (strstr(line, dev) && at &&
		    sscanf(at, " P=%llx D=%llx", &p, &d) == 2 && d == dma)
			phys = p;
	}
	if (f)
		fclose(f);
	return phys;
}

/*
 * Is @page at physical @phys?  Of the kcore segments that cover it, the kernel
 * image's reads freed init memory as zeroes (arm64); the linear map's shows it.
 */
enum page_is kcore_page(int fd, uint64_t phys, const void *page)
{
	static unsigned char there[PAGE_SZ];
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int i;

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return PAGE_UNKNOWN;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph))
			return PAGE_UNKNOWN;
		if (ph.p_type != PT_LOAD || ph.p_paddr == ~0ULL ||
		    phys < ph.p_paddr || phys + PAGE_SZ > ph.p_paddr + ph.p_memsz)
			continue;
		if (pread(fd, there, PAGE_SZ, ph.p_offset + phys - ph.p_paddr) != PAGE_SZ)
			return PAGE_UNKNOWN;
		if (!memcmp(there, page, PAGE_SZ))
			return PAGE_AT_ADDR;
	}
	return PAGE_ELSEWHERE;
}

/* Allocates on @node, asks the address, maps and touches: NULL, or what failed. */
const char *heap_check(const char *node, size_t len)
{
	static __thread char why[160];
	unsigned char *p = NULL;
	int heap, buf, ret;
	uint64_t addr;

	heap = open(node, O_RDWR | O_CLOEXEC);
	if (heap < 0) {
		snprintf(why, sizeof(why), "open %s: %s", node, strerror(errno));
		return why;
	}
	buf = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
	ret = buf < 0 ? -buf : heap_addr(heap, buf, 0, &addr);
	close(heap);
	if (!ret)
		p = uioheap_map(buf, len);
	if (ret || !p)
		snprintf(why, sizeof(why), "%s on %s: %s",
			 buf < 0 ? "alloc" : ret ? "address" : "mmap", node,
			 strerror(ret ? ret : errno));
	else if (probe_pages(p, len, true, 0x5a) ||
		 probe_pages(p, len, false, 0) || p[len - PAGE_SZ] != 0x5a)
		snprintf(why, sizeof(why), "access to a buffer of %s", node);
	else
		why[0] = '\0';
	if (p)
		munmap(p, len);
	if (buf >= 0)
		close(buf);
	return why[0] ? why : NULL;
}

/* Heap node @name ("uio0", "uio0-cached") opened read-write, or the test fails. */
int open_heap(struct __test_metadata *_metadata, const char *name)
{
	int heap = uioheap_open(name);

	ASSERT_LE(0, heap) TH_LOG("/dev/dma_heap/%s: %s", name, strerror(-heap));
	return heap;
}

/* A buffer of @len bytes on @heap, mapped at *@p unless @p is NULL. */
int alloc_map(struct __test_metadata *_metadata, int heap,
	      size_t len, unsigned char **p)
{
	int buf = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, buf) TH_LOG("%zu bytes: %s", len, strerror(-buf));
	if (p) {
		*p = uioheap_map(buf, len);
		ASSERT_NE(NULL, *p);
	}
	return buf;
}

/* The same from heap node @name, whose fd the buffer does not need. */
int node_alloc(struct __test_metadata *_metadata, const char *name,
	       size_t len, unsigned char **p)
{
	int heap = open_heap(_metadata, name);
	int buf = alloc_map(_metadata, heap, len, p);

	close(heap);
	return buf;
}

/* Attribute @attr of heap @uio as a number; ~0ULL, which no count reaches, if unreadable. */
unsigned long long heap_ull(const char *uio, const char *attr)
{
	unsigned long long val = ~0ULL;

	uioheap_sysfs_read(uio, attr, &val);
	return val;
}

/* allocated_bytes and buffers of heap @uio; -errno if unreadable. */
int heap_usage(const char *uio, unsigned long long *bytes, unsigned long long *bufs)
{
	int ret = uioheap_sysfs_read(uio, "allocated_bytes", bytes);

	return ret ? ret : uioheap_sysfs_read(uio, "buffers", bufs);
}

/* The revocation contract: buffer @buf of @heap, mapped at @p, once its device is gone. */
void expect_revoked(struct __test_metadata *_metadata, int heap,
		    int buf, volatile unsigned char *p, size_t len)
{
	struct stat st;
	uint64_t addr;

	EXPECT_EQ(SIGBUS, probe_pages(p, 1, false, 0));
	EXPECT_EQ(SIGBUS, probe_pages(p + len - 1, 1, true, 0x5a));
	EXPECT_EQ(-ENODEV, uioheap_dma_addr(heap, buf, &addr, NULL));
	EXPECT_EQ(ENODEV, heap_addr(heap, buf, 0, &addr));
	EXPECT_EQ(-ENODEV, uioheap_sync(buf, 1, 1));
	EXPECT_ERRNO(ENODEV, mmap(NULL, PAGE_SZ, PROT_READ, MAP_SHARED, buf, 0));
	EXPECT_EQ(-ENODEV, uioheap_alloc(heap, PAGE_SZ, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(0, fstat(buf, &st));
	EXPECT_EQ(len, (size_t)st.st_size);
}

bool module_loaded(const char *name)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/module/%s/initstate", name);
	return path_exists(path);
}

int rmmod_nb(const char *name)
{
	return syscall(__NR_delete_module, name, O_NONBLOCK) ? errno : 0;
}

int insmod_file(const char *path)
{
	int fd, ret;

	if (!path)
		return ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ret = syscall(__NR_finit_module, fd, "", 0) ? errno : 0;
	close(fd);
	return ret;
}

int ensure_uio_heap_loaded(void)
{
	return module_loaded("uio_heap") ? 0 : insmod_file(getenv("UIOHEAP_KO"));
}

/* Removes PCI device @pci from the bus (@remove) or unbinds it: 0 or -errno. */
int unplug_pci(const char *pci, bool remove)
{
	char path[128];

	if (!remove)
		return write_str(UIO_PCI_GENERIC "/unbind", pci);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/remove", pci);
	return write_str(path, "1");
}

/* PCI device @pci present, bound and its heap back, whatever a test did: 0 or -1. */
int replug_pci(const char *pci, char *uio, size_t size)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", pci);
	if (!path_exists(path))
		write_str("/sys/bus/pci/rescan", "1");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", pci);
	if (wait_path(path, true, 2000) < 0)
		write_str(UIO_PCI_GENERIC "/bind", pci);
	return wait_heap_of(pci, uio, size, 5000) < 0 ? -1 : 0;
}

/* vgem's DRM fd; -1 if UIOHEAP_VGEM=0 (the debug kernel has no DRM, the stock ones vgem). */
int vgem_open(struct __test_metadata *_metadata)
{
	int i, drm = -1, vgem = env_bool("UIOHEAP_VGEM");
	char path[64], drv[256];
	ssize_t n;

	ASSERT_NE(-1, vgem) TH_LOG("UIOHEAP_VGEM is not set");
	if (!vgem)
		return -1;
	for (i = 0; drm < 0 && i < 8; i++) {
		/* vgem's device is a bare platform device called "vgem". */
		snprintf(path, sizeof(path), "/sys/class/drm/card%d/device", i);
		n = readlink(path, drv, sizeof(drv) - 1);
		if (n < 0)
			continue;
		drv[n] = '\0';
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		if (!strcmp(strrchr(drv, '/') + 1, "vgem"))
			drm = open(path, O_RDWR | O_CLOEXEC);
	}
	ASSERT_LE(0, drm) TH_LOG("UIOHEAP_VGEM=1, but no vgem device");
	return drm;
}

/* A vgem dumb buffer of @len bytes exported as a dma-buf fd, or -errno. */
int vgem_dmabuf(int drm, size_t len)
{
	struct vgem_create_dumb dumb = { .height = len / PAGE_SZ, .width = PAGE_SZ, .bpp = 8 };
	struct vgem_prime_handle prime = { .flags = O_RDWR | O_CLOEXEC };
	struct vgem_gem_close gclose = { 0 };
	int ret = 0;

	if (ioctl(drm, VGEM_IOCTL_MODE_CREATE_DUMB, &dumb))
		return -errno;
	prime.handle = dumb.handle;
	if (ioctl(drm, VGEM_IOCTL_PRIME_HANDLE_TO_FD, &prime))
		ret = -errno;
	/* The dma-buf holds the object now. */
	gclose.handle = dumb.handle;
	ioctl(drm, VGEM_IOCTL_GEM_CLOSE, &gclose);
	return ret ? ret : prime.fd;
}

/* A udmabuf of @len bytes of a new memfd, mapped at *@p through the memfd. */
int udmabuf_new(size_t len, unsigned char **p)
{
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = len };
	int dev, memfd, fd;

	memfd = syscall(__NR_memfd_create, "uio_heap_test", MFD_ALLOW_SEALING);
	if (memfd < 0)
		return -errno;
	if (ftruncate(memfd, len) || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		close(memfd);
		return -errno;
	}
	*p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	create.memfd = memfd;
	fd = dev < 0 ? -1 : ioctl(dev, UDMABUF_CREATE, &create);
	fd = fd < 0 ? -errno : fd;
	if (dev >= 0)
		close(dev);
	close(memfd);
	return fd;
}

void edu_heaps_get(struct __test_metadata *_metadata, struct edu_heaps *h)
{
	int i, ret;

	ASSERT_EQ(0, geteuid()) TH_LOG("the uio_heap selftests run as root");
	ret = ensure_uio_heap_loaded();
	ASSERT_EQ(0, ret) TH_LOG("uio_heap not loaded, UIOHEAP_KO: %s", strerror(ret));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, edu_pci(!i, h->pci[i], sizeof(h->pci[i])))
			TH_LOG("UIOHEAP_EDU%s does not name a PCI device", i ? "64" : "28");
		ASSERT_LE(0, wait_heap_of(h->pci[i], h->uio[i], sizeof(h->uio[i]), 2000))
			TH_LOG("%s: no UIO device with a heap", h->pci[i]);
		node_of(h->node[i], sizeof(h->node[i]), h->uio[i]);
		ASSERT_EQ(0, uioheap_sysfs_read(h->uio[i], "dma_mask_bits", &h->mask_bits[i]));
		h->mask[i] = h->mask_bits[i] >= 64 ? ~0ULL : (1ULL << h->mask_bits[i]) - 1;
		ASSERT_EQ(0, uioheap_sysfs_read(h->uio[i], "max_bytes", &h->max_bytes[i]));
	}
	ASSERT_LT(0, read_str(UIO_HEAP_PARAMS "low_zone_max_bytes",
			      h->low_zone_max, sizeof(h->low_zone_max)));
}

/* Puts the knobs back, from the teardown: also after a failed ASSERT. */
void edu_heaps_restore(const struct edu_heaps *h)
{
	int i;

	if (h->low_zone_max[0])
		write_str(UIO_HEAP_PARAMS "low_zone_max_bytes", h->low_zone_max);
	for (i = 0; i < 2; i++) {
		if (!h->uio[i][0])
			continue;
		uioheap_sysfs_write(h->uio[i], "max_bytes", h->max_bytes[i]);
		if (h->mask_bits[i])
			uioheap_sysfs_write(h->uio[i], "dma_mask_bits", h->mask_bits[i]);
	}
}

/* Narrows heap 0 to its edu's DMA engine and lifts the low-zone budget (-ENOMEM shows). */
void edu_heaps_narrow(struct __test_metadata *_metadata, struct edu_heaps *h)
{
	ASSERT_EQ(0, write_str(UIO_HEAP_PARAMS "low_zone_max_bytes", "1099511627776"));
	ASSERT_EQ(0, uioheap_sysfs_write(h->uio[0], "dma_mask_bits", edu_narrow_bits()));
	h->mask[0] = edu_narrow_mask();
}

/* The edu behind @uio copies @len bytes from device address @from to @to. */
int edu_copy(const char *uio, uint64_t from, uint64_t to, uint32_t len)
{
	struct edu edu;
	int ret;

	ret = edu_open(&edu, uio);
	if (ret)
		return ret;
	ret = edu_dma(&edu, from, 0, len, true, 10000);
	if (!ret)
		ret = edu_dma(&edu, to, 0, len, false, 10000);
	edu_close(&edu);
	return ret;
}

static void *dma_pump_fn(void *arg)
{
	struct dma_pump *d = arg;
	volatile int ret;
	int sig;

	while (!atomic_load(&d->stop)) {
		/* A removed device's BAR mapping may fault. */
		sig = PROBE(ret = edu_dma_polled(&d->edu, d->addr, 0, PUMP_LEN, false, 1000));
		if (sig || ret) {
			atomic_fetch_add(&d->failed, 1);
			usleep(10000);
		} else {
			atomic_fetch_add(&d->ok, 1);
		}
	}
	return NULL;
}

/* Loads @uio's edu with a pattern, from @heap, and pumps it to @addr: NULL or what failed. */
const char *dma_pump_start(struct dma_pump *d, const char *uio,
			   int heap, uint64_t addr)
{
	uint64_t src_addr = 0;
	unsigned char *src;
	const char *why = NULL;
	int buf;

	memset(d, 0, sizeof(*d));
	if (edu_open(&d->edu, uio))
		return "edu_open";
	prng_fill(d->pattern, PUMP_LEN, 0x3d);
	buf = uioheap_alloc(heap, SZ_4K, O_RDWR | O_CLOEXEC);
	src = buf < 0 ? NULL : uioheap_map(buf, SZ_4K);
	if (!src || heap_addr(heap, buf, 0, &src_addr)) {
		why = "source buffer";
	} else {
		memcpy(src, d->pattern, PUMP_LEN);
		if (edu_dma(&d->edu, src_addr, 0, PUMP_LEN, true, 10000))
			why = "DMA to the device";
	}
	if (src)
		munmap(src, SZ_4K);
	if (buf >= 0)
		close(buf);
	d->addr = addr;
	if (!why && pthread_create(&d->thread, NULL, dma_pump_fn, d))
		why = "pthread_create";
	if (why)
		edu_close(&d->edu);
	return why;
}

/* Before the unplug: transfers completed and their bytes are at @cpu.  NULL or what failed. */
const char *dma_pump_landed(struct dma_pump *d, const unsigned char *cpu)
{
	if (WAIT_MS(atomic_load(&d->ok) >= 2, 20000) < 0)
		return "no DMA transfer completed within 20 s";
	if (memcmp(cpu, d->pattern, PUMP_LEN))
		return "DMA wrote the wrong bytes";
	return NULL;
}

void dma_pump_stop(struct dma_pump *d)
{
	atomic_store(&d->stop, 1);
	pthread_join(d->thread, NULL);
	edu_close(&d->edu);
}

int tracefs_write(const char *name, const char *text)
{
	char path[128];

	snprintf(path, sizeof(path), TRACEFS "%s", name);
	return write_str(path, text);
}

void sync_probe_stop(void)
{
	tracefs_write("events/uioheap/enable", "0");
	tracefs_write("kprobe_events", "");
}

/*
 * Replaces the kprobes by @events (group uioheap), enabled, trace cleared: 0,
 * -EOPNOTSUPP without kprobe events (the debug kernel), -ENOENT for a missing symbol.
 */
int kprobes_start(const char *events)
{
	int ret;

	/* Mounted once per boot; a kernel without kprobe events has no file. */
	if (!path_exists(TRACEFS "kprobe_events"))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	if (!path_exists(TRACEFS "kprobe_events"))
		return -EOPNOTSUPP;
	sync_probe_stop();
	ret = tracefs_write("kprobe_events", events);
	if (ret == -ENOENT || ret == -EINVAL)
		return -ENOENT;
	if (!ret)
		ret = tracefs_write("events/uioheap/enable", "1");
	if (!ret)
		ret = tracefs_write("trace", "");
	return ret;
}

/* Trace lines with @what in process context (flags "d.s1." without h, s, H third); -errno. */
long trace_count(const char *what)
{
	char line[512];
	const char *at;
	long n = 0;
	FILE *f;

	f = fopen(TRACEFS "trace", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		at = strstr(line, "] ");
		if (line[0] != '#' && strstr(line, what) && at && at[2] && at[3])
			n += !memchr("hsH", at[4], 3);
	}
	fclose(f);
	return n;
}

/* What was maintained since the last call; clears the trace. */
int sync_probe_read(struct sync_seen *s)
{
	unsigned long long paddr, size, dir;
	char line[512];
	const char *at;
	FILE *f;
	int k;

	memset(s, 0, sizeof(*s));
	s->lo = UINT64_MAX;
	f = fopen(TRACEFS "trace", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		k = strstr(line, " for_device: ") ? 1 : 0;
		at = strstr(line, "paddr=");
		if (line[0] == '#' || (!k && !strstr(line, " for_cpu: ")) || !at ||
		    sscanf(at, "paddr=%llx size=%llx dir=%llx", &paddr, &size, &dir) != 3 ||
		    dir > 3)
			continue;
		s->calls[k]++;
		s->bytes[k] += size;
		s->dirs[k] |= 1u << dir;
		if (paddr < s->lo)
			s->lo = paddr;
		if (paddr + size - 1 > s->hi || s->hi == 0)
			s->hi = paddr + size - 1;
	}
	fclose(f);
	return tracefs_write("trace", "");
}

/*
 * DMA_BUF_IOCTL_SYNC on @node maintains the whole buffer, in the access's direction,
 * if @maintained (within [@phys_lo, @phys_hi] if @phys_lo), else nothing; the
 * allocation writes the zeroed buffer back where the device does not snoop.
 */
void sync_checks(struct __test_metadata *_metadata, const char *node,
		 bool maintained, uint64_t phys_lo, uint64_t phys_hi)
{
	static const struct {
		unsigned int rw, dir;
	} acc[] = {
		{ DMA_BUF_SYNC_READ, 2 },	/* DMA_FROM_DEVICE */
		{ DMA_BUF_SYNC_WRITE, 1 },	/* DMA_TO_DEVICE */
		{ DMA_BUF_SYNC_RW, 0 },		/* DMA_BIDIRECTIONAL */
	};
	const size_t len = SZ_64K;
	unsigned long long coherent;
	struct sync_seen seen;
	unsigned int i;
	unsigned char *p;
	int buf, start;

	buf = node_alloc(_metadata, node, len, &p);
	ASSERT_EQ(0, sync_probe_read(&seen));
	ASSERT_EQ(0, uioheap_sysfs_read(node, "coherent", &coherent));
	EXPECT_EQ(coherent ? 0 : len, seen.bytes[1])
		TH_LOG("%s: maintenance at allocation", node);
	for (i = 0; i < ARRAY_SIZE(acc); i++) {
		for (start = 1; start >= 0; start--) {
			ASSERT_EQ(0, uioheap_sync_rw(buf, start, acc[i].rw));
			if (start)
				memset(p, i, len);
			ASSERT_EQ(0, sync_probe_read(&seen));
			/* START: for the CPU; END: for the device. */
			EXPECT_EQ(maintained ? len : 0, seen.bytes[!start])
				TH_LOG("%s: sync %s rw %u", node,
				       start ? "start" : "end", acc[i].rw);
			EXPECT_EQ(0, seen.bytes[start]);
			if (maintained)
				EXPECT_EQ(1u << acc[i].dir, seen.dirs[!start])
					TH_LOG("%s: sync %s rw %u: directions %#x",
					       node, start ? "start" : "end",
					       acc[i].rw, seen.dirs[!start]);
			if (maintained && phys_lo) {
				EXPECT_LE(phys_lo, seen.lo);
				EXPECT_GE(phys_hi, seen.hi);
			}
		}
	}
	munmap(p, len);
	close(buf);
}

/* Writes the begin marker: a /dev/kmsg fd that reads what follows, or -1. */
int expect_fault_begin(const char *bdf)
{
	int kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	char marker[96];

	if (kfd < 0)
		return -1;
	snprintf(marker, sizeof(marker), EXPECT_FAULT_MARKER " begin %s\n", bdf);
	if (lseek(kfd, 0, SEEK_END) < 0 || write_str("/dev/kmsg", marker)) {
		close(kfd);
		return -1;
	}
	return kfd;
}

/* A DMAR fault report naming @dev: "[00:11.0]" (6.x) or "[0000:00:11.0]" (7.3). */
static bool dmar_report_names(const char *rec, const char *dev)
{
	const char *p = strstr(rec, "Request device [");
	size_t n = strlen(dev);

	if (!p || !strstr(rec, "DMAR: [DMA "))
		return false;
	p += strlen("Request device [");
	if (!strncmp(p, dev, n) && p[n] == ']')
		return true;
	p = strchr(p, ':');
	return p && !strncmp(p + 1, dev, n) && p[1 + n] == ']';
}

/*
 * Waits up to @timeout_ms for a DMAR fault report on @bdf (printed later, ratelimited),
 * then writes the end marker: whether one came.  A fault after the end fails the run.
 */
bool expect_fault_end(int kfd, const char *bdf, int timeout_ms)
{
	const char *dev = strchr(bdf, ':');
	long long deadline = now_ms() + timeout_ms;
	char marker[96], rec[8192];
	bool seen = false, drained = false;
	ssize_t n;

	if (kfd < 0)
		return false;
	dev = dev && strchr(dev + 1, ':') ? dev + 1 : bdf;
	for (;;) {
		n = read(kfd, rec, sizeof(rec) - 1);
		if (n > 0) {
			rec[n] = '\0';
			if (!seen && dmar_report_names(rec, dev)) {
				seen = true;
				/* The same interrupt may print more records: let it. */
				deadline = now_ms() + 100;
			}
			continue;
		}
		if (n < 0 && errno == EPIPE)	/* records overwritten: read on */
			continue;
		if (n < 0 && errno != EAGAIN)
			break;
		if (now_ms() < deadline) {
			sleep_ms(10);
		} else if (!drained) {	/* a busy TCG guest may run the reader late */
			sleep_ms(500);
			drained = true;
		} else {
			break;
		}
	}
	snprintf(marker, sizeof(marker), EXPECT_FAULT_MARKER " end %s seen=%d\n", bdf, seen);
	write_str("/dev/kmsg", marker);
	close(kfd);
	return seen;
}

/* ---- Shared by uio_heap_stress, uio_heap_fuzz and uio_heap_lifetime ---- */

/* Heap @uio holds @bytes in @bufs buffers. */
void expect_usage(struct __test_metadata *_metadata, const char *uio,
		  unsigned long long bytes, unsigned long long bufs)
{
	unsigned long long b, n;

	ASSERT_EQ(0, heap_usage(uio, &b, &n));
	EXPECT_EQ(bytes, b) TH_LOG("%s: allocated_bytes", uio);
	EXPECT_EQ(bufs, n) TH_LOG("%s: buffers", uio);
}

void expect_no_report(struct __test_metadata *_metadata, struct first_error *e)
{
	EXPECT_EQ(0, atomic_load(&e->count)) TH_LOG("%ld errors, first: %s", e->count, e->msg);
}

/* Heap @uio is behind a translating IOMMU (iommu mode "dma" or "dma-fq"). */
bool heap_translated(struct __test_metadata *_metadata, const char *uio)
{
	char mode[16];

	ASSERT_LT(0, heap_attr(uio, "iommu", mode, sizeof(mode)));
	return !strncmp(mode, "dma", 3);
}

/*
 * Kprobes @events plus, if @translated, "uioheap/iotlb_flush" on this arch's IOTLB flush, named
 * in *@flush (NULL if not @translated): kprobes_start()'s result.
 */
int iotlb_flush_probe(const char *events, bool translated, const char **flush)
{
	static const char *const flushes[] = {
#if defined(__x86_64__)
		"intel_flush_iotlb_all",
#else
		/* SMMUv3's, from 7.x and before (v2 shares v3's flush's name) */
		"arm_smmu_domain_inv_range", "arm_smmu_tlb_inv_context",
#endif
	};
	char all[256];
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(flushes); i++) {
		*flush = translated ? flushes[i] : NULL;
		ret = snprintf(all, sizeof(all), "%s", events);
		if (*flush)
			snprintf(all + ret, sizeof(all) - ret, "p:uioheap/iotlb_flush %s\n", *flush);
		ret = kprobes_start(all);
		if (ret != -ENOENT || !*flush)
			break;
	}
	return ret;
}

/* Teardown: modules loaded, both edus bound, with heaps, whatever a test did. */
void edu_heaps_replug(struct edu_heaps *h)
{
	int i;

	ensure_uio_heap_loaded();
	if (!module_loaded("uio_pci_generic"))
		insmod_file(getenv("UIOHEAP_UIO_PCI_GENERIC_KO"));
	write_str(UIO_PCI_GENERIC "/new_id", "1234 11e8");
	for (i = 0; i < 2; i++)
		replug_pci(h->pci[i], h->uio[i], sizeof(h->uio[i]));
}

/* The wide edu back by @how ("bind", "rescan", "new_id"): its heap works within @ms, in ms. */
long long wide_edu_back(struct __test_metadata *_metadata, struct edu_heaps *h,
			const char *how, int ms)
{
	const char *path = UIO_PCI_GENERIC "/bind", *text = h->pci[1], *why;
	long long t;

	if (!strcmp(how, "rescan")) {
		path = "/sys/bus/pci/rescan";
		text = "1";
	} else if (!strcmp(how, "new_id")) {
		path = UIO_PCI_GENERIC "/new_id";
		text = "1234 11e8";
	}
	ASSERT_EQ(0, write_str(path, text));
	t = wait_heap_of(h->pci[1], h->uio[1], sizeof(h->uio[1]), ms);
	ASSERT_LE(0, t) TH_LOG("%s: no heap within %d ms", h->pci[1], ms);
	node_of(h->node[1], sizeof(h->node[1]), h->uio[1]);
	why = heap_check(h->node[1], SZ_64K);
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	return t;
}
