// SPDX-License-Identifier: GPL-2.0
/*
 * Imports of the other edu's heap's, the system heap's, udmabuf's and vgem's dma-bufs, DMAed both
 * ways at both ends by the wide edu.  Without an IOMMU only one page is surely one range.
 */
#include "kselftest_harness.h"
#include "common.h"

#define DEV_LEN		PUMP_LEN	/* inside QEMU 7.2's edu window */

FIXTURE(imp) {
	EDU_HEAPS_FIELDS;
	int heap;			/* the wide edu's uioN */
	bool translated;		/* an IOMMU translates for it */
	size_t len;			/* what every exporter makes */
	int stage;			/* a buffer of the heap: DMA staging */
	unsigned char *stage_p;
	uint64_t stage_addr;
};

FIXTURE_SETUP(imp)
{
	char mode[16] = "";

	EDU_HEAPS_SETUP(self);
	ASSERT_LT(0, heap_attr(self->uio[1], "iommu", mode, sizeof(mode)));
	self->translated = !strncmp(mode, "dma", 3);
	self->len = self->translated ? SZ_64K : PAGE_SZ;

	self->heap = open_heap(_metadata, self->uio[1]);
	self->stage = alloc_map(_metadata, self->heap, PAGE_SZ, &self->stage_p);
	ASSERT_EQ(0, uioheap_dma_addr(self->heap, self->stage, &self->stage_addr, NULL));
}

/* The test's exit releases its fds and mappings; releases a test checks are in the test. */
FIXTURE_TEARDOWN(imp)
{
	edu_heaps_restore(&self->h);
}

/* CPU access to an exporter's mapping, bracketed as its owner must. */
static void cpu_sync(int sync_fd, bool start, bool write)
{
	if (sync_fd >= 0)
		uioheap_sync(sync_fd, start, write);
}

/* Imports @fd (mapped at @p, synced on @sync_fd if >= 0), DMAs both ways at both ends. */
static void import_and_dma(struct __test_metadata *_metadata,
			   FIXTURE_DATA(imp) *self, int fd, unsigned char *p,
			   int sync_fd)
{
	unsigned long long before = heap_ull(self->uio[1], "imported_bytes");
	size_t ends[2] = { 0, self->len - PAGE_SZ };
	uint64_t addr, size;
	int handle, i;

	handle = uioheap_import(self->heap, fd, &addr, &size);
	ASSERT_LT(0, handle) TH_LOG("import: %s", strerror(-handle));
	EXPECT_EQ(self->len, size);
	EXPECT_GE(self->mask[1], addr + size - 1);
	EXPECT_EQ(before + self->len, heap_ull(self->uio[1], "imported_bytes"));

	for (i = 0; i < 2; i++) {
		/* Device to the exporter's memory... */
		prng_fill(self->stage_p, DEV_LEN, 0x1a2b + i);
		ASSERT_EQ(0, edu_copy(self->uio[1], self->stage_addr, addr + ends[i], DEV_LEN));
		cpu_sync(sync_fd, true, false);
		EXPECT_TRUE(prng_holds(p + ends[i], DEV_LEN, 0x1a2b + i))
			TH_LOG("the device's bytes did not reach offset %zu", ends[i]);
		cpu_sync(sync_fd, false, false);

		/* ...and from it. */
		cpu_sync(sync_fd, true, true);
		prng_fill(p + ends[i], DEV_LEN, 0x3c4d + i);
		cpu_sync(sync_fd, false, true);
		ASSERT_EQ(0, edu_copy(self->uio[1], addr + ends[i], self->stage_addr, DEV_LEN));
		EXPECT_TRUE(prng_holds(self->stage_p, DEV_LEN, 0x3c4d + i))
			TH_LOG("the device did not read offset %zu", ends[i]);
	}

	EXPECT_EQ(0, uioheap_unimport(self->heap, handle));
	EXPECT_EQ(-ENOENT, uioheap_unimport(self->heap, handle));
	EXPECT_EQ(before, heap_ull(self->uio[1], "imported_bytes"));
}

