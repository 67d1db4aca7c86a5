// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap buffers: pages that uio-heap owns, mapped for the heap's device
 * through the streaming DMA API, exported as dma-bufs.
 *
 * Behind a translating IOMMU a buffer is any set of pages laid out as one
 * IOVA range; without one it is one physically contiguous block below the
 * device's mask.  Either way the device sees one contiguous range, and the
 * pages are ordinary refcounted pages: user mappings of them work with
 * get_user_pages() (O_DIRECT, io_uring, vmsplice), importers map the real
 * pages for their own device, and a page somebody still holds (a pin, an
 * importer's mapping, a vmap) is freed only when the last of them lets go.
 * Whole blocks stay compound pages, so a pin on one page keeps its block
 * (up to the largest buddy order) until the pin goes.
 *
 * CPU mappings are filled on fault, never at mmap() time, so that every
 * PTE pointing at a buffer was installed after the VMA became visible to
 * unmap_mapping_range(): revoking a buffer then reliably zaps every
 * mapping, and a later fault sees the revoked flag and gets SIGBUS.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/iommu.h>
#include <linux/iosys-map.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "uio_heap.h"

/* Most pages one fault maps ahead; bounds the time revocation waits. */
#define UIO_HEAP_FAULT_AROUND	512

/* The largest block the buddy allocator gives (MAX_ORDER changed meaning in v6.4). */
#define UIO_HEAP_MAX_ORDER	ilog2(MAX_ORDER_NR_PAGES)

/* Bytes of revoked buffers whose memory still waits for its last user. */
atomic_long_t uio_heap_revoked_bytes = ATOMIC_LONG_INIT(0);
EXPORT_SYMBOL_IF_KUNIT(uio_heap_revoked_bytes);

struct uio_heap_attachment {
	struct device *dev;
	struct sg_table table;
	struct list_head node;
	enum dma_data_direction dir;
	bool mapped;
};

static const struct dma_buf_ops uio_heap_buf_ops;

/* The file operations of every dma-buf, learnt at the first export. */
static const struct file_operations *uio_heap_dma_buf_fops;

bool uio_heap_is_buffer(const struct dma_buf *dmabuf)
{
	return dmabuf->ops == &uio_heap_buf_ops;
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_is_buffer);

/*
 * uioN of a device that does not snoop: the CPU maps the buffer as the DMA
 * API maps coherent memory for it (uncached), so nothing may reach the
 * pages through the cacheable linear map.  As dma_direct_mmap() does, its
 * user mappings are PFN maps, which get_user_pages() refuses, and only
 * importers that do not snoop either may attach.
 */
static bool uio_heap_pfnmap(struct uio_heap *heap)
{
	return !heap->cached && !uio_heap_dma_coherent(heap->dma_dev);
}

static pgprot_t uio_heap_pgprot(struct uio_heap_buffer *buf, pgprot_t prot)
{
	if (buf->heap->cached)
		return prot;
	return uio_heap_coherent_pgprot(buf->heap->dma_dev, prot);
}

/* The pages as a table @dev may map: no segment beyond what it takes. */
static int uio_heap_sgt_alloc(struct sg_table *sgt,
			      struct uio_heap_buffer *buf, struct device *dev)
{
	size_t max = min_t(size_t, dma_get_max_seg_size(dev),
			   dma_max_mapping_size(dev));

	return sg_alloc_table_from_pages_segment(sgt, buf->pages,
						 buf->size >> PAGE_SHIFT, 0,
						 buf->size,
						 min_t(size_t, max, UINT_MAX) & PAGE_MASK,
						 GFP_KERNEL_ACCOUNT);
}

static int uio_heap_attach(struct dma_buf *dmabuf,
			   struct dma_buf_attachment *attachment)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap_attachment *a;
	int ret;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;

	mutex_lock(&buf->lock);
	if (buf->revoked) {
		ret = -ENODEV;
		goto unlock;
	}
	/* A snooping importer could be served stale lines of the cached alias. */
	if (uio_heap_pfnmap(buf->heap) && uio_heap_dma_coherent(attachment->dev)) {
		ret = -EOPNOTSUPP;
		goto unlock;
	}
	ret = uio_heap_sgt_alloc(&a->table, buf, attachment->dev);
	if (ret)
		goto unlock;

	a->dev = attachment->dev;
	INIT_LIST_HEAD(&a->node);
	attachment->priv = a;
	list_add(&a->node, &buf->attachments);
	mutex_unlock(&buf->lock);
	return 0;

unlock:
	mutex_unlock(&buf->lock);
	kfree(a);
	return ret;
}

