// SPDX-License-Identifier: GPL-2.0
/*
 * The FPGA board's case: a device-tree node bound to uio_pdrv_genirq, not coherent, no IOMMU,
 * dma-ranges reaching part of memory.  tests/arm64/dtb.sh names it in UIOHEAP_PLATFORM, its window
 * in UIOHEAP_PLATFORM_DMA_LO/_HI, a snooping node in UIOHEAP_PLATFORM_SNOOPS.
 */
#include "kselftest_harness.h"
#include "common.h"

#define PDRV	"/sys/bus/platform/drivers/uio_pdrv_genirq"

FIXTURE(plat) {
	const char *dev, *snoops;
	char node[2][24];		/* uioN and uioN-cached */
	char snoops_uio[16];
	uint64_t lo, hi;
};

FIXTURE_SETUP(plat)
{
	self->dev = getenv("UIOHEAP_PLATFORM");
	ASSERT_NE(NULL, self->dev) TH_LOG("UIOHEAP_PLATFORM is not set");
	self->lo = strtoull(getenv("UIOHEAP_PLATFORM_DMA_LO") ?: "", NULL, 0);
	self->hi = strtoull(getenv("UIOHEAP_PLATFORM_DMA_HI") ?: "", NULL, 0);
	ASSERT_LT(self->lo, self->hi) TH_LOG("no UIOHEAP_PLATFORM_DMA_LO/_HI");
	ASSERT_EQ(0, ensure_uio_heap_loaded());
	ASSERT_LE(0, wait_heap_of(self->dev, self->node[0], sizeof(self->node[0]), 4000))
		TH_LOG("%s: no UIO device with a heap", self->dev);
	snprintf(self->node[1], sizeof(self->node[1]), "%s-cached", self->node[0]);
	self->snoops = getenv("UIOHEAP_PLATFORM_SNOOPS");
	ASSERT_NE(NULL, self->snoops) TH_LOG("UIOHEAP_PLATFORM_SNOOPS is not set");
	ASSERT_LE(0, wait_heap_of(self->snoops, self->snoops_uio, sizeof(self->snoops_uio), 4000));
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
	char got[32];

	ASSERT_LE(0, heap_attr(uio, attr, got, sizeof(got))) TH_LOG("%s %s", uio, attr);
	EXPECT_STREQ(want, got) TH_LOG("%s %s", uio, attr);
}

/* Both nodes; nothing translates, nothing snoops, nothing can stop the device. */
TEST_F(plat, heaps_follow_the_platform_rules)
{
	int i;

	for (i = 0; i < 2; i++) {
		attr_is(_metadata, self->node[i], "iommu", "none");
		attr_is(_metadata, self->node[i], "coherent", "0");
		attr_is(_metadata, self->node[i], "revoke", "none");
	}
}

/*
 * Buffers of both nodes lie in the DMA window at their physical address, are charged to
 * the low-zone budget and move data through their CPU mappings.
 */
