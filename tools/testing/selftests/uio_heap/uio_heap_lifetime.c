// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap lifetime selftests: heaps follow their UIO devices through
 * unbind, removal, rebind, rescan and driver unload; buffers of a device
 * that goes are revoked (SIGBUS on access, ENODEV on use) and stay safe
 * to close; the module cannot be unloaded while anything holds it.
 *
 * These tests unbind and remove devices: run them after uio_heap_test.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/uio_heap.h>

#include "kselftest_harness.h"
#include "common.h"


FIXTURE(dev) {
	char pci[32];		/* the edu device the test plays with */
	char uio[16];
	char node[64];
};

FIXTURE_SETUP(dev)
{
	char names[8][16];
	int n, i;

	n = find_edus(names, 8);
	if (n < 1)
		SKIP(return, "needs an edu device bound to uio_pci_generic");
	/* Prefer the wide edu, so that the narrow one stays untouched. */
	for (i = 0; i < n - 1; i++)
		if (!edu_is_narrow(names[i]))
			break;
	strcpy(self->uio, names[i]);
	ASSERT_EQ(0, uio_pci_name(self->uio, self->pci, sizeof(self->pci)));
	node_of(self->node, sizeof(self->node), self->uio);
	ASSERT_TRUE(path_exists(self->node));
}

FIXTURE_TEARDOWN(dev)
{
}

/* After a device comes back: its (maybe new) UIO name and heap node. */
static long long wait_heap_back(struct __test_metadata *_metadata,
				const char *pci, char *uio, size_t size,
				char *node, size_t nsize)
{
	long long start = now_ms(), t;

	while (pci_uio(pci, uio, size)) {
		ASSERT_GT(5000, now_ms() - start) TH_LOG("%s not back", pci);
		usleep(5000);
	}
	node_of(node, nsize, uio);
	t = wait_path(node, true, 5000);
	ASSERT_LE(0, t) TH_LOG("%s did not appear", node);
	return now_ms() - start;
}

static void heap_works(struct __test_metadata *_metadata, const char *node)
{
	int heap, buf;
	uint64_t addr;
	unsigned char *p;

	heap = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, uioheap_dma_addr(heap, buf, &addr, NULL));
	p = uioheap_map(buf, SZ_64K);
	ASSERT_NE(NULL, p);
	p[0] = 1;
	p[SZ_64K - 1] = 2;
	EXPECT_EQ(1, p[0]);
	munmap(p, SZ_64K);
	close(buf);
	close(heap);
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
	t = wait_heap_back(_metadata, self->pci, self->uio, sizeof(self->uio),
			   self->node, sizeof(self->node));
	EXPECT_GE(1000, t) TH_LOG("heap took %lld ms to appear", t);
	heap_works(_metadata, self->node);
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
	EXPECT_EQ(SIGBUS, access_signal(p, false));
	EXPECT_EQ(SIGBUS, access_signal(p + SZ_64K - 1, true));

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
		c = access_signal(p + 1, false) == SIGBUS ? 'y' : 'n';
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

static void revoke_while_mapped(struct __test_metadata *_metadata,
				FIXTURE_DATA(dev) *self, bool remove)
{
	volatile unsigned char *p;
	int heap, buf, go, done, status;
	char c;
	uint64_t addr;
	pid_t pid;

	heap = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, heap);
	buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, uioheap_dma_addr(heap, buf, &addr, NULL));
	p = uioheap_map(buf, SZ_64K);
	ASSERT_NE(NULL, p);
	p[0] = 0x11;
	p[1] = 0x33;
	pid = child_holding(p, &go, &done);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(done, &c, 1));
	EXPECT_EQ('y', c);

	ASSERT_EQ(0, unplug_pci(self->pci, remove));

	check_revoked(_metadata, heap, buf, p, self->node);
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
	wait_heap_back(_metadata, self->pci, self->uio, sizeof(self->uio),
		       self->node, sizeof(self->node));
	heap_works(_metadata, self->node);
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
	wait_heap_back(_metadata, self->pci, self->uio, sizeof(self->uio),
		       self->node, sizeof(self->node));
	heap_works(_metadata, self->node);
}

/*
 * vgem imports a dma-buf the way a real DRM driver does: attach, then map
 * the attachment for its own device, held until the GEM handle is closed.
 * The uAPI structs are spelled out: no libdrm headers needed.
 */
struct vgem_prime_handle {
	__u32 handle;
	__u32 flags;
	__s32 fd;
};

struct vgem_gem_close {
	__u32 handle;
	__u32 pad;
};