static void uio_heap_detach(struct dma_buf *dmabuf,
			    struct dma_buf_attachment *attachment)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap_attachment *a = attachment->priv;

	mutex_lock(&buf->lock);
	list_del(&a->node);
	mutex_unlock(&buf->lock);

	sg_free_table(&a->table);
	kfree(a);
}

/*
 * The heap's device has the pages mapped already: importers map without
 * the implicit sync (DMA-API debugging reports overlapping mappings that
 * maintain caches), and sync explicitly instead, right after mapping and
 * before unmapping, and in begin/end_cpu_access, in their own direction.
 */
static struct sg_table *uio_heap_map_dma_buf(struct dma_buf_attachment *attachment,
					     enum dma_data_direction dir)
{
	struct uio_heap_buffer *buf = attachment->dmabuf->priv;
	struct uio_heap_attachment *a = attachment->priv;
	int ret;

	mutex_lock(&buf->lock);
	if (buf->revoked) {
		ret = -ENODEV;
		goto unlock;
	}
	ret = dma_map_sgtable(a->dev, &a->table, dir, DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		goto unlock;
	dma_sync_sgtable_for_device(a->dev, &a->table, dir);
	a->dir = dir;
	a->mapped = true;
	buf->map_count++;
	mutex_unlock(&buf->lock);
	return &a->table;

unlock:
	mutex_unlock(&buf->lock);
	return ERR_PTR(ret);
}

static void uio_heap_unmap_dma_buf(struct dma_buf_attachment *attachment,
				   struct sg_table *table,
				   enum dma_data_direction dir)
{
	struct uio_heap_buffer *buf = attachment->dmabuf->priv;
	struct uio_heap_attachment *a = attachment->priv;

	mutex_lock(&buf->lock);
	a->mapped = false;
	buf->map_count--;
	mutex_unlock(&buf->lock);

	dma_sync_sgtable_for_cpu(a->dev, table, dir);
	dma_unmap_sgtable(a->dev, table, dir, DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * DMA_BUF_IOCTL_SYNC and kernel CPU access: the cached node maintains the
 * caches for the heap's device; both nodes do it for importers that mapped
 * the buffer.  After a revoke only importers are left to sync for.
 */
static int uio_heap_cpu_access(struct dma_buf *dmabuf,
			       enum dma_data_direction dir, bool begin)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap_attachment *a;
	int ret = 0;

	mutex_lock(&buf->lock);
	if (buf->revoked && !buf->map_count) {
		ret = -ENODEV;
		goto unlock;
	}
	if (buf->heap->cached && !buf->revoked) {
		if (begin)
			dma_sync_sgtable_for_cpu(buf->heap->dma_dev, &buf->sgt, dir);
		else
			dma_sync_sgtable_for_device(buf->heap->dma_dev, &buf->sgt,
						    dir);
	}
	list_for_each_entry(a, &buf->attachments, node) {
		if (!a->mapped)
			continue;
		if (begin)
			dma_sync_sgtable_for_cpu(a->dev, &a->table, a->dir);
		else
			dma_sync_sgtable_for_device(a->dev, &a->table, a->dir);
	}
unlock:
	mutex_unlock(&buf->lock);
	return ret;
}

static int uio_heap_begin_cpu_access(struct dma_buf *dmabuf,
				     enum dma_data_direction dir)
{
	return uio_heap_cpu_access(dmabuf, dir, true);
}

static int uio_heap_end_cpu_access(struct dma_buf *dmabuf,
				   enum dma_data_direction dir)
{
	return uio_heap_cpu_access(dmabuf, dir, false);
}

/* The first page's PFN and a few after it; only the first one's result counts. */
static vm_fault_t uio_heap_insert_pfns(struct vm_area_struct *vma,
				       unsigned long addr, struct page **pages,
				       unsigned long nr)
{
	vm_fault_t ret = vmf_insert_pfn(vma, addr, page_to_pfn(pages[0]));
	unsigned long i;

	for (i = 1; i < nr && ret == VM_FAULT_NOPAGE; i++)
		if (vmf_insert_pfn(vma, addr + i * PAGE_SIZE,
				   page_to_pfn(pages[i])) != VM_FAULT_NOPAGE)
			break;
	return ret;
}

static vm_fault_t uio_heap_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct uio_heap_buffer *buf = vma->vm_private_data;
	struct uio_heap *heap = buf->heap;
	pgoff_t pgoff = vmf->pgoff, npages = buf->size >> PAGE_SHIFT;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long nr, left;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	int err;

