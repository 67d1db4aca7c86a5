// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap selftests: heap nodes, allocation, mapping, addresses, DMA
 * masks, real device DMA through QEMU's edu device, and bad input.
 *
 * Needs uio_heap loaded and the VM bench's two edu devices bound to
 * uio_pci_generic; a missing piece fails.  Only what a kernel cannot do
 * is skipped: the system heap (6.1), DMA_BUF_IOCTL_GET_DMA_ADDR (stock
 * kernels, told by UIOHEAP_PATCHED=0).
 */
#include <limits.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>

#include "kselftest_harness.h"
#include "common.h"

#define NR_OUTSTANDING	64

FIXTURE(heap) {
	struct edu_heaps h;
	const char *narrow;	/* edu with the narrow DMA engine */
	const char *wide;	/* edu with a 64-bit DMA engine */
	int narrow_fd;
	int wide_fd;
};

FIXTURE_SETUP(heap)
{
	self->narrow_fd = -1;
	self->wide_fd = -1;
	edu_heaps_get(_metadata, &self->h);
	self->narrow = self->h.uio[0];
	self->wide = self->h.uio[1];
	self->narrow_fd = uioheap_open(self->narrow);
	ASSERT_LE(0, self->narrow_fd) TH_LOG("open %s: %s", self->narrow,
					     strerror(-self->narrow_fd));
	self->wide_fd = uioheap_open(self->wide);
	ASSERT_LE(0, self->wide_fd);
}

FIXTURE_TEARDOWN(heap)
{
	if (self->narrow_fd >= 0)
		close(self->narrow_fd);
	if (self->wide_fd >= 0)
		close(self->wide_fd);
	edu_heaps_restore(&self->h);
}

static uint64_t dma_addr_of(struct __test_metadata *_metadata, int heap,
			    int buf)
{
	uint64_t addr = 0;

	ASSERT_EQ(0, heap_addr(heap, buf, 0, &addr));
	return addr;
}

static int read_dev(const char *path, dev_t *dev)
{
	unsigned int maj, min;
	FILE *f = fopen(path, "re");
	int ret;

	if (!f)
		return -errno;
	ret = fscanf(f, "%u:%u", &maj, &min) == 2 ? 0 : -EIO;
	fclose(f);
	*dev = makedev(maj, min);
	return ret;
}

/* Every UIO device with a DMA-capable PCI parent has its heap, named right. */
TEST(nodes_for_every_uio_device)
{
	char path[300], a[PATH_MAX], b[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int seen = 0;
	dev_t rdev = 0;
	DIR *dir;

	dir = opendir("/sys/class/uio");
	ASSERT_NE(NULL, dir) TH_LOG("no /sys/class/uio: uio not loaded");
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "uio", 3))
			continue;
		seen++;
		snprintf(path, sizeof(path), "/dev/dma_heap/%s", de->d_name);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s missing", path);
		EXPECT_TRUE(S_ISCHR(st.st_mode));
		EXPECT_EQ(0600, st.st_mode & 0777);

		/* The heap's device link names the UIO device's parent. */
		snprintf(path, sizeof(path), "/sys/class/uio/%s/device",
			 de->d_name);
		ASSERT_NE(NULL, realpath(path, a));
		snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/device",
			 de->d_name);
		ASSERT_NE(NULL, realpath(path, b));
		EXPECT_STREQ(a, b);

		/* The devnode is the heap's own char device. */
		snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/dev",
			 de->d_name);
		ASSERT_EQ(0, read_dev(path, &rdev));
		EXPECT_EQ(rdev, st.st_rdev);
	}
	closedir(dir);
	ASSERT_LT(0, seen);
}

TEST_F(heap, sizes_round_to_pages)
{
	static const size_t sizes[] = { 1, 4095, 4096, 4097, SZ_64K + 1,
					SZ_1M, SZ_4M };
	unsigned long long before, after;
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t want = (sizes[i] + SZ_4K - 1) & ~(SZ_4K - 1);
		struct stat st;
		int fd;

		ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes",
						&before));
		fd = uioheap_alloc(self->wide_fd, sizes[i], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("size %zu: %s", sizes[i], strerror(-fd));
		/* A dma-buf's size is its inode size. */
		ASSERT_EQ(0, fstat(fd, &st));
		EXPECT_EQ(want, (size_t)st.st_size);
		ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes",
						&after));
		EXPECT_EQ(before + want, after);
		close(fd);
	}
}

TEST_F(heap, many_outstanding_distinct_aligned_addresses)
{
	unsigned long long nbufs, bytes;
	uint64_t addrs[NR_OUTSTANDING];
	int fds[NR_OUTSTANDING];
	int i, j;

	for (i = 0; i < NR_OUTSTANDING; i++) {
		fds[i] = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fds[i]);
		addrs[i] = dma_addr_of(_metadata, self->wide_fd, fds[i]);
		EXPECT_EQ(0, addrs[i] & (SZ_4K - 1));
	}
	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "buffers", &nbufs));
	EXPECT_LE(NR_OUTSTANDING, nbufs);
	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes", &bytes));
	EXPECT_LE(NR_OUTSTANDING * SZ_64K, bytes);

	/* No two buffers overlap in the device's address space. */
	for (i = 0; i < NR_OUTSTANDING; i++)
		for (j = i + 1; j < NR_OUTSTANDING; j++)
			EXPECT_TRUE(addrs[i] + SZ_64K <= addrs[j] ||
				    addrs[j] + SZ_64K <= addrs[i]);
	for (i = 0; i < NR_OUTSTANDING; i++)
		close(fds[i]);
}