TEST_F(imp, uio_heap_buffer_of_another_device)
{
	/* The narrow edu's heap: an exporter every kernel has. */
	unsigned char *p;
	int buf = node_alloc(_metadata, self->uio[0], self->len, &p);

	import_and_dma(_metadata, self, buf, p, -1);
}

TEST_F(imp, system_heap_buffer)
{
	struct dma_heap_allocation_data alloc = {
		.len = self->len, .fd_flags = O_RDWR | O_CLOEXEC,
	};
	unsigned char *p;
	int sys;

	sys = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (sys < 0 && errno == ENOENT)
		SKIP(return, "kernel without the system heap");
	ASSERT_LE(0, sys);
	ASSERT_EQ(0, ioctl(sys, DMA_HEAP_IOCTL_ALLOC, &alloc));
	p = uioheap_map(alloc.fd, self->len);
	ASSERT_NE(NULL, p);

	import_and_dma(_metadata, self, alloc.fd, p, alloc.fd);
}

TEST_F(imp, udmabuf_from_a_memfd)
{
	unsigned long long before = heap_ull(self->uio[1], "imports");
	unsigned char *p;
	uint64_t addr;
	int buf, ret;

	buf = udmabuf_new(self->len, &p);
	if (buf == -ENOENT)
		SKIP(return, "kernel without udmabuf");
	ASSERT_LE(0, buf) TH_LOG("udmabuf: %s", strerror(-buf));
	/* No DMA_BUF_IOCTL_SYNC: 6.12's udmabuf syncs in the direction asked, not as mapped. */
	import_and_dma(_metadata, self, buf, p, -1);
	if (self->translated)
		return;
	/* Without an IOMMU, scattered memfd pages are not one range. */
	buf = udmabuf_new(SZ_1M, &p);
	ASSERT_LE(0, buf);
	ret = uioheap_import(self->heap, buf, &addr, NULL);
	EXPECT_TRUE(ret == -ERANGE || ret > 0) TH_LOG("import: %d", ret);
	TH_LOG("1 MiB of memfd pages without an IOMMU: %s",
	       ret > 0 ? "happened to be contiguous" : "ERANGE");
	if (ret > 0)
		EXPECT_EQ(0, uioheap_unimport(self->heap, ret));
	EXPECT_EQ(before, heap_ull(self->uio[1], "imports"));
}

TEST_F(imp, vgem_buffer)
{
	int buf, drm = vgem_open(_metadata);
	unsigned char *p;

	if (drm < 0)
		SKIP(return, "kernel without vgem");
	buf = vgem_dmabuf(drm, self->len);
	ASSERT_LE(0, buf) TH_LOG("vgem dumb buffer: %s", strerror(-buf));
	p = uioheap_map(buf, self->len);
	ASSERT_NE(NULL, p);

	import_and_dma(_metadata, self, buf, p, buf);
}

/* The import holds the buffer: the exporter's fd may go first (the memfd shows the bytes). */
TEST_F(imp, exporter_fd_closed_while_imported)
{
	unsigned char *p;
	uint64_t addr;
	int buf, handle;

	buf = udmabuf_new(self->len, &p);
	if (buf == -ENOENT)
		SKIP(return, "kernel without udmabuf");
	ASSERT_LE(0, buf);
	handle = uioheap_import(self->heap, buf, &addr, NULL);
	ASSERT_LT(0, handle);
	close(buf);

	prng_fill(self->stage_p, DEV_LEN, 0x5e5e);
	ASSERT_EQ(0, edu_copy(self->uio[1], self->stage_addr, addr, DEV_LEN));
	EXPECT_TRUE(prng_holds(p, DEV_LEN, 0x5e5e));
	EXPECT_EQ(0, uioheap_unimport(self->heap, handle));
}

/*
 * Through the IOMMU the narrow edu imports any buffer below its mask; without, one beyond it is
 * ERANGE: always at 28 bits, by chance at 32 (three quarters of arm64's memory is below).
 */
