// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap selftests: heap nodes, allocation, mapping, addresses, DMA masks, real DMA through
 * QEMU's edu, bad input.  A missing piece (uio_heap, the VM bench's two edus) fails; skipped is
 * only what a kernel cannot do: the system heap (6.1), DMA_BUF_IOCTL_GET_DMA_ADDR (stock kernels,
 * UIOHEAP_PATCHED=0).
 */
#include <limits.h>
#include <sys/sysmacros.h>

#include "kselftest_harness.h"
#include "common.h"

#define NR_OUTSTANDING	64

/* Index 0 is the narrow edu's heap, 1 the wide one's, as in struct edu_heaps. */
FIXTURE(heap) {
	struct edu_heaps h;
	const char *narrow, *wide;	/* UIO names */
	char cached[2][32];		/* "uioN-cached" */
	int fd[2];			/* the heap nodes, open */
};

FIXTURE_SETUP(heap)
{
	int i;

	edu_heaps_get(_metadata, &self->h);
	self->narrow = self->h.uio[0];
	self->wide = self->h.uio[1];
	for (i = 0; i < 2; i++) {
		snprintf(self->cached[i], sizeof(self->cached[i]), "%s-cached", self->h.uio[i]);
		self->fd[i] = open_heap(_metadata, self->h.uio[i]);
	}
}

FIXTURE_TEARDOWN(heap)
{
	close(self->fd[0]);
	close(self->fd[1]);
	edu_heaps_restore(&self->h);
}

/* Every UIO device with a DMA-capable PCI parent has its heap, named right. */
TEST(nodes_for_every_uio_device)
{
	char path[300], a[PATH_MAX], b[PATH_MAX], dev[32];
	unsigned int maj, min;
	struct dirent *de;
	struct stat st;
	int seen = 0;
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
		snprintf(path, sizeof(path), "/sys/class/uio/%s/device", de->d_name);
		ASSERT_NE(NULL, realpath(path, a));
		snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/device", de->d_name);
		ASSERT_NE(NULL, realpath(path, b));
		EXPECT_STREQ(a, b);

		/* The devnode is the heap's own char device. */
		ASSERT_LT(0, heap_attr(de->d_name, "dev", dev, sizeof(dev)));
		ASSERT_EQ(2, sscanf(dev, "%u:%u", &maj, &min));
		EXPECT_EQ(makedev(maj, min), st.st_rdev);
	}
	closedir(dir);
	ASSERT_LT(0, seen);
}

TEST_F(heap, sizes_round_to_pages)
{
	static const size_t sizes[] = { 1, 4095, 4096, 4097, SZ_64K + 1, SZ_1M, SZ_4M };
	unsigned long long before;
	struct stat st;
	unsigned int i;
	int fd;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t want = (sizes[i] + SZ_4K - 1) & ~(SZ_4K - 1);

		ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes", &before));
		fd = alloc_map(_metadata, self->fd[1], sizes[i], NULL);
		/* A dma-buf's size is its inode size. */
		ASSERT_EQ(0, fstat(fd, &st));
		EXPECT_EQ(want, (size_t)st.st_size);
		EXPECT_EQ(before + want, heap_ull(self->wide, "allocated_bytes"));
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
		fds[i] = alloc_map(_metadata, self->fd[1], SZ_64K, NULL);
		ASSERT_EQ(0, heap_addr(self->fd[1], fds[i], 0, &addrs[i]));
		EXPECT_EQ(0, addrs[i] & (SZ_4K - 1));
	}
	ASSERT_EQ(0, heap_usage(self->wide, &bytes, &nbufs));
	EXPECT_LE(NR_OUTSTANDING, nbufs);
	EXPECT_LE(NR_OUTSTANDING * SZ_64K, bytes);
	for (i = 0; i < NR_OUTSTANDING; i++)
		for (j = i + 1; j < NR_OUTSTANDING; j++)
			EXPECT_TRUE(addrs[i] + SZ_64K <= addrs[j] || addrs[j] + SZ_64K <= addrs[i]);
	for (i = 0; i < NR_OUTSTANDING; i++)
		close(fds[i]);
}