TEST_F(heap, cloexec_honoured)
{
	int a, b;

	a = uioheap_alloc(self->wide_fd, SZ_4K, O_RDWR | O_CLOEXEC);
	b = uioheap_alloc(self->wide_fd, SZ_4K, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_EQ(FD_CLOEXEC, fcntl(a, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, fcntl(b, F_GETFD) & FD_CLOEXEC);
	close(a);
	close(b);
}

TEST_F(heap, access_mode_honoured)
{
	int fd = uioheap_alloc(self->wide_fd, SZ_4K, O_RDONLY);
	void *p;

	ASSERT_LE(0, fd);
	EXPECT_EQ(O_RDONLY, fcntl(fd, F_GETFL) & O_ACCMODE);
	p = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	/* Read-only shared mappings work, and cannot be made writable. */
	p = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ((volatile unsigned char *)p)[0]);
	EXPECT_EQ(-1, mprotect(p, SZ_4K, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, SZ_4K);
	/* Private (copy-on-write) mappings of device memory: never. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, SZ_4K, PROT_READ, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
}

TEST_F(heap, buffers_are_zeroed)
{
	unsigned char *p;
	size_t i;
	int round, fd;

	for (round = 0; round < 3; round++) {
		fd = uioheap_alloc(self->wide_fd, SZ_1M, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		p = uioheap_map(fd, SZ_1M);
		ASSERT_NE(NULL, p);
		for (i = 0; i < SZ_1M; i++)
			if (p[i])
				break;
		EXPECT_EQ(SZ_1M, i) TH_LOG("round %d: byte %zu is %#x", round,
					   i, p[i]);
		/* Dirty it, so that the next round would see stale data. */
		memset(p, 0xa5, SZ_1M);
		munmap(p, SZ_1M);
		close(fd);
	}
}

/* Older (smaller) and newer (larger) structs, as the dma-heap core takes. */
struct alloc_data_v0 {
	__u64 len;
	__u32 fd;
	__u32 fd_flags;
};

struct alloc_data_next {
	struct dma_heap_allocation_data cur;
	__u64 future;
};

TEST_F(heap, alloc_struct_sizes)
{
	struct alloc_data_next next = {
		.cur = { .len = SZ_4K, .fd_flags = O_RDWR | O_CLOEXEC },
		.future = 0x1122334455667788ULL,
	};
	struct alloc_data_v0 old = { .len = SZ_4K, .fd_flags = O_RDWR };
	struct stat st;

	ASSERT_EQ(0, ioctl(self->wide_fd,
			   _IOWR(DMA_HEAP_IOC_MAGIC, 0, struct alloc_data_v0),
			   &old));
	ASSERT_LT(0, (int)old.fd);
	ASSERT_EQ(0, fstat(old.fd, &st));
	EXPECT_EQ(SZ_4K, (size_t)st.st_size);
	close(old.fd);

	ASSERT_EQ(0, ioctl(self->wide_fd,
			   _IOWR(DMA_HEAP_IOC_MAGIC, 0, struct alloc_data_next),
			   &next));
	ASSERT_LT(0, (int)next.cur.fd);
	EXPECT_EQ(0x1122334455667788ULL, next.future);
	close(next.cur.fd);
}

TEST_F(heap, mmap_read_write)
{
	unsigned char *p, *q;
	size_t i;
	int fd;

	fd = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	p = uioheap_map(fd, SZ_64K);
	ASSERT_NE(NULL, p);
	q = uioheap_map(fd, SZ_64K);
	ASSERT_NE(NULL, q);
	ASSERT_EQ(0, uioheap_sync(fd, 1, 1));
	for (i = 0; i < SZ_64K; i++)
		p[i] = (unsigned char)(i * 31 + 7);
	ASSERT_EQ(0, uioheap_sync(fd, 0, 1));
	/* Two mappings of one buffer see the same memory. */
	EXPECT_EQ(0, memcmp(p, q, SZ_64K));
	munmap(q, SZ_64K);

	/* A mapping at an offset sees the matching bytes. */
	q = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, fd, 3 * SZ_4K);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, memcmp(p + 3 * SZ_4K, q, SZ_4K));
	munmap(q, SZ_4K);
	munmap(p, SZ_64K);
	close(fd);
}

TEST_F(heap, mmap_refuses_beyond_buffer)
{
	void *p;
	int fd;

	fd = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);

	p = mmap(NULL, SZ_64K + SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, SZ_64K);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * SZ_4K, PROT_READ, MAP_SHARED, fd, SZ_64K - SZ_4K);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* Copy-on-write of device memory is refused. */
	p = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* A mapping cannot be grown past the buffer either. */
	p = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(MAP_FAILED, mremap(p, SZ_4K, 2 * SZ_4K, 0));
	munmap(p, SZ_4K);
	close(fd);
}

/*
 * uio_pci_generic leaves PCI's default 32-bit mask.  Checking addresses
 * against it would prove nothing in a 2 GiB guest; that the heap obeys a
 * mask is shown by narrow_mask_is_obeyed, and that it obeys the right
 * one by device_dma_narrow: QEMU's narrow edu clamps any address
 * above its mask, so a wrong one lands the data elsewhere.
 */
TEST_F(heap, default_mask_is_the_devices)
{
	EXPECT_EQ(32, self->h.mask_bits[0]);
	EXPECT_EQ(32, self->h.mask_bits[1]);
}

