// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap lifetime selftests: heaps follow their UIO devices through
 * unbind, removal, rebind, rescan and driver unload; buffers of a device
 * that goes are revoked (SIGBUS on access, ENODEV on use) and stay safe
 * to close; the module cannot be unloaded while anything holds it.
 *
 * These tests unbind and remove devices: run them after uio_heap_test.
 */
#include <sys/uio.h>
#include <linux/io_uring.h>

#include "kselftest_harness.h"
#include "common.h"

/* The wide edu, which the tests unplug; the narrow one stays untouched. */
FIXTURE(dev) {
	struct edu_heaps h;
	char *pci;
	char *uio;
	char node[64];
};

FIXTURE_SETUP(dev)
{
	edu_heaps_get(_metadata, &self->h);
	self->pci = self->h.pci[1];
	self->uio = self->h.uio[1];
	strcpy(self->node, self->h.node[1]);
}

/* Device bound and module loaded again, whatever the test did. */
FIXTURE_TEARDOWN(dev)
{
	ensure_uio_heap_loaded();
	if (!module_loaded("uio_pci_generic"))
		insmod_file(getenv("UIOHEAP_UIO_PCI_GENERIC_KO"));
	write_str(UIO_PCI_GENERIC "/new_id", "1234 11e8");
	replug_pci(self->h.pci[0], self->h.uio[0], sizeof(self->h.uio[0]));
	replug_pci(self->pci, self->uio, 16);
}

/* After a device comes back: its (maybe new) UIO name and heap node. */
static long long wait_heap_back(struct __test_metadata *_metadata,
				FIXTURE_DATA(dev) *self)
{
	long long t = wait_heap_of(self->pci, self->uio, 16, 5000);
	const char *why;

	ASSERT_LE(0, t) TH_LOG("%s: no heap within 5 s", self->pci);
	node_of(self->node, sizeof(self->node), self->uio);
	why = heap_check(self->node, SZ_64K);
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	return t;
}

TEST_F(dev, heap_follows_bind_and_unbind)
{
	char path[128];
	long long t;

	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s", self->uio);
	ASSERT_TRUE(path_exists(path));

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	EXPECT_FALSE(path_exists(self->node));
	EXPECT_FALSE(path_exists(path));

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	t = wait_heap_back(_metadata, self);
	EXPECT_GE(1000, t) TH_LOG("heap took %lld ms to appear", t);
}

/*
 * What a buffer looks like once its device is gone, seen through the fds
 * and the mapping that were made before.
 */
static void check_revoked(struct __test_metadata *_metadata, int heap, int buf,
			  volatile unsigned char *p, const char *node)
{
	struct dma_buf_sync sync = {
		.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW,
	};
	struct uio_heap_dma_addr arg = { .fd = buf };
	struct stat st;

	EXPECT_FALSE(path_exists(node));
	EXPECT_EQ(SIGBUS, probe_pages(p, 1, false, 0));
	EXPECT_EQ(SIGBUS, probe_pages(p + SZ_64K - 1, 1, true, 0x5a));

	EXPECT_EQ(-1, ioctl(heap, UIO_HEAP_IOCTL_GET_DMA_ADDR, &arg));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(-ENODEV, uioheap_alloc(heap, SZ_4K, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(-1, ioctl(buf, DMA_BUF_IOCTL_SYNC, &sync));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, buf, 0));
	EXPECT_EQ(ENODEV, errno);
	/* Still a file that can be looked at and closed. */
	EXPECT_EQ(0, fstat(buf, &st));
	EXPECT_EQ(SZ_64K, (size_t)st.st_size);
}