TEST_F(imp, narrow_device_gets_an_address_below_its_mask)
{
	const uint64_t mask = edu_narrow_mask();
	unsigned char *p, *sp;
	uint64_t addr, saddr;
	int heap, buf, stage, handle;

	ASSERT_EQ(0, uioheap_sysfs_write(self->uio[0], "dma_mask_bits", edu_narrow_bits()));
	heap = open_heap(_metadata, self->uio[0]);
	stage = alloc_map(_metadata, heap, PAGE_SZ, &sp);
	ASSERT_EQ(0, uioheap_dma_addr(heap, stage, &saddr, NULL));

	/* The wide edu's buffer: its pages may lie anywhere. */
	buf = alloc_map(_metadata, self->heap, self->len, &p);
	handle = uioheap_import(heap, buf, &addr, NULL);
	if (self->translated)
		ASSERT_LT(0, handle) TH_LOG("import: %s", strerror(-handle));
	if (!self->translated && (edu_narrow_bits() < 32 || handle < 0))
		EXPECT_EQ(-ERANGE, handle);
	if (handle > 0) {
		EXPECT_GE(mask, addr + self->len - 1);
		prng_fill(sp, DEV_LEN, 0x2828);
		ASSERT_EQ(0, edu_copy(self->uio[0], saddr, addr, DEV_LEN));
		EXPECT_TRUE(prng_holds(p, DEV_LEN, 0x2828));
		EXPECT_EQ(0, uioheap_unimport(heap, handle));
	}
}

TEST_F(imp, bad_requests)
{
	struct uio_heap_import_data data = { 0 };
	struct uio_heap_unimport_data un = { 0 };
	int buf, handle, other;
	uint64_t addr;

	EXPECT_EQ(-EBADF, uioheap_import(self->heap, -1, &addr, NULL));
	EXPECT_EQ(-EBADF, uioheap_import(self->heap, 1000000, &addr, NULL));
	/* Not a dma-buf. */
	EXPECT_EQ(-EINVAL, uioheap_import(self->heap, self->heap, &addr, NULL));

	buf = node_alloc(_metadata, self->uio[0], self->len, NULL);
	data.fd = buf;
	data.flags = ~UIO_HEAP_VALID_IMPORT_FLAGS;
	EXPECT_ERRNO(EINVAL, ioctl(self->heap, UIO_HEAP_IOCTL_IMPORT, &data));
	/* Output only: what a reused struct carries in is overwritten. */
	data.flags = 0;
	data.out_flags = ~0U;
	ASSERT_EQ(0, ioctl(self->heap, UIO_HEAP_IOCTL_IMPORT, &data));
	EXPECT_EQ(0, data.out_flags);
	EXPECT_EQ(0, uioheap_unimport(self->heap, data.handle));

	EXPECT_EQ(-ENOENT, uioheap_unimport(self->heap, 0));
	EXPECT_EQ(-ENOENT, uioheap_unimport(self->heap, 12345));
	handle = uioheap_import(self->heap, buf, &addr, NULL);
	ASSERT_LT(0, handle);
	un.handle = handle;
	un.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->heap, UIO_HEAP_IOCTL_UNIMPORT, &un));
	/* Another heap fd does not hold it. */
	other = open_heap(_metadata, self->uio[1]);
	EXPECT_EQ(-ENOENT, uioheap_unimport(other, handle));
	close(other);
	EXPECT_EQ(0, uioheap_unimport(self->heap, handle));
	EXPECT_EQ(-ENOENT, uioheap_unimport(self->heap, handle));
	/* A released handle is not given out again: a stale one stays stale. */
	other = uioheap_import(self->heap, buf, &addr, NULL);
	ASSERT_LT(0, other);
	EXPECT_NE(handle, other);
	EXPECT_EQ(-ENOENT, uioheap_unimport(self->heap, handle));
	EXPECT_EQ(0, uioheap_unimport(self->heap, other));
}