/*
 * Both nodes say whether the device snoops CPU caches: every PCI device on
 * x86 does, and so does arm64 virt's PCIe host unless the device tree
 * the VM booted with says otherwise (UIOHEAP_COHERENT=0).
 */
TEST_F(heap, coherence_is_the_devices)
{
	const char *env = getenv("UIOHEAP_COHERENT");
	unsigned long long want = env ? strtoull(env, NULL, 0) : 1, v;
	char cached[32];

	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "coherent", &v));
	EXPECT_EQ(want, v);
	snprintf(cached, sizeof(cached), "%s-cached", self->wide);
	ASSERT_EQ(0, uioheap_sysfs_read(cached, "coherent", &v));
	EXPECT_EQ(want, v);
}

/*
 * DMA_BUF_IOCTL_SYNC maintains CPU caches only where the device needs it:
 * on uioN-cached of a non-coherent device, for the whole buffer, in the
 * direction of the access; never on uioN (uncached there) nor for a
 * coherent device.  Architectures without the hooks (x86: every device
 * snoops) skip, as do kernels without kprobe events (the debug kernel).
 */
TEST_F(heap, sync_maintains_caches_where_needed)
{
	const char *env = getenv("UIOHEAP_COHERENT");
	bool coherent = !env || atoi(env);
	char cached[40];
	int ret;

	ret = sync_probe_start();
	if (ret == -ENOENT)
		SKIP(return, "no arch_sync_dma_for_cpu(): DMA maintains no CPU caches here");
	if (ret == -EOPNOTSUPP)
		SKIP(return, "kernel without kprobe events: nothing can watch the syncs");
	ASSERT_EQ(0, ret) TH_LOG("tracefs: %s", strerror(-ret));
	snprintf(cached, sizeof(cached), "%s-cached", self->wide);
	sync_checks(_metadata, self->wide, false, 0, 0);
	sync_checks(_metadata, cached, !coherent, 0, 0);
	sync_probe_stop();
}

/*
 * A 64 KiB buffer of @heap whose address ends at or below @mask; with a
 * pagemap fd @pm (no IOMMU, a -cached heap), the address of its pages.
 */
static int alloc_below(struct __test_metadata *_metadata, int heap,
		       uint64_t mask, int pm)
{
	uint64_t addr;
	unsigned char *p;
	int fd;

	fd = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("mask %#llx: %s", (unsigned long long)mask,
				strerror(-fd));
	addr = dma_addr_of(_metadata, heap, fd);
	EXPECT_LE(addr + SZ_64K - 1, mask)
		TH_LOG("buffer at %#llx", (unsigned long long)addr);
	if (pm >= 0) {
		p = uioheap_map(fd, SZ_64K);
		ASSERT_NE(NULL, p);
		p[0] = 1;
		EXPECT_EQ(addr, pagemap_phys(pm, p))
			TH_LOG("buffer at %#llx: not its pages' address",
			       (unsigned long long)addr);
		munmap(p, SZ_64K);
	}
	return fd;
}

/*
 * Allocations of both nodes below a narrowed mask; without an IOMMU each
 * is its own pages' physical address (read where the pages are ordinary:
 * -cached): pages beyond the mask, mapped anyway, would be bounced by
 * swiotlb at an address that looks right.  On x86 a 24-bit mask, which
 * only ZONE_DMA meets, makes the first zone tried (DMA32) always wrong.
 */
TEST_F(heap, narrow_mask_is_obeyed)
{
	const char *iommu = getenv("UIOHEAP_IOMMU");
	unsigned long long bits;
	int heap[2], fds[16], i, pm;
	char cached[80];

	ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits",
					 edu_narrow_bits()));
	ASSERT_EQ(0, uioheap_sysfs_read(self->narrow, "dma_mask_bits", &bits));
	EXPECT_EQ(edu_narrow_bits(), bits);

	heap[0] = self->narrow_fd;
	snprintf(cached, sizeof(cached), "%s-cached", self->h.node[0]);
	heap[1] = open(cached, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap[1]) TH_LOG("%s", cached);
	pm = iommu && !strcmp(iommu, "off") ?
		open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) : -1;
	for (i = 0; i < 16; i++)
		fds[i] = alloc_below(_metadata, heap[i & 1], edu_narrow_mask(),
				     i & 1 ? pm : -1);
	for (i = 0; i < 16; i++)
		close(fds[i]);
#ifdef __x86_64__
	if (pm >= 0) {
		ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits", 24));
		for (i = 0; i < 4; i++)
			fds[i] = alloc_below(_metadata, heap[1], (1ULL << 24) - 1, pm);
		for (i = 0; i < 4; i++)
			close(fds[i]);
		ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits",
						 edu_narrow_bits()));
	}
#endif
	close(heap[1]);
	if (pm >= 0)
		close(pm);

	/* Out-of-range masks are refused and change nothing. */
	EXPECT_EQ(-EINVAL, uioheap_sysfs_write(self->narrow, "dma_mask_bits", 65));
	EXPECT_EQ(-EINVAL, uioheap_sysfs_write(self->narrow, "dma_mask_bits", 0));
	ASSERT_EQ(0, uioheap_sysfs_read(self->narrow, "dma_mask_bits", &bits));
	EXPECT_EQ(edu_narrow_bits(), bits);
}

/*
 * A debugger reads and writes a buffer through /proc/PID/mem (of the
 * -cached node: uioN refuses where it maps uncached, uio_heap_zerocopy).
 */