#define VGEM_IOCTL_PRIME_FD_TO_HANDLE	_IOWR('d', 0x2e, struct vgem_prime_handle)
#define VGEM_IOCTL_GEM_CLOSE		_IOW('d', 0x09, struct vgem_gem_close)

static int open_vgem(void)
{
	char path[64], drv[256];
	ssize_t n;
	int i;

	for (i = 0; i < 8; i++) {
		/* vgem's device is a bare platform device called "vgem". */
		snprintf(path, sizeof(path), "/sys/class/drm/card%d/device", i);
		n = readlink(path, drv, sizeof(drv) - 1);
		if (n < 0)
			continue;
		drv[n] = '\0';
		if (!strcmp(strrchr(drv, '/') + 1, "vgem")) {
			snprintf(path, sizeof(path), "/dev/dri/card%d", i);
			return open(path, O_RDWR | O_CLOEXEC);
		}
	}
	return -1;
}

static unsigned long long quarantined_bytes(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/sys/module/uio_heap/parameters/quarantined_bytes", "re");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* An importer's mapping survives its exporter's device going away. */
TEST_F(dev, importer_mapped_when_device_goes)
{
	struct vgem_prime_handle prime = { 0 };
	struct vgem_gem_close gclose = { 0 };
	unsigned long long before, bytes;
	volatile unsigned char *p;
	int drm, heap, buf;

	drm = open_vgem();
	if (drm < 0)
		SKIP(return, "no vgem device to import with");
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

	/* Now with the importer's mapping held across an unbind. */
	before = quarantined_bytes();
	buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	p = uioheap_map(buf, SZ_64K);
	ASSERT_NE(NULL, p);
	p[0] = 1;
	prime.fd = buf;
	ASSERT_EQ(0, ioctl(drm, VGEM_IOCTL_PRIME_FD_TO_HANDLE, &prime));

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/unbind", self->pci));
	EXPECT_EQ(SIGBUS, access_signal(p, false));
	EXPECT_EQ(before + SZ_64K, quarantined_bytes());

	/* The importer lets go after the device went, then we do. */
	gclose.handle = prime.handle;
	EXPECT_EQ(0, ioctl(drm, VGEM_IOCTL_GEM_CLOSE, &gclose));
	EXPECT_EQ(0, munmap((void *)p, SZ_64K));
	EXPECT_EQ(0, close(buf));
	close(heap);
	close(drm);

	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/bind", self->pci));
	wait_heap_back(_metadata, self->pci, self->uio, sizeof(self->uio),
		       self->node, sizeof(self->node));
	heap_works(_metadata, self->node);
}

static void wait_all_heaps(struct __test_metadata *_metadata)
{
	char names[8][16], node[64];
	int n = find_edus(names, 8), i;

	ASSERT_LT(0, n);
	for (i = 0; i < n; i++) {
		node_of(node, sizeof(node), names[i]);
		EXPECT_LE(0, wait_path(node, true, 1000))
			TH_LOG("%s not there within 1 s", node);
	}
}

TEST_F(dev, uio_driver_unload_removes_heaps)
{
	const char *ko = getenv("UIOHEAP_UIO_PCI_GENERIC_KO");

	if (!ko)
		SKIP(return, "UIOHEAP_UIO_PCI_GENERIC_KO not set");
	ASSERT_EQ(0, rmmod_nb("uio_pci_generic"));
	EXPECT_FALSE(path_exists(self->node));
	ASSERT_EQ(0, insmod_file(ko));
	ASSERT_EQ(0, write_str(UIO_PCI_GENERIC "/new_id", "1234 11e8"));
	wait_heap_back(_metadata, self->pci, self->uio, sizeof(self->uio),
		       self->node, sizeof(self->node));
	wait_all_heaps(_metadata);
	heap_works(_metadata, self->node);
}

/* Last: it unloads and reloads the module under test. */
TEST_F(dev, rmmod_refused_while_held)
{
	const char *ko = getenv("UIOHEAP_KO");
	unsigned char *p;
	int heap, buf;

	if (!ko)
		SKIP(return, "UIOHEAP_KO not set");

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
	heap_works(_metadata, self->node);
	munmap(p, SZ_64K);

	ASSERT_EQ(0, rmmod_nb("uio_heap"));
	EXPECT_FALSE(path_exists(self->node));
	EXPECT_FALSE(path_exists("/sys/class/uio_heap"));

	ASSERT_EQ(0, insmod_file(ko));
	wait_all_heaps(_metadata);
	heap_works(_metadata, self->node);
}

TEST_HARNESS_MAIN
