// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for uio_heap's internals: request checks, masks, the buffer
 * lifecycle including revocation and importers, concurrency, limits, and
 * allocation failures.
 *
 * Heaps here sit on KUnit's own devices: one plays the DMA device (the
 * parent), one the UIO device the heap is named after, one an importer.
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
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
MODULE_PARM_DESC(fail_inject,
		 "failslab/fail_page_alloc are armed with task-filter: run the fault injection case");

struct uio_heap_kunit {
	struct device *dma_dev;
	struct device *uio_dev;
	struct uio_heap *heap;
	u64 dma_mask;
};

static void uio_heap_kunit_remove(void *data)
{
	struct uio_heap_kunit *ctx = data;

	if (ctx->heap) {
		uio_heap_remove_for(ctx->dma_dev);
		put_device(&ctx->heap->dev);
		ctx->heap = NULL;
	}
}

/* A kunit device is a master nothing stops: its revoked buffers stay orphans. */
static void uio_heap_kunit_release_orphans(void *unused)
{
	uio_heap_release_orphans();
}

static int uio_heap_kunit_init(struct kunit *test)
{
	static atomic_t seq = ATOMIC_INIT(0);
	struct uio_heap_kunit *ctx;
	char name[32];
	int n = atomic_inc_return(&seq);

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
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

	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, uio_heap_kunit_release_orphans,
						  NULL));
	KUNIT_ASSERT_EQ(test, 0, uio_heap_create(ctx->dma_dev, ctx->uio_dev));
	ctx->heap = uio_heap_lookup(ctx->uio_dev, false);
	KUNIT_ASSERT_NOT_NULL(test, ctx->heap);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, uio_heap_kunit_remove, ctx));
	test->priv = ctx;
	return 0;
}

/* dma_buf_put() from a kthread defers the release: wait for it. */
static void uio_heap_kunit_put(struct dma_buf *dmabuf)
{
	dma_buf_put(dmabuf);
	flush_delayed_fput();
}

static u64 uio_heap_kunit_allocated(struct uio_heap *heap)
{
	u64 val;

	spin_lock(&heap->lock);
	val = heap->allocated_bytes;
	spin_unlock(&heap->lock);
	return val;
}

static void uio_heap_test_check_alloc(struct kunit *test)
{
	struct dma_heap_allocation_data d = { .fd_flags = O_RDWR | O_CLOEXEC };
	size_t len;

	d.len = 1;
	KUNIT_EXPECT_EQ(test, 0, uio_heap_check_alloc(&d, &len));
	KUNIT_EXPECT_EQ(test, PAGE_SIZE, len);
	d.len = PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, 0, uio_heap_check_alloc(&d, &len));
	KUNIT_EXPECT_EQ(test, PAGE_SIZE, len);
	d.len = PAGE_SIZE + 1;
	KUNIT_EXPECT_EQ(test, 0, uio_heap_check_alloc(&d, &len));
	KUNIT_EXPECT_EQ(test, 2 * PAGE_SIZE, len);

	/* Zero, and lengths whose rounding wraps to zero. */
	d.len = 0;
	KUNIT_EXPECT_EQ(test, -EINVAL, uio_heap_check_alloc(&d, &len));
	d.len = U64_MAX;
	KUNIT_EXPECT_EQ(test, -EINVAL, uio_heap_check_alloc(&d, &len));
	d.len = U64_MAX - PAGE_SIZE + 2;
	KUNIT_EXPECT_EQ(test, -EINVAL, uio_heap_check_alloc(&d, &len));
	d.len = U64_MAX - PAGE_SIZE + 1;
	KUNIT_EXPECT_EQ(test, 0, uio_heap_check_alloc(&d, &len));
	KUNIT_EXPECT_EQ(test, (size_t)(U64_MAX - PAGE_SIZE + 1), len);

	d.len = PAGE_SIZE;
	d.fd = 3;
	KUNIT_EXPECT_EQ(test, -EINVAL, uio_heap_check_alloc(&d, &len));
	d.fd = 0;
	d.fd_flags = O_RDWR | O_NONBLOCK;
	KUNIT_EXPECT_EQ(test, -EINVAL, uio_heap_check_alloc(&d, &len));
	d.fd_flags = O_RDWR;
	d.heap_flags = 1;
	KUNIT_EXPECT_EQ(test, -EINVAL, uio_heap_check_alloc(&d, &len));
}

