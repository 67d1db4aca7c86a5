/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uio-heap internals: one DMA heap per UIO device, allocating for the
 * device that really does the DMA (the UIO device's parent).
 */
#ifndef _UIO_HEAP_H
#define _UIO_HEAP_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/dma-direction.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>

struct dma_buf;
struct dma_buf_attachment;
struct uio_heap_import_data;

/**
 * struct uio_heap - a DMA heap bound to one UIO device
 * @dev:		class device, /sys/class/uio_heap/uioN, devnode dma_heap/uioN
 * @cdev:		the heap node's character device
 * @dma_dev:		the device doing DMA (the UIO device's parent); referenced
 * @uio_dev:		the UIO class device the heap is named after; referenced
 * @node:		entry in the list of live heaps, under uio_heap_list_lock
 * @sem:		held for reading while @dma_dev is used (allocate, free,
 *			fault, mmap), for writing to revoke or change the mask
 * @dead:		@dma_dev is gone or going; set under @sem held for writing
 * @cached:		the uioN-cached node: CPU mappings are always cacheable,
 *			DMA_BUF_IOCTL_SYNC maintains the caches for @dma_dev
 * @orig_mask:		@dma_dev's streaming mask when the heap was created
 * @orig_coherent_mask:	and its coherent mask
 * @mask_changed:	the masks must be restored when the heap goes
 * @lock:		protects @buffers and the counters below
 * @buffers:		live buffers of this heap
 * @allocated_bytes:	sum of the sizes of @buffers (and of reservations)
 * @nr_buffers:		number of @buffers
 * @max_bytes:		limit for @allocated_bytes + @imported_bytes, 0 for none
 * @imports:		imports mapped for @dma_dev
 * @imported_bytes:	sum of their sizes
 * @nr_imports:		number of @imports
 */
struct uio_heap {
	struct device dev;
	struct cdev cdev;
	struct device *dma_dev;
	struct device *uio_dev;
	struct list_head node;

	struct rw_semaphore sem;
	bool dead;
	bool cached;
	u64 orig_mask;
	u64 orig_coherent_mask;
	bool mask_changed;

	spinlock_t lock;		/* @buffers, counters */
	struct list_head buffers;
	u64 allocated_bytes;
	u64 nr_buffers;
	u64 max_bytes;
	struct list_head imports;
	u64 imported_bytes;
	u64 nr_imports;
};

/**
 * struct uio_heap_file - an open heap node
 * @heap:	the heap
 * @imports:	the imports it made, by handle
 * @next_handle: where the cyclic search for a free handle starts
 */
struct uio_heap_file {
	struct uio_heap *heap;
	struct xarray imports;
	u32 next_handle;
};

/**
 * struct uio_heap_import - a dma-buf of another exporter mapped for the heap's device
 * @heap:	the heap whose device it is mapped for
 * @node:	entry in @heap->imports while mapped, under @heap->lock
 * @dmabuf:	the imported dma-buf, referenced while mapped; NULL after
 *		release or revocation
 * @attach:	its attachment to @heap->dma_dev
 * @sgt:	its mapping for @heap->dma_dev
 * @dir:	its direction: DMA_TO_DEVICE for a dma-buf open read-only
 * @pinned:	@attach is dynamic and pinned (the exporter migrates buffers);
 *		else static, and detaching it is what unmaps it
 * @dma_addr:	the one range @heap->dma_dev reaches it at
 * @size:	its size in bytes
 */
struct uio_heap_import {
	struct uio_heap *heap;
	struct list_head node;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	enum dma_data_direction dir;
	bool pinned;
	dma_addr_t dma_addr;
	size_t size;
};

/**
 * struct uio_heap_buffer - pages mapped for the heap's device, exported as a dma-buf
 * @heap:		heap it came from; a reference to @heap->dev is held
 * @dma_addr:		address of the buffer for @heap->dma_dev (one range)
 * @iova:		@dma_addr is an IOVA: a translating IOMMU mapped it
 * @node:		entry in @heap->buffers, under @heap->lock, from the charge
 *			on; a reference to @heap->dev is held while there is one
 * @dmabuf:		the exported dma-buf
 * @inode:		its file's inode, referenced until release: the last close
 *			drops the dentry's reference before ->release() runs,
 *			and a revocation may come in between
 * @size:		size in bytes, a multiple of PAGE_SIZE
 * @low_zone:		bytes charged to the low-zone budget (0 or @size)
 * @pages:		the buffer's order-0 pages, one reference each
 * @sgt:		@pages, mapped for @heap->dma_dev until released or revoked
 * @vaddr:		kernel mapping while @vmap_count
 * @lock:		protects @attachments, @map_count, @vmap_count, @vaddr,
 *			@revoked
 * @attachments:	attachments of importers
 * @map_count:		attachments currently mapped by their importer
 * @vmap_count:		outstanding kernel mappings (vmap)
 * @revoked:		unmapped for the device because it went; set with
 *			@heap->sem held for writing and @lock held; the address
 *			query reads it under neither.  The pages stay until the
 *			last user lets go.
 * @orphan:		revoked, but nothing stopped the device: the pages stay
 *			after the last user, until uio_heap_release_orphans()
 */
struct uio_heap_buffer {
	/* What the address query reads, in one cache line. */
	struct uio_heap *heap;
	dma_addr_t dma_addr;
	bool revoked;
	bool iova;

	struct list_head node;
	struct dma_buf *dmabuf;
	struct inode *inode;
	size_t size;
	size_t low_zone;
	struct page **pages;
	struct sg_table sgt;
	void *vaddr;

	struct mutex lock;		/* attachments, counts, flags */
	struct list_head attachments;
	unsigned int map_count;
	unsigned int vmap_count;
	bool orphan;
};

/* main.c */
extern struct class uio_heap_class;
extern const struct kernel_param_ops uio_heap_counter_ops;
int uio_heap_minor_get(dev_t *devt);
void uio_heap_minor_put(dev_t devt);

/* heap.c */
struct dma_heap_allocation_data;
int uio_heap_check_alloc(const struct dma_heap_allocation_data *data,
			 size_t *len);
int uio_heap_set_mask_bits(struct uio_heap *heap, unsigned int bits);
struct uio_heap *uio_heap_lookup(struct device *uio_dev, bool cached);
int uio_heap_create(struct device *dma_dev, struct device *uio_dev);
void uio_heap_remove_for(struct device *dma_dev);
void uio_heap_remove_all(void);

/* buffer.c */
struct dma_buf *uio_heap_buffer_alloc(struct uio_heap *heap, size_t len,
				      u32 fd_flags);
int uio_heap_buffer_fd_addr(struct uio_heap *heap, int fd, u64 *addr);
int uio_heap_buffer_dma_addr(struct uio_heap_buffer *buf, u64 *addr);
void uio_heap_revoke_buffers(struct uio_heap *heap);
bool uio_heap_is_buffer(const struct dma_buf *dmabuf);
void uio_heap_free_pages(struct uio_heap_buffer *buf);
extern atomic_long_t uio_heap_revoked_bytes;

/* import.c */
int uio_heap_import(struct uio_heap_file *hf, struct uio_heap_import_data *arg);
int uio_heap_unimport(struct uio_heap_file *hf, u32 handle);
void uio_heap_unimport_all(struct uio_heap_file *hf);
void uio_heap_revoke_imports(struct uio_heap *heap);

/* orphan.c */
void uio_heap_orphan_buffer(struct uio_heap_buffer *buf);
void uio_heap_orphan_import(struct dma_buf *dmabuf);
void uio_heap_release_orphans(void);
extern atomic_long_t uio_heap_orphaned_bytes;

/* policy.c */
const char *uio_heap_iommu_mode(struct device *dev);
bool uio_heap_translated(struct device *dev);
void uio_heap_iotlb_sync(struct device *dev);
const char *uio_heap_revoke_mode(struct device *dev);
bool uio_heap_dma_stop(struct device *dev);
u64 uio_heap_dma_limit(struct device *dev);
bool uio_heap_dma_bounced(struct device *dev);
dma_addr_t uio_heap_direct_addr(struct device *dev, phys_addr_t phys,
				size_t size);
int uio_heap_dma_range(struct device *dev, struct sg_table *sgt, size_t size,
		       dma_addr_t *addr);
bool uio_heap_dma_coherent(struct device *dev);
const char *uio_heap_coherent_mode(struct device *dev);
pgprot_t uio_heap_coherent_pgprot(struct device *dev, pgprot_t prot);
int uio_heap_addr_permitted(struct device *dev);
int uio_heap_charge(struct uio_heap *heap, size_t len, struct list_head *buffer);
bool uio_heap_uncharge(struct uio_heap *heap, size_t len,
		       struct list_head *buffer);
u64 uio_heap_default_max_bytes(void);
void uio_heap_low_zone_init(void);
long uio_heap_low_zone_charge(struct device *dev, size_t len);
void uio_heap_low_zone_uncharge(size_t len);

/* discover.c */
int uio_heap_discover_init(void);
void uio_heap_discover_exit(void);

#endif /* _UIO_HEAP_H */
