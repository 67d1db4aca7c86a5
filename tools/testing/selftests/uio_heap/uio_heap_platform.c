// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap on a device-tree platform device, the FPGA board's case: a
 * node bound to uio_pdrv_genirq, not cache-coherent, without an IOMMU,
 * behind a bus whose dma-ranges reach only part of memory.  The VM
 * (tests/arm64/dtb.sh) names it in UIOHEAP_PLATFORM and its DMA window in
 * UIOHEAP_PLATFORM_DMA_LO and _HI; the payload has bound it.
 */
#include "kselftest_harness.h"
#include "common.h"

#define PDRV	"/sys/bus/platform/drivers/uio_pdrv_genirq"

FIXTURE(plat) {
	const char *dev;
	char uio[16];
	char cached[24];
	uint64_t lo, hi;
};

/* The UIO device of platform device @dev, waiting up to @ms for it. */
static int platform_uio(const char *dev, char *uio, size_t size, int ms)
{
	char path[128], node[64];
	struct dirent *d;
	long long end = now_ms() + ms;
	DIR *dir;

	snprintf(path, sizeof(path), "/sys/bus/platform/devices/%s/uio", dev);
	do {
		dir = opendir(path);
		while (dir && (d = readdir(dir))) {
			if (strncmp(d->d_name, "uio", 3))
				continue;
			snprintf(uio, size, "%s", d->d_name);
			closedir(dir);
			node_of(node, sizeof(node), uio);
			if (wait_path(node, true, ms) < 0)
				return -ETIMEDOUT;
			return 0;
		}
		if (dir)
			closedir(dir);
		sleep_ms(50);
	} while (now_ms() < end);
	return -ENOENT;
}

static uint64_t env_u64(const char *name)
{
	const char *v = getenv(name);

	return v ? strtoull(v, NULL, 0) : 0;
}

FIXTURE_SETUP(plat)
{
	int ret;

	self->dev = getenv("UIOHEAP_PLATFORM");
	ASSERT_NE(NULL, self->dev) TH_LOG("UIOHEAP_PLATFORM is not set");
	self->lo = env_u64("UIOHEAP_PLATFORM_DMA_LO");
	self->hi = env_u64("UIOHEAP_PLATFORM_DMA_HI");
	ASSERT_LT(self->lo, self->hi) TH_LOG("no UIOHEAP_PLATFORM_DMA_LO/_HI");
	ASSERT_EQ(0, ensure_uio_heap_loaded());
	ret = platform_uio(self->dev, self->uio, sizeof(self->uio), 2000);
	ASSERT_EQ(0, ret) TH_LOG("%s: no UIO device with a heap: %s", self->dev,
				 strerror(-ret));
	snprintf(self->cached, sizeof(self->cached), "%s-cached", self->uio);
}

/* Bound again, whatever the test did. */
FIXTURE_TEARDOWN(plat)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/bus/platform/devices/%s/driver", self->dev);
	if (!path_exists(path))
		write_str(PDRV "/bind", self->dev);
}

static void attr_is(struct __test_metadata *_metadata, const char *uio,
		    const char *attr, const char *want)
{
	char path[128], got[32];

	snprintf(path, sizeof(path), "/sys/class/uio_heap/%s/%s", uio, attr);
	ASSERT_LE(0, read_str(path, got, sizeof(got))) TH_LOG("%s", path);
	EXPECT_STREQ(want, got) TH_LOG("%s", path);
}

/* Both nodes; nothing translates, nothing snoops, nothing can stop the device. */
TEST_F(plat, heaps_follow_the_platform_rules)
{
	const char *node[] = { self->uio, self->cached };
	int i;

	for (i = 0; i < 2; i++) {
		attr_is(_metadata, node[i], "iommu", "none");
		attr_is(_metadata, node[i], "coherent", "0");
		attr_is(_metadata, node[i], "revoke", "none");
	}
}

/*
 * Buffers of both nodes lie inside the bus's DMA window, at their
 * physical address (no IOMMU, no offset in dma-ranges), are charged to
 * the low-zone budget, and move data through their CPU mappings.
 */
TEST_F(plat, allocations_stay_in_the_dma_window)
{
	const char *node[] = { self->uio, self->cached };
	const size_t lens[] = { SZ_64K, SZ_64K, SZ_64K, SZ_1M, SZ_4K, SZ_2M };
	int i, k, heap, buf, pm;
	unsigned char *p;
	uint64_t addr;
	size_t len;

	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pm);
	for (i = 0; i < 2; i++) {
		heap = uioheap_open(node[i]);
		ASSERT_LE(0, heap) TH_LOG("%s: %s", node[i], strerror(-heap));
		for (k = 0; k < (int)ARRAY_SIZE(lens); k++) {
			len = lens[k];
			buf = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
			ASSERT_LE(0, buf) TH_LOG("%s: %zu bytes: %s", node[i],
						 len, strerror(-buf));
			ASSERT_EQ(0, uioheap_dma_addr(heap, buf, &addr, NULL));
			EXPECT_LE(self->lo, addr);
			EXPECT_GE(self->hi, addr + len - 1)
				TH_LOG("%s: %zu bytes at %#llx", node[i], len,
				       (unsigned long long)addr);
			p = uioheap_map(buf, len);
			ASSERT_NE(NULL, p);
			prng_fill(p, len, len + i);
			EXPECT_TRUE(prng_holds(p, len, len + i));
			/* Ordinary pages where the mapping is cacheable. */
			if (i)
				EXPECT_EQ(addr, pagemap_phys(pm, p));
			/* A window below 4 GiB narrows the mask below 32 bits. */
			if (self->hi < 0xffffffffULL)
				EXPECT_EQ(len, read_ull(UIO_HEAP_PARAMS "low_zone_bytes", 0));
			munmap(p, len);
			close(buf);
		}
		close(heap);
	}
	close(pm);
}