/* What the sysfs store does around uio_heap_set_mask_bits(). */
static int heap_set_mask_locked(struct uio_heap *heap, unsigned int bits)
{
	int ret;

	device_lock(heap->dma_dev);
	ret = uio_heap_set_mask_bits(heap, bits);
	device_unlock(heap->dma_dev);
	return ret;
}

static void uio_heap_test_mask(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_buffer *buf;
	struct dma_buf *dmabuf;
	int i;

	KUNIT_EXPECT_EQ(test, -EINVAL, heap_set_mask_locked(ctx->heap, PAGE_SHIFT - 1));
	KUNIT_EXPECT_EQ(test, -EINVAL, heap_set_mask_locked(ctx->heap, 65));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), ctx->dma_dev->coherent_dma_mask);

	KUNIT_ASSERT_EQ(test, 0, heap_set_mask_locked(ctx->heap, 30));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(30), ctx->dma_dev->coherent_dma_mask);
	for (i = 0; i < 8; i++) {
		dmabuf = uio_heap_buffer_alloc(ctx->heap, SZ_64K, O_RDWR);
		KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
		buf = dmabuf->priv;
		KUNIT_EXPECT_LE(test, buf->dma_addr + SZ_64K - 1, DMA_BIT_MASK(30));
		KUNIT_EXPECT_EQ(test, 0, buf->dma_addr & (PAGE_SIZE - 1));
		uio_heap_kunit_put(dmabuf);
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
	struct dma_buf *dmabuf;

	dmabuf = uio_heap_buffer_alloc(ctx->heap, SZ_64K, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	buf = dmabuf->priv;
	KUNIT_EXPECT_EQ(test, (size_t)0, buf->low_zone);
	uio_heap_kunit_put(dmabuf);

	ctx->dma_dev->bus_dma_limit = DMA_BIT_MASK(30);
	dmabuf = uio_heap_buffer_alloc(ctx->heap, SZ_64K, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	buf = dmabuf->priv;
	KUNIT_EXPECT_LE(test, buf->dma_addr + SZ_64K - 1, DMA_BIT_MASK(30));
	KUNIT_EXPECT_EQ(test, (size_t)SZ_64K, buf->low_zone);
	uio_heap_kunit_put(dmabuf);
	ctx->dma_dev->bus_dma_limit = 0;
}

/* The parent's mask has one owner, and never strands a live buffer. */
static void uio_heap_test_mask_owner(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct device *uio_b;
	struct uio_heap *heap_b;
	struct dma_buf *dmabuf;
	unsigned int below;
	u64 end;

	dmabuf = uio_heap_buffer_alloc(ctx->heap, SZ_64K, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	end = ((struct uio_heap_buffer *)dmabuf->priv)->dma_addr + SZ_64K - 1;
	below = fls64(end) - 1;
	if (below >= PAGE_SHIFT)
		KUNIT_EXPECT_EQ(test, -EBUSY, heap_set_mask_locked(ctx->heap, below));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), ctx->dma_dev->coherent_dma_mask);
	uio_heap_kunit_put(dmabuf);
	KUNIT_EXPECT_EQ(test, 0, heap_set_mask_locked(ctx->heap, 31));

	/* A second UIO device on the parent: neither heap may change it. */
	uio_b = kunit_device_register(test, "kuio_second");
	KUNIT_ASSERT_FALSE(test, IS_ERR(uio_b));
	device_lock(ctx->dma_dev);
	KUNIT_EXPECT_EQ(test, 0, uio_heap_create(ctx->dma_dev, uio_b));
	device_unlock(ctx->dma_dev);
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
	struct device *dma_dev, *uio;
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, mem);
	dma_dev = kunit_device_register(test, "uio_heap_kunit_bounced");
	KUNIT_ASSERT_FALSE(test, IS_ERR(dma_dev));
	uio = kunit_device_register(test, "kuio_bounced");
	KUNIT_ASSERT_FALSE(test, IS_ERR(uio));
	mem->force_bounce = true;
	dma_dev->dma_io_tlb_mem = mem;
	device_lock(dma_dev);
	ret = uio_heap_create(dma_dev, uio);
	device_unlock(dma_dev);
	if (!ret)
		uio_heap_remove_for(dma_dev);
	dma_dev->dma_io_tlb_mem = NULL;
	KUNIT_EXPECT_EQ(test, -EOPNOTSUPP, ret);
}
#endif

