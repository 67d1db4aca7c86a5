// SPDX-License-Identifier: GPL-2.0
/*
 * Heap buffers are ordinary pages: both nodes carry device DMA and serve get_user_pages() users,
 * CPU access synced on uioN-cached only.  Where uioN maps uncached (no snooping) they get EFAULT.
 */
#include <sys/uio.h>
#include <linux/io_uring.h>

#include "kselftest_harness.h"
#include "common.h"

#define ZC_LEN		SZ_64K
#define ZC_DEV_LEN	PUMP_LEN	/* inside QEMU 7.2's edu window */
#define RAMDISK		"/dev/ram0"

FIXTURE(zc) {
	EDU_HEAPS_FIELDS;
	int heap[2];		/* this variant's node of each edu */
	char name[2][32];
	bool uncached;		/* the wide edu's node maps the CPU uncached */
};

FIXTURE_VARIANT(zc) {
	bool cached;
};

FIXTURE_VARIANT_ADD(zc, coherent) { .cached = false };
FIXTURE_VARIANT_ADD(zc, cached) { .cached = true };

FIXTURE_SETUP(zc)
{
	unsigned long long coherent;
	int i;

	EDU_HEAPS_SETUP(self);
	edu_heaps_narrow(_metadata, &self->h);
	for (i = 0; i < 2; i++) {
		snprintf(self->name[i], sizeof(self->name[i]), "%s%s",
			 self->uio[i], variant->cached ? "-cached" : "");
		self->heap[i] = open_heap(_metadata, self->name[i]);
	}
	ASSERT_EQ(0, uioheap_sysfs_read(self->name[1], "coherent", &coherent));
	self->uncached = !variant->cached && !coherent;
}

/* The test's exit releases its fds and mappings. */
FIXTURE_TEARDOWN(zc)
{
	edu_heaps_restore(&self->h);
}

struct zbuf {
	int fd;
	unsigned char *p;
	uint64_t addr;
	size_t len;
	bool cached;
};

/* CPU access brackets: real cache maintenance on uioN-cached only. */
static int zbuf_cpu(const struct zbuf *b, bool start, bool write)
{
	return b->cached ? uioheap_sync(b->fd, start, write) : 0;
}

/* The first @len bytes, read between the syncs, are the sequence of @seed (and both syncs work). */
static bool zbuf_holds(const struct zbuf *b, size_t len, uint64_t seed)
{
	bool holds;

	if (zbuf_cpu(b, true, false))
		return false;
	holds = prng_holds(b->p, len, seed);
	return !zbuf_cpu(b, false, false) && holds;
}

/* A buffer of @len bytes of @heap, filled by the CPU with the sequence of @seed unless 0. */
static void zbuf_new(struct __test_metadata *_metadata, struct zbuf *b, int heap, bool cached,
		     size_t len, uint64_t seed)
{
	b->cached = cached;
	b->len = len;
	b->fd = alloc_map(_metadata, heap, len, &b->p);
	ASSERT_EQ(0, uioheap_dma_addr(heap, b->fd, &b->addr, NULL));
	if (!seed)
		return;
	ASSERT_EQ(0, zbuf_cpu(b, true, true));
	prng_fill(b->p, len, seed);
	ASSERT_EQ(0, zbuf_cpu(b, false, true));
}

static void zbuf_free(struct zbuf *b)
{
	munmap(b->p, b->len);
	close(b->fd);
}

/* The target holds other CPU-written bytes (dirty lines, on uioN-cached) the device replaces. */
TEST_F(zc, device_dma_through_the_node)
{
	struct zbuf a, b;
	int i;

	for (i = 0; i < 2; i++) {
		zbuf_new(_metadata, &a, self->heap[i], variant->cached, ZC_LEN, 0x5eed0 + i);
		zbuf_new(_metadata, &b, self->heap[i], variant->cached, ZC_LEN, 0xb0b0 + i);
		EXPECT_GE(self->mask[i], a.addr + ZC_LEN - 1);
		ASSERT_EQ(0, edu_copy(self->uio[i], a.addr, b.addr, ZC_DEV_LEN));
		EXPECT_TRUE(zbuf_holds(&b, ZC_DEV_LEN, 0x5eed0 + i))
			TH_LOG("%s: the device's bytes did not arrive", self->name[i]);
		zbuf_free(&a);
		zbuf_free(&b);
	}
}

