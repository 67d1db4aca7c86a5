// SPDX-License-Identifier: GPL-2.0
/*
 * A real platform DMA master: the ZynqMP's ZDMA channels (QEMU's xlnx-zcu102), bound to
 * uio_pdrv_genirq, not coherent, no SMMU, driven by tools/zdma on buffers of both nodes.
 */
#include <inttypes.h>
#include <poll.h>

#include "kselftest_harness.h"
#include "common.h"
#include "lib/pci.h"
#include "zdma/zdma.h"

#define PDRV		"/sys/bus/platform/drivers/uio_pdrv_genirq"
#define GDMA_PREFIX	"dma-controller@fd5"	/* the FPD channels, fd500000..fd570000 */
#define MAX_CHANS	16
#define TIMEOUT_MS	5000
#define GUARD_BYTE	0xa5

FIXTURE(zdma) {
	char chans[MAX_CHANS][16];	/* the GDMA channels' UIO devices */
	int n;
	char dev[64];			/* the first one's platform device */
	char node[24];			/* its uioN or uioN-cached */
	unsigned long long mask_bits;	/* as found */
	struct zdma_chan ch;		/* the first channel, open */
};

FIXTURE_VARIANT(zdma) {
	bool cached;
};

FIXTURE_VARIANT_ADD(zdma, coherent) { .cached = false };
FIXTURE_VARIANT_ADD(zdma, cached) { .cached = true };

/* The GDMA channels among the ZDMA ones, in UIO order. */
static int gdma_find(char chans[][16])
{
	char all[MAX_CHANS][16], path[64], name[64];
	int i, n = 0, found = zdma_find(all, MAX_CHANS);

	for (i = 0; i < found; i++) {
		snprintf(path, sizeof(path), "/sys/class/uio/%s/name", all[i]);
		if (read_str(path, name, sizeof(name)) > 0 &&
		    !strncmp(name, GDMA_PREFIX, strlen(GDMA_PREFIX)))
			strcpy(chans[n++], all[i]);
	}
	return n;
}

FIXTURE_SETUP(zdma)
{
	int ret;

	ASSERT_EQ(0, ensure_uio_heap_loaded());
	self->n = gdma_find(self->chans);
	ASSERT_LE(2, self->n) TH_LOG("%d ZDMA channels %s* bound to uio_pdrv_genirq",
				     self->n, GDMA_PREFIX);
	ASSERT_EQ(0, uio_pci_name(self->chans[0], self->dev, sizeof(self->dev)));
	ret = zdma_open(&self->ch, self->chans[0]);
	ASSERT_EQ(0, ret) TH_LOG("%s", self->ch.err);
	snprintf(self->node, sizeof(self->node), "%s%s", self->chans[0],
		 variant->cached ? "-cached" : "");
	ASSERT_EQ(0, uioheap_sysfs_read(self->node, "dma_mask_bits", &self->mask_bits));
}

/* The channel bound again and its mask as found, whatever the test did. */
FIXTURE_TEARDOWN(zdma)
{
	char path[128], uio[16];

	zdma_close(&self->ch);
	snprintf(path, sizeof(path), "/sys/bus/platform/devices/%s/driver", self->dev);
	if (!path_exists(path)) {
		write_str(PDRV "/bind", self->dev);
		wait_heap_of(self->dev, uio, sizeof(uio), 4000);
	}
	if (heap_ull(self->node, "dma_mask_bits") != self->mask_bits)
		uioheap_sysfs_write(self->node, "dma_mask_bits", self->mask_bits);
}

/* A source and a destination of @len bytes each from @ch's node of the variant. */
static void bufs_new(struct __test_metadata *_metadata, struct zdma_chan *ch, bool cached,
		     struct zdma_buf *src, struct zdma_buf *dst, size_t len)
{
	ASSERT_EQ(0, zdma_buf_alloc(ch, src, len, cached)) TH_LOG("%s", ch->err);
	ASSERT_EQ(0, zdma_buf_alloc(ch, dst, len, cached)) TH_LOG("%s", ch->err);
}

static void bufs_free(struct zdma_buf *src, struct zdma_buf *dst)
{
	zdma_buf_free(src);
	zdma_buf_free(dst);
}

