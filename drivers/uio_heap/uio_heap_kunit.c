// SPDX-License-Identifier: GPL-2.0
/* KUnit suite for uio_heap's internals, on KUnit devices: DMA parent, UIO device, importer. */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/iosys-map.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/platform_data/uio_dmem_genirq.h>
#include <linux/platform_device.h>
#include <linux/random.h>
#include <linux/swiotlb.h>
#include <linux/uio_driver.h>
#include <uapi/linux/dma-heap.h>

#include "compat.h"
#include "uio_heap.h"

static bool fail_inject;
module_param(fail_inject, bool, 0444);
MODULE_PARM_DESC(fail_inject, "failslab/fail_page_alloc armed (task-filter): run fault injection");

struct uio_heap_kunit {
	struct device *dma_dev, *uio_dev;
	struct uio_heap *heap;
	u64 dma_mask;
	long revoked, orphaned;	/* the counters before the heap went */
};

static void uio_heap_kunit_remove(struct uio_heap_kunit *ctx)
{
	if (ctx->heap) {
		uio_heap_remove_for(ctx->dma_dev);
		put_device(&ctx->heap->dev);
		ctx->heap = NULL;
	}
}

/* A kunit device is a master nothing stops: its revoked buffers stay orphans. */
static void uio_heap_kunit_cleanup(void *data)
{
	uio_heap_kunit_remove(data);
	uio_heap_release_orphans();
}

/* A DMA device with a 32-bit mask, a UIO device, and (if @create) their heap. */
static struct uio_heap_kunit *uio_heap_kunit_pair(struct kunit *test, bool create)
{
	static atomic_t seq = ATOMIC_INIT(0);
	struct uio_heap_kunit *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	int n = atomic_inc_return(&seq);
	char name[32];

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	snprintf(name, sizeof(name), "uio_heap_kunit_dma%d", n);
	ctx->dma_dev = kunit_device_register(test, name);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx->dma_dev));
	ctx->dma_mask = DMA_BIT_MASK(32);
	ctx->dma_dev->dma_mask = &ctx->dma_mask;
	ctx->dma_dev->coherent_dma_mask = DMA_BIT_MASK(32);
	snprintf(name, sizeof(name), "kuio%d", n);
	ctx->uio_dev = kunit_device_register(test, name);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx->uio_dev));
	if (!create)
		return ctx;
	KUNIT_ASSERT_EQ(test, 0, uio_heap_create(ctx->dma_dev, ctx->uio_dev));
	ctx->heap = uio_heap_lookup(ctx->uio_dev, false);
	KUNIT_ASSERT_NOT_NULL(test, ctx->heap);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, uio_heap_kunit_cleanup, ctx));
	return ctx;
}

static int uio_heap_kunit_init(struct kunit *test)
{
	test->priv = uio_heap_kunit_pair(test, true);
	return 0;
}

static struct dma_buf *uio_heap_kunit_alloc(struct kunit *test, struct uio_heap *heap, size_t len)
{
	struct dma_buf *dmabuf = uio_heap_buffer_alloc(heap, len, O_RDWR);

	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	return dmabuf;
}

/* dma_buf_put() from a kthread defers the release: wait for it. */
static void uio_heap_kunit_put(struct dma_buf *dmabuf)
{
	dma_buf_put(dmabuf);
	flush_delayed_fput();
}

static u64 uio_heap_kunit_allocated(struct uio_heap *heap)
{
	guard(spinlock)(&heap->lock);
	return heap->allocated_bytes;
}

