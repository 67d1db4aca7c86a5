// SPDX-License-Identifier: GPL-2.0
/*
 * Heaps follow their UIO devices through unbind, removal, rebind, rescan and driver
 * unload; buffers of a device that goes are revoked and stay safe to close; the module
 * cannot be unloaded while anything holds it.  Run after uio_heap_test.
 */
#include <sys/uio.h>
#include <linux/io_uring.h>

#include "kselftest_harness.h"
#include "common.h"

/* The wide edu, which the tests unplug; the narrow one stays untouched. */
EDU_UNPLUG_FIXTURE(dev);

TEST_F(dev, heap_follows_bind_and_unbind)
{
	char path[128];
	long long t;

	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s", self->uio);
	ASSERT_TRUE(path_exists(path));

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	EXPECT_FALSE(path_exists(self->node));
	EXPECT_FALSE(path_exists(path));

	t = wide_edu_back(_metadata, &self->h, "bind", 5000);
	EXPECT_GE(1000, t) TH_LOG("heap took %lld ms to appear", t);
}

/* The device DMAs into the mapped buffer all along; @remove: off the bus, else unbound. */
static void revoke_while_mapped(struct __test_metadata *_metadata,
				FIXTURE_DATA(dev) *self, bool remove)
{
	static struct dma_pump pump;
	int heap, buf, go[2], done[2];
	uint64_t addr = 0;
	unsigned char *p;
	const char *why;
	pid_t pid;
	char c;

	heap = open_heap(_metadata, self->uio);
	buf = alloc_map(_metadata, heap, SZ_64K, &p);
	ASSERT_EQ(0, heap_addr(heap, buf, 0, &addr));
	/* The device writes the first page; a child holding its own mapping reads the second. */
	p[SZ_4K] = 0x11;
	p[SZ_4K + 1] = 0x33;
	/* Pipes, not a socketpair: the debug kernel has no sockets. */
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* A parent that stops early closes its end: the child sees EOF. */
		close(go[1]);
		close(done[0]);
		c = p[SZ_4K + 1] == 0x33 ? 'y' : 'n';	/* mapped and readable */
		if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		c = probe_pages(p + SZ_4K + 1, 1, false, 0) == SIGBUS ? 'y' : 'n';
		_exit(write(done[1], &c, 1) == 1 ? 0 : 2);
	}
	close(go[0]);
	close(done[1]);
	ASSERT_EQ(1, read(done[0], &c, 1));
	EXPECT_EQ('y', c);

	why = dma_pump_start(&pump, self->uio, heap, addr);
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	why = dma_pump_landed(&pump, p);
	EXPECT_EQ(NULL, why) TH_LOG("%s", why);

	ASSERT_EQ(0, unplug_pci(self->pci, remove));
	EXPECT_FALSE(path_exists(self->node));
	expect_revoked(_metadata, heap, buf, p, SZ_64K);
	dma_pump_stop(&pump);
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(1, read(done[0], &c, 1));
	EXPECT_EQ('y', c) TH_LOG("the child's mapping was not revoked");
	EXPECT_EQ(0, wait_exit(pid));
	close(go[1]);
	close(done[0]);

	EXPECT_EQ(0, munmap(p, SZ_64K));
	EXPECT_EQ(0, close(buf));
	EXPECT_EQ(0, close(heap));
	wide_edu_back(_metadata, &self->h, remove ? "rescan" : "bind", 5000);
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

	heap = open_heap(_metadata, self->uio);
	for (i = 0; i < 4; i++)
		buf[i] = alloc_map(_metadata, heap, SZ_1M, NULL);
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	close(heap);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, close(buf[i]));
	wide_edu_back(_metadata, &self->h, "bind", 5000);
}

/*
 * Unbinding stops the device's DMA before uio_pci_generic's remove() does: bus mastering off (S9),
 * the IOTLB invalidated; counted in process context (remove() and a lazy IOMMU's softirq do too).
 */
TEST_F(dev, unbind_stops_the_devices_dma)
{
	bool translated = heap_translated(_metadata, self->uio);
	const char *flush;
	int heap, buf, ret;

	ret = iotlb_flush_probe("p:uioheap/clear_master pci_clear_master\n", translated, &flush);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "kernel without kprobe events");
	ASSERT_EQ(0, ret) TH_LOG("kprobes on pci_clear_master, %s", flush ?: "no flush");
	heap = open_heap(_metadata, self->uio);
	buf = alloc_map(_metadata, heap, SZ_64K, NULL);
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	EXPECT_LE(1, trace_count(" clear_master:"))
		TH_LOG("nobody called pci_clear_master() at unbind");
	if (flush)
		EXPECT_LE(1, trace_count(" iotlb_flush:")) TH_LOG("no %s() at unbind", flush);
	sync_probe_stop();
	close(buf);
	close(heap);
	wide_edu_back(_metadata, &self->h, "bind", 5000);
}

/* A mapped buffer on uioN-cached, whose pages get_user_pages() pins on every device. */
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
	char name[32];

	hb->size = size;
	snprintf(name, sizeof(name), "%s-cached", self->uio);
	hb->heap = open_heap(_metadata, name);
	hb->before = revoked_bytes();
	hb->buf = alloc_map(_metadata, hb->heap, size, &hb->p);
}

/* Unbinds under @hb and lets go of the mapping and fds: counted in revoked_bytes still. */
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