TEST_F(heap, debugger_access)
{
	unsigned char *p, got[64], put[64];
	char node[32];
	int heap, fd, mem, i;

	snprintf(node, sizeof(node), "%s-cached", self->wide);
	heap = uioheap_open(node);
	ASSERT_LE(0, heap);
	fd = uioheap_alloc(heap, 2 * PAGE_SZ, O_RDWR | O_CLOEXEC);
	close(heap);
	ASSERT_LE(0, fd);
	p = uioheap_map(fd, 2 * PAGE_SZ);
	ASSERT_NE(NULL, p);
	for (i = 0; i < 64; i++) {
		p[PAGE_SZ - 32 + i] = i;
		put[i] = 0xa0 + i;
	}
	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, mem);
	/* Across the page boundary, as gdb would. */
	EXPECT_EQ(64, pread(mem, got, 64, (uintptr_t)p + PAGE_SZ - 32))
		TH_LOG("read: %s", strerror(errno));
	for (i = 0; i < 64; i++)
		EXPECT_EQ(i, got[i]);
	EXPECT_EQ(64, pwrite(mem, put, 64, (uintptr_t)p + 100))
		TH_LOG("write: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(p + 100, put, 64));
	close(mem);
	munmap(p, 2 * PAGE_SZ);
	close(fd);
}

static unsigned long long param(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), UIO_HEAP_PARAMS "%s", name);
	return read_ull(path, ~0ULL);
}

/* A heap starts with a limit: half of the RAM unless the admin says else. */
TEST_F(heap, max_bytes_has_a_default)
{
	unsigned long long kib = 0, max;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	ASSERT_NE(NULL, f);
	while (!kib && fgets(line, sizeof(line), f))
		sscanf(line, "MemTotal: %llu kB", &kib);
	fclose(f);
	ASSERT_NE(0, kib);
	ASSERT_EQ(0, param("default_max_bytes"));
	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "max_bytes", &max));
	EXPECT_EQ(kib * 1024 / 2, max);
	ASSERT_EQ(0, uioheap_sysfs_read(self->narrow, "max_bytes", &max));
	EXPECT_EQ(kib * 1024 / 2, max);
}

/* Pages the allocator manages in ZONE_DMA, all nodes together. */
static unsigned long long zone_dma_pages(void)
{
	unsigned long long n, pages = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");
	char line[256], zone[32];
	bool dma = false;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %*d, zone %31s", zone) == 1)
			dma = !strcmp(zone, "DMA");
		else if (dma && sscanf(line, " managed %llu", &n) == 1)
			pages += n;
	}
	fclose(f);
	return pages;
}

/* By default the budget is a quarter of ZONE_DMA, however large that is. */
TEST_F(heap, low_zone_budget_defaults_to_a_quarter_of_zone_dma)
{
	unsigned long long want = zone_dma_pages() * sysconf(_SC_PAGESIZE) / 4;
	unsigned long long max = param("low_zone_max_bytes");

	if (!want)
		want = SZ_4M;
	TH_LOG("low_zone_max_bytes %llu", max);
	/* Reserved memory freed after the load may have grown the zone a little. */
	EXPECT_LE(max, want) TH_LOG("budget %llu, ZONE_DMA / 4 %llu", max, want);
	EXPECT_GE(max, want - want / 100) TH_LOG("budget %llu, ZONE_DMA / 4 %llu",
						max, want);
}

/*
 * Untranslated, a mask below 32 bits draws on the kernel's small DMA
 * zones: all heaps together get low_zone_max_bytes of them.  Behind an
 * IOMMU the mask only bounds IOVAs, and there is no such budget; nor is
 * there for a 32-bit mask (the narrow edu on arm64 without an SMMU).
 */
TEST_F(heap, low_zone_budget)
{
	const char *mode = getenv("UIOHEAP_IOMMU");
	int fds[6], i, n = 0;
	bool on;

	ASSERT_NE(NULL, mode) TH_LOG("UIOHEAP_IOMMU is not set");
	/* "on": no budget applies. */
	on = !strcmp(mode, "on") || edu_narrow_bits() >= 32;
	ASSERT_EQ(0, param("low_zone_bytes"));
	ASSERT_EQ(0, write_str(UIO_HEAP_PARAMS "low_zone_max_bytes", "1048576"));
	ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits",
					 edu_narrow_bits()));

	for (i = 0; i < 5; i++) {
		fds[i] = uioheap_alloc(self->narrow_fd, SZ_64K * 4,
				       O_RDWR | O_CLOEXEC);
		if (fds[i] >= 0)
			n++;
		else
			EXPECT_EQ(-ENOSPC, fds[i]) TH_LOG("%s", strerror(-fds[i]));
	}
	EXPECT_EQ(on ? 5 : 4, n);
	EXPECT_EQ(on ? 0 : 1048576, param("low_zone_bytes"));
	/* Raising the budget is the administrator's explicit limit. */
	ASSERT_EQ(0, write_str(UIO_HEAP_PARAMS "low_zone_max_bytes", "2097152"));
	fds[5] = uioheap_alloc(self->narrow_fd, SZ_64K * 4, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fds[5]);

	for (i = 0; i < 6; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	EXPECT_EQ(0, param("low_zone_bytes"));
	/* The teardown puts the budget back. */
}

/*
 * The mask is the parent's and a live buffer must stay inside it: a
 * narrowing that would strand one is refused until the buffer is gone.
 */