/* The source filled from @seed and the destination with guard bytes, both handed to the channel. */
static void bufs_fill(struct __test_metadata *_metadata, const struct zdma_buf *src,
		      const struct zdma_buf *dst, uint64_t seed)
{
	ASSERT_EQ(0, zdma_buf_for_cpu(src, DMA_BUF_SYNC_WRITE));
	ASSERT_EQ(0, zdma_buf_for_cpu(dst, DMA_BUF_SYNC_WRITE));
	prng_fill(src->cpu, src->len, seed);
	memset(dst->cpu, GUARD_BYTE, dst->len);
	ASSERT_EQ(0, zdma_buf_for_device(src, DMA_BUF_SYNC_WRITE));
	ASSERT_EQ(0, zdma_buf_for_device(dst, DMA_BUF_SYNC_WRITE));
}

/* The @size bytes at @doff of @dst are those at @soff of @src; every other byte is a guard. */
static void bufs_check(struct __test_metadata *_metadata, const struct zdma_buf *src,
		       const struct zdma_buf *dst, size_t soff, size_t doff, size_t size)
{
	ASSERT_EQ(0, zdma_buf_for_cpu(dst, DMA_BUF_SYNC_READ));
	EXPECT_EQ(0, memcmp(dst->cpu + doff, src->cpu + soff, size))
		TH_LOG("%zu bytes from +%zu to +%zu", size, soff, doff);
	EXPECT_TRUE(is_filled(dst->cpu, doff, GUARD_BYTE))
		TH_LOG("a byte before +%zu changed (%zu bytes)", doff, size);
	EXPECT_TRUE(is_filled(dst->cpu + doff + size, dst->len - doff - size, GUARD_BYTE))
		TH_LOG("a byte after +%zu changed", doff + size);
	ASSERT_EQ(0, zdma_buf_for_device(dst, DMA_BUF_SYNC_READ));
}

/* One copy from @soff of @src to @doff of @dst by @ch, checked. */
static void copy_checked(struct __test_metadata *_metadata, struct zdma_chan *ch,
			 const struct zdma_buf *src, const struct zdma_buf *dst,
			 size_t soff, size_t doff, size_t size, enum zdma_wait how)
{
	bufs_fill(_metadata, src, dst, size ^ soff << 20 ^ doff << 40);
	ASSERT_EQ(0, zdma_copy(ch, src->addr + soff, dst->addr + doff, size, how, TIMEOUT_MS))
		TH_LOG("%zu bytes: %s", size, ch->err);
	bufs_check(_metadata, src, dst, soff, doff, size);
}