TEST_F(plat, allocations_stay_in_the_dma_window)
{
	const size_t lens[] = { SZ_64K, SZ_64K, SZ_64K, SZ_1M, SZ_4K, SZ_2M };
	int i, k, heap, buf, pm;
	unsigned char *p;
	uint64_t addr;
	size_t len;

	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pm);
	for (i = 0; i < 2; i++) {
		heap = open_heap(_metadata, self->node[i]);
		for (k = 0; k < (int)ARRAY_SIZE(lens); k++) {
			len = lens[k];
			buf = alloc_map(_metadata, heap, len, &p);
			ASSERT_EQ(0, uioheap_dma_addr(heap, buf, &addr, NULL));
			EXPECT_LE(self->lo, addr);
			EXPECT_GE(self->hi, addr + len - 1)
				TH_LOG("%s: %zu bytes at %#llx", self->node[i], len,
				       (unsigned long long)addr);
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
	ASSERT_EQ(0, kprobes_start(SYNC_PROBES)) TH_LOG("no kprobes on arch_sync_dma_*");
	sync_checks(_metadata, self->node[0], false, 0, 0);
	sync_checks(_metadata, self->node[1], true, self->lo, self->hi);
	sync_probe_stop();
}

/*
 * SYNC maintains the caches for an importer too (S2), in its direction: the wide edu,
 * not coherent here, whose import maps (and syncs) the buffer before the SYNC calls.
 */
TEST_F(plat, sync_maintains_importers)
{
	char pci[32], edu[16];
	struct sync_seen seen;
	int i, start, buf, importer, handle;
	uint64_t addr;

	ASSERT_EQ(0, edu_pci(false, pci, sizeof(pci)));
	ASSERT_EQ(0, uio_of_pci(pci, edu, sizeof(edu)));
	importer = open_heap(_metadata, edu);
	ASSERT_EQ(0, kprobes_start(SYNC_PROBES)) TH_LOG("no kprobes on arch_sync_dma_*");
	for (i = 0; i < 2; i++) {
		buf = node_alloc(_metadata, self->node[i], SZ_64K, NULL);
		handle = uioheap_import(importer, buf, &addr, NULL);
		ASSERT_LE(0, handle)
			TH_LOG("%s into %s: %s", self->node[i], edu, strerror(-handle));
		ASSERT_EQ(0, sync_probe_read(&seen));
		for (start = 1; start >= 0; start--) {
			ASSERT_EQ(0, uioheap_sync_rw(buf, start, DMA_BUF_SYNC_READ));
			ASSERT_EQ(0, sync_probe_read(&seen));
			/* uioN: the importer's; -cached: the heap's and its. */
			EXPECT_EQ((i + 1) * SZ_64K, seen.bytes[!start])
				TH_LOG("%s: sync %s", self->node[i], start ? "start" : "end");
			EXPECT_EQ(0, seen.bytes[start]);
			/* DMA_FROM_DEVICE for the heap, BIDIRECTIONAL for the import. */
			EXPECT_EQ(i ? 0x5u : 0x1u, seen.dirs[!start]);
		}
		EXPECT_EQ(0, uioheap_unimport(importer, handle));
		close(buf);
	}
	sync_probe_stop();
	close(importer);
}

/*
 * A snooping importer could be served stale lines of the linear map where uioN maps
 * uncached: uioN refuses it, uioN-cached takes it.
 */
TEST_F(plat, snooping_importers_only_on_the_cached_node)
{
	int i, importer, buf, handle;
	uint64_t addr;

	attr_is(_metadata, self->snoops_uio, "coherent", "1");
	importer = open_heap(_metadata, self->snoops_uio);
	for (i = 0; i < 2; i++) {
		buf = node_alloc(_metadata, self->node[i], SZ_64K, NULL);
		handle = uioheap_import(importer, buf, &addr, NULL);
		if (i) {
			EXPECT_LE(0, handle) TH_LOG("%s: %s", self->node[i], strerror(-handle));
			EXPECT_EQ(0, handle < 0 ? 0 : uioheap_unimport(importer, handle));
		} else {
			EXPECT_EQ(-EOPNOTSUPP, handle) TH_LOG("%s", strerror(-handle));
		}
		close(buf);
	}
	close(importer);
}

/*
 * Each node's user mapping, seen by BTF kprobes where the fault path inserts the PTEs:
 * uioN Normal non-cacheable as the DMA API maps for this device (S3), uioN-cached
 * Normal.  AttrIndx (bits 4:2) picks MAIR's MT_NORMAL 0 or MT_NORMAL_NC 2.
 */
#define FAULT_ARGS	" prot=vma->vm_page_prot.pgprot:x64 addr=addr:x64\n"
#define FAULT_PROBES	"p:uioheap/pfn vmf_insert_pfn" FAULT_ARGS \
			"p:uioheap/pages vm_insert_pages" FAULT_ARGS

TEST_F(plat, user_mappings_have_the_nodes_memory_type)
{
	const int want[] = { 2, 0 };
	unsigned long long prot, addr;
	char line[512];
	const char *at;
	int i, mt, buf;
	unsigned char *p;
	FILE *f;

	ASSERT_EQ(0, kprobes_start(FAULT_PROBES)) TH_LOG("%s", FAULT_PROBES);
	for (i = 0; i < 2; i++) {
		buf = node_alloc(_metadata, self->node[i], SZ_64K, &p);
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
		EXPECT_EQ(want[i], mt) TH_LOG("%s: AttrIndx %d", self->node[i], mt);
		munmap(p, SZ_64K);
		close(buf);
		ASSERT_EQ(0, tracefs_write("trace", ""));
	}
	sync_probe_stop();
}

/* Memory an unstoppable device may still write: never handed out again. */
static unsigned long long orphaned_bytes(unsigned long long fallback)
{
	return read_ull(UIO_HEAP_PARAMS "orphaned_bytes", fallback);
}

/*
 * Unbind under live buffers: the heaps go and the mappings fault; as nothing stopped
 * the device, the pages stay in orphaned_bytes, never handed out, until release_orphans.
 */
TEST_F(plat, unbind_keeps_memory_from_the_allocator)
{
	unsigned long long revoked = revoked_bytes(), orphaned = orphaned_bytes(0);
	uint64_t addr[2], again;
	unsigned char *p[2];
	char path[64];
	int i, k, heap[2], buf[2], fresh[16];
	const char *why;

	for (i = 0; i < 2; i++) {
		heap[i] = open_heap(_metadata, self->node[i]);
		buf[i] = alloc_map(_metadata, heap[i], SZ_64K, &p[i]);
		ASSERT_EQ(0, uioheap_dma_addr(heap[i], buf[i], &addr[i], NULL));
		memset(p[i], 0x5a, SZ_64K);
	}
	ASSERT_EQ(0, write_str(PDRV "/unbind", self->dev));
	for (i = 0; i < 2; i++) {
		node_of(path, sizeof(path), self->node[i]);
		EXPECT_FALSE(path_exists(path)) TH_LOG("%s after unbind", path);
		expect_revoked(_metadata, heap[i], buf[i], p[i], SZ_64K);
	}
	EXPECT_EQ(revoked + 2 * SZ_64K, revoked_bytes());
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, munmap(p[i], SZ_64K));
		EXPECT_EQ(0, close(buf[i]));
		close(heap[i]);
		EXPECT_EQ(revoked + (1 - i) * SZ_64K, revoked_bytes());
		EXPECT_EQ(orphaned + (i + 1) * SZ_64K, orphaned_bytes(0));
	}

	/* Freed at once, the blocks would come straight back (LIFO). */
	ASSERT_EQ(0, write_str(PDRV "/bind", self->dev));
	ASSERT_LE(0, wait_heap_of(self->dev, self->node[0], sizeof(self->node[0]), 4000));
	heap[0] = open_heap(_metadata, self->node[0]);
	for (k = 0; k < (int)ARRAY_SIZE(fresh); k++) {
		fresh[k] = alloc_map(_metadata, heap[0], SZ_64K, NULL);
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
	EXPECT_EQ(0, orphaned_bytes(~0ULL));
	node_of(path, sizeof(path), self->node[0]);
	why = heap_check(path, SZ_64K);
	EXPECT_EQ(NULL, why) TH_LOG("%s", why);
}