/*
 * A device uio_pci_generic_sva binds gets its heaps like any other: its
 * requests without a PASID still go through the DMA domain they map in.
 */
static void uio_heap_test_sva_device(struct kunit *test)
{
	struct device_driver *sva;
	struct device *dma_dev, *uio;
	struct uio_heap *heap;
	int ret;

	dma_dev = kunit_device_register(test, "uio_heap_kunit_sva");
	KUNIT_ASSERT_FALSE(test, IS_ERR(dma_dev));
	uio = kunit_device_register(test, "kuio_sva");
	KUNIT_ASSERT_FALSE(test, IS_ERR(uio));
	sva = kunit_driver_create(test, "uio_pci_sva");
	KUNIT_ASSERT_FALSE(test, IS_ERR(sva));
	/* The KUnit bus binds a device to its first driver: move it. */
	device_release_driver(dma_dev);
	KUNIT_ASSERT_EQ(test, 0, device_driver_attach(sva, dma_dev));
	device_lock(dma_dev);
	ret = uio_heap_create(dma_dev, uio);
	device_unlock(dma_dev);
	KUNIT_ASSERT_EQ(test, 0, ret);
	heap = uio_heap_lookup(uio, true);
	KUNIT_EXPECT_NOT_NULL(test, heap);
	if (heap)
		put_device(&heap->dev);
	uio_heap_remove_for(dma_dev);
}

static void uio_heap_test_lifecycle(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf[3];
	u64 addr[3];
	int i;

	for (i = 0; i < 3; i++) {
		dmabuf[i] = uio_heap_buffer_alloc(ctx->heap, (i + 1) * PAGE_SIZE,
						  O_RDWR);
		KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf[i]));
		KUNIT_EXPECT_EQ(test, 0, uio_heap_buffer_dma_addr(dmabuf[i]->priv,
								  &addr[i]));
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

struct uio_heap_kunit_call {
	struct device *dev;
	struct uio_heap *heap;
	struct completion done;
};

static int uio_heap_kunit_remove_fn(void *data)
{
	struct uio_heap_kunit_call *call = data;

	uio_heap_remove_for(call->dev);
	/* Not back into this module's text: it may be unloaded by then. */
	kthread_complete_and_exit(&call->done, 0);
}

static int uio_heap_kunit_lookup_fn(void *data)
{
	struct uio_heap_kunit_call *call = data;

	call->heap = uio_heap_lookup(call->dev, false);
	kthread_complete_and_exit(&call->done, 0);
}

/*
 * Removing a device's heaps waits for the allocations in progress on them
 * (heap->sem); finding another device's heap must not wait with it.
 */