TEST_F(heap, mask_never_strands_a_buffer)
{
	const char *arch = getenv("UIOHEAP_ARCH");
	unsigned long long bits, was;
	uint64_t end;
	int fd, below, ret;

	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "dma_mask_bits", &was));
	fd = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	end = dma_addr_of(_metadata, self->wide_fd, fd) + SZ_64K - 1;
	below = 63 - __builtin_clzll(end);	/* widest mask without @end */
	/* DMA32 memory and 32-bit IOVAs lie above ZONE_DMA's 24 bits. */
	ASSERT_LE(24, below) TH_LOG("buffer ends at %#llx",
				    (unsigned long long)end);

	EXPECT_EQ(-EBUSY, uioheap_sysfs_write(self->wide, "dma_mask_bits", below));
	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "dma_mask_bits", &bits));
	EXPECT_EQ(was, bits);
	close(fd);
	ret = uioheap_sysfs_write(self->wide, "dma_mask_bits", below);
	/* arm64 has no RAM below 1 GiB: the DMA API refuses masks under it. */
	if (ret == -EIO && below < 32 && arch && !strcmp(arch, "arm64"))
		return;
	EXPECT_EQ(0, ret);
}

#define CGROOT "/sys/fs/cgroup"
#define CGTEST CGROOT "/uioheap-test"

static bool filesystem_known(const char *type)
{
	char line[128], a[64], b[64];
	bool known = false;
	FILE *f = fopen("/proc/filesystems", "re");
	int n;

	/* "nodev<TAB>name" or "<TAB>name" */
	while (f && !known && fgets(line, sizeof(line), f)) {
		n = sscanf(line, "%63s %63s", a, b);
		known = n > 0 && !strcmp(n == 2 ? b : a, type);
	}
	if (f)
		fclose(f);
	return known;
}

static long long memcg_current(void)
{
	return read_ull(CGTEST "/memory.current", ~0ULL);
}

/*
 * Buffer memory is charged to the allocating task's memory cgroup, so a
 * group's memory.max bounds what its members can pin through a heap.
 * Each test runs in a child of the harness: the group is its own.
 */
TEST_F(heap, buffers_charged_to_memcg)
{
	const long long len = 4LL * SZ_2M;
	long long before, held, after;
	char pid[16], limit[32];
	int fds[4], i;

	if (!filesystem_known("cgroup2"))
		SKIP(return, "kernel without memory cgroups");
	mkdir(CGROOT, 0755);
	ASSERT_TRUE(!mount("none", CGROOT, "cgroup2", 0, NULL) || errno == EBUSY)
		TH_LOG("mount cgroup2: %s", strerror(errno));
	ASSERT_EQ(0, write_str(CGROOT "/cgroup.subtree_control", "+memory"));
	ASSERT_TRUE(!mkdir(CGTEST, 0755) || errno == EEXIST);
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, write_str(CGTEST "/cgroup.procs", pid));

	before = memcg_current();
	ASSERT_LE(0, before);
	for (i = 0; i < 4; i++) {
		fds[i] = uioheap_alloc(self->wide_fd, SZ_2M, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fds[i]) TH_LOG("%s", strerror(-fds[i]));
	}
	held = memcg_current();
	for (i = 0; i < 4; i++)
		close(fds[i]);
	after = memcg_current();

	/* The group's limit stops the next buffer: ENOMEM, no OOM kill. */
	snprintf(limit, sizeof(limit), "%lld", after + SZ_64K * 16);
	ASSERT_EQ(0, write_str(CGTEST "/memory.max", limit));
	fds[0] = uioheap_alloc(self->wide_fd, SZ_2M, O_RDWR | O_CLOEXEC);
	EXPECT_EQ(-ENOMEM, fds[0]);
	if (fds[0] >= 0)
		close(fds[0]);
	write_str(CGROOT "/cgroup.procs", pid);
	rmdir(CGTEST);

	EXPECT_LE(before + len, held)
		TH_LOG("memory.current %lld -> %lld with 8 MiB of buffers",
		       before, held);
	/*
	 * Give or take slab the close itself charged (more under KASAN, whose
	 * quarantine holds freed objects): the 8 MiB must be gone.
	 */
	EXPECT_GE(held - len + (long long)SZ_1M, after)
		TH_LOG("memory.current %lld -> %lld after the close", held, after);
}

/*
 * Real DMA: the device reads a pattern out of one heap buffer and writes
 * it into another at an offset; every byte is checked, and so are the
 * bytes around the target, which must stay untouched.
 */