	down_read(&heap->sem);
	if (buf->revoked || pgoff >= npages)
		goto unlock;

	/* This page and a few ahead; failures past the first are not ours. */
	nr = min3((vma->vm_end - addr) >> PAGE_SHIFT, npages - pgoff,
		  (unsigned long)UIO_HEAP_FAULT_AROUND);
	if (vma->vm_flags & VM_PFNMAP) {
		ret = uio_heap_insert_pfns(vma, addr, buf->pages + pgoff, nr);
		goto unlock;
	}
	left = nr;
	err = vm_insert_pages(vma, addr, buf->pages + pgoff, &left);
	if (left < nr || err == -EBUSY)	/* -EBUSY: a racing fault mapped it */
		ret = VM_FAULT_NOPAGE;
	else if (err == -ENOMEM)
		ret = VM_FAULT_OOM;
unlock:
	up_read(&heap->sem);
	return ret;
}

/*
 * Maps nothing: ->fault() does, under heap->sem, which cannot be taken in
 * here (RCU).  Having it tells the core that ->fault() may run under the
 * VMA lock alone (vmf_can_call_fault(), v6.7); without it every fault
 * would be given up and started again under mmap_lock.  ->fault() needs
 * neither: the page table lock serialises racing faults, and heap->sem
 * the revocation.
 */
static vm_fault_t uio_heap_vm_map_pages(struct vm_fault *vmf,
					pgoff_t start_pgoff, pgoff_t end_pgoff)
{
	return 0;
}

static const struct vm_operations_struct uio_heap_vm_ops = {
	.fault = uio_heap_vm_fault,
	.map_pages = uio_heap_vm_map_pages,
};

static int uio_heap_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap *heap = buf->heap;
	int ret = 0;

	/* Private (copy-on-write) mappings of DMA memory make no sense. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_pgoff > buf->size >> PAGE_SHIFT ||
	    vma_pages(vma) > (buf->size >> PAGE_SHIFT) - vma->vm_pgoff)
		return -EINVAL;

	down_read(&heap->sem);
	if (buf->revoked) {
		ret = -ENODEV;
		goto unlock;
	}
	vma->vm_page_prot = uio_heap_pgprot(buf, vma->vm_page_prot);
	/* Page-backed (get_user_pages() works) unless uncached for the CPU. */
	if (uio_heap_pfnmap(heap))
		vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	else
		vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &uio_heap_vm_ops;
	vma->vm_private_data = buf;
unlock:
	up_read(&heap->sem);
	return ret;
}

static int uio_heap_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	int ret = 0;

	mutex_lock(&buf->lock);
	if (buf->revoked) {
		ret = -ENODEV;
		goto unlock;
	}
	if (!buf->vmap_count) {
		buf->vaddr = vmap(buf->pages, buf->size >> PAGE_SHIFT, VM_MAP,
				  uio_heap_pgprot(buf, PAGE_KERNEL));
		if (!buf->vaddr) {
			ret = -ENOMEM;
			goto unlock;
		}
	}
	buf->vmap_count++;
	iosys_map_set_vaddr(map, buf->vaddr);