/*
 * What an unstoppable device imported stays with the orphans from the unbind on; the
 * exporter gets it back at release_orphans.  (The first node's window refuses imports.)
 */
TEST_F(plat, unbind_keeps_imports_from_their_exporter)
{
	unsigned long long orphaned = orphaned_bytes(0);
	int heap, buf, handle;
	uint64_t addr;

	heap = open_heap(_metadata, self->snoops_uio);
	buf = node_alloc(_metadata, self->node[1], SZ_64K, NULL);
	handle = uioheap_import(heap, buf, &addr, NULL);
	ASSERT_LE(0, handle) TH_LOG("%s", strerror(-handle));
	close(buf);
	ASSERT_EQ(0, write_str(PDRV "/unbind", self->snoops));
	EXPECT_EQ(orphaned + SZ_64K, orphaned_bytes(0))
		TH_LOG("the import is not with the orphans");
	close(heap);
	EXPECT_EQ(1, heap_ull(self->node[1], "buffers")) TH_LOG("the exporter got its buffer back");
	EXPECT_EQ(0, write_str(UIO_HEAP_PARAMS "release_orphans", "1"));
	EXPECT_EQ(0, orphaned_bytes(~0ULL));
	EXPECT_EQ(0, heap_ull(self->node[1], "buffers"));
}

TEST_HARNESS_MAIN