TEST_F(heap, cloexec_honoured)
{
	int a = alloc_map(_metadata, self->fd[1], SZ_4K, NULL);
	int b = uioheap_alloc(self->fd[1], SZ_4K, 0);

	ASSERT_LE(0, b);
	EXPECT_EQ(FD_CLOEXEC, fcntl(a, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, fcntl(b, F_GETFD) & FD_CLOEXEC);
	close(a);
	close(b);
}

TEST_F(heap, access_mode_honoured)
{
	int fd = uioheap_alloc(self->fd[1], SZ_4K, O_RDONLY);
	void *p;

	ASSERT_LE(0, fd);
	EXPECT_EQ(O_RDONLY, fcntl(fd, F_GETFL) & O_ACCMODE);
	EXPECT_ERRNO(EACCES, mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	/* Read-only shared mappings work, and cannot be made writable. */
	p = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ((volatile unsigned char *)p)[0]);
	EXPECT_ERRNO(EACCES, mprotect(p, SZ_4K, PROT_READ | PROT_WRITE));
	munmap(p, SZ_4K);
	/* Private (copy-on-write) mappings of device memory: never. */
	EXPECT_ERRNO(EINVAL, mmap(NULL, SZ_4K, PROT_READ, MAP_PRIVATE, fd, 0));
	close(fd);
}

TEST_F(heap, buffers_are_zeroed)
{
	unsigned char *p;
	int round, fd;

	for (round = 0; round < 3; round++) {
		fd = alloc_map(_metadata, self->fd[1], SZ_1M, &p);
		EXPECT_TRUE(is_filled(p, SZ_1M, 0)) TH_LOG("round %d: not zeroed", round);
		/* Dirty it, so that the next round would see stale data. */
		memset(p, 0xa5, SZ_1M);
		munmap(p, SZ_1M);
		close(fd);
	}
}

/* Older (smaller) and newer (larger) structs, as the dma-heap core takes. */
TEST_F(heap, alloc_struct_sizes)
{
	struct {
		struct dma_heap_allocation_data cur;
		__u64 future;
	} next = {
		.cur = { .len = SZ_4K, .fd_flags = O_RDWR | O_CLOEXEC },
		.future = 0x1122334455667788ULL,
	};
	struct {
		__u64 len;
		__u32 fd, fd_flags;
	} old = { .len = SZ_4K, .fd_flags = O_RDWR };
	struct stat st;

	ASSERT_EQ(0, ioctl(self->fd[1], _IOWR(DMA_HEAP_IOC_MAGIC, 0, typeof(old)), &old));
	ASSERT_LT(0, (int)old.fd);
	ASSERT_EQ(0, fstat(old.fd, &st));
	EXPECT_EQ(SZ_4K, (size_t)st.st_size);
	close(old.fd);

	ASSERT_EQ(0, ioctl(self->fd[1], _IOWR(DMA_HEAP_IOC_MAGIC, 0, typeof(next)), &next));
	ASSERT_LT(0, (int)next.cur.fd);
	EXPECT_EQ(0x1122334455667788ULL, next.future);
	close(next.cur.fd);
}

TEST_F(heap, mmap_read_write)
{
	unsigned char *p, *q;
	size_t i;
	int fd;

	fd = alloc_map(_metadata, self->fd[1], SZ_64K, &p);
	q = uioheap_map(fd, SZ_64K);
	ASSERT_NE(NULL, q);
	ASSERT_EQ(0, uioheap_sync(fd, 1, 1));
	for (i = 0; i < SZ_64K; i++)
		p[i] = (unsigned char)(i * 31 + 7);
	ASSERT_EQ(0, uioheap_sync(fd, 0, 1));
	EXPECT_EQ(0, memcmp(p, q, SZ_64K));
	munmap(q, SZ_64K);
	q = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, fd, 3 * SZ_4K);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, memcmp(p + 3 * SZ_4K, q, SZ_4K));
	munmap(q, SZ_4K);
	munmap(p, SZ_64K);
	close(fd);
}