/* A child holding its own mapping must be cut off too. */
static pid_t child_holding(volatile unsigned char *p, int *go, int *done)
{
	int to_child[2], from_child[2];
	pid_t pid;
	char c;

	if (pipe(to_child) || pipe(from_child))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		c = p[1] == 0x33 ? 'y' : 'n';	/* mapped and readable */
		if (write(from_child[1], &c, 1) != 1)
			_exit(2);
		if (read(to_child[0], &c, 1) != 1)
			_exit(2);
		c = probe_pages(p + 1, 1, false, 0) == SIGBUS ? 'y' : 'n';
		if (write(from_child[1], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(to_child[0]);
	close(from_child[1]);
	*go = to_child[1];
	*done = from_child[0];
	return pid;
}

/*
 * The device DMAs into the mapped buffer all along; @remove takes it off
 * the bus, else it is unbound.
 */
static void revoke_while_mapped(struct __test_metadata *_metadata,
				FIXTURE_DATA(dev) *self, bool remove)
{
	int heap, buf, go, done, status;
	static struct dma_pump pump;
	volatile unsigned char *p;
	const char *why;
	uint64_t addr = 0;
	pid_t pid;
	char c;

	heap = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, heap_addr(heap, buf, 0, &addr));
	p = uioheap_map(buf, SZ_64K);
	ASSERT_NE(NULL, p);
	/* The device writes the first page, the child reads the second. */
	p[SZ_4K] = 0x11;
	p[SZ_4K + 1] = 0x33;
	pid = child_holding(p + SZ_4K, &go, &done);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(done, &c, 1));
	EXPECT_EQ('y', c);

	why = dma_pump_start(&pump, self->uio, heap, addr);
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	why = dma_pump_landed(&pump, (const unsigned char *)p);
	EXPECT_EQ(NULL, why) TH_LOG("%s", why);

	ASSERT_EQ(0, unplug_pci(self->pci, remove));
	check_revoked(_metadata, heap, buf, p, self->node);
	dma_pump_stop(&pump);
	ASSERT_EQ(1, write(go, "x", 1));
	ASSERT_EQ(1, read(done, &c, 1));
	EXPECT_EQ('y', c) TH_LOG("the child's mapping was not revoked");
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(go);
	close(done);

	EXPECT_EQ(0, munmap((void *)p, SZ_64K));
	EXPECT_EQ(0, close(buf));
	EXPECT_EQ(0, close(heap));

	if (remove) {
		ASSERT_EQ(0, write_str("/sys/bus/pci/rescan", "1"));
	} else {
		ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	}
	wait_heap_back(_metadata, self);
}

TEST_F(dev, unbind_revokes_mapped_buffer)
{
	revoke_while_mapped(_metadata, self, false);
}

TEST_F(dev, remove_revokes_mapped_buffer)
{
	revoke_while_mapped(_metadata, self, true);
}

/* A buffer closed only after its heap went is still cleaned up. */
TEST_F(dev, close_after_unbind)
{
	int heap, buf[4], i;

	heap = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	for (i = 0; i < 4; i++) {
		buf[i] = uioheap_alloc(heap, SZ_1M, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf[i]);
	}
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	close(heap);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, close(buf[i]));
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self);
}

/*
 * Unbinding stops the device's DMA before uio_pci_generic's remove(): bus
 * mastering goes off (S9), and behind an IOMMU its IOTLB is invalidated
 * once the buffers are unmapped.  remove()'s pci_disable_device() clears
 * bus mastering too, later and without pci_clear_master(), and a lazy
 * IOMMU flushes from its flush queue's timer, in a softirq: kprobes on
 * pci_clear_master() and on the IOMMU driver's invalidation, counted in
 * process context only, tell who did.  (A strict IOMMU also invalidates
 * in each unmap: the lazy x86 VM is the one that sees uio-heap's flush.)
 */