/* The heap goes while @dmabuf (@len bytes) is held: revoked, counted until let go. */
static void uio_heap_kunit_revoke(struct kunit *test, struct dma_buf *dmabuf, size_t len)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap_kunit *ctx = test->priv;
	u64 addr;

	ctx->revoked = atomic_long_read(&uio_heap_revoked_bytes);
	ctx->orphaned = atomic_long_read(&uio_heap_orphaned_bytes);
	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_NULL(test, uio_heap_lookup(ctx->uio_dev, false));
	KUNIT_EXPECT_NULL(test, uio_heap_lookup(ctx->uio_dev, true));
	KUNIT_EXPECT_TRUE(test, buf->revoked);
	KUNIT_EXPECT_EQ(test, -ENODEV, uio_heap_buffer_dma_addr(buf, &addr));
	KUNIT_EXPECT_EQ(test, ctx->revoked + len, atomic_long_read(&uio_heap_revoked_bytes));
}

/* Then the last user let go: nothing stopped the device, the pages wait for the admin. */
static void uio_heap_kunit_released(struct kunit *test, struct uio_heap_kunit *ctx, size_t len)
{
	KUNIT_EXPECT_EQ(test, ctx->revoked, atomic_long_read(&uio_heap_revoked_bytes));
	KUNIT_EXPECT_EQ(test, ctx->orphaned + len, atomic_long_read(&uio_heap_orphaned_bytes));
	uio_heap_release_orphans();
	KUNIT_EXPECT_EQ(test, ctx->orphaned, atomic_long_read(&uio_heap_orphaned_bytes));
}

static void uio_heap_test_check_alloc(struct kunit *test)
{
	/* Lengths and what they round to; 0: refused (zero, or rounding wraps). */
	static const u64 lens[][2] = {
		{ 1, PAGE_SIZE }, { PAGE_SIZE, PAGE_SIZE }, { PAGE_SIZE + 1, 2 * PAGE_SIZE },
		{ 0, 0 }, { U64_MAX, 0 }, { U64_MAX - PAGE_SIZE + 2, 0 },
		{ U64_MAX - PAGE_SIZE + 1, U64_MAX - PAGE_SIZE + 1 },
	};
	static const struct dma_heap_allocation_data bad[] = {
		{ .len = PAGE_SIZE, .fd = 3, .fd_flags = O_RDWR | O_CLOEXEC },
		{ .len = PAGE_SIZE, .fd_flags = O_RDWR | O_NONBLOCK },
		{ .len = PAGE_SIZE, .fd_flags = O_RDWR, .heap_flags = 1 },
	};
	struct dma_heap_allocation_data d = { .fd_flags = O_RDWR | O_CLOEXEC };
	size_t len;
	int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		d.len = lens[i][0];
		KUNIT_EXPECT_EQ_MSG(test, lens[i][1] ? 0 : -EINVAL, uio_heap_check_alloc(&d, &len),
				    "len %llu", d.len);
		if (lens[i][1])
			KUNIT_EXPECT_EQ(test, (size_t)lens[i][1], len);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_EQ_MSG(test, -EINVAL, uio_heap_check_alloc(&bad[i], &len), "#%d", i);
}

/* What the sysfs store does around uio_heap_set_mask_bits(). */
static int heap_set_mask_locked(struct uio_heap *heap, unsigned int bits)
{
	guard(device)(heap->dma_dev);
	return uio_heap_set_mask_bits(heap, bits);
}

static void uio_heap_test_mask(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_buffer *buf;
	int i;

	KUNIT_EXPECT_EQ(test, -EINVAL, heap_set_mask_locked(ctx->heap, PAGE_SHIFT - 1));
	KUNIT_EXPECT_EQ(test, -EINVAL, heap_set_mask_locked(ctx->heap, 65));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), ctx->dma_dev->coherent_dma_mask);
	KUNIT_ASSERT_EQ(test, 0, heap_set_mask_locked(ctx->heap, 30));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(30), ctx->dma_dev->coherent_dma_mask);
	for (i = 0; i < 8; i++) {
		buf = uio_heap_kunit_alloc(test, ctx->heap, SZ_64K)->priv;
		KUNIT_EXPECT_LE(test, buf->dma_addr + SZ_64K - 1, DMA_BIT_MASK(30));
		KUNIT_EXPECT_EQ(test, 0, buf->dma_addr & (PAGE_SIZE - 1));
		uio_heap_kunit_put(buf->dmabuf);
	}
	/* The device's own mask comes back when the heap goes. */
	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), ctx->dma_dev->coherent_dma_mask);
}

