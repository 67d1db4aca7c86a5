// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap: import - give the heap's device the address of any dma-buf
 *
 * A dma-buf from another exporter (a camera, a GPU, the system heap,
 * another UIO device's heap) is attached and mapped for the heap's DMA
 * device, the UIO parent, so its address is right behind an IOMMU.  The
 * attachment is static: the exporter keeps the buffer where it is until
 * the import is released, the heap fd that made it is closed, or the
 * device goes; then it is unmapped and detached while the device exists.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/jiffies.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio_heap.h>

#include "compat.h"
#include "uio_heap.h"

static unsigned int uio_heap_fence_timeout_ms = 1000;
module_param_named(import_fence_timeout_ms, uio_heap_fence_timeout_ms, uint, 0644);
MODULE_PARM_DESC(import_fence_timeout_ms,
		 "How long UIO_HEAP_IOCTL_IMPORT waits for the exporter's fences before ETIMEDOUT");

/*
 * The ops take @heap->sem (for reading, or for writing to revoke) before
 * the exporter's reservation lock, which dma_buf_map_attachment() takes.
 * Dropping the last reference of an imported dma-buf from here only queues
 * its release (fput()), so no exporter's release runs under @heap->sem.
 */

/* The exporter may move this buffer (VRAM): it is pinned while imported. */
static const struct dma_buf_attach_ops uio_heap_import_attach_ops =
	UIO_HEAP_PINNED_ATTACH_OPS;

/*
 * Takes the import away from the device.  uio_heap_iotlb_sync() must follow
 * before uio_heap_import_release() lets the exporter move or free it.  A
 * static attachment's mapping may be cached by the core: detaching unmaps.
 */
static void uio_heap_import_unmap(struct uio_heap_import *imp)
{
	if (imp->pinned) {
		dma_resv_lock(imp->dmabuf->resv, NULL);
		dma_buf_unmap_attachment(imp->attach, imp->sgt, imp->dir);
		dma_resv_unlock(imp->dmabuf->resv);
		return;
	}
	dma_buf_unmap_attachment_unlocked(imp->attach, imp->sgt, imp->dir);
	dma_buf_detach(imp->dmabuf, imp->attach);
}

/* After the IOTLB sync: unpins and detaches a dynamic attachment. */
static void uio_heap_import_release(struct uio_heap_import *imp)
{
	if (!imp->pinned)
		return;
	dma_resv_lock(imp->dmabuf->resv, NULL);
	dma_buf_unpin(imp->attach);
	dma_resv_unlock(imp->dmabuf->resv);
	dma_buf_detach(imp->dmabuf, imp->attach);
}

/* One import taken away from the device, the IOTLB flushed before release. */
static void uio_heap_import_unmap_sync(struct uio_heap_import *imp)
{
	uio_heap_import_unmap(imp);
	uio_heap_iotlb_sync(imp->heap->dma_dev);
}

/*
 * Gives an unmapped import's dma-buf back to its exporter, after the sync,
 * or to the orphans if nothing stopped the device.
 */
static void uio_heap_import_drop(struct uio_heap_import *imp, bool orphan)
{
	struct uio_heap *heap = imp->heap;

	uio_heap_import_release(imp);
	if (orphan)
		uio_heap_orphan_import(imp->dmabuf);
	else
		dma_buf_put(imp->dmabuf);
	imp->dmabuf = NULL;
	spin_lock(&heap->lock);
	list_del(&imp->node);
	spin_unlock(&heap->lock);
	uio_heap_uncharge(heap, imp->size, NULL);
}

/*
 * Maps a dynamic exporter's buffer (one that migrates: VRAM) pinned and
 * in @imp->dir.  A static attachment would get the core's cached
 * DMA_BIDIRECTIONAL mapping, and an unmap that unpins before the flush.
 */
static struct sg_table *uio_heap_import_map_pinned(struct uio_heap_import *imp)
{
	struct sg_table *sgt;
	int ret;

	dma_resv_lock(imp->dmabuf->resv, NULL);
	ret = dma_buf_pin(imp->attach);
	if (ret) {
		sgt = ERR_PTR(ret);
		goto unlock;
	}
	sgt = dma_buf_map_attachment(imp->attach, imp->dir);
	if (IS_ERR(sgt))
		dma_buf_unpin(imp->attach);
unlock:
	dma_resv_unlock(imp->dmabuf->resv);
	return sgt;
}

/* Attaches and maps @imp->dmabuf for the heap's device; @heap->sem held. */
static int uio_heap_import_map(struct uio_heap_import *imp)
{
	struct uio_heap *heap = imp->heap;

	/*
	 * Without an IOMMU, pages the device does not reach would be bounced,
	 * or, with no swiotlb, refused with a WARN: a device that does not
	 * reach all memory cannot import.  (One whose DMA is all bounced has
	 * no heap: uio_heap_create().)
	 */
	if (!uio_heap_translated(heap->dma_dev) &&
	    dma_addressing_limited(heap->dma_dev))
		return -ERANGE;

	imp->pinned = dma_buf_is_dynamic(imp->dmabuf);
	if (imp->pinned) {
		imp->attach = dma_buf_dynamic_attach(imp->dmabuf, heap->dma_dev,
						     &uio_heap_import_attach_ops,
						     imp);
		if (IS_ERR(imp->attach))
			return PTR_ERR(imp->attach);
		imp->sgt = uio_heap_import_map_pinned(imp);
	} else {
		imp->attach = dma_buf_attach(imp->dmabuf, heap->dma_dev);
		if (IS_ERR(imp->attach))
			return PTR_ERR(imp->attach);
		imp->sgt = dma_buf_map_attachment_unlocked(imp->attach, imp->dir);
	}
	if (IS_ERR(imp->sgt)) {
		dma_buf_detach(imp->dmabuf, imp->attach);
		return PTR_ERR(imp->sgt);
	}
	return 0;
}

/*
 * Implicit sync for the device: it may write, so it waits for every fence
 * (readers too); one that may only read waits for the writers.  A signal
 * ends the wait with -EINTR, not a restart with a fresh timeout.
 */
static int uio_heap_import_wait(struct uio_heap_import *imp)
{
	long ret;

	ret = dma_resv_wait_timeout(imp->dmabuf->resv,
				    dma_resv_usage_rw(imp->dir != DMA_TO_DEVICE),
				    true,
				    msecs_to_jiffies(READ_ONCE(uio_heap_fence_timeout_ms)));
	if (ret < 0)
		return -EINTR;
	return ret ? 0 : -ETIMEDOUT;
}

/**
 * uio_heap_import() - attach a dma-buf for the heap's device
 * @hf:		the heap fd importing it; the import lives until released or
 *		until @hf is closed
 * @arg:	in: fd and flags; out: handle, address, size and out_flags
 *
 * Return: 0, or -EBADF (@arg->fd not open), -EINVAL (not a dma-buf, or
 * unknown flags), -EPERM (the address would be physical, see
 * uio_heap_addr_permitted()), -ETIMEDOUT or -EINTR (waiting for the
 * exporter's fences), -ENOSPC (the heap's max_bytes), -ERANGE (the device does
 * not reach the buffer as one range below its mask), -ENODEV (the device
 * has gone), or an error of the exporter's attach or map.
 */
int uio_heap_import(struct uio_heap_file *hf, struct uio_heap_import_data *arg)
{
	struct uio_heap *heap = hf->heap;
	struct uio_heap_import *imp;
	struct dma_buf *dmabuf;
	u32 handle;
	int ret;

	if (arg->flags & ~UIO_HEAP_VALID_IMPORT_FLAGS)
		return -EINVAL;

	dmabuf = dma_buf_get(arg->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	imp = kzalloc(sizeof(*imp), GFP_KERNEL_ACCOUNT);
	if (!imp) {
		ret = -ENOMEM;
		goto put_dmabuf;
	}
	imp->heap = heap;
	imp->dmabuf = dmabuf;
	imp->size = dmabuf->size;
	/* Every fd of a dma-buf is its one file: its mode is the buffer's. */
	imp->dir = dmabuf->file->f_mode & FMODE_WRITE ? DMA_BIDIRECTIONAL :
							 DMA_TO_DEVICE;
	arg->out_flags = imp->dir == DMA_TO_DEVICE ? UIO_HEAP_IMPORT_OUT_READ_ONLY : 0;

	ret = uio_heap_addr_permitted(heap->dma_dev);
	if (ret)
		goto free_imp;
	/* Before the semaphore: an unbind must not wait for an exporter's GPU. */
	if (!(arg->flags & UIO_HEAP_IMPORT_NO_WAIT)) {
		ret = uio_heap_import_wait(imp);
		if (ret)
			goto free_imp;
	}

	down_read(&heap->sem);
	if (heap->dead) {
		ret = -ENODEV;
		goto unlock;
	}
	ret = uio_heap_charge(heap, imp->size, NULL);
	if (ret)
		goto unlock;
	ret = uio_heap_import_map(imp);
	if (ret)
		goto unaccount;
	ret = uio_heap_dma_range(heap->dma_dev, imp->sgt, imp->size,
				 &imp->dma_addr);
	if (ret)
		goto unmap;

	/* Complete before the handle is visible: another thread may release it. */
	arg->dma_addr = imp->dma_addr;
	arg->size = imp->size;
	spin_lock(&heap->lock);
	list_add_tail(&imp->node, &heap->imports);
	spin_unlock(&heap->lock);
	/*
	 * Cyclic: a released handle is not given out again until the 31-bit
	 * space wraps, so a stale handle (and the unimport after a failed
	 * copy_to_user()) cannot hit another thread's newer import.
	 */
	ret = xa_alloc_cyclic(&hf->imports, &handle, imp, xa_limit_31b,
			      &hf->next_handle, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto unlist;
	up_read(&heap->sem);

	arg->handle = handle;
	return 0;

unlist:
	spin_lock(&heap->lock);
	list_del(&imp->node);
	spin_unlock(&heap->lock);
unmap:
	/* Flushed before the exporter may move or free what the device saw. */
	uio_heap_import_unmap_sync(imp);
	uio_heap_import_release(imp);
unaccount:
	uio_heap_uncharge(heap, imp->size, NULL);
unlock:
	up_read(&heap->sem);
free_imp:
	kfree(imp);
put_dmabuf:
	dma_buf_put(dmabuf);
	return ret;
}

static void uio_heap_import_free(struct uio_heap_import *imp)
{
	struct uio_heap *heap = imp->heap;

	down_read(&heap->sem);
	if (imp->dmabuf) {
		uio_heap_import_unmap_sync(imp);
		uio_heap_import_drop(imp, false);
	}
	up_read(&heap->sem);
	kfree(imp);
}

/**
 * uio_heap_unimport() - release an import
 * @hf:		the heap fd that made it
 * @handle:	its handle
 *
 * Also after the device has gone (the import was unmapped already then).
 *
 * Return: 0, or -ENOENT for a handle @hf does not hold.
 */
int uio_heap_unimport(struct uio_heap_file *hf, u32 handle)
{
	struct uio_heap_import *imp;

	/* A handle is never 0; xa_erase() would warn on it anyway. */
	imp = handle ? xa_erase(&hf->imports, handle) : NULL;
	if (!imp)
		return -ENOENT;
	uio_heap_import_free(imp);
	return 0;
}

/**
 * uio_heap_unimport_all() - release every import of a heap fd being closed
 * @hf:		the heap fd
 */
void uio_heap_unimport_all(struct uio_heap_file *hf)
{
	struct uio_heap_import *imp;
	unsigned long handle;

	xa_for_each(&hf->imports, handle, imp) {
		xa_erase(&hf->imports, handle);
		uio_heap_import_free(imp);
	}
}

/**
 * uio_heap_revoke_imports() - take every import away from the device
 * @heap:	a heap whose device is being unbound or removed
 *
 * Like uio_heap_revoke_buffers(): a PCI device stops mastering the bus,
 * each import is unmapped (behind an IOMMU the IOVA is
 * gone and the IOTLB invalidated before any exporter gets its buffer back)
 * and its dma-buf given back to the exporter, or kept as an orphan if
 * nothing stopped the device.  The handles stay valid until released or
 * until their heap fd is closed.
 *
 * Context: @heap->sem held for writing.
 */
void uio_heap_revoke_imports(struct uio_heap *heap)
{
	struct uio_heap_import *imp, *tmp;
	bool stopped;

	lockdep_assert_held_write(&heap->sem);

	if (list_empty(&heap->imports))
		return;

	stopped = uio_heap_dma_stop(heap->dma_dev);
	list_for_each_entry(imp, &heap->imports, node)
		uio_heap_import_unmap(imp);
	uio_heap_iotlb_sync(heap->dma_dev);
	list_for_each_entry_safe(imp, tmp, &heap->imports, node)
		uio_heap_import_drop(imp, !stopped);
}