static void dma_round_trip(struct __test_metadata *_metadata, const char *uio,
			   int heap, uint32_t len, uint32_t in_off,
			   uint32_t out_off, uint32_t edu_off)
{
	unsigned char *src, *dst;
	uint64_t src_addr, dst_addr;
	enum uioheap_addr_source source, want;
	int a, b, ret, patched = env_bool("UIOHEAP_PATCHED");
	struct edu edu;
	uint32_t i;

	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	want = patched ? UIOHEAP_ADDR_DMA_BUF : UIOHEAP_ADDR_HEAP;
	ASSERT_EQ(0, edu_open(&edu, uio));
	a = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	b = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	/* What a user gets: the dma-buf's own address where there is one. */
	ASSERT_EQ(0, uioheap_dma_addr(heap, a, &src_addr, &source));
	EXPECT_EQ(want, source);
	ASSERT_EQ(0, uioheap_dma_addr(heap, b, &dst_addr, &source));
	EXPECT_EQ(want, source);
	src = uioheap_map(a, SZ_64K);
	dst = uioheap_map(b, SZ_64K);
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);

	for (i = 0; i < len; i++)
		src[in_off + i] = (unsigned char)(i * 13 + 1 + len);

	ret = edu_dma(&edu, src_addr + in_off, edu_off, len, true, 10000);
	ASSERT_EQ(0, ret) TH_LOG("to device: %s", strerror(-ret));
	ret = edu_dma(&edu, dst_addr + out_off, edu_off, len, false, 10000);
	ASSERT_EQ(0, ret) TH_LOG("from device: %s", strerror(-ret));

	for (i = 0; i < len; i++)
		if (dst[out_off + i] != src[in_off + i])
			break;
	EXPECT_EQ(len, i) TH_LOG("byte %u: %#x, expected %#x", i,
				 dst[out_off + i], src[in_off + i]);
	for (i = 0; i < out_off; i++)
		if (dst[i])
			break;
	EXPECT_EQ(out_off, i) TH_LOG("byte %u before the target written", i);
	for (i = out_off + len; i < SZ_64K; i++)
		if (dst[i])
			break;
	EXPECT_EQ(SZ_64K, i) TH_LOG("byte %u after the target written", i);

	munmap(src, SZ_64K);
	munmap(dst, SZ_64K);
	close(a);
	close(b);
	edu_close(&edu);
}

TEST_F_TIMEOUT(heap, device_dma_wide, 120)
{
	dma_round_trip(_metadata, self->wide, self->wide_fd, 4000, 0, 100, 0);
	/* Across a page boundary on both sides, inside the device window. */
	dma_round_trip(_metadata, self->wide, self->wide_fd, 3000, 3 * SZ_4K - 1000,
		       5 * SZ_4K - 7, 1000);
}

TEST_F_TIMEOUT(heap, device_dma_narrow, 120)
{
	ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits",
					 edu_narrow_bits()));
	dma_round_trip(_metadata, self->narrow, self->narrow_fd, 4095, 0,
		       SZ_4K + 1, 0);
}

/* Bad input: a clear errno, and nothing changes. */
static int heap_alloc_raw(int heap, __u64 len, __u32 fd, __u32 fd_flags,
			  __u64 heap_flags)
{
	struct dma_heap_allocation_data data = {
		.len = len, .fd = fd, .fd_flags = fd_flags,
		.heap_flags = heap_flags,
	};

	return ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &data) ? errno : 0;
}

TEST_F(heap, bad_alloc_input)
{
	unsigned long long before, after, nbefore, nafter;
	int fd = self->wide_fd;

	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes", &before));
	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "buffers", &nbefore));

	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, 0, 0, O_RDWR, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, ~0ULL, 0, O_RDWR, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, ~0ULL - SZ_4K + 2, 0, O_RDWR, 0));
	EXPECT_EQ(ENOMEM, heap_alloc_raw(fd, 1ULL << 62, 0, O_RDWR, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR | O_NONBLOCK, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR | O_APPEND, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR, 1));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR, 1ULL << 63));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 3, O_RDWR, 0));
	EXPECT_EQ(-1, ioctl(fd, DMA_HEAP_IOCTL_ALLOC, (void *)16));
	EXPECT_EQ(EFAULT, errno);
	/* Unknown commands get what the dma-heap core answers: EINVAL. */
	EXPECT_EQ(-1, ioctl(fd, _IO(DMA_HEAP_IOC_MAGIC, 5)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, _IOWR(DMA_HEAP_IOC_MAGIC, 0x41,
				      struct uio_heap_dma_addr), NULL));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes", &after));
	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "buffers", &nafter));
	EXPECT_EQ(before, after);
	EXPECT_EQ(nbefore, nafter);
}

TEST_F(heap, max_bytes_limit)
{
	unsigned long long before, after;
	int a, b;

	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes", &before));
	ASSERT_EQ(0, uioheap_sysfs_write(self->wide, "max_bytes",
					 before + 2 * SZ_64K));
	/* Above the limit on its own. */
	EXPECT_EQ(ENOSPC, heap_alloc_raw(self->wide_fd, 3 * SZ_64K, 0, O_RDWR, 0));
	/* Exactly up to the limit works, one page more does not. */
	a = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	EXPECT_EQ(-ENOSPC, uioheap_alloc(self->wide_fd, SZ_64K + SZ_4K, 0));
	b = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, b);
	EXPECT_EQ(-ENOSPC, uioheap_alloc(self->wide_fd, SZ_4K, 0));
	close(a);
	a = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, a);

	ASSERT_EQ(0, uioheap_sysfs_write(self->wide, "max_bytes", 0));
	close(a);
	close(b);
	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes", &after));
	EXPECT_EQ(before, after);
}

static int addr_ioctl(int heap, __u32 fd, __u32 flags)
{
	return heap_addr(heap, fd, flags, NULL);
}

