// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap buffers: coherent DMA memory of the heap's device, exported as
 * dma-bufs.
 *
 * CPU mappings are filled on fault, never at mmap() time, so that every
 * PTE pointing at a buffer was installed after the VMA became visible to
 * unmap_mapping_range(): revoking a buffer then reliably zaps every
 * mapping, and a later fault sees the revoked flag and gets SIGBUS.
 */
#include <linux/dma-buf.h>
#include <linux/dma-map-ops.h>
#include <linux/dma-mapping.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "uio_heap.h"

/* Most pages one fault maps ahead; bounds the time revocation waits. */
#define UIO_HEAP_FAULT_AROUND	512

atomic_long_t uio_heap_quarantined_bytes = ATOMIC_LONG_INIT(0);
EXPORT_SYMBOL_IF_KUNIT(uio_heap_quarantined_bytes);

struct uio_heap_attachment {
	struct device *dev;
	struct sg_table table;
	struct list_head node;
	bool mapped;
};

static const struct dma_buf_ops uio_heap_buf_ops;

bool uio_heap_is_buffer(const struct dma_buf *dmabuf)
{
	return dmabuf->ops == &uio_heap_buf_ops;
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_is_buffer);

static int uio_heap_dup_sgt(struct sg_table *to, const struct sg_table *from)
{
	struct scatterlist *sg, *new_sg;
	int ret, i;

	ret = sg_alloc_table(to, from->orig_nents, GFP_KERNEL);
	if (ret)
		return ret;

	new_sg = to->sgl;
	for_each_sgtable_sg(from, sg, i) {
		sg_set_page(new_sg, sg_page(sg), sg->length, sg->offset);
		new_sg = sg_next(new_sg);
	}
	return 0;
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
	ret = uio_heap_dup_sgt(&a->table, &buf->sgt);
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
	/*
	 * The memory is coherent for the heap's device and the CPU reaches it
	 * through coherent mappings only: no cache maintenance when an
	 * importer maps it.  Explicit syncs (begin/end_cpu_access) still
	 * reach importers that need them.
	 */
	ret = dma_map_sgtable(a->dev, &a->table, dir, DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		goto unlock;
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

	dma_unmap_sgtable(a->dev, table, dir, DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * The memory is coherent for the heap's own device; only importers that
 * mapped the buffer for themselves may need their caches synced.
 */
static int uio_heap_begin_cpu_access(struct dma_buf *dmabuf,
				     enum dma_data_direction dir)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap_attachment *a;
	int ret = 0;

	mutex_lock(&buf->lock);
	if (buf->revoked && !buf->quarantined)
		ret = -ENODEV;
	else
		list_for_each_entry(a, &buf->attachments, node)
			if (a->mapped)
				dma_sync_sgtable_for_cpu(a->dev, &a->table, dir);
	mutex_unlock(&buf->lock);
	return ret;
}

static int uio_heap_end_cpu_access(struct dma_buf *dmabuf,
				   enum dma_data_direction dir)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap_attachment *a;
	int ret = 0;

	mutex_lock(&buf->lock);
	if (buf->revoked && !buf->quarantined)
		ret = -ENODEV;
	else
		list_for_each_entry(a, &buf->attachments, node)
			if (a->mapped)
				dma_sync_sgtable_for_device(a->dev, &a->table,
							    dir);
	mutex_unlock(&buf->lock);
	return ret;
}

static unsigned long uio_heap_buffer_pfn(struct uio_heap_buffer *buf,
					 pgoff_t pgoff)
{
	void *va = buf->vaddr + (pgoff << PAGE_SHIFT);

	if (is_vmalloc_addr(va))
		return vmalloc_to_pfn(va);
	return page_to_pfn(virt_to_page(va));
}

static vm_fault_t uio_heap_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct uio_heap_buffer *buf = vma->vm_private_data;
	struct uio_heap *heap = buf->heap;
	pgoff_t pgoff, npages = buf->size >> PAGE_SHIFT;
	unsigned long addr, end;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	down_read(&heap->sem);
	if (buf->revoked)
		goto unlock;

	pgoff = vmf->pgoff;
	if (pgoff >= npages)
		goto unlock;
	addr = vmf->address & PAGE_MASK;
	ret = vmf_insert_pfn(vma, addr, uio_heap_buffer_pfn(buf, pgoff));
	if (ret & VM_FAULT_ERROR)
		goto unlock;

	/* Map a few pages ahead; their failures are not this fault's. */
	end = min(vma->vm_end, addr + UIO_HEAP_FAULT_AROUND * PAGE_SIZE);
	while ((addr += PAGE_SIZE) < end && ++pgoff < npages)
		if (vmf_insert_pfn(vma, addr, uio_heap_buffer_pfn(buf, pgoff)) &
		    VM_FAULT_ERROR)
			break;
unlock:
	up_read(&heap->sem);
	return ret;
}

/*
 * GUP cannot reach these mappings (VM_PFNMAP), so ptrace and /proc/PID/mem
 * come here: copy through the kernel's own mapping while it is there.
 */