TEST_F(dev, unbind_stops_the_devices_dma)
{
	static const char *const flushes[] = {
#if defined(__x86_64__)
		"intel_flush_iotlb_all",
#else
		/* SMMUv3's, from 7.x and before (v2 shares v3's flush's name) */
		"arm_smmu_domain_inv_range", "arm_smmu_tlb_inv_context",
#endif
	};
	char events[256], mode[16], path[96];
	const char *flush = NULL;
	int heap, buf, ret;
	unsigned int i;

	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/iommu", self->uio);
	ASSERT_LE(0, read_str(path, mode, sizeof(mode)));
	for (i = 0; i < ARRAY_SIZE(flushes); i++) {
		flush = strncmp(mode, "dma", 3) ? NULL : flushes[i];
		ret = snprintf(events, sizeof(events),
			       "p:uioheap/clear_master pci_clear_master\n");
		if (flush)
			snprintf(events + ret, sizeof(events) - ret,
				 "p:uioheap/iotlb_flush %s\n", flush);
		ret = kprobes_start(events);
		if (ret != -ENOENT || !flush)
			break;
	}
	if (ret == -EOPNOTSUPP)
		SKIP(return, "kernel without kprobe events");
	ASSERT_EQ(0, ret) TH_LOG("%s", events);
	heap = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	EXPECT_LE(1, trace_count(" clear_master:"))
		TH_LOG("nobody called pci_clear_master() at unbind");
	if (flush)
		EXPECT_LE(1, trace_count(" iotlb_flush:"))
			TH_LOG("IOMMU %s: no %s() at unbind", mode, flush);
	sync_probe_stop();
	close(buf);
	close(heap);
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self);
}

/* Memory of revoked buffers that still waits for its last user. */
static unsigned long long revoked_bytes(void)
{
	return read_ull(UIO_HEAP_PARAMS "revoked_bytes", 0);
}

/*
 * A mapped buffer for the tests that unbind under it while its pages are
 * pinned: on the -cached node, whose mappings get_user_pages() takes on
 * every device (uioN refuses it where it maps uncached).
 */
struct held_buf {
	unsigned long long before;	/* revoked_bytes before it existed */
	unsigned char *p;
	size_t size;
	int heap;
	int buf;
};

static void held_buf_get(struct __test_metadata *_metadata,
			 FIXTURE_DATA(dev) *self, struct held_buf *hb,
			 size_t size)
{
	char node[80];

	hb->size = size;
	snprintf(node, sizeof(node), "%s-cached", self->node);
	hb->heap = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, hb->heap);
	hb->before = revoked_bytes();
	hb->buf = uioheap_alloc(hb->heap, size, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, hb->buf);
	hb->p = uioheap_map(hb->buf, size);
	ASSERT_NE(NULL, hb->p);
}

/*
 * Unbinds the device under @hb, then lets go of the heap's side of it
 * (mapping, buffer fd, heap fd): the mapping faults, and the buffer is
 * counted in revoked_bytes until its last user, whoever that is, goes.
 */
static void held_buf_unbind_put(struct __test_metadata *_metadata,
				FIXTURE_DATA(dev) *self, struct held_buf *hb)
{
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	EXPECT_EQ(SIGBUS, probe_pages(hb->p, 1, false, 0));
	EXPECT_EQ(hb->before + hb->size, revoked_bytes());
	EXPECT_EQ(0, munmap(hb->p, hb->size));
	EXPECT_EQ(0, close(hb->buf));
	close(hb->heap);
}

/*
 * Pages pinned through the CPU mapping before the device goes (here: a
 * pipe holding vmsplice()d pages) are not freed under the pin: the data
 * stays readable after the revoke and after every fd and mapping is gone.
 */
