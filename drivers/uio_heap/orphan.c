// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap: memory of devices nothing could stop.
 *
 * A platform device without an IOMMU (revoke mode "none") may go on
 * writing wherever userspace aimed it after its driver is unbound.  The
 * pages of its buffers, and the dma-bufs it imported, are therefore not
 * given back when their last user lets go: they wait here, counted in
 * orphaned_bytes, until the administrator says the devices are quiet
 * (release_orphans).  Each orphan holds a reference to the module.
 */
#include <linux/dma-buf.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "compat.h"
#include "uio_heap.h"

struct uio_heap_orphan_import {
	struct list_head node;
	struct dma_buf *dmabuf;
};

static LIST_HEAD(uio_heap_orphan_buffers);
static LIST_HEAD(uio_heap_orphan_imports);
static DEFINE_SPINLOCK(uio_heap_orphans_lock);
atomic_long_t uio_heap_orphaned_bytes = ATOMIC_LONG_INIT(0);
EXPORT_SYMBOL_IF_KUNIT(uio_heap_orphaned_bytes);

/* Keeps a released buffer's pages (and @buf) until uio_heap_release_orphans(). */
void uio_heap_orphan_buffer(struct uio_heap_buffer *buf)
{
	__module_get(THIS_MODULE);
	atomic_long_add(buf->size, &uio_heap_orphaned_bytes);
	spin_lock(&uio_heap_orphans_lock);
	list_add_tail(&buf->node, &uio_heap_orphan_buffers);
	spin_unlock(&uio_heap_orphans_lock);
}

/* Takes over the reference to an unmapped import's dma-buf. */
void uio_heap_orphan_import(struct dma_buf *dmabuf)
{
	struct uio_heap_orphan_import *o;

	o = kmalloc(sizeof(*o), GFP_KERNEL | __GFP_NOFAIL);
	o->dmabuf = dmabuf;
	__module_get(THIS_MODULE);
	atomic_long_add(dmabuf->size, &uio_heap_orphaned_bytes);
	spin_lock(&uio_heap_orphans_lock);
	list_add_tail(&o->node, &uio_heap_orphan_imports);
	spin_unlock(&uio_heap_orphans_lock);
}

/**
 * uio_heap_release_orphans() - free what devices nothing stopped kept
 *
 * The administrator's word that those devices no longer write to it.
 */
void uio_heap_release_orphans(void)
{
	struct uio_heap_orphan_import *o, *next;
	struct uio_heap_buffer *buf, *tmp;
	LIST_HEAD(buffers);
	LIST_HEAD(imports);

	spin_lock(&uio_heap_orphans_lock);
	list_splice_init(&uio_heap_orphan_buffers, &buffers);
	list_splice_init(&uio_heap_orphan_imports, &imports);
	spin_unlock(&uio_heap_orphans_lock);

	list_for_each_entry_safe(buf, tmp, &buffers, node) {
		atomic_long_sub(buf->size, &uio_heap_orphaned_bytes);
		uio_heap_free_pages(buf);
		mutex_destroy(&buf->lock);
		kfree(buf);
		module_put(THIS_MODULE);
	}
	list_for_each_entry_safe(o, next, &imports, node) {
		atomic_long_sub(o->dmabuf->size, &uio_heap_orphaned_bytes);
		dma_buf_put(o->dmabuf);
		kfree(o);
		module_put(THIS_MODULE);
	}
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_release_orphans);

module_param_cb(orphaned_bytes, &uio_heap_counter_ops, &uio_heap_orphaned_bytes, 0444);
MODULE_PARM_DESC(orphaned_bytes,
		 "Bytes kept from devices that went while nothing could stop their DMA");

static int uio_heap_release_orphans_set(const char *val,
					const struct kernel_param *kp)
{
	bool release;
	int ret = kstrtobool(val, &release);

	if (!ret && release)
		uio_heap_release_orphans();
	return ret;
}

static const struct kernel_param_ops uio_heap_release_orphans_ops = {
	.set = uio_heap_release_orphans_set,
};
module_param_cb(release_orphans, &uio_heap_release_orphans_ops, NULL, 0200);
MODULE_PARM_DESC(release_orphans,
		 "Write 1 once the devices counted in orphaned_bytes no longer DMA: their memory is freed");