/* A bus's limit (dma-ranges, _DMA) binds like a mask, low zones included. */
static void uio_heap_test_bus_limit(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_buffer *buf;
	int limit;

	for (limit = 0; limit < 2; limit++) {
		ctx->dma_dev->bus_dma_limit = limit ? DMA_BIT_MASK(30) : 0;
		buf = uio_heap_kunit_alloc(test, ctx->heap, SZ_64K)->priv;
		if (limit)
			KUNIT_EXPECT_LE(test, buf->dma_addr + SZ_64K - 1, DMA_BIT_MASK(30));
		KUNIT_EXPECT_EQ(test, limit ? (size_t)SZ_64K : 0, buf->low_zone);
		uio_heap_kunit_put(buf->dmabuf);
	}
	ctx->dma_dev->bus_dma_limit = 0;
}

/* The parent's mask has one owner, and never strands a live buffer. */
static void uio_heap_test_mask_owner(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf = uio_heap_kunit_alloc(test, ctx->heap, SZ_64K);
	int below = fls64(((struct uio_heap_buffer *)dmabuf->priv)->dma_addr + SZ_64K - 1) - 1;
	struct device *uio_b = kunit_device_register(test, "kuio_second");
	struct uio_heap *heap_b;

	if (below >= PAGE_SHIFT)
		KUNIT_EXPECT_EQ(test, -EBUSY, heap_set_mask_locked(ctx->heap, below));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), ctx->dma_dev->coherent_dma_mask);
	uio_heap_kunit_put(dmabuf);
	KUNIT_EXPECT_EQ(test, 0, heap_set_mask_locked(ctx->heap, 31));
	/* A second UIO device on the parent: neither heap may change it. */
	KUNIT_ASSERT_FALSE(test, IS_ERR(uio_b));
	scoped_guard(device, ctx->dma_dev)
		KUNIT_EXPECT_EQ(test, 0, uio_heap_create(ctx->dma_dev, uio_b));
	heap_b = uio_heap_lookup(uio_b, false);
	KUNIT_ASSERT_NOT_NULL(test, heap_b);
	KUNIT_EXPECT_EQ(test, -EBUSY, heap_set_mask_locked(ctx->heap, 30));
	KUNIT_EXPECT_EQ(test, -EBUSY, heap_set_mask_locked(heap_b, 30));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(31), ctx->dma_dev->coherent_dma_mask);
	put_device(&heap_b->dev);
	/* Both go with the parent; the one that changed the mask restores it. */
	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), ctx->dma_dev->coherent_dma_mask);
}

#ifdef CONFIG_SWIOTLB
/* swiotlb=force or a restricted-dma-pool would bounce every transfer: no heap. */
static void uio_heap_test_bounced_device(struct kunit *test)
{
	struct io_tlb_mem *mem = kunit_kzalloc(test, sizeof(*mem), GFP_KERNEL);
	struct uio_heap_kunit *p = uio_heap_kunit_pair(test, false);
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, mem);
	mem->force_bounce = true;
	p->dma_dev->dma_io_tlb_mem = mem;
	scoped_guard(device, p->dma_dev)
		ret = uio_heap_create(p->dma_dev, p->uio_dev);
	if (!ret)
		uio_heap_remove_for(p->dma_dev);
	p->dma_dev->dma_io_tlb_mem = NULL;
	KUNIT_EXPECT_EQ(test, -EOPNOTSUPP, ret);
}
#endif