TEST_F(dev, pinned_pages_outlive_the_device)
{
	unsigned char out[SZ_4K];
	struct held_buf hb;
	struct iovec iov;
	int pipefd[2];
	size_t i;

	held_buf_get(_metadata, self, &hb, SZ_64K);
	for (i = 0; i < SZ_64K; i++)
		hb.p[i] = i * 7 + 1;
	ASSERT_EQ(0, pipe(pipefd));
	iov = (struct iovec){ hb.p + SZ_4K, 4 * SZ_4K };
	ASSERT_EQ((ssize_t)(4 * SZ_4K), vmsplice(pipefd[1], &iov, 1, 0));

	held_buf_unbind_put(_metadata, self, &hb);
	EXPECT_EQ(hb.before, revoked_bytes());

	/* The pipe still holds the pages, contents and all. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ((ssize_t)SZ_4K, read(pipefd[0], out, SZ_4K));
		EXPECT_EQ((unsigned char)((SZ_4K * (i + 1)) * 7 + 1), out[0]);
		EXPECT_EQ((unsigned char)((SZ_4K * (i + 2) - 1) * 7 + 1),
			  out[SZ_4K - 1]);
	}
	close(pipefd[0]);
	close(pipefd[1]);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self);
}

/* The same with the pages held by an io_uring buffer registration. */
TEST_F(dev, io_uring_registration_outlives_the_device)
{
	struct io_uring_params params = { 0 };
	struct held_buf hb;
	struct iovec iov;
	int ring, ret;

	ring = syscall(__NR_io_uring_setup, 4, &params);
	ASSERT_LE(0, ring) TH_LOG("io_uring_setup: %s", strerror(errno));
	held_buf_get(_metadata, self, &hb, SZ_64K);
	memset(hb.p, 0x77, SZ_64K);
	iov = (struct iovec){ hb.p, SZ_64K };
	ret = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
		      &iov, 1);
	if (ret && errno == EOPNOTSUPP) {
		munmap(hb.p, SZ_64K);
		close(hb.buf);
		close(hb.heap);
		close(ring);
		SKIP(return, "this io_uring refuses file-backed memory");
	}
	ASSERT_EQ(0, ret) TH_LOG("IORING_REGISTER_BUFFERS: %s", strerror(errno));

	held_buf_unbind_put(_metadata, self, &hb);
	EXPECT_EQ(hb.before, revoked_bytes());
	/* Unpinning frees the pages now, and only now. */
	EXPECT_EQ(0, syscall(__NR_io_uring_register, ring,
			     IORING_UNREGISTER_BUFFERS, NULL, 0));
	close(ring);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self);
}

/* A null_blk disk made through configfs (the VM loads null_blk): its name. */
#define SLOW_DISK	"uioheap-slow"
#define SLOW_CFG	"/sys/kernel/config/nullb/" SLOW_DISK

static void slow_disk_put(void)
{
	write_str(SLOW_CFG "/power", "0");
	rmdir(SLOW_CFG);
}

/*
 * /dev/SLOW_DISK, whose every request completes @ns nanoseconds after it
 * was submitted (null_blk's timer mode): 0 or -errno.
 */
static int slow_disk_get(const char *ns)
{
	if (!path_exists("/sys/kernel/config/nullb"))
		mount("configfs", "/sys/kernel/config", "configfs", 0, NULL);
	slow_disk_put();
	if (mkdir(SLOW_CFG, 0755) ||
	    write_str(SLOW_CFG "/size", "16") ||
	    write_str(SLOW_CFG "/blocksize", "4096") ||
	    write_str(SLOW_CFG "/irqmode", "2") ||
	    write_str(SLOW_CFG "/completion_nsec", ns) ||
	    write_str(SLOW_CFG "/power", "1"))
		return errno ? -errno : -EIO;
	return 0;
}

/* Reads the slow disk has in flight (the first figure of the two). */
static unsigned long long reads_in_flight(void)
{
	char line[64];

	if (read_str("/sys/block/" SLOW_DISK "/inflight", line, sizeof(line)) <= 0)
		return 0;
	return strtoull(line, NULL, 10);
}

/*
 * The device goes while an O_DIRECT read into the buffer is in flight
 * (the disk holds it for 5 s): the mappings fault at once, the pages
 * pinned for the read stay until it completes in full, and the buffer
 * is gone once the read and the last fd are.
 */