TEST_F(heap, mmap_refuses_beyond_buffer)
{
	int fd = alloc_map(_metadata, self->fd[1], SZ_64K, NULL);
	void *p;

	EXPECT_ERRNO(EINVAL, mmap(NULL, SZ_64K + SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	EXPECT_ERRNO(EINVAL, mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, SZ_64K));
	EXPECT_ERRNO(EINVAL, mmap(NULL, 2 * SZ_4K, PROT_READ, MAP_SHARED, fd, SZ_64K - SZ_4K));
	EXPECT_ERRNO(EINVAL, mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
	p = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(MAP_FAILED, mremap(p, SZ_4K, 2 * SZ_4K, 0));
	munmap(p, SZ_4K);
	close(fd);
}

/* uio_pci_generic leaves PCI's 32-bit default; device_dma_narrow shows a mask obeyed. */
TEST_F(heap, default_mask_is_the_devices)
{
	EXPECT_EQ(32, self->h.mask_bits[0]);
	EXPECT_EQ(32, self->h.mask_bits[1]);
}

/* Both nodes say whether the device snoops: on x86 all do, on arm64 unless UIOHEAP_COHERENT=0. */
TEST_F(heap, coherence_is_the_devices)
{
	const char *env = getenv("UIOHEAP_COHERENT");
	unsigned long long want = env ? strtoull(env, NULL, 0) : 1;

	EXPECT_EQ(want, heap_ull(self->wide, "coherent"));
	EXPECT_EQ(want, heap_ull(self->cached[1], "coherent"));
}

/* DMA_BUF_IOCTL_SYNC maintains caches only on uioN-cached of a non-coherent device. */
TEST_F(heap, sync_maintains_caches_where_needed)
{
	const char *env = getenv("UIOHEAP_COHERENT");
	bool coherent = !env || atoi(env);
	int ret;

	ret = kprobes_start(SYNC_PROBES);
	if (ret == -ENOENT)
		SKIP(return, "no arch_sync_dma_for_cpu(): DMA maintains no CPU caches here");
	if (ret == -EOPNOTSUPP)
		SKIP(return, "kernel without kprobe events: nothing can watch the syncs");
	ASSERT_EQ(0, ret) TH_LOG("tracefs: %s", strerror(-ret));
	sync_checks(_metadata, self->wide, false, 0, 0);
	sync_checks(_metadata, self->cached[1], !coherent, 0, 0);
	sync_probe_stop();
}

/* 64 KiB of @heap ending at or below @mask; with pagemap fd @pm, at its pages' address. */
static int alloc_below(struct __test_metadata *_metadata, int heap, uint64_t mask, int pm)
{
	unsigned char *p;
	int fd = alloc_map(_metadata, heap, SZ_64K, &p);
	uint64_t addr = 0;

	ASSERT_EQ(0, heap_addr(heap, fd, 0, &addr));
	EXPECT_LE(addr + SZ_64K - 1, mask) TH_LOG("buffer at %#llx", (unsigned long long)addr);
	p[0] = 1;
	if (pm >= 0)
		EXPECT_EQ(addr, pagemap_phys(pm, p))
			TH_LOG("buffer at %#llx: not its pages' address", (unsigned long long)addr);
	munmap(p, SZ_64K);
	return fd;
}

/*
 * Without an IOMMU swiotlb would bounce beyond the mask at a right-looking address: -cached's
 * must be their pages' own.  On x86 24 bits need ZONE_DMA.
 */
TEST_F(heap, narrow_mask_is_obeyed)
{
	const char *iommu = getenv("UIOHEAP_IOMMU");
	int heap[2], fds[16], i, pm;

	ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits", edu_narrow_bits()));
	EXPECT_EQ(edu_narrow_bits(), heap_ull(self->narrow, "dma_mask_bits"));
	heap[0] = self->fd[0];
	heap[1] = open_heap(_metadata, self->cached[0]);
	pm = iommu && !strcmp(iommu, "off") ? open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) : -1;
	for (i = 0; i < 16; i++)
		fds[i] = alloc_below(_metadata, heap[i & 1], edu_narrow_mask(), i & 1 ? pm : -1);
	for (i = 0; i < 16; i++)
		close(fds[i]);
#ifdef __x86_64__
	if (pm >= 0) {
		ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits", 24));
		for (i = 0; i < 4; i++)
			fds[i] = alloc_below(_metadata, heap[1], (1ULL << 24) - 1, pm);
		for (i = 0; i < 4; i++)
			close(fds[i]);
		ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits", edu_narrow_bits()));
	}
#endif
	close(heap[1]);
	close(pm);
	EXPECT_EQ(-EINVAL, uioheap_sysfs_write(self->narrow, "dma_mask_bits", 65));
	EXPECT_EQ(-EINVAL, uioheap_sysfs_write(self->narrow, "dma_mask_bits", 0));
	EXPECT_EQ(edu_narrow_bits(), heap_ull(self->narrow, "dma_mask_bits"));
}

/* A debugger reads and writes a buffer through /proc/PID/mem (uioN refuses: zerocopy). */
TEST_F(heap, debugger_access)
{
	unsigned char *p, got[64], put[64];
	int fd, mem, i;

	fd = node_alloc(_metadata, self->cached[1], 2 * PAGE_SZ, &p);
	for (i = 0; i < 64; i++) {
		p[PAGE_SZ - 32 + i] = i;
		put[i] = 0xa0 + i;
	}
	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, mem);
	/* Across the page boundary, as gdb would. */
	EXPECT_EQ(64, pread(mem, got, 64, (uintptr_t)p + PAGE_SZ - 32))
		TH_LOG("read: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(got, p + PAGE_SZ - 32, 64));
	EXPECT_EQ(64, pwrite(mem, put, 64, (uintptr_t)p + 100))
		TH_LOG("write: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(p + 100, put, 64));
	close(mem);
	munmap(p, 2 * PAGE_SZ);
	close(fd);
}

#define PARAM(name)	read_ull(UIO_HEAP_PARAMS name, ~0ULL)

/* A heap starts with a limit: half of the RAM (MemTotal) unless the admin says else. */
TEST_F(heap, max_bytes_has_a_default)
{
	unsigned long long half;
	int i;

	half = (unsigned long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 2;
	ASSERT_NE(0, half);
	ASSERT_EQ(0, PARAM("default_max_bytes"));
	for (i = 0; i < 2; i++)
		EXPECT_EQ(half, heap_ull(self->h.uio[i], "max_bytes"));
}

/* Pages the allocator manages in ZONE_DMA, all nodes together. */
static unsigned long long zone_dma_pages(void)
{
	unsigned long long n, pages = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");
	char line[256], zone[32];
	bool dma = false;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %*d, zone %31s", zone) == 1)
			dma = !strcmp(zone, "DMA");
		else if (dma && sscanf(line, " managed %llu", &n) == 1)
			pages += n;
	}
	if (f)
		fclose(f);
	return pages;
}

/* By default the budget is a quarter of ZONE_DMA, however large that is. */
TEST_F(heap, low_zone_budget_defaults_to_a_quarter_of_zone_dma)
{
	unsigned long long want = zone_dma_pages() * sysconf(_SC_PAGESIZE) / 4;
	unsigned long long max = PARAM("low_zone_max_bytes");

	if (!want)
		want = SZ_4M;
	TH_LOG("low_zone_max_bytes %llu, ZONE_DMA / 4 %llu", max, want);
	/* Reserved memory freed after the load may have grown the zone a little. */
	EXPECT_LE(max, want);
	EXPECT_GE(max, want - want / 100);
}

/* Untranslated masks under 32 bits share low_zone_max_bytes (not with an IOMMU, or arm64's). */
TEST_F(heap, low_zone_budget)
{
	const char *mode = getenv("UIOHEAP_IOMMU");
	int fds[6], i, n = 0;
	bool on;

	ASSERT_NE(NULL, mode) TH_LOG("UIOHEAP_IOMMU is not set");
	on = !strcmp(mode, "on") || edu_narrow_bits() >= 32;	/* no budget applies */
	ASSERT_EQ(0, PARAM("low_zone_bytes"));
	ASSERT_EQ(0, write_str(UIO_HEAP_PARAMS "low_zone_max_bytes", "1048576"));
	ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits", edu_narrow_bits()));

	for (i = 0; i < 5; i++) {
		fds[i] = uioheap_alloc(self->fd[0], SZ_64K * 4, O_RDWR | O_CLOEXEC);
		n += fds[i] >= 0;
		EXPECT_TRUE(fds[i] >= 0 || fds[i] == -ENOSPC) TH_LOG("%s", strerror(-fds[i]));
	}
	EXPECT_EQ(on ? 5 : 4, n);
	EXPECT_EQ(on ? 0 : 1048576, PARAM("low_zone_bytes"));
	/* Raising the budget is the administrator's explicit limit. */
	ASSERT_EQ(0, write_str(UIO_HEAP_PARAMS "low_zone_max_bytes", "2097152"));
	fds[5] = uioheap_alloc(self->fd[0], SZ_64K * 4, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fds[5]);

	for (i = 0; i < 6; i++)
		close(fds[i]);	/* or EBADF, for a failed one */
	EXPECT_EQ(0, PARAM("low_zone_bytes"));	/* the teardown puts the budget back */
}

/* A live buffer must stay inside the mask: a narrowing that would strand it is refused. */
TEST_F(heap, mask_never_strands_a_buffer)
{
	const char *arch = getenv("UIOHEAP_ARCH");
	unsigned long long was;
	uint64_t end = 0;
	int fd, below, ret;

	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "dma_mask_bits", &was));
	fd = alloc_map(_metadata, self->fd[1], SZ_64K, NULL);
	ASSERT_EQ(0, heap_addr(self->fd[1], fd, 0, &end));
	end += SZ_64K - 1;
	below = 63 - __builtin_clzll(end);	/* widest mask without @end */
	/* DMA32 memory and 32-bit IOVAs lie above ZONE_DMA's 24 bits. */
	ASSERT_LE(24, below) TH_LOG("buffer ends at %#llx", (unsigned long long)end);

	EXPECT_EQ(-EBUSY, uioheap_sysfs_write(self->wide, "dma_mask_bits", below));
	EXPECT_EQ(was, heap_ull(self->wide, "dma_mask_bits"));
	close(fd);
	ret = uioheap_sysfs_write(self->wide, "dma_mask_bits", below);
	/* arm64 has no RAM below 1 GiB: the DMA API refuses masks under it. */
	if (ret == -EIO && below < 32 && arch && !strcmp(arch, "arm64"))
		return;
	EXPECT_EQ(0, ret);
}

