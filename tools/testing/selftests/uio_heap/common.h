/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The uio_heap selftests' helpers, defined in common.c; include after kselftest_harness.h.  The
 * VM bench names two edus: UIOHEAP_EDU28 the narrow one (index 0 of each pair), UIOHEAP_EDU64 the
 * wide one.  Helpers that return what failed, not assert, are for threads and children.
 */
#ifndef UIO_HEAP_SELFTEST_COMMON_H
#define UIO_HEAP_SELFTEST_COMMON_H

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <linux/uio_heap.h>

#include "lib/edu.h"
#include "lib/uioheap.h"

#define PAGE_SZ	4096UL
#define SZ_4K	4096UL
#define SZ_64K	(64 * 1024UL)
#define SZ_2M	(2 * 1024 * 1024UL)
#define SZ_1M	(1024 * 1024UL)
#define SZ_4M	(4 * 1024 * 1024UL)

#define UIO_PCI_GENERIC	"/sys/bus/pci/drivers/uio_pci_generic"
#define DMA_API_DUMP	"/sys/kernel/debug/dma-api/dump"
#define UIO_HEAP_PARAMS	"/sys/module/uio_heap/parameters/"

bool path_exists(const char *path);
int write_str(const char *path, const char *text);
int read_str(const char *path, char *buf, size_t size);
unsigned long long read_ull(const char *path, unsigned long long fallback);
int heap_attr(const char *uio, const char *attr, char *buf, size_t size);
unsigned long long revoked_bytes(void);
long long now_ms(void);
void sleep_ms(long ms);

/* Polls @cond every 5 ms for up to @ms: the elapsed ms, or -1. */
#define WAIT_MS(cond, ms) ({						\
	long long start_ = now_ms();					\
	bool done_;							\
									\
	while (!(done_ = (cond)) && now_ms() - start_ <= (ms))		\
		usleep(5000);						\
	done_ ? now_ms() - start_ : -1;					\
})

long long wait_path(const char *path, bool want, int ms);
int env_bool(const char *name);

/* UIOHEAP_LONG=1 (make check-long) selects the long forms. */
#define SHORT_LONG(s, l)	(env_bool("UIOHEAP_LONG") == 1 ? (l) : (s))

/* splitmix64: small, fast, reproducible. */
struct prng {
	uint64_t s;
};

uint64_t prng_next(struct prng *r);
void prng_seed(struct prng *r, uint64_t seed);
uint64_t prng_below(struct prng *r, uint64_t n);
void prng_fill(unsigned char *p, size_t len, uint64_t seed);
bool prng_holds(const unsigned char *p, size_t len, uint64_t seed);
bool is_filled(const void *p, size_t len, unsigned char byte);
int wait_exit(pid_t pid);
uint64_t run_seed(const char *env);
void summary(const char *fmt, ...);

/* Probes of revocable memory: the handler jumps back into the faulting thread if armed. */
extern __thread sigjmp_buf *volatile probe_tls_env;

/* Runs @access with the probe armed: 0 or the signal.  What it changes must be volatile. */
#define PROBE(access) ({						\
	sigjmp_buf probe_env_;						\
	int probe_sig_;							\
									\
	probe_sig_ = sigsetjmp(probe_env_, 1);				\
	if (!probe_sig_) {						\
		probe_tls_env = &probe_env_;				\
		__asm__ __volatile__("" ::: "memory");			\
		access;							\
		__asm__ __volatile__("" ::: "memory");			\
	}								\
	probe_tls_env = NULL;						\
	probe_sig_;							\
})

int probe_pages(volatile unsigned char *p, size_t len, bool write, unsigned char val);
int probe_read8(volatile unsigned char *p, unsigned char *val);
int probe_read64(volatile uint64_t *p, uint64_t *val);
int sig_pages(volatile unsigned char *p, size_t first, size_t n,
	      uint64_t id, bool write, size_t *at, uint64_t *seen);

/* The first failure of a group of workers, kept for the main thread. */
struct first_error {
	pthread_mutex_t lock;
	atomic_long count;
	char msg[512];
};