/* uio_pci_generic_sva's devices get heaps: requests without a PASID use the DMA domain. */
static void uio_heap_test_sva_device(struct kunit *test)
{
	struct uio_heap_kunit *p = uio_heap_kunit_pair(test, false);
	struct device_driver *sva = kunit_driver_create(test, "uio_pci_sva");
	struct uio_heap *heap;

	KUNIT_ASSERT_FALSE(test, IS_ERR(sva));
	/* The KUnit bus binds a device to its first driver: move it. */
	device_release_driver(p->dma_dev);
	KUNIT_ASSERT_EQ(test, 0, device_driver_attach(sva, p->dma_dev));
	scoped_guard(device, p->dma_dev)
		KUNIT_EXPECT_EQ(test, 0, uio_heap_create(p->dma_dev, p->uio_dev));
	heap = uio_heap_lookup(p->uio_dev, true);
	KUNIT_EXPECT_NOT_NULL(test, heap);
	if (heap)
		put_device(&heap->dev);
	uio_heap_remove_for(p->dma_dev);
}

static void uio_heap_test_lifecycle(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf[3];
	u64 addr[3];
	int i;

	for (i = 0; i < 3; i++) {
		dmabuf[i] = uio_heap_kunit_alloc(test, ctx->heap, (i + 1) * PAGE_SIZE);
		KUNIT_EXPECT_EQ(test, 0, uio_heap_buffer_dma_addr(dmabuf[i]->priv, &addr[i]));
		KUNIT_EXPECT_STREQ(test, dev_name(ctx->uio_dev), dmabuf[i]->exp_name);
		KUNIT_EXPECT_TRUE(test, uio_heap_is_buffer(dmabuf[i]));
	}
	KUNIT_EXPECT_EQ(test, 6 * PAGE_SIZE, uio_heap_kunit_allocated(ctx->heap));
	KUNIT_EXPECT_EQ(test, 3, ctx->heap->nr_buffers);
	KUNIT_EXPECT_NE(test, addr[0], addr[1]);
	for (i = 0; i < 3; i++)
		uio_heap_kunit_put(dmabuf[i]);
	KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(ctx->heap));
	KUNIT_EXPECT_EQ(test, 0, ctx->heap->nr_buffers);
}

/* A kthread's work: remove @dev's heaps, look up its @heap, or churn @heap. */
struct uio_heap_kunit_thread {
	struct device *dev;
	struct uio_heap *heap;
	bool remove;
	int errors;
	struct completion done;
};

static int uio_heap_kunit_worker_fn(void *data)
{
	struct uio_heap_kunit_thread *w = data;
	struct dma_buf *held[4] = { };
	int i, slot;

	for (i = 0; i < 100; i++) {
		slot = i % ARRAY_SIZE(held);
		if (held[slot])
			dma_buf_put(held[slot]);
		held[slot] = uio_heap_buffer_alloc(w->heap,
						   (get_random_u32_below(16) + 1) * PAGE_SIZE,
						   O_RDWR);
		if (IS_ERR(held[slot])) {
			w->errors++;
			held[slot] = NULL;
		}
	}
	for (slot = 0; slot < ARRAY_SIZE(held); slot++)
		if (held[slot])
			dma_buf_put(held[slot]);
	/* Not back into this module's text: it may be unloaded by then. */
	kthread_complete_and_exit(&w->done, 0);
}

static int uio_heap_kunit_call_fn(void *data)
{
	struct uio_heap_kunit_thread *call = data;

	if (call->remove)
		uio_heap_remove_for(call->dev);
	else
		call->heap = uio_heap_lookup(call->dev, false);
	kthread_complete_and_exit(&call->done, 0);
}