#define CGROOT "/sys/fs/cgroup"
#define CGTEST CGROOT "/uioheap-test"
#define CGCURRENT() ((long long)read_ull(CGTEST "/memory.current", ~0ULL))

/* Has a line of @path @needle in it? */
static bool file_has_line(const char *path, const char *needle)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "re");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* Buffers are charged to the allocator's memory cgroup (this test's child's own). */
TEST_F(heap, buffers_charged_to_memcg)
{
	const long long len = 4LL * SZ_2M;
	long long before, held, after;
	char pid[16], limit[32];
	int fds[4], i;

	if (!file_has_line("/proc/filesystems", "\tcgroup2\n"))
		SKIP(return, "kernel without memory cgroups");
	mkdir(CGROOT, 0755);
	ASSERT_TRUE(!mount("none", CGROOT, "cgroup2", 0, NULL) || errno == EBUSY)
		TH_LOG("mount cgroup2: %s", strerror(errno));
	ASSERT_EQ(0, write_str(CGROOT "/cgroup.subtree_control", "+memory"));
	ASSERT_TRUE(!mkdir(CGTEST, 0755) || errno == EEXIST);
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, write_str(CGTEST "/cgroup.procs", pid));

	before = CGCURRENT();
	ASSERT_LE(0, before);
	for (i = 0; i < 4; i++)
		fds[i] = alloc_map(_metadata, self->fd[1], SZ_2M, NULL);
	held = CGCURRENT();
	for (i = 0; i < 4; i++)
		close(fds[i]);
	after = CGCURRENT();

	/* The group's limit stops the next buffer: ENOMEM, no OOM kill. */
	snprintf(limit, sizeof(limit), "%lld", after + SZ_64K * 16);
	ASSERT_EQ(0, write_str(CGTEST "/memory.max", limit));
	fds[0] = uioheap_alloc(self->fd[1], SZ_2M, O_RDWR | O_CLOEXEC);
	EXPECT_EQ(-ENOMEM, fds[0]);
	close(fds[0]);
	write_str(CGROOT "/cgroup.procs", pid);
	rmdir(CGTEST);

	EXPECT_LE(before + len, held) TH_LOG("memory.current %lld -> %lld", before, held);
	/* Give or take slab the close charged (more under KASAN): the 8 MiB must be gone. */
	EXPECT_GE(held - len + (long long)SZ_1M, after)
		TH_LOG("memory.current %lld -> %lld after the close", held, after);
}

