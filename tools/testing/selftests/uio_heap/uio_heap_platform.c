// SPDX-License-Identifier: GPL-2.0
/*
 * uio_heap on a device-tree platform device, the FPGA board's case: a
 * node bound to uio_pdrv_genirq, not cache-coherent, without an IOMMU,
 * behind a bus whose dma-ranges reach only part of memory.  The VM
 * (tests/arm64/dtb.sh) names it in UIOHEAP_PLATFORM, its DMA window in
 * UIOHEAP_PLATFORM_DMA_LO and _HI, and a second node, which snoops, in
 * UIOHEAP_PLATFORM_SNOOPS; the payload has bound them.
 */
#include "kselftest_harness.h"
#include "common.h"

#define PDRV	"/sys/bus/platform/drivers/uio_pdrv_genirq"

FIXTURE(plat) {
	const char *dev, *snoops;
	char uio[16];
	char cached[24];
	char snoops_uio[16];
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
	self->snoops = getenv("UIOHEAP_PLATFORM_SNOOPS");
	ASSERT_NE(NULL, self->snoops) TH_LOG("UIOHEAP_PLATFORM_SNOOPS is not set");
	ASSERT_EQ(0, platform_uio(self->snoops, self->snoops_uio,
				  sizeof(self->snoops_uio), 2000));
}

/* Both bound again, whatever the test did. */
FIXTURE_TEARDOWN(plat)
{
	const char *dev[] = { self->dev, self->snoops };
	char path[128];
	int i;

	for (i = 0; i < 2 && dev[i]; i++) {
		snprintf(path, sizeof(path), "/sys/bus/platform/devices/%s/driver", dev[i]);
		if (!path_exists(path))
			write_str(PDRV "/bind", dev[i]);
	}
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
 * SYNC maintains the caches for an importer that mapped the buffer too,
 * on both nodes, in the importer's direction (S2).  The importer is the
 * wide edu, non-coherent on this board: its heap's import maps the buffer
 * for it (and syncs it for the device) before the SYNC calls.
 */
TEST_F(plat, sync_maintains_importers)
{
	const char *node[] = { self->uio, self->cached };
	char pci[32], edu[16];
	struct sync_seen seen;
	int i, start, heap, buf, importer, handle;
	uint64_t addr;

	ASSERT_EQ(0, edu_pci(false, pci, sizeof(pci)));
	ASSERT_EQ(0, uio_of_pci(pci, edu, sizeof(edu)));
	importer = uioheap_open(edu);
	ASSERT_LE(0, importer) TH_LOG("%s: %s", edu, strerror(-importer));
	ASSERT_EQ(0, sync_probe_start()) TH_LOG("no kprobes on arch_sync_dma_*");
	for (i = 0; i < 2; i++) {
		heap = uioheap_open(node[i]);
		ASSERT_LE(0, heap);
		buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf);
		handle = uioheap_import(importer, buf, &addr, NULL);
		ASSERT_LE(0, handle) TH_LOG("%s into %s: %s", node[i], edu,
					    strerror(-handle));
		ASSERT_EQ(0, sync_probe_read(&seen));
		for (start = 1; start >= 0; start--) {
			ASSERT_EQ(0, uioheap_sync_rw(buf, start, DMA_BUF_SYNC_READ));
			ASSERT_EQ(0, sync_probe_read(&seen));
			/* uioN: the importer's; -cached: the heap's and its. */
			EXPECT_EQ((i + 1) * SZ_64K, seen.bytes[!start])
				TH_LOG("%s: sync %s", node[i], start ? "start" : "end");
			EXPECT_EQ(0, seen.bytes[start]);
			/* DMA_FROM_DEVICE for the heap, BIDIRECTIONAL for the import. */
			EXPECT_EQ(i ? 0x5u : 0x1u, seen.dirs[!start]);
		}
		EXPECT_EQ(0, uioheap_unimport(importer, handle));
		close(buf);
		close(heap);
	}
	sync_probe_stop();
	close(importer);
}

/*
 * An importer that snoops (the board's second, dma-coherent node) could be
 * served stale lines of the cacheable linear map where uioN maps uncached:
 * that node refuses it, uioN-cached takes it.
 */
