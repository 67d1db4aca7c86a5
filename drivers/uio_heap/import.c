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
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio_heap.h>

#include "compat.h"
#include "uio_heap.h"

/*
 * The ops take @heap->sem (for reading, or for writing to revoke) before
 * the exporter's reservation lock, which dma_buf_map_attachment() takes.
 * Dropping the last reference of an imported dma-buf from here only queues
 * its release (fput()), so no exporter's release runs under @heap->sem.
 */

/* Takes the import away from the device (behind an IOMMU: IOTLB sync due). */
static void uio_heap_import_unmap(struct uio_heap_import *imp)
{
	dma_buf_unmap_attachment_unlocked(imp->attach, imp->sgt,
					  DMA_BIDIRECTIONAL);
	dma_buf_detach(imp->dmabuf, imp->attach);
}

/* Gives an unmapped import's dma-buf back to its exporter. */
static void uio_heap_import_drop(struct uio_heap_import *imp)
{
	struct uio_heap *heap = imp->heap;

	dma_buf_put(imp->dmabuf);
	imp->dmabuf = NULL;
	spin_lock(&heap->lock);
	list_del(&imp->node);
	spin_unlock(&heap->lock);
	uio_heap_uncharge(heap, imp->size, true);
}

/* Attaches and maps @imp->dmabuf for the heap's device; @heap->sem held. */
static int uio_heap_import_map(struct uio_heap_import *imp)
{
	struct uio_heap *heap = imp->heap;
	int ret;

	/*
	 * Without an IOMMU, pages the device does not reach would be bounced,
	 * or, with no swiotlb, refused with a WARN: a device that does not
	 * reach all memory cannot import.  (One whose DMA is all bounced has
	 * no heap: uio_heap_create().)
	 */
	if (!uio_heap_translated(heap->dma_dev) &&
	    dma_addressing_limited(heap->dma_dev))
		return -ERANGE;

	imp->attach = dma_buf_attach(imp->dmabuf, heap->dma_dev);
	if (IS_ERR(imp->attach))
		return PTR_ERR(imp->attach);

	imp->sgt = dma_buf_map_attachment_unlocked(imp->attach,
						   DMA_BIDIRECTIONAL);
	if (IS_ERR(imp->sgt)) {
		ret = PTR_ERR(imp->sgt);
		goto detach;
	}

	ret = uio_heap_dma_range(heap->dma_dev, imp->sgt, imp->size,
				 &imp->dma_addr);
	if (ret)
		goto unmap;
	return 0;

unmap:
	dma_buf_unmap_attachment_unlocked(imp->attach, imp->sgt,
					  DMA_BIDIRECTIONAL);
detach:
	dma_buf_detach(imp->dmabuf, imp->attach);
	return ret;
}

/**
 * uio_heap_import() - attach a dma-buf for the heap's device
 * @hf:		the heap fd importing it; the import lives until released or
 *		until @hf is closed
 * @arg:	in: fd and flags; out: handle, address and size
 *
 * Return: 0, or -EBADF (@arg->fd not open), -EINVAL (not a dma-buf, or
 * unknown flags), -ENOSPC (the heap's max_bytes), -ERANGE (the device does
 * not reach the buffer as one range below its mask), -EPERM (the address
 * would be physical, see uio_heap_addr_permitted()), -ENODEV (the device
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

	down_read(&heap->sem);
	if (heap->dead) {
		ret = -ENODEV;
		goto unlock;
	}
	ret = uio_heap_addr_permitted(heap->dma_dev);
	if (ret)
		goto unlock;
	ret = uio_heap_charge(heap, imp->size, true);
	if (ret)
		goto unlock;
	ret = uio_heap_import_map(imp);
	if (ret)
		goto unaccount;

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
	if (ret < 0) {
		spin_lock(&heap->lock);
		list_del(&imp->node);
		spin_unlock(&heap->lock);
		uio_heap_import_unmap(imp);
		uio_heap_iotlb_sync(heap->dma_dev);
		goto unaccount;
	}
	up_read(&heap->sem);

	arg->handle = handle;
	return 0;

unaccount:
	uio_heap_uncharge(heap, imp->size, true);
unlock:
	up_read(&heap->sem);
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
		uio_heap_import_unmap(imp);
		uio_heap_iotlb_sync(heap->dma_dev);
		uio_heap_import_drop(imp);
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
 * Like uio_heap_revoke_buffers(): the device stops mastering the bus, each
 * import is unmapped and detached (behind an IOMMU the IOVA is gone and the
 * IOTLB invalidated on return) and its dma-buf given back to the exporter.
 * The handles stay valid until released or until their heap fd is closed.
 *
 * Context: @heap->sem held for writing.
 */
void uio_heap_revoke_imports(struct uio_heap *heap)
{
	struct uio_heap_import *imp, *tmp;

	lockdep_assert_held_write(&heap->sem);

	if (list_empty(&heap->imports))
		return;

	if (dev_is_pci(heap->dma_dev))
		pci_clear_master(to_pci_dev(heap->dma_dev));
	list_for_each_entry(imp, &heap->imports, node)
		uio_heap_import_unmap(imp);
	uio_heap_iotlb_sync(heap->dma_dev);
	list_for_each_entry_safe(imp, tmp, &heap->imports, node)
		uio_heap_import_drop(imp);
}