/* Real DMA from one heap buffer into another; the bytes around the target stay untouched. */
static void dma_round_trip(struct __test_metadata *_metadata, const char *uio, int heap,
			   uint32_t len, uint32_t in_off, uint32_t out_off, uint32_t edu_off)
{
	int fd[2], ret, patched = env_bool("UIOHEAP_PATCHED");
	enum uioheap_addr_source source;
	unsigned char *p[2];
	uint64_t addr[2];
	struct edu edu;
	uint32_t i;

	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	ASSERT_EQ(0, edu_open(&edu, uio));
	for (i = 0; i < 2; i++) {
		fd[i] = alloc_map(_metadata, heap, SZ_64K, &p[i]);
		/* What a user gets: the dma-buf's own address where there is one. */
		ASSERT_EQ(0, uioheap_dma_addr(heap, fd[i], &addr[i], &source));
		EXPECT_EQ(patched ? UIOHEAP_ADDR_DMA_BUF : UIOHEAP_ADDR_HEAP, source);
	}
	for (i = 0; i < len; i++)
		p[0][in_off + i] = (unsigned char)(i * 13 + 1 + len);

	ret = edu_dma(&edu, addr[0] + in_off, edu_off, len, true, 10000);
	ASSERT_EQ(0, ret) TH_LOG("to device: %s", strerror(-ret));
	ret = edu_dma(&edu, addr[1] + out_off, edu_off, len, false, 10000);
	ASSERT_EQ(0, ret) TH_LOG("from device: %s", strerror(-ret));
	EXPECT_EQ(0, memcmp(p[1] + out_off, p[0] + in_off, len));
	EXPECT_TRUE(is_filled(p[1], out_off, 0)) TH_LOG("bytes before the target written");
	EXPECT_TRUE(is_filled(p[1] + out_off + len, SZ_64K - out_off - len, 0))
		TH_LOG("bytes after the target written");
	for (i = 0; i < 2; i++) {
		munmap(p[i], SZ_64K);
		close(fd[i]);
	}
	edu_close(&edu);
}