static void uio_heap_test_remove_waits_alone(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_kunit_call *rm, *look;
	struct task_struct *t;
	struct device *dma_dev;
	bool blocked = false, looked = false;
	char name[48];
	u64 *mask;
	int i;

	rm = kunit_kzalloc(test, sizeof(*rm), GFP_KERNEL);
	look = kunit_kzalloc(test, sizeof(*look), GFP_KERNEL);
	mask = kunit_kzalloc(test, sizeof(*mask), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, rm && look && mask);
	snprintf(name, sizeof(name), "%s_other_dma", dev_name(ctx->uio_dev));
	dma_dev = kunit_device_register(test, name);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dma_dev));
	*mask = DMA_BIT_MASK(32);
	dma_dev->dma_mask = mask;
	snprintf(name, sizeof(name), "%s_other", dev_name(ctx->uio_dev));
	look->dev = kunit_device_register(test, name);
	KUNIT_ASSERT_FALSE(test, IS_ERR(look->dev));
	KUNIT_ASSERT_EQ(test, 0, uio_heap_create(dma_dev, look->dev));
	rm->dev = ctx->dma_dev;
	init_completion(&rm->done);
	init_completion(&look->done);

	/* An allocation in progress on the first device's heap... */
	down_read(&ctx->heap->sem);
	t = kthread_run(uio_heap_kunit_remove_fn, rm, "uio_heap_kunit/rm");
	if (IS_ERR(t)) {
		up_read(&ctx->heap->sem);
		KUNIT_FAIL(test, "kthread_run: %pe", t);
		goto remove_other;
	}
	/* ...holds up its removal, past the list lock, at the heap's sem. */
	for (i = 0; i < 500 && !blocked; i++) {
		msleep(20);
		blocked = rwsem_is_contended(&ctx->heap->sem);
	}
	t = blocked ? kthread_run(uio_heap_kunit_lookup_fn, look,
				  "uio_heap_kunit/lookup") : NULL;
	if (!IS_ERR_OR_NULL(t))
		looked = wait_for_completion_timeout(&look->done, 10 * HZ);
	up_read(&ctx->heap->sem);

	wait_for_completion(&rm->done);
	/* A completion is consumed by the wait that saw it. */
	if (!IS_ERR_OR_NULL(t) && !looked)
		wait_for_completion(&look->done);
	KUNIT_EXPECT_TRUE_MSG(test, blocked, "removal never waited for the allocation");
	KUNIT_EXPECT_FALSE(test, IS_ERR(t));
	KUNIT_EXPECT_TRUE_MSG(test, looked, "lookup waited for another device's removal");
	KUNIT_EXPECT_NOT_NULL(test, look->heap);
	KUNIT_EXPECT_TRUE(test, ctx->heap->dead);
	if (look->heap)
		put_device(&look->heap->dev);
remove_other:
	uio_heap_remove_for(dma_dev);
}

static void uio_heap_test_revoke(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_buffer *buf;
	struct dma_buf *dmabuf;
	struct iosys_map map;
	long orphaned;
	u64 addr;

	orphaned = atomic_long_read(&uio_heap_orphaned_bytes);
	dmabuf = uio_heap_buffer_alloc(ctx->heap, SZ_64K, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	buf = dmabuf->priv;

	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_NULL(test, uio_heap_lookup(ctx->uio_dev, false));
	KUNIT_EXPECT_NULL(test, uio_heap_lookup(ctx->uio_dev, true));
	KUNIT_EXPECT_TRUE(test, buf->revoked);
	KUNIT_EXPECT_EQ(test, -ENODEV, uio_heap_buffer_dma_addr(buf, &addr));
	/*
	 * vmap would fail with -ENODEV too, but the dma-buf core WARNs about
	 * any failing vmap; ask the exporter directly.
	 */
	KUNIT_EXPECT_EQ(test, -ENODEV, dmabuf->ops->vmap(dmabuf, &map));
	KUNIT_EXPECT_EQ(test, -ENODEV, dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL));
	KUNIT_EXPECT_TRUE(test, IS_ERR(dma_buf_attach(dmabuf, ctx->dma_dev)));

	/* The buffer outlives its heap; releasing it must not touch the device. */
	uio_heap_kunit_put(dmabuf);
	/* Nothing stopped this device: its pages wait for the administrator. */
	KUNIT_EXPECT_EQ(test, orphaned + SZ_64K,
			atomic_long_read(&uio_heap_orphaned_bytes));
	uio_heap_release_orphans();
	KUNIT_EXPECT_EQ(test, orphaned, atomic_long_read(&uio_heap_orphaned_bytes));
}