/* Removal waits for allocations in progress (heap->sem); other heaps' lookups do not. */
static void uio_heap_test_remove_waits_alone(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_kunit_thread rm = { .dev = ctx->dma_dev, .remove = true };
	struct uio_heap_kunit_thread look = { .dev = uio_heap_kunit_pair(test, true)->uio_dev };
	bool blocked = false, looked = false;
	struct task_struct *t;
	int i;

	init_completion(&rm.done);
	init_completion(&look.done);
	/* An allocation in progress on the first device's heap... */
	down_read(&ctx->heap->sem);
	t = kthread_run(uio_heap_kunit_call_fn, &rm, "uio_heap_kunit/rm");
	if (IS_ERR(t))
		up_read(&ctx->heap->sem);
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	/* ...holds up its removal, past the list lock, at the heap's sem. */
	for (i = 0; i < 500 && !blocked; i++) {
		msleep(20);
		blocked = rwsem_is_contended(&ctx->heap->sem);
	}
	t = blocked ? kthread_run(uio_heap_kunit_call_fn, &look, "uio_heap_kunit/lookup") : NULL;
	if (!IS_ERR_OR_NULL(t))
		looked = wait_for_completion_timeout(&look.done, 10 * HZ);
	up_read(&ctx->heap->sem);
	wait_for_completion(&rm.done);
	/* A completion is consumed by the wait that saw it. */
	if (!IS_ERR_OR_NULL(t) && !looked)
		wait_for_completion(&look.done);
	KUNIT_EXPECT_TRUE_MSG(test, blocked, "removal never waited for the allocation");
	KUNIT_EXPECT_FALSE(test, IS_ERR(t));
	KUNIT_EXPECT_TRUE_MSG(test, looked, "lookup waited for another device's removal");
	KUNIT_EXPECT_NOT_NULL(test, look.heap);
	KUNIT_EXPECT_TRUE(test, ctx->heap->dead);
	if (look.heap)
		put_device(&look.heap->dev);
}

static void uio_heap_test_revoke(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf = uio_heap_kunit_alloc(test, ctx->heap, SZ_64K);
	struct iosys_map map;

	uio_heap_kunit_revoke(test, dmabuf, SZ_64K);
	/* dma_buf_vmap() would fail too, but the core WARNs on that: ask the exporter. */
	KUNIT_EXPECT_EQ(test, -ENODEV, dmabuf->ops->vmap(dmabuf, &map));
	KUNIT_EXPECT_EQ(test, -ENODEV, dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL));
	KUNIT_EXPECT_TRUE(test, IS_ERR(dma_buf_attach(dmabuf, ctx->dma_dev)));
	uio_heap_kunit_put(dmabuf);
	uio_heap_kunit_released(test, ctx, SZ_64K);
}

static void uio_heap_test_revoke_dead_heap_alloc(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap *heap = ctx->heap;

	/* Keep the struct, lose the heap: allocations must fail. */
	get_device(&heap->dev);
	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_EQ(test, -ENODEV,
			PTR_ERR_OR_ZERO(uio_heap_buffer_alloc(heap, PAGE_SIZE, O_RDWR)));
	KUNIT_EXPECT_EQ(test, -ENODEV, heap_set_mask_locked(heap, 32));
	put_device(&heap->dev);
}

static void uio_heap_test_importer_after_revoke(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf_attachment *attach;
	struct device *importer = kunit_device_register(test, "uio_heap_kunit_importer");
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	int i;

	KUNIT_ASSERT_FALSE(test, IS_ERR(importer));
	importer->coherent_dma_mask = DMA_BIT_MASK(64);
	importer->dma_mask = &importer->coherent_dma_mask;
	/* Unmapped while the device stays, then still mapped when it goes. */
	for (i = 0; i < 2; i++) {
		dmabuf = uio_heap_kunit_alloc(test, ctx->heap, SZ_64K);
		attach = dma_buf_attach(dmabuf, importer);
		KUNIT_ASSERT_FALSE(test, IS_ERR(attach));
		sgt = dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(sgt));
		KUNIT_EXPECT_EQ(test, SZ_64K, sg_dma_len(sgt->sgl));
		if (i) {
			uio_heap_kunit_revoke(test, dmabuf, SZ_64K);
			KUNIT_EXPECT_EQ(test, 0, dma_buf_begin_cpu_access(dmabuf, DMA_FROM_DEVICE));
			KUNIT_EXPECT_EQ(test, 0, dma_buf_end_cpu_access(dmabuf, DMA_FROM_DEVICE));
		}
		dma_buf_unmap_attachment_unlocked(attach, sgt, DMA_BIDIRECTIONAL);
		dma_buf_detach(dmabuf, attach);
		uio_heap_kunit_put(dmabuf);
	}
	uio_heap_kunit_released(test, ctx, SZ_64K);
}