TEST_F_TIMEOUT(heap, device_dma_wide, 120)
{
	dma_round_trip(_metadata, self->wide, self->fd[1], 4000, 0, 100, 0);
	/* Across a page boundary on both sides, inside the device window. */
	dma_round_trip(_metadata, self->wide, self->fd[1], 3000, 3 * SZ_4K - 1000, 5 * SZ_4K - 7,
		       1000);
}

TEST_F_TIMEOUT(heap, device_dma_narrow, 120)
{
	ASSERT_EQ(0, uioheap_sysfs_write(self->narrow, "dma_mask_bits", edu_narrow_bits()));
	dma_round_trip(_metadata, self->narrow, self->fd[0], 4095, 0, SZ_4K + 1, 0);
}

/* Bad input: a clear errno, and nothing changes. */
static int heap_alloc_raw(int heap, __u64 len, __u32 fd, __u32 fd_flags, __u64 heap_flags)
{
	struct dma_heap_allocation_data data = {
		.len = len, .fd = fd, .fd_flags = fd_flags, .heap_flags = heap_flags,
	};

	return ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &data) ? errno : 0;
}

TEST_F(heap, bad_alloc_input)
{
	unsigned long long before, nbefore;
	int fd = self->fd[1];

	ASSERT_EQ(0, heap_usage(self->wide, &before, &nbefore));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, 0, 0, O_RDWR, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, ~0ULL, 0, O_RDWR, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, ~0ULL - SZ_4K + 2, 0, O_RDWR, 0));
	EXPECT_EQ(ENOMEM, heap_alloc_raw(fd, 1ULL << 62, 0, O_RDWR, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR | O_NONBLOCK, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR | O_APPEND, 0));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR, 1));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 0, O_RDWR, 1ULL << 63));
	EXPECT_EQ(EINVAL, heap_alloc_raw(fd, SZ_4K, 3, O_RDWR, 0));
	EXPECT_ERRNO(EFAULT, ioctl(fd, DMA_HEAP_IOCTL_ALLOC, (void *)16));
	/* Unknown commands get what the dma-heap core answers: EINVAL. */
	EXPECT_ERRNO(EINVAL, ioctl(fd, _IO(DMA_HEAP_IOC_MAGIC, 5)));
	EXPECT_ERRNO(EINVAL, ioctl(fd, _IOWR(DMA_HEAP_IOC_MAGIC, 0x41, struct uio_heap_dma_addr),
				   NULL));

	EXPECT_EQ(before, heap_ull(self->wide, "allocated_bytes"));
	EXPECT_EQ(nbefore, heap_ull(self->wide, "buffers"));
}

TEST_F(heap, max_bytes_limit)
{
	unsigned long long before;
	int a, b;

	ASSERT_EQ(0, uioheap_sysfs_read(self->wide, "allocated_bytes", &before));
	ASSERT_EQ(0, uioheap_sysfs_write(self->wide, "max_bytes", before + 2 * SZ_64K));
	EXPECT_EQ(ENOSPC, heap_alloc_raw(self->fd[1], 3 * SZ_64K, 0, O_RDWR, 0));
	a = alloc_map(_metadata, self->fd[1], SZ_64K, NULL);
	EXPECT_EQ(-ENOSPC, uioheap_alloc(self->fd[1], SZ_64K + SZ_4K, 0));
	b = alloc_map(_metadata, self->fd[1], SZ_64K, NULL);
	EXPECT_EQ(-ENOSPC, uioheap_alloc(self->fd[1], SZ_4K, 0));
	close(a);
	a = uioheap_alloc(self->fd[1], SZ_64K, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, a);

	ASSERT_EQ(0, uioheap_sysfs_write(self->wide, "max_bytes", 0));
	close(a);
	close(b);
	EXPECT_EQ(before, heap_ull(self->wide, "allocated_bytes"));
}