void first_error_init(struct first_error *e, bool shared);
void __attribute__((format(printf, 2, 3)))
report(struct first_error *e, const char *fmt, ...);
int heap_addr(int heap, int buf, uint32_t flags, uint64_t *addr);
int dmabuf_addr(int buf, uint64_t *addr);
void node_of(char *node, size_t size, const char *uio);
int edu_narrow_bits(void);
uint64_t edu_narrow_mask(void);
int edu_pci(bool narrow, char *pci, size_t size);
long long wait_uio_of(const char *pci, char *uio, size_t size, int ms);
long long wait_heap_of(const char *pci, char *uio, size_t size, int ms);

/* Where a page is physically: pagemap (not VM_PFNMAP), DMA-API debug or /proc/kcore. */
enum page_is { PAGE_UNKNOWN, PAGE_AT_ADDR, PAGE_ELSEWHERE };

uint64_t pagemap_phys(int fd, const void *va);
uint64_t dma_debug_phys(const char *pci, uint64_t dma);
enum page_is kcore_page(int fd, uint64_t phys, const void *page);
const char *heap_check(const char *node, size_t len);

/* @call fails (returns -1 or MAP_FAILED) with errno @err. */
#define EXPECT_ERRNO(err, call) do {					\
	EXPECT_EQ(-1, (long)(call));					\
	EXPECT_EQ(err, errno);						\
} while (0)

int open_heap(struct __test_metadata *_metadata, const char *name);
int alloc_map(struct __test_metadata *_metadata, int heap, size_t len, unsigned char **p);
int node_alloc(struct __test_metadata *_metadata, const char *name, size_t len, unsigned char **p);
unsigned long long heap_ull(const char *uio, const char *attr);
int heap_usage(const char *uio, unsigned long long *bytes, unsigned long long *bufs);
void expect_revoked(struct __test_metadata *_metadata, int heap,
		    int buf, volatile unsigned char *p, size_t len);
bool module_loaded(const char *name);
int rmmod_nb(const char *name);
int insmod_file(const char *path);
int ensure_uio_heap_loaded(void);
int unplug_pci(const char *pci, bool remove);
int replug_pci(const char *pci, char *uio, size_t size);

/* vgem imports as a real DRM driver does and exports dumb buffers; its uAPI: */
struct vgem_prime_handle {
	__u32 handle;
	__u32 flags;
	__s32 fd;
};

struct vgem_gem_close {
	__u32 handle;
	__u32 pad;
};

struct vgem_create_dumb {
	__u32 height;
	__u32 width;
	__u32 bpp;
	__u32 flags;
	__u32 handle;
	__u32 pitch;
	__u64 size;
};

#define VGEM_IOCTL_GEM_CLOSE		_IOW('d', 0x09, struct vgem_gem_close)
#define VGEM_IOCTL_PRIME_HANDLE_TO_FD	_IOWR('d', 0x2d, struct vgem_prime_handle)
#define VGEM_IOCTL_PRIME_FD_TO_HANDLE	_IOWR('d', 0x2e, struct vgem_prime_handle)
#define VGEM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xb2, struct vgem_create_dumb)

int vgem_open(struct __test_metadata *_metadata);
int vgem_dmabuf(int drm, size_t len);
int udmabuf_new(size_t len, unsigned char **p);

/* Both edus' heaps and knobs as found; missing ones fail (a broken VM), never skip. */
struct edu_heaps {
	char pci[2][32];
	char uio[2][16];
	char node[2][64];
	uint64_t mask[2];		/* the highest address each mask allows */
	unsigned long long mask_bits[2];
	unsigned long long max_bytes[2];
	char low_zone_max[24];		/* module parameter, as found */
};

void edu_heaps_get(struct __test_metadata *_metadata, struct edu_heaps *h);
void edu_heaps_restore(const struct edu_heaps *h);
void edu_heaps_narrow(struct __test_metadata *_metadata, struct edu_heaps *h);

/* A kselftest fixture @name with the heaps of both edus: n is 2. */
#define EDU_HEAPS_FIELDS						\
	struct edu_heaps h;						\
	int n;								\
	char (*uio)[16];						\
	char (*node)[64];						\
	uint64_t *mask