static void uio_heap_test_revoke_dead_heap_alloc(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap *heap = ctx->heap;
	struct dma_buf *dmabuf;

	/* Keep the struct, lose the heap: allocations must fail. */
	get_device(&heap->dev);
	uio_heap_kunit_remove(ctx);
	dmabuf = uio_heap_buffer_alloc(heap, PAGE_SIZE, O_RDWR);
	KUNIT_EXPECT_EQ(test, -ENODEV, PTR_ERR_OR_ZERO(dmabuf));
	KUNIT_EXPECT_EQ(test, -ENODEV, heap_set_mask_locked(heap, 32));
	put_device(&heap->dev);
}

static void uio_heap_test_importer_after_revoke(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf_attachment *attach;
	struct device *importer;
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	long before;

	importer = kunit_device_register(test, "uio_heap_kunit_importer");
	KUNIT_ASSERT_FALSE(test, IS_ERR(importer));
	importer->coherent_dma_mask = DMA_BIT_MASK(64);
	importer->dma_mask = &importer->coherent_dma_mask;

	/* Mapped and unmapped while the device stays: plain free. */
	dmabuf = uio_heap_buffer_alloc(ctx->heap, SZ_64K, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	attach = dma_buf_attach(dmabuf, importer);
	KUNIT_ASSERT_FALSE(test, IS_ERR(attach));
	sgt = dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(sgt));
	KUNIT_EXPECT_EQ(test, SZ_64K, sg_dma_len(sgt->sgl));
	dma_buf_unmap_attachment_unlocked(attach, sgt, DMA_BIDIRECTIONAL);
	dma_buf_detach(dmabuf, attach);
	uio_heap_kunit_put(dmabuf);

	/* Still mapped when the device goes: kept until the importer lets go. */
	before = atomic_long_read(&uio_heap_revoked_bytes);
	dmabuf = uio_heap_buffer_alloc(ctx->heap, SZ_64K, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	attach = dma_buf_attach(dmabuf, importer);
	KUNIT_ASSERT_FALSE(test, IS_ERR(attach));
	sgt = dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(sgt));

	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_EQ(test, before + SZ_64K,
			atomic_long_read(&uio_heap_revoked_bytes));
	/* The importer's CPU syncs still work. */
	KUNIT_EXPECT_EQ(test, 0, dma_buf_begin_cpu_access(dmabuf, DMA_FROM_DEVICE));
	KUNIT_EXPECT_EQ(test, 0, dma_buf_end_cpu_access(dmabuf, DMA_FROM_DEVICE));

	dma_buf_unmap_attachment_unlocked(attach, sgt, DMA_BIDIRECTIONAL);
	dma_buf_detach(dmabuf, attach);
	uio_heap_kunit_put(dmabuf);
	KUNIT_EXPECT_EQ(test, before, atomic_long_read(&uio_heap_revoked_bytes));
}