TEST_F(heap, bad_addr_input)
{
	int wide = self->fd[1], buf, other, memfd, pipefd[2], closed;

	buf = alloc_map(_metadata, wide, SZ_4K, NULL);
	other = alloc_map(_metadata, self->fd[0], SZ_4K, NULL);
	EXPECT_EQ(0, heap_addr(wide, buf, 0, NULL));
	EXPECT_EQ(EINVAL, heap_addr(wide, buf, 1, NULL));
	EXPECT_EQ(EINVAL, heap_addr(wide, buf, 0x80000000, NULL));
	EXPECT_EQ(EINVAL, heap_addr(wide, other, 0, NULL));
	EXPECT_EQ(EINVAL, heap_addr(self->fd[0], buf, 0, NULL));
	/* Not dma-bufs: a memfd, a pipe, the heap node itself. */
	memfd = memfd_create("uio_heap_test", MFD_CLOEXEC);
	ASSERT_LE(0, memfd);
	EXPECT_EQ(EINVAL, heap_addr(wide, memfd, 0, NULL));
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(EINVAL, heap_addr(wide, pipefd[0], 0, NULL));
	EXPECT_EQ(EINVAL, heap_addr(wide, wide, 0, NULL));
	closed = dup(buf);
	close(closed);
	EXPECT_EQ(EBADF, heap_addr(wide, closed, 0, NULL));
	EXPECT_EQ(EBADF, heap_addr(wide, -1, 0, NULL));
	EXPECT_ERRNO(EFAULT, ioctl(wide, UIO_HEAP_IOCTL_GET_DMA_ADDR, (void *)8));

	close(memfd);
	close(pipefd[0]);
	close(pipefd[1]);
	close(buf);
	close(other);
}

TEST_F(heap, system_heap_buffer_is_foreign)
{
	int sys, buf, patched = env_bool("UIOHEAP_PATCHED");
	uint64_t addr = 0;

	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	sys = open("/dev/dma_heap/system", O_RDWR | O_CLOEXEC);
	if (sys < 0)
		SKIP(return, "kernel without the system heap");
	buf = alloc_map(_metadata, sys, SZ_4K, NULL);
	EXPECT_EQ(EINVAL, heap_addr(self->fd[1], buf, 0, NULL));
	/* Patched core: EINVAL (no address op); stock core: ENOTTY. */
	EXPECT_EQ(patched ? EINVAL : ENOTTY, dmabuf_addr(buf, &addr));
	close(buf);
	close(sys);
}

/* A patched dma-buf core answers DMA_BUF_IOCTL_GET_DMA_ADDR as the heap; stock, ENOTTY. */
TEST_F(heap, dma_buf_get_dma_addr_agrees)
{
	int buf, i, ret, patched = env_bool("UIOHEAP_PATCHED");
	uint64_t addr = 0, heap = 0;

	ASSERT_NE(-1, patched) TH_LOG("UIOHEAP_PATCHED is not set");
	for (i = 0; i < 2; i++) {
		buf = alloc_map(_metadata, self->fd[i], SZ_64K, NULL);
		ret = dmabuf_addr(buf, &addr);
		if (patched) {
			ASSERT_EQ(0, ret) TH_LOG("DMA_BUF_IOCTL_GET_DMA_ADDR: %s", strerror(ret));
			ASSERT_EQ(0, heap_addr(self->fd[i], buf, 0, &heap));
			EXPECT_EQ(heap, addr);
		} else {
			ASSERT_EQ(ENOTTY, ret) TH_LOG("a stock core answered %s", strerror(ret));
		}
		close(buf);
	}
	if (!patched)
		SKIP(return, "stock dma-buf core: no DMA_BUF_IOCTL_GET_DMA_ADDR");
}

TEST_F(heap, dma_buf_unknown_ioctl)
{
	int buf = alloc_map(_metadata, self->fd[1], SZ_4K, NULL);

	EXPECT_ERRNO(ENOTTY, ioctl(buf, _IO('b', 0x7f)));
	close(buf);
}

