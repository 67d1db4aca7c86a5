// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap buffers are ordinary pages: both nodes of each edu (uioN and
 * uioN-cached) carry real device DMA, and their CPU mappings work with
 * the kernel's get_user_pages() users: O_DIRECT on a block device (brd),
 * vmsplice, process_vm_readv and io_uring registered buffers.
 *
 * On uioN-cached every CPU access is bracketed with DMA_BUF_IOCTL_SYNC,
 * as Documentation/uio-heap.rst asks; on uioN none is.  uioN of a device
 * that does not snoop (the arm64 board VM) maps the CPU uncached: there
 * every get_user_pages() user must be refused, with EFAULT.
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
		self->heap[i] = uioheap_open(self->name[i]);
		ASSERT_LE(0, self->heap[i]) TH_LOG("/dev/dma_heap/%s: %s",
						   self->name[i],
						   strerror(-self->heap[i]));
	}
	ASSERT_EQ(0, uioheap_sysfs_read(self->name[1], "coherent", &coherent));
	self->uncached = !variant->cached && !coherent;
}

FIXTURE_TEARDOWN(zc)
{
	int i;

	for (i = 0; i < 2; i++)
		if (self->heap[i] > 0)
			close(self->heap[i]);
	edu_heaps_restore(&self->h);
}

struct zbuf {
	int fd;
	unsigned char *p;
	uint64_t addr;
	bool cached;
};

static int zbuf_new(struct zbuf *b, int heap, bool cached)
{
	b->cached = cached;
	b->fd = uioheap_alloc(heap, ZC_LEN, O_RDWR | O_CLOEXEC);
	if (b->fd < 0)
		return b->fd;
	b->p = uioheap_map(b->fd, ZC_LEN);
	if (!b->p)
		return -errno;
	return uioheap_dma_addr(heap, b->fd, &b->addr, NULL);
}

static void zbuf_free(struct zbuf *b)
{
	if (b->p)
		munmap(b->p, ZC_LEN);
	if (b->fd >= 0)
		close(b->fd);
}

/* CPU access brackets: real cache maintenance on uioN-cached only. */
static int zbuf_cpu(const struct zbuf *b, bool start, bool write)
{
	return b->cached ? uioheap_sync(b->fd, start, write) : 0;
}

/* Device round trip: @src to the edu's buffer, then back into @dst. */
static int edu_copy(const char *uio, const struct zbuf *src,
		    const struct zbuf *dst)
{
	struct edu edu;
	int ret;

	ret = edu_open(&edu, uio);
	if (ret)
		return ret;
	ret = edu_dma(&edu, src->addr, 0, ZC_DEV_LEN, true, 10000);
	if (!ret)
		ret = edu_dma(&edu, dst->addr, 0, ZC_DEV_LEN, false, 10000);
	edu_close(&edu);
	return ret;
}

TEST_F(zc, device_dma_through_the_node)
{
	struct zbuf a, b;
	int i;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, zbuf_new(&a, self->heap[i], variant->cached));
		ASSERT_EQ(0, zbuf_new(&b, self->heap[i], variant->cached));
		EXPECT_GE(self->mask[i], a.addr + ZC_LEN - 1);

		ASSERT_EQ(0, zbuf_cpu(&a, true, true));
		prng_fill(a.p, ZC_LEN, 0x5eed0 + i);
		ASSERT_EQ(0, zbuf_cpu(&a, false, true));
		ASSERT_EQ(0, zbuf_cpu(&b, true, true));
		memset(b.p, 0, ZC_LEN);
		ASSERT_EQ(0, zbuf_cpu(&b, false, true));

		ASSERT_EQ(0, edu_copy(self->uio[i], &a, &b));

		ASSERT_EQ(0, zbuf_cpu(&b, true, false));
		EXPECT_TRUE(prng_holds(b.p, ZC_DEV_LEN / 8 * 8, 0x5eed0 + i))
			TH_LOG("%s: the device's bytes did not arrive",
			       self->name[i]);
		ASSERT_EQ(0, zbuf_cpu(&b, false, false));
		zbuf_free(&a);
		zbuf_free(&b);
	}
}

/*
 * Disk to buffer to device with no CPU copy: O_DIRECT writes a buffer to
 * a RAM disk and reads it back into another (the block layer pins their
 * pages with get_user_pages()), then the edu DMAs what came from disk.
 */