static int uio_heap_vm_access(struct vm_area_struct *vma, unsigned long addr,
			      void *data, int len, int write)
{
	struct uio_heap_buffer *buf = vma->vm_private_data;
	unsigned long off = addr - vma->vm_start + (vma->vm_pgoff << PAGE_SHIFT);
	int ret;

	if (write && !(vma->vm_flags & VM_WRITE))
		return -EACCES;
	if (off >= buf->size)
		return -EINVAL;
	len = min_t(unsigned long, len, buf->size - off);

	down_read(&buf->heap->sem);
	if (buf->revoked) {
		ret = -EIO;
	} else {
		if (write)
			memcpy(buf->vaddr + off, data, len);
		else
			memcpy(data, buf->vaddr + off, len);
		ret = len;
	}
	up_read(&buf->heap->sem);
	return ret;
}

static const struct vm_operations_struct uio_heap_vm_ops = {
	.fault = uio_heap_vm_fault,
	.access = uio_heap_vm_access,
};

static int uio_heap_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap *heap = buf->heap;
	int ret = 0;

	/* Private (copy-on-write) mappings of device memory make no sense. */
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
	if (!dev_is_dma_coherent(heap->dma_dev))
		vma->vm_page_prot = pgprot_dmacoherent(vma->vm_page_prot);
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
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
	} else {
		buf->vmap_count++;
		iosys_map_set_vaddr(map, buf->vaddr);
	}
	mutex_unlock(&buf->lock);
	return ret;
}

static void uio_heap_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct uio_heap_buffer *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	buf->vmap_count--;
	mutex_unlock(&buf->lock);
	iosys_map_clear(map);
}

static void uio_heap_free_memory(struct uio_heap_buffer *buf)
{
	sg_free_table(&buf->sgt);
	dma_free_coherent(buf->heap->dma_dev, buf->size, buf->vaddr,
			  buf->dma_addr);
	uio_heap_low_zone_uncharge(buf->low_zone);
}

static void uio_heap_unaccount(struct uio_heap *heap, size_t size)
{
	spin_lock(&heap->lock);
	heap->allocated_bytes -= size;
	heap->nr_buffers--;
	spin_unlock(&heap->lock);
}

static void uio_heap_release(struct dma_buf *dmabuf)
{
	struct uio_heap_buffer *buf = dmabuf->priv;
	struct uio_heap *heap = buf->heap;

	down_read(&heap->sem);
	if (!buf->revoked)
		uio_heap_free_memory(buf);
	else if (buf->quarantined)
		sg_free_table(&buf->sgt);
	spin_lock(&heap->lock);
	list_del(&buf->node);
	spin_unlock(&heap->lock);
	uio_heap_unaccount(heap, buf->size);
	up_read(&heap->sem);

	iput(buf->inode);
	put_device(&heap->dev);
	mutex_destroy(&buf->lock);
	kfree(buf);
}

int uio_heap_buffer_dma_addr(struct uio_heap_buffer *buf, u64 *addr)
{
	int ret = 0;

	mutex_lock(&buf->lock);
	if (buf->revoked)
		ret = -ENODEV;
	else
		ret = uio_heap_addr_permitted(buf->heap->dma_dev);
	if (!ret)
		*addr = buf->dma_addr;
	mutex_unlock(&buf->lock);
	return ret;
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
	.release = uio_heap_release,
#ifdef HAVE_DMA_BUF_OPS_GET_DMA_ADDR
	.get_dma_addr = uio_heap_get_dma_addr,
#endif
};