#define EDU_HEAPS_SETUP(self) do {					\
	edu_heaps_get(_metadata, &(self)->h);				\
	(self)->n = 2;							\
	(self)->uio = (self)->h.uio;					\
	(self)->node = (self)->h.node;					\
	(self)->mask = (self)->h.mask;					\
} while (0)

#define EDU_HEAPS_FIXTURE(name)						\
FIXTURE(name) {								\
	EDU_HEAPS_FIELDS;						\
};									\
FIXTURE_SETUP(name)							\
{									\
	EDU_HEAPS_SETUP(self);						\
}									\
FIXTURE_TEARDOWN(name)							\
{									\
	edu_heaps_restore(&self->h);					\
}

int edu_copy(const char *uio, uint64_t from, uint64_t to, uint32_t len);

/*
 * A thread makes the edu write a pattern (4000 bytes fit QEMU 7.2's window) into a buffer, polled,
 * until stopped.  Only bytes that landed before an unplug tell anything.
 */
#define PUMP_LEN	4000u

struct dma_pump {
	struct edu edu;
	uint64_t addr;			/* device address of the target */
	unsigned char pattern[PUMP_LEN];
	atomic_int stop;
	atomic_long ok, failed;
	pthread_t thread;
};

const char *dma_pump_start(struct dma_pump *d, const char *uio, int heap, uint64_t addr);
const char *dma_pump_landed(struct dma_pump *d, const unsigned char *cpu);
void dma_pump_stop(struct dma_pump *d);

/* The DMA API's cache maintenance, by kprobes on arch_sync_dma_for_{cpu,device}() (not x86). */
#define TRACEFS		"/sys/kernel/tracing/"
#define SYNC_ARGS	" paddr=$arg1:x64 size=$arg2:x64 dir=$arg3:x32\n"
#define SYNC_PROBES	"p:uioheap/for_cpu arch_sync_dma_for_cpu" SYNC_ARGS \
			"p:uioheap/for_device arch_sync_dma_for_device" SYNC_ARGS

struct sync_seen {
	unsigned long calls[2];		/* [0] for the CPU, [1] for the device */
	unsigned long long bytes[2];
	unsigned int dirs[2];		/* bit (1 << dma_data_direction) */
	uint64_t lo, hi;		/* lowest and highest byte maintained */
};

int tracefs_write(const char *name, const char *text);
void sync_probe_stop(void);
int kprobes_start(const char *events);
long trace_count(const char *what);
int sync_probe_read(struct sync_seen *s);
void sync_checks(struct __test_metadata *_metadata, const char *node,
		 bool maintained, uint64_t phys_lo, uint64_t phys_hi);

/* tests/vm/verdict.sh forgives @bdf's DMAR faults between "uioheap: expect-fault begin|end BDF". */
#define EXPECT_FAULT_MARKER	"uioheap: expect-fault"

int expect_fault_begin(const char *bdf);
bool expect_fault_end(int kfd, const char *bdf, int timeout_ms);


/* ---- Shared by uio_heap_stress, uio_heap_fuzz and uio_heap_lifetime ---- */

void expect_usage(struct __test_metadata *_metadata, const char *uio,
		  unsigned long long bytes, unsigned long long bufs);
void expect_no_report(struct __test_metadata *_metadata, struct first_error *e);
bool heap_translated(struct __test_metadata *_metadata, const char *uio);
int iotlb_flush_probe(const char *events, bool translated, const char **flush);
void edu_heaps_replug(struct edu_heaps *h);
long long wide_edu_back(struct __test_metadata *_metadata, struct edu_heaps *h,
			const char *how, int ms);

/* A fixture @name for tests that unplug the wide edu (pci, uio, node) or unload modules. */
#define EDU_UNPLUG_FIXTURE(name)					\
FIXTURE(name) {								\
	struct edu_heaps h;						\
	char *pci, *uio, *node;						\
};									\
FIXTURE_SETUP(name)							\
{									\
	edu_heaps_get(_metadata, &self->h);				\
	self->pci = self->h.pci[1];					\
	self->uio = self->h.uio[1];					\
	self->node = self->h.node[1];					\
}									\
FIXTURE_TEARDOWN(name)							\
{									\
	edu_heaps_replug(&self->h);					\
}

#endif