unlock:
	mutex_unlock(&buf->lock);
	return ret;
}

static void uio_heap_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct uio_heap_buffer *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	if (!--buf->vmap_count) {
		vunmap(buf->vaddr);
		buf->vaddr = NULL;
	}
	mutex_unlock(&buf->lock);
	iosys_map_clear(map);
}

/*
 * Takes the buffer out of the device's reach; uio_heap_iotlb_sync() must
 * follow before the pages can be freed.  No cache maintenance: the device
 * is stopped or the memory is being freed, and what the CPU wrote to the
 * cached node must survive for importers and pins.
 */
static void uio_heap_dma_unmap(struct uio_heap_buffer *buf)
{
	dma_unmap_sgtable(buf->heap->dma_dev, &buf->sgt, DMA_BIDIRECTIONAL,
			  DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * Drops uio-heap's references, one per block (uio_heap_take_pages()); a
 * page pinned elsewhere keeps its block until unpinned.
 */
void uio_heap_free_pages(struct uio_heap_buffer *buf)
{
	unsigned long i, n = 0, npages = buf->size >> PAGE_SHIFT;

	/* Filled front to back, block by block: a failed allocation leaves a NULL tail. */
	for (i = 0; i < npages && buf->pages[i]; i += compound_nr(buf->pages[i]))
		buf->pages[n++] = buf->pages[i];
	/* One reference per block; order-0 pages go back in per-CPU batches. */
	release_pages(buf->pages, n);
	kvfree(buf->pages);
	uio_heap_low_zone_uncharge(buf->low_zone);
}

/* The last user has gone: nothing maps the pages for any device any more. */
static void uio_heap_buffer_release(struct dma_buf *dmabuf)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap *heap = buf->heap;
	bool last;

	down_read(&heap->sem);
	if (!buf->revoked) {
		uio_heap_dma_unmap(buf);
		uio_heap_iotlb_sync(heap->dma_dev);
	} else {
		atomic_long_sub(buf->size, &uio_heap_revoked_bytes);
	}
	last = uio_heap_uncharge(heap, buf->size, &buf->node);
	up_read(&heap->sem);

	sg_free_table(&buf->sgt);
	iput(buf->inode);
	if (last)
		put_device(&heap->dev);
	if (buf->orphan) {
		uio_heap_orphan_buffer(buf);
		return;
	}
	uio_heap_free_pages(buf);
	mutex_destroy(&buf->lock);
	kfree(buf);
}

int uio_heap_buffer_dma_addr(struct uio_heap_buffer *buf, u64 *addr)
{
	int ret;

	/*
	 * No lock: the address is set before the buffer is exported and never
	 * changes, and the flag goes up before the device loses the buffer.
	 * A query racing with the revocation may still get the address, as
	 * it may when it comes just before; one that comes after cannot.
	 */
	if (READ_ONCE(buf->revoked))
		return -ENODEV;
	if (!buf->iova) {
		ret = uio_heap_addr_permitted(buf->heap->dma_dev);
		if (ret)
			return ret;
	}
	*addr = buf->dma_addr;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_buffer_dma_addr);

#ifdef HAVE_DMA_BUF_OPS_GET_DMA_ADDR
static int uio_heap_get_dma_addr(struct dma_buf *dmabuf, u64 *addr)
{
	return uio_heap_buffer_dma_addr(dmabuf->priv, addr);
}
#endif

static const struct dma_buf_ops uio_heap_buf_ops = {
	.attach = uio_heap_attach,
	.detach = uio_heap_detach,
	.map_dma_buf = uio_heap_map_dma_buf,
	.unmap_dma_buf = uio_heap_unmap_dma_buf,
	.begin_cpu_access = uio_heap_begin_cpu_access,
	.end_cpu_access = uio_heap_end_cpu_access,
	.mmap = uio_heap_mmap,
	.vmap = uio_heap_vmap,
	.vunmap = uio_heap_vunmap,
	.release = uio_heap_buffer_release,
#ifdef HAVE_DMA_BUF_OPS_GET_DMA_ADDR
	.get_dma_addr = uio_heap_get_dma_addr,
#endif
};

/*
 * Hands out the 2^@order pages at @page as @n pages.  A compound block is
 * taken whole and stays one: one reference, freed in one go, as the
 * system heap does.  Any other is split, and what @n leaves is freed.
 */
static void uio_heap_take_pages(struct page **pages, struct page *page,
				unsigned int order, unsigned long n)
{
	unsigned long i;

	if (PageCompound(page)) {
		WARN_ON_ONCE(n != 1UL << order);
		for (i = 0; i < n; i++)
			pages[i] = page + i;
		return;
	}
	split_page(page, order);
	for (i = 0; i < 1UL << order; i++) {
		if (i < n)
			pages[i] = page + i;
		else
			__free_page(page + i);
	}
}

/*
 * Behind an IOMMU: any pages will do, larger blocks first (fewer IOMMU
 * page-table entries and sg entries), without reclaim for those.  An order
 * that failed once is not tried again for this buffer, as the system heap
 * does.
 */
static int uio_heap_alloc_scattered(struct uio_heap_buffer *buf, gfp_t gfp)
{
	static const unsigned int orders[] = { 8, 4, 0 };
	const gfp_t high_order_gfp = (gfp | __GFP_HIGHMEM | __GFP_NORETRY | __GFP_COMP) &
				     ~(__GFP_RECLAIM | __GFP_RETRY_MAYFAIL);
	unsigned long done = 0, npages = buf->size >> PAGE_SHIFT, n;
	struct page *page = NULL;
	unsigned int i, first = 0;

	while (done < npages) {
		if (fatal_signal_pending(current))
			return -EINTR;
		for (i = first; i < ARRAY_SIZE(orders); i++) {
			if (npages - done < 1UL << orders[i])
				continue;
			page = alloc_pages(orders[i] ? high_order_gfp : gfp | __GFP_HIGHMEM,
					   orders[i]);
			if (page)
				break;
			first = i + 1;
		}
		if (!page)
			return -ENOMEM;
		n = 1UL << orders[i];
		uio_heap_take_pages(buf->pages + done, page, orders[i], n);
		done += n;
		cond_resched();
	}
	return 0;
}

/*
 * Without an IOMMU: one block the device reaches directly (below its mask
 * and its bus's limit), from the zone that guarantees it when the whole
 * of memory does not, as dma-direct chooses.
 */
static int uio_heap_alloc_contiguous(struct uio_heap_buffer *buf, gfp_t gfp)
{
	struct device *dev = buf->heap->dma_dev;
	unsigned int order = get_order(buf->size);
	struct page *page;
	gfp_t zone = 0;

	if (order > UIO_HEAP_MAX_ORDER)
		return -ENOMEM;
	/* Taken whole, the block can stay one compound page. */
	if (order && buf->size == PAGE_SIZE << order)
		gfp |= __GFP_COMP;
	/* Small zones last: ZONE_DMA may be all the kernel's own drivers have. */
	if (uio_heap_dma_limit(dev) <= DMA_BIT_MASK(32))
		zone = IS_ENABLED(CONFIG_ZONE_DMA32) ? __GFP_DMA32 : __GFP_DMA;

	while ((page = alloc_pages_node(dev_to_node(dev), gfp | zone, order))) {
		if (uio_heap_direct_addr(dev, page_to_phys(page), buf->size) !=
		    DMA_MAPPING_ERROR) {
			uio_heap_take_pages(buf->pages, page, order,
					    buf->size >> PAGE_SHIFT);
			return 0;
		}
		__free_pages(page, order);
		/* Not low enough: the next smaller zone, as dma-direct does. */
		if (!zone && IS_ENABLED(CONFIG_ZONE_DMA32))
			zone = __GFP_DMA32;
		else if (zone != __GFP_DMA && IS_ENABLED(CONFIG_ZONE_DMA))
			zone = __GFP_DMA;
		else
			break;
	}
	return -ENOMEM;
}

/* Maps the pages for the heap's device, which must see them as one range. */
static int uio_heap_dma_map(struct uio_heap_buffer *buf)
{
	struct device *dev = buf->heap->dma_dev;
	int ret;

	ret = uio_heap_sgt_alloc(&buf->sgt, buf, dev);
	if (ret)
		return ret;
	/* Also writes the zeroes back from the CPU caches of a non-coherent device. */
	ret = dma_map_sgtable(dev, &buf->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto free_table;

	/* Untranslated, the device must reach the pages, not a bounce buffer. */
	if (!uio_heap_dma_range(dev, &buf->sgt, buf->size, &buf->dma_addr) &&
	    (uio_heap_translated(dev) ||
	     buf->dma_addr == uio_heap_direct_addr(dev, page_to_phys(buf->pages[0]),
						   buf->size)))
		return 0;

	dev_err_ratelimited(&buf->heap->dev,
			    "DMA API mapped %zu bytes at %pad: not one range below the mask, or bounced\n",
			    buf->size, &buf->dma_addr);
	uio_heap_dma_unmap(buf);
	uio_heap_iotlb_sync(dev);
	ret = -ENOMEM;
free_table:
	sg_free_table(&buf->sgt);
	return ret;
}

/**
 * uio_heap_buffer_alloc() - allocate a buffer and export it as a dma-buf
 * @heap:	the heap
 * @len:	size, a non-zero multiple of PAGE_SIZE
 * @fd_flags:	O_CLOEXEC and access mode of the dma-buf file
 *
 * Return: the dma-buf, or an ERR_PTR(): -ENODEV if the heap's device has
 * gone, -ENOSPC beyond the heap's max_bytes or the low-zone budget, -ENOMEM
 * if there is no memory the device can reach in one range.
 */
struct dma_buf *uio_heap_buffer_alloc(struct uio_heap *heap, size_t len,
				      u32 fd_flags)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	/*
	 * Zeroed once, by the page allocator.  Charged to the allocating
	 * task's memory cgroup; past its limit, or when memory is short, the
	 * allocation fails rather than calling the OOM killer.
	 */
	const gfp_t gfp = GFP_USER | __GFP_ACCOUNT | __GFP_ZERO |
			  __GFP_RETRY_MAYFAIL | __GFP_NOWARN;
	struct uio_heap_buffer *buf;
	struct dma_buf *dmabuf;
	bool last = false;
	long charged;
	int ret;

	/* More than the RAM there is cannot succeed. */
	if (len >> PAGE_SHIFT > totalram_pages())
		return ERR_PTR(-ENOMEM);

	down_read(&heap->sem);
	if (heap->dead) {
		ret = -ENODEV;
		goto unlock;
	}
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto unlock;
	}
	buf->heap = heap;
	buf->size = len;
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);

	/* On the heap's list from here on, as no walker runs while we hold heap->sem. */
	ret = uio_heap_charge(heap, len, &buf->node);
	if (ret)
		goto free_buf;

	charged = uio_heap_low_zone_charge(heap->dma_dev, len);
	if (charged < 0) {
		ret = charged;
		goto unaccount;
	}
	buf->low_zone = charged;

	buf->pages = kvcalloc(len >> PAGE_SHIFT, sizeof(*buf->pages),
			      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!buf->pages) {
		ret = -ENOMEM;
		goto uncharge;
	}
	buf->iova = uio_heap_translated(heap->dma_dev);
	if (buf->iova)
		ret = uio_heap_alloc_scattered(buf, gfp);
	else
		ret = uio_heap_alloc_contiguous(buf, gfp);
	if (ret)
		goto free_pages;

	ret = uio_heap_dma_map(buf);
	if (ret)
		goto free_pages;

	exp_info.ops = &uio_heap_buf_ops;
	exp_info.exp_name = dev_name(&heap->dev);
	exp_info.size = len;
	exp_info.flags = fd_flags;
	exp_info.priv = buf;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto dma_unmap;
	}
	buf->dmabuf = dmabuf;
	if (!READ_ONCE(uio_heap_dma_buf_fops))
		WRITE_ONCE(uio_heap_dma_buf_fops, dmabuf->file->f_op);
	/*
	 * The last close evicts the inode before ->release() runs: keep it,
	 * so that a revocation racing with that close finds a live mapping.
	 */
	buf->inode = file_inode(dmabuf->file);
	ihold(buf->inode);

	up_read(&heap->sem);
	return dmabuf;