/* Imports count in sysfs and against max_bytes; closing the heap fd ends them. */
TEST_F(imp, counted_limited_and_ended_by_close)
{
	unsigned long long n0 = heap_ull(self->uio[1], "imports");
	unsigned long long b0 = heap_ull(self->uio[1], "imported_bytes");
	unsigned long long allocated;
	uint64_t addr;
	int heap, buf, i;

	buf = node_alloc(_metadata, self->uio[0], self->len, NULL);
	heap = open_heap(_metadata, self->uio[1]);
	for (i = 0; i < 3; i++)
		ASSERT_LT(0, uioheap_import(heap, buf, &addr, NULL));
	EXPECT_EQ(n0 + 3, heap_ull(self->uio[1], "imports"));
	EXPECT_EQ(b0 + 3 * self->len, heap_ull(self->uio[1], "imported_bytes"));

	/* Room for nothing more: the limit covers buffers and imports. */
	ASSERT_EQ(0, uioheap_sysfs_read(self->uio[1], "allocated_bytes", &allocated));
	ASSERT_EQ(0, uioheap_sysfs_write(self->uio[1], "max_bytes",
					 allocated + b0 + 3 * self->len));
	EXPECT_EQ(-ENOSPC, uioheap_import(heap, buf, &addr, NULL));
	EXPECT_EQ(-ENOSPC, uioheap_alloc(heap, PAGE_SZ, O_RDWR));
	EXPECT_EQ(n0 + 3, heap_ull(self->uio[1], "imports"));

	close(heap);
	EXPECT_EQ(n0, heap_ull(self->uio[1], "imports"));
	EXPECT_EQ(b0, heap_ull(self->uio[1], "imported_bytes"));
}

/* A read-only dma-buf fd imports for device reads only: behind an IOMMU device writes fault. */
TEST_F(imp, read_only_fd_is_read_only_for_the_device)
{
	struct uio_heap_import_data data = { 0 };
	unsigned char *p;
	int heap;

	heap = open_heap(_metadata, self->uio[0]);
	data.fd = uioheap_alloc(heap, self->len, O_RDONLY | O_CLOEXEC);
	close(heap);
	ASSERT_LE(0, (int)data.fd);
	p = mmap(NULL, self->len, PROT_READ, MAP_SHARED, data.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, ioctl(self->heap, UIO_HEAP_IOCTL_IMPORT, &data))
		TH_LOG("import: %s", strerror(errno));
	EXPECT_EQ(UIO_HEAP_IMPORT_OUT_READ_ONLY, data.out_flags);

	/*
	 * The write first: QEMU's VT-d checks permissions (and reports the
	 * fault) only when it walks the page table, not on an IOTLB hit.
	 */
#ifdef __x86_64__	/* the verdict reads only intel-iommu's fault reports */
	if (self->translated) {
		int kfd;

		prng_fill(self->stage_p, DEV_LEN, 0x4141);
		kfd = expect_fault_begin(self->h.pci[1]);
		ASSERT_LE(0, kfd);
		ASSERT_EQ(0, edu_copy(self->uio[1], self->stage_addr, data.dma_addr, DEV_LEN));
		EXPECT_TRUE(expect_fault_end(kfd, self->h.pci[1], 10000))
			TH_LOG("the IOMMU reported no write fault");
		EXPECT_TRUE(is_filled(p, self->len, 0))
			TH_LOG("the device wrote into a read-only import");
	}
#endif
	prng_fill(self->stage_p, DEV_LEN, 0x4040);
	ASSERT_EQ(0, edu_copy(self->uio[1], data.dma_addr, self->stage_addr, DEV_LEN));
	EXPECT_TRUE(is_filled(self->stage_p, DEV_LEN, 0))
		TH_LOG("the device did not read the buffer");
	EXPECT_EQ(0, uioheap_unimport(self->heap, data.handle));
}

/* vgem's FENCE_ATTACH puts an unsignalled fence (10 s) on a buffer; FENCE_SIGNAL signals it. */
struct vgem_fence_attach {
	__u32 handle, flags, out_fence, pad;
};

struct vgem_fence_signal {
	__u32 fence, flags;
};