/* Reserve @len bytes against the heap's limit. */
static int uio_heap_account(struct uio_heap *heap, size_t len)
{
	int ret = 0;

	spin_lock(&heap->lock);
	if (heap->max_bytes && (len > heap->max_bytes ||
				heap->allocated_bytes > heap->max_bytes - len)) {
		ret = -ENOSPC;
	} else {
		heap->allocated_bytes += len;
		heap->nr_buffers++;
	}
	spin_unlock(&heap->lock);
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
 * if the DMA API cannot provide the memory within the device's coherent
 * mask.
 */
struct dma_buf *uio_heap_buffer_alloc(struct uio_heap *heap, size_t len,
				      u32 fd_flags)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct uio_heap_buffer *buf;
	struct dma_buf *dmabuf;
	long charged;
	int ret;

	/* More than the RAM there is cannot succeed; fail before the DMA
	 * layer sizes bookkeeping (IOVA, page arrays) for it.
	 */
	if (len >> PAGE_SHIFT > totalram_pages())
		return ERR_PTR(-ENOMEM);

	down_read(&heap->sem);
	if (heap->dead) {
		ret = -ENODEV;
		goto unlock;
	}

	ret = uio_heap_account(heap, len);
	if (ret)
		goto unlock;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto unaccount;
	}
	buf->heap = heap;
	buf->size = len;
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);

	charged = uio_heap_low_zone_charge(heap->dma_dev, len);
	if (charged < 0) {
		ret = charged;
		goto free_buf;
	}
	buf->low_zone = charged;

	/*
	 * dma_alloc_coherent() zeroes the memory.  The pages are charged to
	 * the allocating task's memory cgroup where they come from the page
	 * allocator (not from CMA or a device's own pool); past its limit,
	 * or when memory is short, the allocation fails rather than calling
	 * the OOM killer on userspace's behalf.
	 */
	buf->vaddr = dma_alloc_coherent(heap->dma_dev, len, &buf->dma_addr,
					GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
					__GFP_NOWARN);
	if (!buf->vaddr) {
		ret = -ENOMEM;
		goto uncharge;
	}

	/* The DMA API promises this; a wrong address must never leak out. */
	if (buf->dma_addr + (len - 1) > heap->dma_dev->coherent_dma_mask ||
	    buf->dma_addr + (len - 1) < buf->dma_addr) {
		dev_err_ratelimited(&heap->dev,
				    "DMA API returned %pad beyond the coherent mask\n",
				    &buf->dma_addr);
		ret = -ENOMEM;
		goto free_coherent;
	}

	/* Importers and CPU faults need the pages behind the memory. */
	ret = dma_get_sgtable(heap->dma_dev, &buf->sgt, buf->vaddr,
			      buf->dma_addr, len);
	if (ret)
		goto free_coherent;

	exp_info.ops = &uio_heap_buf_ops;
	exp_info.exp_name = dev_name(&heap->dev);
	exp_info.size = len;
	exp_info.flags = fd_flags;
	exp_info.priv = buf;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto free_sgt;
	}
	buf->dmabuf = dmabuf;
	/*
	 * The last close evicts the inode before ->release() runs: keep it,
	 * so that a revocation racing with that close finds a live mapping.
	 */
	buf->inode = file_inode(dmabuf->file);
	ihold(buf->inode);

	get_device(&heap->dev);
	spin_lock(&heap->lock);
	list_add_tail(&buf->node, &heap->buffers);
	spin_unlock(&heap->lock);
	up_read(&heap->sem);
	return dmabuf;

free_sgt:
	sg_free_table(&buf->sgt);
free_coherent:
	dma_free_coherent(heap->dma_dev, len, buf->vaddr, buf->dma_addr);
uncharge:
	uio_heap_low_zone_uncharge(buf->low_zone);
free_buf:
	mutex_destroy(&buf->lock);
	kfree(buf);
unaccount:
	uio_heap_unaccount(heap, len);
unlock:
	up_read(&heap->sem);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_buffer_alloc);

/**
 * uio_heap_buffer_get() - look up a dma-buf fd that must belong to @heap
 * @heap:	the heap the caller asked
 * @fd:		the fd
 *
 * Return: the buffer, with a reference on its dma-buf the caller drops
 * with dma_buf_put(); -EBADF for a closed fd, -EINVAL for anything that is
 * not a buffer of @heap.
 */
struct uio_heap_buffer *uio_heap_buffer_get(struct uio_heap *heap, int fd)
{
	struct uio_heap_buffer *buf;
	struct dma_buf *dmabuf;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return ERR_CAST(dmabuf);

	if (!uio_heap_is_buffer(dmabuf))
		goto not_ours;
	buf = dmabuf->priv;
	if (buf->heap != heap)
		goto not_ours;
	return buf;

not_ours:
	dma_buf_put(dmabuf);
	return ERR_PTR(-EINVAL);
}

/**
 * uio_heap_revoke_buffers() - take every buffer's memory away
 * @heap:	a heap whose device is being unbound or removed
 *
 * The device is stopped from mastering the bus first (PCI), so that DMA
 * userspace left programmed cannot reach memory returned here.  CPU
 * mappings are zapped and fault with SIGBUS from now on.  Memory that an
 * importer still has mapped, or the kernel has vmapped, cannot be returned
 * safely: it is quarantined, i.e. never given back, and counted.
 *
 * Context: @heap->sem held for writing.
 */
void uio_heap_revoke_buffers(struct uio_heap *heap)
{
	struct uio_heap_buffer *buf;

	lockdep_assert_held_write(&heap->sem);

	if (list_empty(&heap->buffers))
		return;

	if (dev_is_pci(heap->dma_dev))
		pci_clear_master(to_pci_dev(heap->dma_dev));

	/* Releases need heap->sem: the list cannot change under us. */
	list_for_each_entry(buf, &heap->buffers, node) {
		mutex_lock(&buf->lock);
		buf->revoked = true;
		buf->quarantined = buf->map_count || buf->vmap_count;
		mutex_unlock(&buf->lock);

		unmap_mapping_range(buf->inode->i_mapping, 0, 0, 1);

		if (buf->quarantined) {
			atomic_long_add(buf->size, &uio_heap_quarantined_bytes);
			dev_warn_ratelimited(&heap->dev,
					     "%zu bytes still in use by an importer: quarantined, not freed\n",
					     buf->size);
		} else {
			uio_heap_free_memory(buf);
		}
	}
}