static void uio_heap_test_vmap_after_revoke(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf = uio_heap_kunit_alloc(test, ctx->heap, 2 * PAGE_SIZE);
	struct iosys_map map;

	KUNIT_ASSERT_EQ(test, 0, dma_buf_vmap_unlocked(dmabuf, &map));
	/* Buffers arrive zeroed. */
	KUNIT_EXPECT_EQ(test, 0, ((u8 *)map.vaddr)[2 * PAGE_SIZE - 1]);
	((u8 *)map.vaddr)[0] = 0xab;
	uio_heap_kunit_revoke(test, dmabuf, 2 * PAGE_SIZE);
	/* The kernel user's pointer stays valid: nothing was freed under it. */
	KUNIT_EXPECT_EQ(test, 0xab, ((u8 *)map.vaddr)[0]);
	dma_buf_vunmap_unlocked(dmabuf, &map);
	uio_heap_kunit_put(dmabuf);
	uio_heap_kunit_released(test, ctx, 2 * PAGE_SIZE);
}

/* uioN-cached: the same device and mask, syncs for the device. */
static void uio_heap_test_cached_node(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap *cached = uio_heap_lookup(ctx->uio_dev, true);
	struct dma_buf *dmabuf;
	struct iosys_map map;
	int below;
	u64 addr;

	KUNIT_ASSERT_NOT_NULL(test, cached);
	KUNIT_EXPECT_STREQ(test, "-cached",
			   dev_name(&cached->dev) + strlen(dev_name(ctx->uio_dev)));
	KUNIT_EXPECT_PTR_EQ(test, ctx->dma_dev, cached->dma_dev);
	/* The siblings share the parent's mask: either may set it. */
	KUNIT_EXPECT_EQ(test, 0, heap_set_mask_locked(cached, 31));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(31), dma_get_mask(ctx->dma_dev));
	dmabuf = uio_heap_kunit_alloc(test, cached, 3 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, 0, uio_heap_buffer_dma_addr(dmabuf->priv, &addr));
	KUNIT_EXPECT_LE(test, addr + 3 * PAGE_SIZE - 1, DMA_BIT_MASK(31));
	KUNIT_EXPECT_EQ(test, 0, dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL));
	KUNIT_ASSERT_EQ(test, 0, dma_buf_vmap_unlocked(dmabuf, &map));
	memset(map.vaddr, 0x5a, 3 * PAGE_SIZE);
	dma_buf_vunmap_unlocked(dmabuf, &map);
	KUNIT_EXPECT_EQ(test, 0, dma_buf_end_cpu_access(dmabuf, DMA_BIDIRECTIONAL));
	/* A live buffer of the sibling pins the mask as one of its own would. */
	below = fls64(addr + 3 * PAGE_SIZE - 1) - 1;
	if (below >= PAGE_SHIFT)
		KUNIT_EXPECT_EQ(test, -EBUSY, heap_set_mask_locked(ctx->heap, below));
	uio_heap_kunit_put(dmabuf);
	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_TRUE(test, cached->dead);
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), dma_get_mask(ctx->dma_dev));
	put_device(&cached->dev);
}