TEST_F(plat, snooping_importers_only_on_the_cached_node)
{
	const char *node[] = { self->uio, self->cached };
	int i, importer, heap, buf, handle;
	uint64_t addr;

	attr_is(_metadata, self->snoops_uio, "coherent", "1");
	importer = uioheap_open(self->snoops_uio);
	ASSERT_LE(0, importer);
	for (i = 0; i < 2; i++) {
		heap = uioheap_open(node[i]);
		ASSERT_LE(0, heap);
		buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf);
		handle = uioheap_import(importer, buf, &addr, NULL);
		if (i) {
			EXPECT_LE(0, handle) TH_LOG("%s: %s", node[i], strerror(-handle));
			EXPECT_EQ(0, handle < 0 ? 0 : uioheap_unimport(importer, handle));
		} else {
			EXPECT_EQ(-EOPNOTSUPP, handle) TH_LOG("%s", strerror(-handle));
		}
		close(buf);
		close(heap);
	}
	close(importer);
}

/*
 * The memory type of each node's user mapping, as the fault path maps it
 * (BTF-typed kprobes on the two calls that insert the PTEs): uioN of this
 * device that does not snoop maps Normal non-cacheable, the way the DMA
 * API maps coherent memory for it (S3); uioN-cached maps Normal, cached.
 * The arm64 PTE's AttrIndx (bits 4:2) picks the MAIR entry: MT_NORMAL 0,
 * MT_NORMAL_NC 2 (arch/arm64/include/asm/memory.h).
 */
#define FAULT_ARGS	" prot=vma->vm_page_prot.pgprot:x64 addr=addr:x64\n"
#define FAULT_PROBES	"p:uioheap/pfn vmf_insert_pfn" FAULT_ARGS \
			"p:uioheap/pages vm_insert_pages" FAULT_ARGS

TEST_F(plat, user_mappings_have_the_nodes_memory_type)
{
	const char *node[] = { self->uio, self->cached };
	const int want[] = { 2, 0 };
	unsigned long long prot, addr;
	char line[512];
	const char *at;
	int i, mt, heap, buf;
	unsigned char *p;
	FILE *f;

	ASSERT_EQ(0, kprobes_start(FAULT_PROBES)) TH_LOG("%s", FAULT_PROBES);
	for (i = 0; i < 2; i++) {
		heap = uioheap_open(node[i]);
		ASSERT_LE(0, heap);
		buf = uioheap_alloc(heap, SZ_64K, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf);
		p = uioheap_map(buf, SZ_64K);
		ASSERT_NE(NULL, p);
		p[0] = 1;
		mt = -1;
		f = fopen(TRACEFS "trace", "re");
		ASSERT_NE(NULL, f);
		while (fgets(line, sizeof(line), f)) {
			at = strstr(line, " prot=");
			if (at && sscanf(at, " prot=%llx addr=%llx", &prot, &addr) == 2 &&
			    addr == (uintptr_t)p)
				mt = (prot >> 2) & 7;
		}
		fclose(f);
		EXPECT_EQ(want[i], mt) TH_LOG("%s: AttrIndx %d", node[i], mt);
		munmap(p, SZ_64K);
		close(buf);
		close(heap);
		ASSERT_EQ(0, tracefs_write("trace", ""));
	}
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

/*
 * A dma-buf a device nothing can stop imported stays with the orphans from
 * the unbind on: its exporter (here the first node's -cached heap) gets
 * it back only at release_orphans.  The importer is the second node: the
 * first one's 1 GiB window makes it refuse imports (ERANGE).
 */
TEST_F(plat, unbind_keeps_imports_from_their_exporter)
{
	unsigned long long orphaned = read_ull(UIO_HEAP_PARAMS "orphaned_bytes", 0);
	unsigned long long bytes, bufs;
	int heap, cached, buf, handle;
	uint64_t addr;

	heap = uioheap_open(self->snoops_uio);
	ASSERT_LE(0, heap);
	cached = uioheap_open(self->cached);
	ASSERT_LE(0, cached);
	buf = uioheap_alloc(cached, SZ_64K, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	handle = uioheap_import(heap, buf, &addr, NULL);
	ASSERT_LE(0, handle) TH_LOG("%s", strerror(-handle));
	close(buf);
	close(cached);
	ASSERT_EQ(0, write_str(PDRV "/unbind", self->snoops));
	EXPECT_EQ(orphaned + SZ_64K, read_ull(UIO_HEAP_PARAMS "orphaned_bytes", 0))
		TH_LOG("the import is not with the orphans");
	close(heap);
	ASSERT_EQ(0, heap_usage(self->cached, &bytes, &bufs));
	EXPECT_EQ(1, bufs) TH_LOG("the exporter got its buffer back");
	EXPECT_EQ(0, write_str(UIO_HEAP_PARAMS "release_orphans", "1"));
	EXPECT_EQ(0, read_ull(UIO_HEAP_PARAMS "orphaned_bytes", ~0ULL));
	ASSERT_EQ(0, heap_usage(self->cached, &bytes, &bufs));
	EXPECT_EQ(0, bufs);
}

TEST_HARNESS_MAIN