TEST_F(heap, buffers_identifiable)
{
	int buf = alloc_map(_metadata, self->fd[1], SZ_64K, NULL);
	char path[64], needle[32];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", buf);
	snprintf(needle, sizeof(needle), "exp_name:\t%s\n", self->wide);
	EXPECT_TRUE(file_has_line(path, needle));

	/* The VM mounts debugfs; both kernels have CONFIG_DEBUG_FS. */
	ASSERT_TRUE(path_exists("/sys/kernel/debug/dma_buf/bufinfo"));
	snprintf(needle, sizeof(needle), "\t%s\t", self->wide);
	EXPECT_TRUE(file_has_line("/sys/kernel/debug/dma_buf/bufinfo", needle));
	close(buf);
}

/* Is @phys in a top-level System RAM range of /proc/iomem? */
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

#define IOMMU_PAGES	8

/*
 * The host's IOMMU mode: "on", a translating domain and IOVAs, not the pages' addresses; "off",
 * the pages' (q35: no DMA offset).  For "on", an address outside System RAM is no page's.
 */
TEST_F(heap, iommu_mode_is_the_requested_one)
{
	const char *mode = getenv("UIOHEAP_IOMMU");
	int i, j, n, fd, pm, kc, counts[3];
	char type[32], attr[128], heap_mode[32];
	uint64_t addr = 0, phys;
	unsigned char *p;
	enum page_is is;
	bool on;

	ASSERT_NE(NULL, mode) TH_LOG("UIOHEAP_IOMMU is not set");
	ASSERT_TRUE(!strcmp(mode, "on") || !strcmp(mode, "off"));
	on = !strcmp(mode, "on");
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	kc = open("/proc/kcore", O_RDONLY | O_CLOEXEC);

	for (i = 0; i < 2; i++) {
		snprintf(attr, sizeof(attr), "/sys/bus/pci/devices/%s/iommu_group/type",
			 self->h.pci[i]);
		type[0] = '\0';
		read_str(attr, type, sizeof(type));
		/* Braces: the harness' EXPECT_*() cannot precede an else. */
		if (on) {
			EXPECT_TRUE(!strcmp(type, "DMA") || !strcmp(type, "DMA-FQ"))
				TH_LOG("%s: IOMMU domain \"%s\", not translating",
				       self->h.pci[i], type);
			/* The heap's iommu attribute names the same mode (dma-fq: lazy). */
			ASSERT_LT(0, heap_attr(self->h.uio[i], "iommu", heap_mode,
					       sizeof(heap_mode)));
			for (j = 0; type[j]; j++)
				type[j] = tolower(type[j]);
			EXPECT_STREQ(type, heap_mode);
		} else {
			EXPECT_TRUE(!type[0] || !strcmp(type, "identity"))
				TH_LOG("%s: IOMMU domain \"%s\" with the IOMMU off",
				       self->h.pci[i], type);
		}

		fd = alloc_map(_metadata, self->fd[i], IOMMU_PAGES * PAGE_SZ, &p);
		ASSERT_EQ(0, heap_addr(self->fd[i], fd, 0, &addr));
		/* Contents no other page has, to be recognised by. */
		prng_fill(p, IOMMU_PAGES * PAGE_SZ, 0x10acce55 + i);

		memset(counts, 0, sizeof(counts));
		for (n = 0; n < IOMMU_PAGES; n++) {
			uint64_t at = addr + n * PAGE_SZ;
			unsigned char *va = p + n * PAGE_SZ;

			phys = pagemap_phys(pm, va);
			/*
			 * DMA-API debug only without kcore: reading freed devices' entries
			 * (KUnit's) is a use-after-free in dump_show().
			 */
			if (!phys && !n && kc < 0)
				phys = dma_debug_phys(self->h.pci[i], addr);
			if (phys)
				is = phys == at ? PAGE_AT_ADDR : PAGE_ELSEWHERE;
			else
				is = kcore_page(kc, at, va);
			if (is == PAGE_UNKNOWN && on && !is_system_ram(at))
				is = PAGE_ELSEWHERE;
			counts[is]++;
		}
		munmap(p, IOMMU_PAGES * PAGE_SZ);
		close(fd);
		EXPECT_TRUE(on ? counts[PAGE_ELSEWHERE] > 0 : counts[PAGE_AT_ADDR] == IOMMU_PAGES)
			TH_LOG("%s, IOMMU %s: %d pages at %#llx: %d there, %d not, %d unknown",
			       self->h.pci[i], mode, IOMMU_PAGES, (unsigned long long)addr,
			       counts[PAGE_AT_ADDR], counts[PAGE_ELSEWHERE], counts[PAGE_UNKNOWN]);
	}
	close(pm);
	close(kc);
}

TEST_HARNESS_MAIN