/* Disk to buffer to device with no CPU copy: O_DIRECT through a RAM disk, then the edu. */
TEST_F(zc, o_direct_disk_to_device)
{
	struct zbuf a, b, c;
	int disk;

	disk = open(RAMDISK, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, disk) TH_LOG(RAMDISK ": %s", strerror(errno));
	zbuf_new(_metadata, &a, self->heap[1], variant->cached, ZC_LEN, 0xd15c);
	zbuf_new(_metadata, &b, self->heap[1], variant->cached, ZC_LEN, 0);
	zbuf_new(_metadata, &c, self->heap[1], variant->cached, ZC_LEN, 0);

	if (self->uncached) {
		EXPECT_ERRNO(EFAULT, pwrite(disk, a.p, ZC_LEN, 0));
		EXPECT_ERRNO(EFAULT, pread(disk, b.p, ZC_LEN, 0));
		return;
	}
	/* Between the syncs, as for a device: the block layer is one. */
	EXPECT_EQ((ssize_t)ZC_LEN, pwrite(disk, a.p, ZC_LEN, 0))
		TH_LOG("O_DIRECT write from the buffer: %s", strerror(errno));
	EXPECT_EQ((ssize_t)ZC_LEN, pread(disk, b.p, ZC_LEN, 0))
		TH_LOG("O_DIRECT read into the buffer: %s", strerror(errno));
	EXPECT_TRUE(zbuf_holds(&b, ZC_LEN, 0xd15c));
	ASSERT_EQ(0, edu_copy(self->uio[1], b.addr, c.addr, ZC_DEV_LEN));
	EXPECT_TRUE(zbuf_holds(&c, ZC_DEV_LEN, 0xd15c))
		TH_LOG("the device did not get the bytes from disk");
}

/* pin_user_pages_remote(), access_remote_vm() (/proc/self/mem), vmsplice() of the pages. */
TEST_F(zc, vmsplice_process_vm_readv_and_proc_mem)
{
	unsigned char out[ZC_LEN];
	struct iovec local, remote;
	struct zbuf a;
	int pipefd[2], mem;
	size_t got = 0;
	ssize_t n;

	zbuf_new(_metadata, &a, self->heap[1], variant->cached, ZC_LEN, 0x5911ce);
	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, mem);
	ASSERT_EQ(0, pipe(pipefd));
	local = (struct iovec){ out, ZC_LEN };
	remote = (struct iovec){ a.p, ZC_LEN };

	if (self->uncached) {
		EXPECT_ERRNO(EFAULT, process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
		EXPECT_ERRNO(EFAULT, process_vm_writev(getpid(), &local, 1, &remote, 1, 0));
		EXPECT_ERRNO(EIO, pread(mem, out, PAGE_SZ, (uintptr_t)a.p));
		EXPECT_ERRNO(EFAULT, vmsplice(pipefd[1], &remote, 1, 0));
		return;
	}
	EXPECT_EQ((ssize_t)ZC_LEN, process_vm_readv(getpid(), &local, 1, &remote, 1, 0))
		TH_LOG("process_vm_readv: %s", strerror(errno));
	EXPECT_TRUE(prng_holds(out, ZC_LEN, 0x5911ce));
	memset(out, 0, ZC_LEN);
	EXPECT_EQ((ssize_t)PAGE_SZ, pread(mem, out, PAGE_SZ, (uintptr_t)a.p))
		TH_LOG("/proc/self/mem: %s", strerror(errno));
	EXPECT_TRUE(prng_holds(out, PAGE_SZ, 0x5911ce));

	memset(out, 0, ZC_LEN);
	EXPECT_EQ((ssize_t)ZC_LEN, vmsplice(pipefd[1], &remote, 1, 0))
		TH_LOG("vmsplice: %s", strerror(errno));
	while (got < ZC_LEN && (n = read(pipefd[0], out + got, ZC_LEN - got)) > 0)
		got += n;
	EXPECT_EQ(ZC_LEN, got);
	EXPECT_TRUE(prng_holds(out, ZC_LEN, 0x5911ce));
}

/* One IORING_OP_READ_FIXED of @len bytes at 0 into registered buffer 0. */
static int uring_read_fixed(int ring, const struct io_uring_params *p,
			    int fd, void *buf, unsigned int len)
{
	size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(__u32);
	size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	size_t sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	unsigned int *tail, idx;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqe;
	char *sq;
	int ret = -EIO;

	/* Both rings in one mapping: IORING_FEAT_SINGLE_MMAP, every kernel since 5.4. */
	sq_len = sq_len > cq_len ? sq_len : cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_SQ_RING);
	sqes = mmap(NULL, sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || sqes == MAP_FAILED)
		return -ENOMEM;

	tail = (unsigned int *)(sq + p->sq_off.tail);
	idx = *tail & *(unsigned int *)(sq + p->sq_off.ring_mask);
	memset(&sqes[idx], 0, sizeof(sqes[idx]));
	sqes[idx].opcode = IORING_OP_READ_FIXED;
	sqes[idx].fd = fd;
	sqes[idx].addr = (uintptr_t)buf;
	sqes[idx].len = len;
	((unsigned int *)(sq + p->sq_off.array))[idx] = idx;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);

	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) == 1) {
		cqe = (struct io_uring_cqe *)(sq + p->cq_off.cqes) +
		      (*(unsigned int *)(sq + p->cq_off.head) &
		       *(unsigned int *)(sq + p->cq_off.ring_mask));
		ret = cqe->res;
	}
	munmap(sqes, sqes_len);
	munmap(sq, sq_len);
	return ret;
}