static void uio_heap_test_vmap_after_revoke(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf;
	struct iosys_map map;
	long before;

	dmabuf = uio_heap_buffer_alloc(ctx->heap, 2 * PAGE_SIZE, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	KUNIT_ASSERT_EQ(test, 0, dma_buf_vmap_unlocked(dmabuf, &map));
	/* Buffers arrive zeroed. */
	KUNIT_EXPECT_EQ(test, 0, ((u8 *)map.vaddr)[2 * PAGE_SIZE - 1]);
	((u8 *)map.vaddr)[0] = 0xab;

	before = atomic_long_read(&uio_heap_revoked_bytes);
	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_EQ(test, before + 2 * PAGE_SIZE,
			atomic_long_read(&uio_heap_revoked_bytes));
	/* The kernel user's pointer stays valid: nothing was freed under it. */
	KUNIT_EXPECT_EQ(test, 0xab, ((u8 *)map.vaddr)[0]);
	dma_buf_vunmap_unlocked(dmabuf, &map);
	uio_heap_kunit_put(dmabuf);
	KUNIT_EXPECT_EQ(test, before, atomic_long_read(&uio_heap_revoked_bytes));
}

/* uioN-cached: the same device and mask, syncs for the device. */
static void uio_heap_test_cached_node(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap *cached;
	struct dma_buf *dmabuf;
	struct iosys_map map;
	u64 addr;

	cached = uio_heap_lookup(ctx->uio_dev, true);
	KUNIT_ASSERT_NOT_NULL(test, cached);
	KUNIT_EXPECT_STREQ(test, "-cached",
			   dev_name(&cached->dev) + strlen(dev_name(ctx->uio_dev)));
	KUNIT_EXPECT_PTR_EQ(test, ctx->dma_dev, cached->dma_dev);

	/* The siblings share the parent's mask: either may set it. */
	KUNIT_EXPECT_EQ(test, 0, heap_set_mask_locked(cached, 31));
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(31), dma_get_mask(ctx->dma_dev));

	dmabuf = uio_heap_buffer_alloc(cached, 3 * PAGE_SIZE, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));
	KUNIT_EXPECT_EQ(test, 0, uio_heap_buffer_dma_addr(dmabuf->priv, &addr));
	KUNIT_EXPECT_LE(test, addr + 3 * PAGE_SIZE - 1, DMA_BIT_MASK(31));
	KUNIT_EXPECT_EQ(test, 0, dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL));
	KUNIT_ASSERT_EQ(test, 0, dma_buf_vmap_unlocked(dmabuf, &map));
	memset(map.vaddr, 0x5a, 3 * PAGE_SIZE);
	dma_buf_vunmap_unlocked(dmabuf, &map);
	KUNIT_EXPECT_EQ(test, 0, dma_buf_end_cpu_access(dmabuf, DMA_BIDIRECTIONAL));

	/* A live buffer of the sibling pins the mask as one of its own would. */
	if (fls64(addr + 3 * PAGE_SIZE - 1) - 1 >= PAGE_SHIFT)
		KUNIT_EXPECT_EQ(test, -EBUSY,
				heap_set_mask_locked(ctx->heap,
						     fls64(addr + 3 * PAGE_SIZE - 1) - 1));
	uio_heap_kunit_put(dmabuf);

	uio_heap_kunit_remove(ctx);
	KUNIT_EXPECT_TRUE(test, cached->dead);
	KUNIT_EXPECT_EQ(test, DMA_BIT_MASK(32), dma_get_mask(ctx->dma_dev));
	put_device(&cached->dev);
}

static void uio_heap_test_max_bytes(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *a, *b;

	ctx->heap->max_bytes = 2 * PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, -ENOSPC,
			PTR_ERR(uio_heap_buffer_alloc(ctx->heap, 3 * PAGE_SIZE, O_RDWR)));
	a = uio_heap_buffer_alloc(ctx->heap, PAGE_SIZE, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a));
	b = uio_heap_buffer_alloc(ctx->heap, PAGE_SIZE, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(b));
	KUNIT_EXPECT_EQ(test, -ENOSPC,
			PTR_ERR(uio_heap_buffer_alloc(ctx->heap, PAGE_SIZE, O_RDWR)));
	KUNIT_EXPECT_EQ(test, 2 * PAGE_SIZE, uio_heap_kunit_allocated(ctx->heap));
	uio_heap_kunit_put(a);
	uio_heap_kunit_put(b);
	/* More than RAM is refused before the DMA layer sees it. */
	ctx->heap->max_bytes = 0;
	KUNIT_EXPECT_EQ(test, -ENOMEM,
			PTR_ERR(uio_heap_buffer_alloc(ctx->heap, SZ_1G * 1024UL, O_RDWR)));
	KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(ctx->heap));
}

#define UIO_HEAP_KUNIT_THREADS	4
#define UIO_HEAP_KUNIT_ROUNDS	100

struct uio_heap_kunit_worker {
	struct uio_heap *heap;
	struct completion done;
	int errors;
};