dma_unmap:
	uio_heap_dma_unmap(buf);
	uio_heap_iotlb_sync(heap->dma_dev);
	sg_free_table(&buf->sgt);
free_pages:
	uio_heap_free_pages(buf);
	goto unaccount;
uncharge:
	uio_heap_low_zone_uncharge(buf->low_zone);
unaccount:
	last = uio_heap_uncharge(heap, len, &buf->node);
free_buf:
	mutex_destroy(&buf->lock);
	kfree(buf);
unlock:
	up_read(&heap->sem);
	if (last)
		put_device(&heap->dev);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_buffer_alloc);

/**
 * uio_heap_buffer_fd_addr() - the DMA address of a buffer of @heap, by fd
 * @heap:	the heap the caller asked
 * @fd:		a dma-buf fd of the caller
 * @addr:	out: the address
 *
 * The file is borrowed (fdget()), not referenced: the caller's fd table
 * keeps it open while the call runs, unless another thread shares that
 * table, and then fdget() takes a reference.  A dma-buf is known by its
 * file operations, which every dma-buf file shares: those of the first
 * buffer uio-heap exported.
 *
 * Return: 0, -EBADF for a closed fd, -EINVAL for anything that is not a
 * buffer of @heap, or an error of uio_heap_buffer_dma_addr().
 */