/* Registered once (pinned through the mapping), then read into from disk. */
TEST_F(zc, io_uring_reads_into_a_registered_buffer)
{
	struct io_uring_params params = { 0 };
	struct zbuf a, b;
	struct iovec iov;
	int ring, disk, ret;

	ring = syscall(__NR_io_uring_setup, 4, &params);
	ASSERT_LE(0, ring) TH_LOG("io_uring_setup: %s", strerror(errno));
	disk = open(RAMDISK, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, disk) TH_LOG(RAMDISK ": %s", strerror(errno));
	zbuf_new(_metadata, &a, self->heap[1], variant->cached, ZC_LEN, 0x1047);
	zbuf_new(_metadata, &b, self->heap[1], variant->cached, ZC_LEN, 0);
	iov = (struct iovec){ b.p, ZC_LEN };
	if (self->uncached) {
		EXPECT_ERRNO(EFAULT, syscall(__NR_io_uring_register, ring,
					     IORING_REGISTER_BUFFERS, &iov, 1));
		return;
	}
	ASSERT_EQ((ssize_t)ZC_LEN, pwrite(disk, a.p, ZC_LEN, 0));

	ret = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1);
	if (ret && errno == EOPNOTSUPP)
		SKIP(return, "this io_uring refuses file-backed memory");
	ASSERT_EQ(0, ret) TH_LOG("IORING_REGISTER_BUFFERS: %s", strerror(errno));
	EXPECT_EQ((int)ZC_LEN, uring_read_fixed(ring, &params, disk, b.p, ZC_LEN));
	EXPECT_TRUE(zbuf_holds(&b, ZC_LEN, 0x1047));
	EXPECT_EQ(0, syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS, NULL, 0));
}

EDU_HEAPS_FIXTURE(big);

/*
 * Behind an IOMMU a buffer is any pages under one IOVA range (1 GiB of a 2 GiB VM, the
 * device reaching its last page); without one it is one block, 4 MiB at most.
 */
TEST_F(big, size_beyond_the_page_allocator_needs_the_iommu)
{
	const char *iommu = getenv("UIOHEAP_IOMMU");
	const size_t len = 1024 * SZ_1M;
	unsigned long long max;
	char name[32];
	struct zbuf a;
	int heap;

	ASSERT_NE(NULL, iommu);
	snprintf(name, sizeof(name), "%s-cached", self->uio[1]);
	ASSERT_EQ(0, uioheap_sysfs_read(name, "max_bytes", &max));
	ASSERT_EQ(0, uioheap_sysfs_write(name, "max_bytes", 0));
	heap = open_heap(_metadata, name);

	if (strcmp(iommu, "on")) {
		EXPECT_EQ(-ENOMEM, uioheap_alloc(heap, 2 * SZ_4M, O_RDWR | O_CLOEXEC));
		a.fd = uioheap_alloc(heap, SZ_4M, O_RDWR | O_CLOEXEC);
		EXPECT_LE(0, a.fd);
		close(a.fd);
		goto out;
	}

	zbuf_new(_metadata, &a, heap, true, len, 0);
	EXPECT_GE(self->mask[1], a.addr + len - 1);
	/* The device copies the last page's bytes to the first page. */
	ASSERT_EQ(0, zbuf_cpu(&a, true, true));
	prng_fill(a.p + len - PAGE_SZ, PAGE_SZ, 0xb16);
	memset(a.p, 0, PAGE_SZ);
	ASSERT_EQ(0, zbuf_cpu(&a, false, true));
	ASSERT_EQ(0, edu_copy(self->uio[1], a.addr + len - PAGE_SZ, a.addr, ZC_DEV_LEN));
	EXPECT_TRUE(zbuf_holds(&a, ZC_DEV_LEN, 0xb16));
	zbuf_free(&a);
out:
	close(heap);
	uioheap_sysfs_write(name, "max_bytes", max);
}

TEST_HARNESS_MAIN