TEST_F(zc, o_direct_disk_to_device)
{
	struct zbuf a, b, c;
	int disk;

	disk = open(RAMDISK, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, disk) TH_LOG(RAMDISK ": %s", strerror(errno));

	ASSERT_EQ(0, zbuf_new(&a, self->heap[1], variant->cached));
	ASSERT_EQ(0, zbuf_new(&b, self->heap[1], variant->cached));
	ASSERT_EQ(0, zbuf_new(&c, self->heap[1], variant->cached));
	ASSERT_EQ(0, zbuf_cpu(&a, true, true));
	prng_fill(a.p, ZC_LEN, 0xd15c);
	ASSERT_EQ(0, zbuf_cpu(&a, false, true));

	if (self->uncached) {
		EXPECT_EQ(-1, pwrite(disk, a.p, ZC_LEN, 0));
		EXPECT_EQ(EFAULT, errno);
		EXPECT_EQ(-1, pread(disk, b.p, ZC_LEN, 0));
		EXPECT_EQ(EFAULT, errno);
		goto out;
	}
	/* Between the syncs, as for a device: the block layer is one. */
	EXPECT_EQ((ssize_t)ZC_LEN, pwrite(disk, a.p, ZC_LEN, 0))
		TH_LOG("O_DIRECT write from the buffer: %s", strerror(errno));
	EXPECT_EQ((ssize_t)ZC_LEN, pread(disk, b.p, ZC_LEN, 0))
		TH_LOG("O_DIRECT read into the buffer: %s", strerror(errno));
	ASSERT_EQ(0, zbuf_cpu(&b, true, false));
	EXPECT_TRUE(prng_holds(b.p, ZC_LEN, 0xd15c));
	ASSERT_EQ(0, zbuf_cpu(&b, false, false));

	ASSERT_EQ(0, edu_copy(self->uio[1], &b, &c));
	ASSERT_EQ(0, zbuf_cpu(&c, true, false));
	EXPECT_TRUE(prng_holds(c.p, ZC_DEV_LEN / 8 * 8, 0xd15c))
		TH_LOG("the device did not get the bytes from disk");
	ASSERT_EQ(0, zbuf_cpu(&c, false, false));
out:
	zbuf_free(&a);
	zbuf_free(&b);
	zbuf_free(&c);
	close(disk);
}

/*
 * process_vm_readv() reaches the pages through pin_user_pages_remote(),
 * /proc/self/mem (ptrace's path) through access_remote_vm(), vmsplice()
 * puts references to the pages themselves in a pipe.
 */
TEST_F(zc, vmsplice_process_vm_readv_and_proc_mem)
{
	unsigned char *out = malloc(ZC_LEN);
	struct iovec local, remote;
	struct zbuf a;
	int pipefd[2], mem;
	size_t got = 0;
	ssize_t n;

	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, zbuf_new(&a, self->heap[1], variant->cached));
	ASSERT_EQ(0, zbuf_cpu(&a, true, true));
	prng_fill(a.p, ZC_LEN, 0x5911ce);
	ASSERT_EQ(0, zbuf_cpu(&a, false, true));
	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, mem);
	ASSERT_EQ(0, pipe(pipefd));
	local = (struct iovec){ out, ZC_LEN };
	remote = (struct iovec){ a.p, ZC_LEN };

	if (self->uncached) {
		EXPECT_EQ(-1, process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
		EXPECT_EQ(EFAULT, errno);
		EXPECT_EQ(-1, process_vm_writev(getpid(), &local, 1, &remote, 1, 0));
		EXPECT_EQ(EFAULT, errno);
		EXPECT_EQ(-1, pread(mem, out, PAGE_SZ, (uintptr_t)a.p));
		EXPECT_EQ(EIO, errno);
		EXPECT_EQ(-1, vmsplice(pipefd[1], &remote, 1, 0));
		EXPECT_EQ(EFAULT, errno);
		goto out;
	}
	EXPECT_EQ((ssize_t)ZC_LEN,
		  process_vm_readv(getpid(), &local, 1, &remote, 1, 0))
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
out:
	close(pipefd[0]);
	close(pipefd[1]);
	close(mem);
	zbuf_free(&a);
	free(out);
}