static void uio_heap_test_max_bytes(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap *heap = ctx->heap;
	struct dma_buf *a, *b;

	heap->max_bytes = 2 * PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, -ENOSPC, PTR_ERR(uio_heap_buffer_alloc(heap, 3 * PAGE_SIZE, O_RDWR)));
	a = uio_heap_kunit_alloc(test, heap, PAGE_SIZE);
	b = uio_heap_kunit_alloc(test, heap, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, -ENOSPC, PTR_ERR(uio_heap_buffer_alloc(heap, PAGE_SIZE, O_RDWR)));
	KUNIT_EXPECT_EQ(test, 2 * PAGE_SIZE, uio_heap_kunit_allocated(heap));
	uio_heap_kunit_put(a);
	uio_heap_kunit_put(b);
	/* More than RAM is refused before the DMA layer sees it. */
	heap->max_bytes = 0;
	KUNIT_EXPECT_EQ(test, -ENOMEM, PTR_ERR(uio_heap_buffer_alloc(heap, SZ_1T, O_RDWR)));
	KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(heap));
}

#define UIO_HEAP_KUNIT_THREADS	4

static void uio_heap_test_concurrent(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_kunit_thread *w;
	int i;

	w = kunit_kcalloc(test, UIO_HEAP_KUNIT_THREADS, sizeof(*w), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, w);
	for (i = 0; i < UIO_HEAP_KUNIT_THREADS; i++) {
		w[i].heap = ctx->heap;
		init_completion(&w[i].done);
		KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(uio_heap_kunit_worker_fn, &w[i],
							    "uio_heap_kunit/%d", i)));
	}
	for (i = 0; i < UIO_HEAP_KUNIT_THREADS; i++) {
		wait_for_completion(&w[i].done);
		KUNIT_EXPECT_EQ(test, 0, w[i].errors);
	}
	/* Releases queued by the workers may still be running elsewhere. */
	for (i = 0; i < 100 && uio_heap_kunit_allocated(ctx->heap); i++) {
		flush_delayed_fput();
		msleep(20);
	}
	KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(ctx->heap));
	KUNIT_EXPECT_EQ(test, 0, ctx->heap->nr_buffers);
}

static void uio_heap_kunit_make_it_fail(unsigned int on)
{
#ifdef CONFIG_FAULT_INJECTION
	current->make_it_fail = on;
#endif
}

/* failslab/fail_page_alloc (task-filter) fail some allocations: each buffer is all or nothing. */
static void uio_heap_test_fault_injection(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf;
	int i, failed = 0;
	u64 addr;

	if (!IS_ENABLED(CONFIG_FAULT_INJECTION) || !fail_inject)
		kunit_skip(test, "failslab/fail_page_alloc not armed (fail_inject=0)");
	for (i = 0; i < 200; i++) {
		uio_heap_kunit_make_it_fail(1);
		dmabuf = uio_heap_buffer_alloc(ctx->heap, (get_random_u32_below(8) + 1) * PAGE_SIZE,
					       O_RDWR);
		uio_heap_kunit_make_it_fail(0);
		if (IS_ERR(dmabuf)) {
			KUNIT_EXPECT_EQ(test, -ENOMEM, PTR_ERR(dmabuf));
			KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(ctx->heap));
			failed++;
		} else {
			KUNIT_EXPECT_EQ(test, 0, uio_heap_buffer_dma_addr(dmabuf->priv, &addr));
			uio_heap_kunit_put(dmabuf);
		}
	}
	kunit_info(test, "fault injection: %d of %d allocations failed\n", failed, i);
	KUNIT_EXPECT_GT(test, failed, 0);
	KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(ctx->heap));
	KUNIT_EXPECT_EQ(test, 0, ctx->heap->nr_buffers);
}

static int uio_heap_kunit_uio_child(struct device *dev, void *data)
{
	if (!dev->class || strcmp(dev->class->name, "uio"))
		return 0;
	*(struct device **)data = dev;
	return 1;
}