TEST_F(dev, odirect_read_in_flight_when_device_goes)
{
	struct held_buf hb;
	int fd, status, i, ret;
	pid_t pid;

	ret = slow_disk_get("5000000000");
	ASSERT_EQ(0, ret) TH_LOG("null_blk through configfs: %s", strerror(-ret));
	fd = open("/dev/" SLOW_DISK, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("/dev/" SLOW_DISK ": %s", strerror(errno));
	held_buf_get(_metadata, self, &hb, SZ_1M);
	memset(hb.p, 0x5a, SZ_1M);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(pread(fd, hb.p, SZ_1M, 0) == SZ_1M ? 0 : 1);
	for (i = 0; i < 200 && !reads_in_flight(); i++)
		sleep_ms(10);
	ASSERT_LT(0ULL, reads_in_flight()) TH_LOG("no read in flight");

	held_buf_unbind_put(_metadata, self, &hb);
	/* The child's mapping keeps the buffer; its read is not done yet. */
	EXPECT_EQ(hb.before + SZ_1M, revoked_bytes());
	EXPECT_LT(0ULL, reads_in_flight()) TH_LOG("the read ended too soon");

	/* The read completes into the pinned pages; then the child lets go. */
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the O_DIRECT read did not read 1 MiB");
	EXPECT_EQ(hb.before, revoked_bytes());
	close(fd);
	slow_disk_put();

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self);
}

/* An importer's mapping survives its exporter's device going away. */
TEST_F(dev, importer_mapped_when_device_goes)
{
	struct vgem_prime_handle prime = { 0 };
	struct vgem_gem_close gclose = { 0 };
	int drm, heap, buf, vgem = env_bool("UIOHEAP_VGEM");
	unsigned long long before, bytes;
	struct held_buf hb;

	/* The debug kernel has no DRM; the stock ones must have vgem. */
	ASSERT_NE(-1, vgem) TH_LOG("UIOHEAP_VGEM is not set");
	if (!vgem)
		SKIP(return, "kernel without vgem");
	drm = open_vgem();
	ASSERT_LE(0, drm) TH_LOG("UIOHEAP_VGEM=1, but no vgem device");
	heap = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);

	/* Importing and letting go while the device stays: nothing leaks. */
	ASSERT_EQ(0, uioheap_sysfs_read(self->uio, "allocated_bytes", &before));
	buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	prime.fd = buf;
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_PRIME_FD_TO_HANDLE, &prime));
	close(buf);
	ASSERT_EQ(0, uioheap_sysfs_read(self->uio, "allocated_bytes", &bytes));
	EXPECT_EQ(before + SZ_64K, bytes) TH_LOG("the importer holds the buffer");
	gclose.handle = prime.handle;
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_GEM_CLOSE, &gclose));
	ASSERT_EQ(0, uioheap_sysfs_read(self->uio, "allocated_bytes", &bytes));
	EXPECT_EQ(before, bytes);

	close(heap);

	/* Now with the importer holding the buffer across an unbind. */
	held_buf_get(_metadata, self, &hb, SZ_64K);
	hb.p[0] = 1;
	prime.fd = hb.buf;
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_PRIME_FD_TO_HANDLE, &prime));
	held_buf_unbind_put(_metadata, self, &hb);
	EXPECT_EQ(hb.before + SZ_64K, revoked_bytes()) TH_LOG("the importer holds it");

	/* The importer, the last user, lets go: freed now, not leaked. */
	gclose.handle = prime.handle;
	EXPECT_EQ(0, ioctl(drm, VGEM_IOCTL_GEM_CLOSE, &gclose));
	EXPECT_EQ(hb.before, revoked_bytes());
	close(drm);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self);
}

/*
 * A dma-buf imported for the device is unmapped, detached and given back
 * to its exporter when the device goes (the debug kernel's DMA-API checks
 * report any mapping left at the unbind); the handle stays releasable.
 */