static int uio_heap_kunit_worker_fn(void *data)
{
	struct uio_heap_kunit_worker *w = data;
	struct dma_buf *held[4] = { };
	int i, slot;

	for (i = 0; i < UIO_HEAP_KUNIT_ROUNDS; i++) {
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
	kthread_complete_and_exit(&w->done, 0);
}

static void uio_heap_test_concurrent(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct uio_heap_kunit_worker *w;
	struct task_struct *t;
	int i;

	w = kunit_kcalloc(test, UIO_HEAP_KUNIT_THREADS, sizeof(*w), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, w);
	for (i = 0; i < UIO_HEAP_KUNIT_THREADS; i++) {
		w[i].heap = ctx->heap;
		init_completion(&w[i].done);
		t = kthread_run(uio_heap_kunit_worker_fn, &w[i], "uio_heap_kunit/%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(t));
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

/*
 * With failslab and fail_page_alloc armed by the VM (task-filter on), this
 * task fails some of its allocations: each buffer is made completely or
 * not at all.
 */
static void uio_heap_test_fault_injection(struct kunit *test)
{
	struct uio_heap_kunit *ctx = test->priv;
	struct dma_buf *dmabuf;
	int i, ok = 0, failed = 0;
	u64 addr;

	if (!IS_ENABLED(CONFIG_FAULT_INJECTION) || !fail_inject)
		kunit_skip(test, "failslab/fail_page_alloc not armed (fail_inject=0)");

	for (i = 0; i < 200; i++) {
		uio_heap_kunit_make_it_fail(1);
		dmabuf = uio_heap_buffer_alloc(ctx->heap,
					       (get_random_u32_below(8) + 1) * PAGE_SIZE,
					       O_RDWR);
		uio_heap_kunit_make_it_fail(0);
		if (IS_ERR(dmabuf)) {
			KUNIT_EXPECT_EQ(test, -ENOMEM, PTR_ERR(dmabuf));
			KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(ctx->heap));
			failed++;
			continue;
		}
		KUNIT_EXPECT_EQ(test, 0, uio_heap_buffer_dma_addr(dmabuf->priv, &addr));
		uio_heap_kunit_put(dmabuf);
		ok++;
	}
	kunit_info(test, "fault injection: %d allocations failed, %d succeeded\n",
		   failed, ok);
	KUNIT_EXPECT_GT(test, failed, 0);
	KUNIT_EXPECT_EQ(test, 0, uio_heap_kunit_allocated(ctx->heap));
	KUNIT_EXPECT_EQ(test, 0, ctx->heap->nr_buffers);
}

static int uio_heap_kunit_uio_child(struct device *dev, void *data)
{
	struct device **uio = data;

	if (dev->class && !strcmp(dev->class->name, "uio")) {
		*uio = dev;
		return 1;
	}
	return 0;
}

/*
 * A platform device bound to a platform UIO driver gets a heap, for the
 * platform device, and loses it when unregistered.
 */
static void uio_heap_kunit_platform(struct kunit *test, const char *drv,
				    const void *pdata, size_t size)
{
	struct platform_device *pdev;
	struct device *uio = NULL;
	struct uio_heap *heap;
	struct dma_buf *dmabuf;

	if (!driver_find(drv, &platform_bus_type))
		kunit_skip(test, "%s is not loaded", drv);

	pdev = platform_device_register_data(NULL, drv, PLATFORM_DEVID_AUTO,
					     pdata, size);
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
	struct uio_info info = {
		.name = "uio_heap_kunit",
		.version = "0",
		.irq = UIO_IRQ_NONE,
	};

	uio_heap_kunit_platform(test, "uio_pdrv_genirq", &info, sizeof(info));
}

static void uio_heap_test_platform_dmem_genirq(struct kunit *test)
{
	struct uio_dmem_genirq_pdata pdata = {
		.uioinfo = {
			.name = "uio_heap_kunit",
			.version = "0",
			.irq = UIO_IRQ_CUSTOM,
		},
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