/* A platform device bound to a platform UIO driver gets a heap, lost when unregistered. */
static void uio_heap_kunit_platform(struct kunit *test, const char *drv, const void *pd, size_t n)
{
	struct platform_device *pdev;
	struct device *uio = NULL;
	struct uio_heap *heap;
	struct dma_buf *dmabuf;

	if (!driver_find(drv, &platform_bus_type))
		kunit_skip(test, "%s is not loaded", drv);
	pdev = platform_device_register_data(NULL, drv, PLATFORM_DEVID_AUTO, pd, n);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pdev));
	KUNIT_ASSERT_NOT_NULL_MSG(test, pdev->dev.driver, "%s did not bind", drv);
	device_for_each_child(&pdev->dev, &uio, uio_heap_kunit_uio_child);
	KUNIT_ASSERT_NOT_NULL(test, uio);
	heap = uio_heap_lookup(uio, false);
	KUNIT_ASSERT_NOT_NULL(test, heap);
	KUNIT_EXPECT_PTR_EQ(test, &pdev->dev, heap->dma_dev);
	KUNIT_EXPECT_STREQ(test, dev_name(uio), dev_name(&heap->dev));
	dmabuf = uio_heap_buffer_alloc(heap, SZ_64K, O_RDWR);
	KUNIT_EXPECT_FALSE(test, IS_ERR(dmabuf));
	if (!IS_ERR(dmabuf))
		uio_heap_kunit_put(dmabuf);
	platform_device_unregister(pdev);
	KUNIT_EXPECT_TRUE(test, heap->dead);
	put_device(&heap->dev);
}

static void uio_heap_test_platform_pdrv_genirq(struct kunit *test)
{
	struct uio_info info = { .name = "uio_heap_kunit", .version = "0", .irq = UIO_IRQ_NONE };

	uio_heap_kunit_platform(test, "uio_pdrv_genirq", &info, sizeof(info));
}

static void uio_heap_test_platform_dmem_genirq(struct kunit *test)
{
	struct uio_dmem_genirq_pdata pdata = {
		.uioinfo = { .name = "uio_heap_kunit", .version = "0", .irq = UIO_IRQ_CUSTOM },
	};

	uio_heap_kunit_platform(test, "uio_dmem_genirq", &pdata, sizeof(pdata));
}

static struct kunit_case uio_heap_test_cases[] = {
	KUNIT_CASE(uio_heap_test_check_alloc),
	KUNIT_CASE(uio_heap_test_mask),
	KUNIT_CASE(uio_heap_test_bus_limit),
	KUNIT_CASE(uio_heap_test_mask_owner),
#ifdef CONFIG_SWIOTLB
	KUNIT_CASE(uio_heap_test_bounced_device),
#endif
	KUNIT_CASE(uio_heap_test_sva_device),
	KUNIT_CASE(uio_heap_test_lifecycle),
	KUNIT_CASE(uio_heap_test_remove_waits_alone),
	KUNIT_CASE(uio_heap_test_revoke),
	KUNIT_CASE(uio_heap_test_revoke_dead_heap_alloc),
	KUNIT_CASE(uio_heap_test_importer_after_revoke),
	KUNIT_CASE(uio_heap_test_vmap_after_revoke),
	KUNIT_CASE(uio_heap_test_cached_node),
	KUNIT_CASE(uio_heap_test_max_bytes),
	KUNIT_CASE(uio_heap_test_concurrent),
	KUNIT_CASE(uio_heap_test_fault_injection),
	KUNIT_CASE(uio_heap_test_platform_pdrv_genirq),
	KUNIT_CASE(uio_heap_test_platform_dmem_genirq),
	{}
};

static struct kunit_suite uio_heap_test_suite = {
	.name = "uio_heap",
	.init = uio_heap_kunit_init,
	.test_cases = uio_heap_test_cases,
};

kunit_test_suite(uio_heap_test_suite);

MODULE_DESCRIPTION("KUnit tests for uio_heap");
MODULE_LICENSE("GPL");
UIO_HEAP_IMPORT_NS("DMA_BUF");
UIO_HEAP_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");