/* An interrupt event is waiting on /dev/uioN. */
static bool event_pending(const struct zdma_chan *ch)
{
	struct pollfd pfd = { .fd = ch->uio_fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/* Sizes from a byte to 1 MiB at odd offsets in both buffers, by interrupt. */
TEST_F(zdma, sizes_and_offsets)
{
	const size_t sizes[] = { 1, 2, 3, 7, 8, 15, 16, 17, 63, 64, 65, 511, 4095, 4096, 4097,
				 12345, SZ_64K - 1, SZ_64K, SZ_64K + 3, 300001, SZ_1M - 1, SZ_1M };
	const size_t offs[] = { 0, 1, 3, 7, 64, 513, 4095, 4097 };
	struct zdma_buf src, dst;
	uint32_t irqs;
	int i;

	bufs_new(_metadata, &self->ch, variant->cached, &src, &dst, SZ_1M + 3 * PAGE_SZ);
	for (i = 0; i < (int)ARRAY_SIZE(sizes); i++) {
		irqs = self->ch.irqs;
		copy_checked(_metadata, &self->ch, &src, &dst, offs[i % ARRAY_SIZE(offs)],
			     offs[(i * 3 + 1) % ARRAY_SIZE(offs)] + 1, sizes[i], ZDMA_IRQ);
		EXPECT_LT(irqs, self->ch.irqs) TH_LOG("no new interrupt event");
	}
	bufs_free(&src, &dst);
}

/*
 * Polled transfers raise no interrupt: the device's event count (since it was bound) grows by
 * one for the interrupt-driven transfer after them, and by nothing else.
 */
TEST_F(zdma, polled_completion)
{
	const size_t sizes[] = { 1, 4097, SZ_64K + 5, SZ_1M / 2 + 1 };
	struct zdma_buf src, dst;
	uint32_t irqs;
	int i;

	bufs_new(_metadata, &self->ch, variant->cached, &src, &dst, SZ_1M);
	copy_checked(_metadata, &self->ch, &src, &dst, 0, 1, 100, ZDMA_IRQ);
	irqs = self->ch.irqs;
	for (i = 0; i < (int)ARRAY_SIZE(sizes); i++) {
		copy_checked(_metadata, &self->ch, &src, &dst, i, 2 * i + 1, sizes[i], ZDMA_POLL);
		EXPECT_FALSE(event_pending(&self->ch)) TH_LOG("an interrupt for a polled transfer");
	}
	copy_checked(_metadata, &self->ch, &src, &dst, 5, 9, 1000, ZDMA_IRQ);
	EXPECT_EQ(irqs + 1, self->ch.irqs);
	copy_checked(_metadata, &self->ch, &src, &dst, 9, 5, 1000, ZDMA_POLL);
	EXPECT_FALSE(event_pending(&self->ch));
	bufs_free(&src, &dst);
}

/*
 * Every buffer lies below the channel's mask (platform default: 32 bits), and a narrower mask
 * written to dma_mask_bits holds for the next allocation, which then counts as low zone.
 */
TEST_F(zdma, addresses_fit_the_channels_mask)
{
	const size_t lens[] = { PAGE_SZ, SZ_64K, SZ_1M, SZ_2M };
	unsigned long long low;
	struct zdma_buf src, dst;
	uint64_t mask;
	int i;

	EXPECT_EQ(32, self->mask_bits);
	mask = self->mask_bits >= 64 ? ~0ULL : (1ULL << self->mask_bits) - 1;
	for (i = 0; i < (int)ARRAY_SIZE(lens); i++) {
		bufs_new(_metadata, &self->ch, variant->cached, &src, &dst, lens[i]);
		EXPECT_GE(mask, src.addr + lens[i] - 1) TH_LOG("%#" PRIx64, src.addr);
		EXPECT_GE(mask, dst.addr + lens[i] - 1) TH_LOG("%#" PRIx64, dst.addr);
		bufs_free(&src, &dst);
	}

	ASSERT_EQ(0, uioheap_sysfs_write(self->node, "dma_mask_bits", 31));
	EXPECT_EQ(31, heap_ull(self->chans[0], "dma_mask_bits"));
	EXPECT_EQ(31, heap_ull(self->node, "dma_mask_bits"));
	low = read_ull(UIO_HEAP_PARAMS "low_zone_bytes", ~0ULL);
	bufs_new(_metadata, &self->ch, variant->cached, &src, &dst, SZ_1M);
	EXPECT_GE(0x7fffffffULL, src.addr + SZ_1M - 1);
	EXPECT_GE(0x7fffffffULL, dst.addr + SZ_1M - 1);
	EXPECT_EQ(low + 2 * SZ_1M, read_ull(UIO_HEAP_PARAMS "low_zone_bytes", 0))
		TH_LOG("a mask below 32 bits draws on the low-zone budget");
	copy_checked(_metadata, &self->ch, &src, &dst, 11, 13, SZ_1M - 24, ZDMA_IRQ);
	bufs_free(&src, &dst);
	EXPECT_EQ(low, read_ull(UIO_HEAP_PARAMS "low_zone_bytes", 0));
}

/* Sizes the channel cannot take are refused and leave the transfer programmed before alone. */
TEST_F(zdma, size_limit_refused)
{
	const size_t bad[] = { 0, ZDMA_MAX_SIZE + 1ULL, 1ULL << 32, (1ULL << 32) + 100 };
	struct zdma_buf src, dst;
	int i;

	bufs_new(_metadata, &self->ch, variant->cached, &src, &dst, SZ_64K);
	bufs_fill(_metadata, &src, &dst, 0x517e);
	ASSERT_EQ(0, zdma_program(&self->ch, src.addr + 1, dst.addr + 2, 100));
	for (i = 0; i < (int)ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, zdma_program(&self->ch, src.addr, dst.addr, bad[i]))
			TH_LOG("%zu bytes", bad[i]);
	}
	EXPECT_EQ(-EINVAL, zdma_program(&self->ch, 1ULL << ZDMA_ADDR_BITS, dst.addr, 100));
	EXPECT_EQ(-EINVAL, zdma_program(&self->ch, src.addr, 1ULL << ZDMA_ADDR_BITS, 100));
	/* What runs is the 100 bytes programmed first. */
	ASSERT_EQ(0, zdma_start(&self->ch, ZDMA_IRQ)) TH_LOG("%s", self->ch.err);
	ASSERT_EQ(0, zdma_wait(&self->ch, ZDMA_IRQ, TIMEOUT_MS)) TH_LOG("%s", self->ch.err);
	bufs_check(_metadata, &src, &dst, 1, 2, 100);
	/* Nothing programmed now: nothing to start. */
	EXPECT_EQ(-EINVAL, zdma_start(&self->ch, ZDMA_POLL));
	bufs_free(&src, &dst);
}

/* Another channel, its own heap and interrupt. */
TEST_F(zdma, second_channel_moves_too)
{
	struct zdma_buf src, dst;
	struct zdma_chan b;
	uint32_t irqs;

	ASSERT_EQ(0, zdma_open(&b, self->chans[1])) TH_LOG("%s", b.err);
	EXPECT_STRNE(self->ch.name, b.name);
	bufs_new(_metadata, &b, variant->cached, &src, &dst, SZ_64K * 2);
	irqs = b.irqs;
	copy_checked(_metadata, &b, &src, &dst, 3, 5, SZ_64K + 77, ZDMA_IRQ);
	EXPECT_LT(irqs, b.irqs);
	EXPECT_FALSE(event_pending(&self->ch)) TH_LOG("%s's interrupt came to %s", b.uio,
						      self->ch.uio);
	bufs_free(&src, &dst);
	zdma_close(&b);
}

static unsigned long long orphaned_bytes(void)
{
	return read_ull(UIO_HEAP_PARAMS "orphaned_bytes", ~0ULL);
}

/*
 * Unbind with a transfer programmed into buffers that stay mapped: nothing stops a platform
 * master, so the buffers are revoked and their pages kept from the allocator until
 * release_orphans; bound again, the channel works.
 */
TEST_F(zdma, unbind_with_a_transfer_programmed)
{
	unsigned long long revoked = revoked_bytes(), orphaned = orphaned_bytes();
	struct zdma_buf src, dst, fresh[8];
	const size_t len = SZ_64K;
	uint64_t held[2];
	char path[64];
	int heap, k;

	bufs_new(_metadata, &self->ch, variant->cached, &src, &dst, len);
	bufs_fill(_metadata, &src, &dst, 0xdead);
	held[0] = src.addr;
	held[1] = dst.addr;
	ASSERT_EQ(0, zdma_program(&self->ch, src.addr, dst.addr, len));
	heap = variant->cached ? self->ch.cached_fd : self->ch.heap_fd;

	ASSERT_EQ(0, write_str(PDRV "/unbind", self->dev));
	node_of(path, sizeof(path), self->node);
	EXPECT_FALSE(path_exists(path)) TH_LOG("%s after unbind", path);
	expect_revoked(_metadata, heap, src.fd, src.cpu, len);
	expect_revoked(_metadata, heap, dst.fd, dst.cpu, len);
	EXPECT_EQ(revoked + 2 * len, revoked_bytes());
	bufs_free(&src, &dst);
	EXPECT_EQ(revoked, revoked_bytes());
	EXPECT_EQ(orphaned + 2 * len, orphaned_bytes()) TH_LOG("the pages went back");
	zdma_close(&self->ch);

	ASSERT_EQ(0, write_str(PDRV "/bind", self->dev));
	ASSERT_LE(0, wait_heap_of(self->dev, self->chans[0], sizeof(self->chans[0]), 4000));
	snprintf(self->node, sizeof(self->node), "%s%s", self->chans[0],
		 variant->cached ? "-cached" : "");
	ASSERT_EQ(0, zdma_open(&self->ch, self->chans[0])) TH_LOG("%s", self->ch.err);
	for (k = 0; k < (int)ARRAY_SIZE(fresh); k++) {
		ASSERT_EQ(0, zdma_buf_alloc(&self->ch, &fresh[k], len, variant->cached))
			TH_LOG("%s", self->ch.err);
		EXPECT_TRUE(fresh[k].addr + len <= held[0] || fresh[k].addr >= held[0] + len);
		EXPECT_TRUE(fresh[k].addr + len <= held[1] || fresh[k].addr >= held[1] + len)
			TH_LOG("a fresh buffer at %#llx overlaps an orphan",
			       (unsigned long long)fresh[k].addr);
	}
	copy_checked(_metadata, &self->ch, &fresh[0], &fresh[1], 7, 9, len - 16, ZDMA_IRQ);
	for (k = 0; k < (int)ARRAY_SIZE(fresh); k++)
		zdma_buf_free(&fresh[k]);

	EXPECT_EQ(0, write_str(UIO_HEAP_PARAMS "release_orphans", "1"));
	EXPECT_EQ(0, orphaned_bytes());
}

TEST_HARNESS_MAIN