int uio_heap_buffer_fd_addr(struct uio_heap *heap, int fd, u64 *addr)
{
	const struct file_operations *fops = READ_ONCE(uio_heap_dma_buf_fops);
	struct fd f = fdget(fd);
	struct file *file = fd_file(f);
	struct uio_heap_buffer *buf;
	struct dma_buf *dmabuf;
	int ret = -EINVAL;

	if (!file)
		return -EBADF;
	if (!fops || file->f_op != fops)
		goto put;
	dmabuf = file->private_data;
	if (!uio_heap_is_buffer(dmabuf))
		goto put;
	buf = dmabuf->priv;
	if (buf->heap == heap)
		ret = uio_heap_buffer_dma_addr(buf, addr);
put:
	fdput(f);
	return ret;
}

/**
 * uio_heap_revoke_buffers() - take every buffer away from the device
 * @heap:	a heap whose device is being unbound or removed
 *
 * A PCI device stops mastering the bus first, then each buffer
 * is unmapped for the device (behind an IOMMU its IOVA is gone and the
 * IOTLB invalidated when this returns).  CPU mappings are zapped and fault
 * with SIGBUS from now on.  The memory itself is freed when its last user
 * (the dma-buf's files, importers' mappings, vmaps, pinned pages) lets go;
 * until then it is counted in revoked_bytes.  If nothing stopped the
 * device, it is kept after that too, counted in orphaned_bytes.
 *
 * Context: @heap->sem held for writing.
 */
void uio_heap_revoke_buffers(struct uio_heap *heap)
{
	struct uio_heap_buffer *buf;
	bool stopped;

	lockdep_assert_held_write(&heap->sem);

	if (list_empty(&heap->buffers))
		return;

	stopped = uio_heap_dma_stop(heap->dma_dev);

	/* Releases need heap->sem: the list cannot change under us. */
	list_for_each_entry(buf, &heap->buffers, node) {
		mutex_lock(&buf->lock);
		WRITE_ONCE(buf->revoked, true);
		mutex_unlock(&buf->lock);
		buf->orphan = !stopped;

		unmap_mapping_range(buf->inode->i_mapping, 0, 0, 1);
		uio_heap_dma_unmap(buf);
		atomic_long_add(buf->size, &uio_heap_revoked_bytes);
	}
	uio_heap_iotlb_sync(heap->dma_dev);
}