/* One IORING_OP_READ_FIXED of @len bytes at 0 into registered buffer 0. */
static int uring_read_fixed(int ring, const struct io_uring_params *p,
			    int fd, void *buf, unsigned int len)
{
	size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(__u32);
	size_t cq_len = p->cq_off.cqes +
			p->cq_entries * sizeof(struct io_uring_cqe);
	size_t sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	unsigned int *tail, idx;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqe;
	char *sq, *cq;
	int ret = -EIO;

	if (p->features & IORING_FEAT_SINGLE_MMAP) {
		sq_len = sq_len > cq_len ? sq_len : cq_len;
		cq_len = sq_len;
	}
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring,
		  IORING_OFF_SQ_RING);
	cq = p->features & IORING_FEAT_SINGLE_MMAP ? sq :
	     mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring,
		  IORING_OFF_CQ_RING);
	sqes = mmap(NULL, sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring,
		    IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
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

	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS,
		    NULL, 0) == 1) {
		cqe = (struct io_uring_cqe *)(cq + p->cq_off.cqes) +
		      (*(unsigned int *)(cq + p->cq_off.head) &
		       *(unsigned int *)(cq + p->cq_off.ring_mask));
		ret = cqe->res;
	}
	munmap(sqes, sqes_len);
	if (cq != sq)
		munmap(cq, cq_len);
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
	ASSERT_EQ(0, zbuf_new(&a, self->heap[1], variant->cached));
	ASSERT_EQ(0, zbuf_new(&b, self->heap[1], variant->cached));
	iov = (struct iovec){ b.p, ZC_LEN };
	if (self->uncached) {
		EXPECT_EQ(-1, syscall(__NR_io_uring_register, ring,
				      IORING_REGISTER_BUFFERS, &iov, 1));
		EXPECT_EQ(EFAULT, errno);
		goto out;
	}
	ASSERT_EQ(0, zbuf_cpu(&a, true, true));
	prng_fill(a.p, ZC_LEN, 0x1047);
	ASSERT_EQ(0, zbuf_cpu(&a, false, true));
	ASSERT_EQ((ssize_t)ZC_LEN, pwrite(disk, a.p, ZC_LEN, 0));

	ret = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
		      &iov, 1);
	if (ret && errno == EOPNOTSUPP) {
		zbuf_free(&a);
		zbuf_free(&b);
		close(disk);
		close(ring);
		SKIP(return, "this io_uring refuses file-backed memory");
	}
	ASSERT_EQ(0, ret) TH_LOG("IORING_REGISTER_BUFFERS: %s", strerror(errno));
	EXPECT_EQ((int)ZC_LEN, uring_read_fixed(ring, &params, disk, b.p, ZC_LEN));
	ASSERT_EQ(0, zbuf_cpu(&b, true, false));
	EXPECT_TRUE(prng_holds(b.p, ZC_LEN, 0x1047));
	ASSERT_EQ(0, zbuf_cpu(&b, false, false));

	EXPECT_EQ(0, syscall(__NR_io_uring_register, ring,
			     IORING_UNREGISTER_BUFFERS, NULL, 0));
out:
	zbuf_free(&a);
	zbuf_free(&b);
	close(disk);
	close(ring);
}

EDU_HEAPS_FIXTURE(big);

/*
 * Behind an IOMMU a buffer is any pages under one IOVA range: 1 GiB in a
 * 2 GiB VM, far beyond the largest block the page allocator has, and the
 * device reaches its last page.  Without one a buffer is one block, and
 * the page allocator's largest (4 MiB) is the limit.
 */
TEST_F(big, size_beyond_the_page_allocator_needs_the_iommu)
{
	const char *iommu = getenv("UIOHEAP_IOMMU");
	const size_t len = 1024 * SZ_1M;
	unsigned long long max;
	char name[32];
	struct zbuf a, last;
	int heap;

	ASSERT_NE(NULL, iommu);
	snprintf(name, sizeof(name), "%s-cached", self->uio[1]);
	ASSERT_EQ(0, uioheap_sysfs_read(name, "max_bytes", &max));
	ASSERT_EQ(0, uioheap_sysfs_write(name, "max_bytes", 0));
	heap = uioheap_open(name);
	ASSERT_LE(0, heap);

	if (strcmp(iommu, "on")) {
		EXPECT_EQ(-ENOMEM, uioheap_alloc(heap, 2 * SZ_4M, O_RDWR | O_CLOEXEC));
		a.fd = uioheap_alloc(heap, SZ_4M, O_RDWR | O_CLOEXEC);
		EXPECT_LE(0, a.fd);
		close(a.fd);
		goto out;
	}

	a.fd = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a.fd) TH_LOG("1 GiB from %s: %s", name, strerror(-a.fd));
	a.p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, a.p);
	ASSERT_EQ(0, uioheap_dma_addr(heap, a.fd, &a.addr, NULL));
	a.cached = true;
	EXPECT_GE(self->mask[1], a.addr + len - 1);

	/* The device copies the last page's bytes to the first page. */
	ASSERT_EQ(0, zbuf_cpu(&a, true, true));
	prng_fill(a.p + len - PAGE_SZ, PAGE_SZ, 0xb16);
	memset(a.p, 0, PAGE_SZ);
	ASSERT_EQ(0, zbuf_cpu(&a, false, true));
	last = a;
	last.addr = a.addr + len - PAGE_SZ;
	ASSERT_EQ(0, edu_copy(self->uio[1], &last, &a));
	ASSERT_EQ(0, zbuf_cpu(&a, true, false));
	EXPECT_TRUE(prng_holds(a.p, ZC_DEV_LEN / 8 * 8, 0xb16));
	ASSERT_EQ(0, zbuf_cpu(&a, false, false));
	munmap(a.p, len);
	close(a.fd);
out:
	close(heap);
	uioheap_sysfs_write(name, "max_bytes", max);
}

TEST_HARNESS_MAIN