#define VGEM_FENCE_WRITE		0x1
#define VGEM_IOCTL_FENCE_ATTACH		_IOWR('d', 0x41, struct vgem_fence_attach)
#define VGEM_IOCTL_FENCE_SIGNAL		_IOW('d', 0x42, struct vgem_fence_signal)

/* Imports @fd with @flags: the handle or -errno, and how long it took. */
static int timed_import(int heap, int fd, __u32 flags, long long *ms)
{
	struct uio_heap_import_data data = { .fd = fd, .flags = flags };
	long long start = now_ms();
	int ret;

	ret = ioctl(heap, UIO_HEAP_IOCTL_IMPORT, &data) ? -errno : (int)data.handle;
	*ms = now_ms() - start;
	return ret;
}

/* An import waits for fences until signalled or import_fence_timeout_ms (1 s); NO_WAIT does not. */
TEST_F(imp, waits_for_the_exporters_fences)
{
	struct vgem_prime_handle prime = { 0 };
	struct vgem_fence_attach fence = { .flags = VGEM_FENCE_WRITE };
	struct vgem_fence_signal sig = { 0 };
	int handle, drm = vgem_open(_metadata);
	long long ms;
	pid_t child;

	if (drm < 0)
		SKIP(return, "kernel without vgem");
	/* The dma-buf, and a GEM handle of its object to fence. */
	prime.fd = vgem_dmabuf(drm, PAGE_SZ);
	ASSERT_LE(0, prime.fd) TH_LOG("vgem dumb buffer: %s", strerror(-prime.fd));
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_PRIME_FD_TO_HANDLE, &prime));
	fence.handle = prime.handle;
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_FENCE_ATTACH, &fence))
		TH_LOG("vgem fence: %s", strerror(errno));

	handle = timed_import(self->heap, prime.fd, UIO_HEAP_IMPORT_NO_WAIT, &ms);
	ASSERT_LT(0, handle) TH_LOG("import, no wait: %s", strerror(-handle));
	EXPECT_GT(500, ms);
	EXPECT_EQ(0, uioheap_unimport(self->heap, handle));

	EXPECT_EQ(-ETIMEDOUT, timed_import(self->heap, prime.fd, 0, &ms));
	EXPECT_LE(900, ms);
	EXPECT_GT(5000, ms);

	/* Signalled by another process 300 ms into the wait. */
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		sleep_ms(300);
		sig.fence = fence.out_fence;
		_exit(ioctl(drm, VGEM_IOCTL_FENCE_SIGNAL, &sig) ? 1 : 0);
	}
	handle = timed_import(self->heap, prime.fd, 0, &ms);
	EXPECT_LT(0, handle) TH_LOG("import: %s", strerror(-handle));
	EXPECT_LE(250, ms);
	EXPECT_EQ(0, wait_exit(child));
	if (handle > 0)
		EXPECT_EQ(0, uioheap_unimport(self->heap, handle));
}

/* An import, like a buffer, keeps the mask from narrowing below it until released. */
TEST_F(imp, mask_narrowing_below_an_import_is_refused)
{
	unsigned long long bits;
	uint64_t addr;
	int heap, handle;

	heap = open_heap(_metadata, self->uio[0]);
	handle = uioheap_import(heap, self->stage, &addr, NULL);
	ASSERT_LT(0, handle) TH_LOG("import: %s", strerror(-handle));
	bits = 63 - __builtin_clzll(addr + PAGE_SZ - 1);
	ASSERT_LE(12, bits);
	EXPECT_EQ(-EBUSY, uioheap_sysfs_write(self->uio[0], "dma_mask_bits", bits))
		TH_LOG("%llu bits below an import at %#llx", bits, (unsigned long long)addr);
	EXPECT_EQ(0, uioheap_unimport(heap, handle));
	/* Released, nothing holds the mask (EIO: below what arm64's RAM needs). */
	EXPECT_NE(-EBUSY, uioheap_sysfs_write(self->uio[0], "dma_mask_bits", bits));
}

TEST_HARNESS_MAIN