TEST_F(heap, bad_addr_input)
{
	int buf, other, memfd, pipefd[2], closed;

	buf = uioheap_alloc(self->wide_fd, SZ_4K, O_RDWR | O_CLOEXEC);
	other = uioheap_alloc(self->narrow_fd, SZ_4K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	ASSERT_LE(0, other);

	EXPECT_EQ(0, addr_ioctl(self->wide_fd, buf, 0));
	EXPECT_EQ(EINVAL, addr_ioctl(self->wide_fd, buf, 1));
	EXPECT_EQ(EINVAL, addr_ioctl(self->wide_fd, buf, 0x80000000));
	/* Another uio heap's buffer. */
	EXPECT_EQ(EINVAL, addr_ioctl(self->wide_fd, other, 0));
	EXPECT_EQ(EINVAL, addr_ioctl(self->narrow_fd, buf, 0));
	/* Not a dma-buf at all. */
	memfd = memfd_create("uio_heap_test", MFD_CLOEXEC);
	ASSERT_LE(0, memfd);
	EXPECT_EQ(EINVAL, addr_ioctl(self->wide_fd, memfd, 0));
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(EINVAL, addr_ioctl(self->wide_fd, pipefd[0], 0));
	/* The heap node itself. */
	EXPECT_EQ(EINVAL, addr_ioctl(self->wide_fd, self->wide_fd, 0));
	/* Closed and impossible fds. */
	closed = dup(buf);
	close(closed);
	EXPECT_EQ(EBADF, addr_ioctl(self->wide_fd, closed, 0));
	EXPECT_EQ(EBADF, addr_ioctl(self->wide_fd, 0xffffffffu, 0));
	/* Bad argument pointer. */
	EXPECT_EQ(-1, ioctl(self->wide_fd, UIO_HEAP_IOCTL_GET_DMA_ADDR,
			    (void *)8));
	EXPECT_EQ(EFAULT, errno);

	close(memfd);
	close(pipefd[0]);
	close(pipefd[1]);
	close(buf);
	close(other);
}

TEST_F(heap, system_heap_buffer_is_foreign)
{
	struct dma_heap_allocation_data data = {
		.len = SZ_4K, .fd_flags = O_RDWR | O_CLOEXEC,
	};
	int sys, patched = env_bool("UIOHEAP_PATCHED");
	uint64_t addr = 0;

	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	sys = open("/dev/dma_heap/system", O_RDWR | O_CLOEXEC);
	if (sys < 0)
		SKIP(return, "kernel without the system heap");
	ASSERT_EQ(0, ioctl(sys, DMA_HEAP_IOCTL_ALLOC, &data));
	EXPECT_EQ(EINVAL, addr_ioctl(self->wide_fd, data.fd, 0));
	/* Patched core: EINVAL (no address op); stock core: ENOTTY. */
	EXPECT_EQ(patched ? EINVAL : ENOTTY, dmabuf_addr(data.fd, &addr));
	close(data.fd);
	close(sys);
}

/*
 * The patched dma-buf core (UIOHEAP_PATCHED=1) must answer
 * DMA_BUF_IOCTL_GET_DMA_ADDR, with the heap's own answer; a stock core
 * answers ENOTTY, as for any ioctl it does not know.
 */
TEST_F(heap, dma_buf_get_dma_addr_agrees)
{
	int buf[2], i, ret, patched = env_bool("UIOHEAP_PATCHED");
	uint64_t addr = 0, heap = 0;

	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	buf[0] = uioheap_alloc(self->narrow_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	buf[1] = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf[0]);
	ASSERT_LE(0, buf[1]);
	ret = dmabuf_addr(buf[1], &addr);
	if (!patched) {
		ASSERT_EQ(ENOTTY, ret) TH_LOG("a stock core answered %s",
					      strerror(ret));
		close(buf[0]);
		close(buf[1]);
		SKIP(return, "stock dma-buf core: no DMA_BUF_IOCTL_GET_DMA_ADDR");
	}
	for (i = 0; i < 2; i++) {
		ret = dmabuf_addr(buf[i], &addr);
		ASSERT_EQ(0, ret) TH_LOG("DMA_BUF_IOCTL_GET_DMA_ADDR: %s",
					 strerror(ret));
		ASSERT_EQ(0, heap_addr(i ? self->wide_fd : self->narrow_fd,
				       buf[i], 0, &heap));
		EXPECT_EQ(heap, addr);
		close(buf[i]);
	}
}

TEST_F(heap, dma_buf_unknown_ioctl)
{
	int buf = uioheap_alloc(self->wide_fd, SZ_4K, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, buf);
	EXPECT_EQ(-1, ioctl(buf, _IO('b', 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	close(buf);
}

static bool file_has_line(const char *path, const char *needle)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

TEST_F(heap, buffers_identifiable)
{
	char path[64], needle[32];
	int buf;

	buf = uioheap_alloc(self->wide_fd, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", buf);
	snprintf(needle, sizeof(needle), "exp_name:\t%s\n", self->wide);
	EXPECT_TRUE(file_has_line(path, needle));

	/* The VM mounts debugfs; both kernels have CONFIG_DEBUG_FS. */
	ASSERT_TRUE(path_exists("/sys/kernel/debug/dma_buf/bufinfo"));
	snprintf(needle, sizeof(needle), "\t%s\t", self->wide);
	EXPECT_TRUE(file_has_line("/sys/kernel/debug/dma_buf/bufinfo", needle));
	close(buf);
}

/*
 * IOMMU proven: UIOHEAP_IOMMU is the mode the host asked QEMU for, and the
 * guest must really be in it.  "on": each edu sits in a translating
 * domain, and a buffer's DMA address is an IOVA, not the physical address
 * of its pages.  "off": no translation, and the DMA address of every page
 * is its physical address (q35 has no DMA offset).
 *
 * A page's physical address comes from /proc/self/pagemap where it tells
 * (not for VM_PFNMAP mappings, whose PTEs it reports as holes), or for
 * the first page from DMA-API debug's list of mappings (the debug
 * kernel); else the page's contents are looked for at the DMA address
 * through /proc/kcore, whose RAM segments carry physical addresses; else,
 * for "on" only, an address that is no System RAM in /proc/iomem cannot
 * be the page's.
 */
static bool is_system_ram(uint64_t phys)
{
	unsigned long long start, end;
	char line[160];
	bool ram = false;
	FILE *f = fopen("/proc/iomem", "re");

	while (f && !ram && fgets(line, sizeof(line), f))
		ram = sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		      strstr(line, ": System RAM") && line[0] != ' ' &&
		      phys >= start && phys <= end;
	if (f)
		fclose(f);
	return ram;
}

/* What sysfs says of the IOMMU domain of PCI device @pci: its type or "". */
static void iommu_domain(const char *pci, char *type, size_t size)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group/type",
		 pci);
	type[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(type, size, f))
		type[strcspn(type, "\n")] = '\0';
	fclose(f);
}

#define IOMMU_PAGES	8

TEST_F(heap, iommu_mode_is_the_requested_one)
{
	const char *mode = getenv("UIOHEAP_IOMMU");
	int i, j, n, fd, pm, kc, counts[3];
	char type[32], attr[128], heap_mode[32];
	unsigned char *p;
	struct prng rng;
	uint64_t addr, phys, k;
	enum page_is is;
	bool on;

	ASSERT_NE(NULL, mode) TH_LOG("UIOHEAP_IOMMU is not set");
	ASSERT_TRUE(!strcmp(mode, "on") || !strcmp(mode, "off"));
	on = !strcmp(mode, "on");
	prng_seed(&rng, 0x10acce55);
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	kc = open("/proc/kcore", O_RDONLY | O_CLOEXEC);

	for (i = 0; i < 2; i++) {
		iommu_domain(self->h.pci[i], type, sizeof(type));
		/* Braces: the harness' EXPECT_*() cannot precede an else. */
		if (on) {
			EXPECT_TRUE(!strcmp(type, "DMA") || !strcmp(type, "DMA-FQ"))
				TH_LOG("%s: IOMMU domain \"%s\", not translating",
				       self->h.pci[i], type);
			/* The heap's iommu attribute names the same mode (dma-fq: lazy). */
			snprintf(attr, sizeof(attr), "/sys/class/uio_heap/%s/iommu",
				 self->h.uio[i]);
			ASSERT_LT(0, read_str(attr, heap_mode, sizeof(heap_mode)));
			for (j = 0; type[j]; j++)
				type[j] = tolower(type[j]);
			EXPECT_STREQ(type, heap_mode);
		} else {
			EXPECT_TRUE(!type[0] || !strcmp(type, "identity"))
				TH_LOG("%s: IOMMU domain \"%s\" with the IOMMU off",
				       self->h.pci[i], type);
		}

		fd = uioheap_alloc(i ? self->wide_fd : self->narrow_fd,
				   IOMMU_PAGES * PAGE_SZ, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		addr = dma_addr_of(_metadata, i ? self->wide_fd : self->narrow_fd,
				   fd);
		p = uioheap_map(fd, IOMMU_PAGES * PAGE_SZ);
		ASSERT_NE(NULL, p);
		/* Contents no other page has, to be recognised by. */
		for (k = 0; k < IOMMU_PAGES * PAGE_SZ / 8; k++)
			((uint64_t *)p)[k] = prng_next(&rng);

		memset(counts, 0, sizeof(counts));
		for (n = 0; n < IOMMU_PAGES; n++) {
			uint64_t at = addr + n * PAGE_SZ;
			unsigned char *va = p + n * PAGE_SZ;
			const char *how = "pagemap";

			phys = pagemap_phys(pm, va);
			/*
			 * The DMA-API debug dump only where there is no
			 * kcore: it shows entries of devices already freed
			 * (the KUnit suite's quarantine cases), and reading
			 * them is a use-after-free in the kernel's dump_show().
			 */
			if (!phys && !n && kc < 0) {
				how = "dma-api debug";
				phys = dma_debug_phys(self->h.pci[i], addr);
			}
			if (phys) {
				is = phys == at ? PAGE_AT_ADDR : PAGE_ELSEWHERE;
			} else {
				how = "kcore";
				is = kcore_page(kc, at, va);
				if (is == PAGE_UNKNOWN && on) {
					how = "iomem";
					is = is_system_ram(at) ? PAGE_UNKNOWN :
								 PAGE_ELSEWHERE;
				}
			}
			if (!n)
				printf("# %s: physical addresses from %s\n",
				       self->h.pci[i], how);
			counts[is]++;
		}
		munmap(p, IOMMU_PAGES * PAGE_SZ);
		close(fd);
		if (on) {
			EXPECT_LT(0, counts[PAGE_ELSEWHERE])
				TH_LOG("%s: %d of %d pages at their DMA address %#llx, %d unknown",
				       self->h.pci[i], counts[PAGE_AT_ADDR],
				       IOMMU_PAGES, (unsigned long long)addr,
				       counts[PAGE_UNKNOWN]);
		} else {
			EXPECT_EQ(IOMMU_PAGES, counts[PAGE_AT_ADDR])
				TH_LOG("%s: %d pages elsewhere, %d unknown, DMA address %#llx",
				       self->h.pci[i], counts[PAGE_ELSEWHERE],
				       counts[PAGE_UNKNOWN],
				       (unsigned long long)addr);
		}
	}
	if (pm >= 0)
		close(pm);
	if (kc >= 0)
		close(kc);
}

TEST_HARNESS_MAIN