TEST_F(dev, import_given_back_when_device_goes)
{
	unsigned long long n, before;
	uint64_t addr;
	int other, heap, buf, handle;

	/* The exporter: the other edu's heap, which stays. */
	other = uioheap_open(self->h.uio[0]);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, uioheap_sysfs_read(self->h.uio[0], "allocated_bytes",
					&before));
	buf = uioheap_alloc(other, PAGE_SZ, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	heap = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	handle = uioheap_import(heap, buf, &addr, NULL);
	ASSERT_LT(0, handle) TH_LOG("import: %s", strerror(-handle));
	ASSERT_EQ(0, uioheap_sysfs_read(self->uio, "imports", &n));
	EXPECT_EQ(1, n);
	/* The import holds the only reference to the dma-buf now. */
	close(buf);

	ASSERT_EQ(0, uioheap_sysfs_read(self->h.uio[0], "allocated_bytes", &n));
	EXPECT_EQ(before + PAGE_SZ, n);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	/* Given back: the exporter freed the buffer with its last reference. */
	ASSERT_EQ(0, uioheap_sysfs_read(self->h.uio[0], "allocated_bytes", &n));
	EXPECT_EQ(before, n);
	buf = uioheap_alloc(other, PAGE_SZ, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	EXPECT_EQ(-ENODEV, uioheap_import(heap, buf, &addr, NULL));
	EXPECT_EQ(0, uioheap_unimport(heap, handle));
	EXPECT_EQ(-ENOENT, uioheap_unimport(heap, handle));
	close(buf);
	close(heap);
	close(other);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self);
}

static void wait_all_heaps(struct __test_metadata *_metadata,
			   FIXTURE_DATA(dev) *self)
{
	char uio[16];
	int i;

	for (i = 0; i < 2; i++)
		EXPECT_LE(0, wait_heap_of(self->h.pci[i], uio, sizeof(uio), 1000))
			TH_LOG("%s: no heap within 1 s", self->h.pci[i]);
}

TEST_F(dev, uio_driver_unload_removes_heaps)
{
	const char *ko = getenv("UIOHEAP_UIO_PCI_GENERIC_KO");

	ASSERT_NE(NULL, ko) TH_LOG("UIOHEAP_UIO_PCI_GENERIC_KO is not set");
	ASSERT_EQ(0, rmmod_nb("uio_pci_generic"));
	EXPECT_FALSE(path_exists(self->node));
	ASSERT_EQ(0, insmod_file(ko));
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/new_id", "1234 11e8"));
	wait_heap_back(_metadata, self);
	wait_all_heaps(_metadata, self);
}

/* Last: it unloads and reloads the module under test. */
TEST_F(dev, rmmod_refused_while_held)
{
	const char *ko = getenv("UIOHEAP_KO");
	const char *why;
	unsigned char *p;
	int heap, buf;

	ASSERT_NE(NULL, ko) TH_LOG("UIOHEAP_KO is not set");

	heap = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	EXPECT_EQ(EWOULDBLOCK, rmmod_nb("uio_heap")) TH_LOG("heap fd open");

	buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	close(heap);
	EXPECT_EQ(EWOULDBLOCK, rmmod_nb("uio_heap")) TH_LOG("buffer fd open");

	p = uioheap_map(buf, SZ_64K);
	ASSERT_NE(NULL, p);
	close(buf);
	p[0] = 7;
	EXPECT_EQ(EWOULDBLOCK, rmmod_nb("uio_heap")) TH_LOG("only a mapping");
	/* Refusals changed nothing. */
	EXPECT_EQ(7, p[0]);
	why = heap_check(self->node, SZ_64K);
	EXPECT_EQ(NULL, why) TH_LOG("%s", why);
	munmap(p, SZ_64K);

	ASSERT_EQ(0, rmmod_nb("uio_heap"));
	EXPECT_FALSE(path_exists(self->node));
	EXPECT_FALSE(path_exists("/sys/class/uio_heap"));

	ASSERT_EQ(0, insmod_file(ko));
	wait_all_heaps(_metadata, self);
	why = heap_check(self->node, SZ_64K);
	EXPECT_EQ(NULL, why) TH_LOG("%s", why);
}

TEST_HARNESS_MAIN