/* Pages a pipe holds (vmsplice()) are not freed under it: readable after everything went. */
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
		EXPECT_EQ((unsigned char)((SZ_4K * (i + 2) - 1) * 7 + 1), out[SZ_4K - 1]);
	}
	close(pipefd[0]);
	close(pipefd[1]);

	wide_edu_back(_metadata, &self->h, "bind", 5000);
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
	ret = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1);
	if (ret && errno == EOPNOTSUPP)
		SKIP(return, "this io_uring refuses file-backed memory");
	ASSERT_EQ(0, ret) TH_LOG("IORING_REGISTER_BUFFERS: %s", strerror(errno));

	held_buf_unbind_put(_metadata, self, &hb);
	EXPECT_EQ(hb.before, revoked_bytes());
	/* Unpinning frees the pages now, and only now. */
	EXPECT_EQ(0, syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS, NULL, 0));
	close(ring);

	wide_edu_back(_metadata, &self->h, "bind", 5000);
}

/* A null_blk disk made through configfs (the VM loads null_blk): its name. */
#define SLOW_DISK	"uioheap-slow"
#define SLOW_CFG	"/sys/kernel/config/nullb/" SLOW_DISK

static void slow_disk_put(void)
{
	write_str(SLOW_CFG "/power", "0");
	rmdir(SLOW_CFG);
}

/* /dev/SLOW_DISK, completing each request @ns ns after submission: 0 or -errno. */
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

/* The device goes during a 5 s O_DIRECT read: mappings fault, pinned pages stay till it ends. */
TEST_F(dev, odirect_read_in_flight_when_device_goes)
{
	struct held_buf hb;
	int fd, ret;
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
	WAIT_MS(reads_in_flight(), 2000);
	ASSERT_LT(0ULL, reads_in_flight()) TH_LOG("no read in flight");

	held_buf_unbind_put(_metadata, self, &hb);
	/* The child's mapping keeps the buffer; its read is not done yet. */
	EXPECT_EQ(hb.before + SZ_1M, revoked_bytes());
	EXPECT_LT(0ULL, reads_in_flight()) TH_LOG("the read ended too soon");

	/* The read completes into the pinned pages; then the child lets go. */
	EXPECT_EQ(0, wait_exit(pid)) TH_LOG("the O_DIRECT read did not read 1 MiB");
	EXPECT_EQ(hb.before, revoked_bytes());
	close(fd);
	slow_disk_put();

	wide_edu_back(_metadata, &self->h, "bind", 5000);
}

/* An importer's mapping survives its exporter's device going away. */
TEST_F(dev, importer_mapped_when_device_goes)
{
	struct vgem_prime_handle prime = { 0 };
	struct vgem_gem_close gclose = { 0 };
	int drm = vgem_open(_metadata);
	unsigned long long before;
	struct held_buf hb;

	if (drm < 0)
		SKIP(return, "kernel without vgem");
	/* Importing and letting go while the device stays: nothing leaks. */
	before = heap_ull(self->uio, "allocated_bytes");
	prime.fd = node_alloc(_metadata, self->uio, SZ_64K, NULL);
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_PRIME_FD_TO_HANDLE, &prime));
	close(prime.fd);
	EXPECT_EQ(before + SZ_64K, heap_ull(self->uio, "allocated_bytes"))
		TH_LOG("the importer holds the buffer");
	gclose.handle = prime.handle;
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_GEM_CLOSE, &gclose));
	EXPECT_EQ(before, heap_ull(self->uio, "allocated_bytes"));

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

	wide_edu_back(_metadata, &self->h, "bind", 5000);
}

/* An import is unmapped (DMA-API debug sees) and given back when the device goes. */
TEST_F(dev, import_given_back_when_device_goes)
{
	/* The exporter: the other edu's heap, which stays. */
	const char *other = self->h.uio[0];
	unsigned long long before = heap_ull(other, "allocated_bytes");
	int heap, buf, handle;
	uint64_t addr;

	buf = node_alloc(_metadata, other, PAGE_SZ, NULL);
	heap = open_heap(_metadata, self->uio);
	handle = uioheap_import(heap, buf, &addr, NULL);
	ASSERT_LT(0, handle) TH_LOG("import: %s", strerror(-handle));
	EXPECT_EQ(1, heap_ull(self->uio, "imports"));
	/* The import holds the only reference to the dma-buf now. */
	close(buf);
	EXPECT_EQ(before + PAGE_SZ, heap_ull(other, "allocated_bytes"));

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	/* Given back: the exporter freed the buffer with its last reference. */
	EXPECT_EQ(before, heap_ull(other, "allocated_bytes"));
	buf = node_alloc(_metadata, other, PAGE_SZ, NULL);
	EXPECT_EQ(-ENODEV, uioheap_import(heap, buf, &addr, NULL));
	EXPECT_EQ(0, uioheap_unimport(heap, handle));
	EXPECT_EQ(-ENOENT, uioheap_unimport(heap, handle));
	close(buf);
	close(heap);

	wide_edu_back(_metadata, &self->h, "bind", 5000);
}

static void wait_all_heaps(struct __test_metadata *_metadata, FIXTURE_DATA(dev) *self)
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
	wide_edu_back(_metadata, &self->h, "new_id", 5000);
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

	heap = open_heap(_metadata, self->uio);
	EXPECT_EQ(EWOULDBLOCK, rmmod_nb("uio_heap")) TH_LOG("heap fd open");

	buf = alloc_map(_metadata, heap, SZ_64K, NULL);
	close(heap);
	EXPECT_EQ(EWOULDBLOCK, rmmod_nb("uio_heap")) TH_LOG("buffer fd open");

	p = uioheap_map(buf, SZ_64K);
	ASSERT_NE(NULL, p);
	close(buf);
	p[0] = 7;
	EXPECT_EQ(EWOULDBLOCK, rmmod_nb("uio_heap")) TH_LOG("only a mapping");
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