/* SYNC maintains the caches on uioN-cached, inside the window only. */
TEST_F(plat, sync_maintains_caches)
{
	ASSERT_EQ(0, sync_probe_start()) TH_LOG("no kprobes on arch_sync_dma_*");
	sync_checks(_metadata, self->uio, false, 0, 0);
	sync_checks(_metadata, self->cached, true, self->lo, self->hi);
	sync_probe_stop();
}

/*
 * Unbind under live buffers of both nodes: the heaps go, the mappings
 * fault, and since nothing stopped the device, which may still be writing,
 * the pages stay out of the allocator after the last fd lets go: counted
 * in orphaned_bytes, never handed out again, until release_orphans.
 * Bound again, the device gets a working heap.
 */
TEST_F(plat, unbind_keeps_memory_from_the_allocator)
{
	const char *node[] = { self->uio, self->cached };
	unsigned long long revoked = read_ull(UIO_HEAP_PARAMS "revoked_bytes", 0);
	unsigned long long orphaned = read_ull(UIO_HEAP_PARAMS "orphaned_bytes", 0);
	uint64_t addr[2], again;
	unsigned char *p[2];
	char path[64];
	int i, k, heap[2], buf[2], fresh[16];
	const char *why;

	for (i = 0; i < 2; i++) {
		heap[i] = uioheap_open(node[i]);
		ASSERT_LE(0, heap[i]);
		buf[i] = uioheap_alloc(heap[i], SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf[i]);
		ASSERT_EQ(0, uioheap_dma_addr(heap[i], buf[i], &addr[i], NULL));
		p[i] = uioheap_map(buf[i], SZ_64K);
		ASSERT_NE(NULL, p[i]);
		memset(p[i], 0x5a, SZ_64K);
	}
	ASSERT_EQ(0, write_str(PDRV "/unbind", self->dev));
	for (i = 0; i < 2; i++) {
		node_of(path, sizeof(path), node[i]);
		EXPECT_FALSE(path_exists(path)) TH_LOG("%s after unbind", path);
		EXPECT_EQ(SIGBUS, probe_pages(p[i], SZ_64K, false, 0));
	}
	EXPECT_EQ(revoked + 2 * SZ_64K, read_ull(UIO_HEAP_PARAMS "revoked_bytes", 0));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, munmap(p[i], SZ_64K));
		EXPECT_EQ(0, close(buf[i]));
		close(heap[i]);
		EXPECT_EQ(revoked + (1 - i) * SZ_64K,
			  read_ull(UIO_HEAP_PARAMS "revoked_bytes", 0));
		EXPECT_EQ(orphaned + (i + 1) * SZ_64K,
			  read_ull(UIO_HEAP_PARAMS "orphaned_bytes", 0));
	}

	/* Freed at once, the blocks would come straight back (LIFO). */
	ASSERT_EQ(0, write_str(PDRV "/bind", self->dev));
	ASSERT_EQ(0, platform_uio(self->dev, self->uio, sizeof(self->uio), 2000));
	heap[0] = uioheap_open(self->uio);
	ASSERT_LE(0, heap[0]);
	for (k = 0; k < (int)ARRAY_SIZE(fresh); k++) {
		fresh[k] = uioheap_alloc(heap[0], SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fresh[k]);
		ASSERT_EQ(0, uioheap_dma_addr(heap[0], fresh[k], &again, NULL));
		for (i = 0; i < 2; i++)
			EXPECT_TRUE(again + SZ_64K <= addr[i] || again >= addr[i] + SZ_64K)
				TH_LOG("a fresh buffer at %#llx overlaps an orphan",
				       (unsigned long long)again);
	}
	for (k = 0; k < (int)ARRAY_SIZE(fresh); k++)
		close(fresh[k]);
	close(heap[0]);

	EXPECT_EQ(0, write_str(UIO_HEAP_PARAMS "release_orphans", "1"));
	EXPECT_EQ(0, read_ull(UIO_HEAP_PARAMS "orphaned_bytes", ~0ULL));
	node_of(path, sizeof(path), self->uio);
	why = heap_check(path, SZ_64K);
	EXPECT_EQ(NULL, why) TH_LOG("%s", why);
}

TEST_HARNESS_MAIN
