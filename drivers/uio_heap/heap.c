// SPDX-License-Identifier: GPL-2.0
/*
 * The heap nodes: /dev/dma_heap/uioN and /dev/dma_heap/uioN-cached, with
 * /sys/class/uio_heap/uioN and uioN-cached.  The two nodes of a UIO device
 * are two heaps of the same DMA device; they differ only in how the CPU
 * maps their buffers.
 *
 * DMA_HEAP_IOCTL_ALLOC is handled exactly as drivers/dma-buf/dma-heap.c
 * does it, so that dma-heap users (libdmabufheap, GStreamer, ...) work
 * unchanged; UIO_HEAP_IOCTL_GET_DMA_ADDR tells the address of a buffer.
 */
#include <linux/cc_platform.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/nospec.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/dma-heap.h>

#include <linux/uio_heap.h>

#include "compat.h"
#include "uio_heap.h"

static LIST_HEAD(uio_heap_list);
static DEFINE_MUTEX(uio_heap_list_lock);

static struct uio_heap *to_uio_heap(struct device *dev)
{
	return container_of(dev, struct uio_heap, dev);
}

static int uio_heap_file_open(struct inode *inode, struct file *file)
{
	struct uio_heap_file *hf;

	hf = kzalloc(sizeof(*hf), GFP_KERNEL_ACCOUNT);
	if (!hf)
		return -ENOMEM;
	hf->heap = container_of(inode->i_cdev, struct uio_heap, cdev);
	xa_init_flags(&hf->imports, XA_FLAGS_ALLOC1);
	file->private_data = hf;
	return nonseekable_open(inode, file);
}

static int uio_heap_file_release(struct inode *inode, struct file *file)
{
	struct uio_heap_file *hf = file->private_data;

	uio_heap_unimport_all(hf);
	xa_destroy(&hf->imports);
	kfree(hf);
	return 0;
}

/**
 * uio_heap_check_alloc() - validate an allocation request, as the core does
 * @data:	the request
 * @len:	out: the length rounded up to pages
 *
 * The checks of dma_heap_ioctl_allocate(), in the same order.
 *
 * Return: 0, or -EINVAL.
 */
int uio_heap_check_alloc(const struct dma_heap_allocation_data *data,
			 size_t *len)
{
	if (data->fd)
		return -EINVAL;
	if (data->fd_flags & ~DMA_HEAP_VALID_FD_FLAGS)
		return -EINVAL;
	if (data->heap_flags & ~DMA_HEAP_VALID_HEAP_FLAGS)
		return -EINVAL;

	/* No silent truncation where size_t is 32 bits, nor a rounding to 0. */
	if (!data->len || data->len > SIZE_MAX - PAGE_SIZE + 1)
		return -EINVAL;
	*len = PAGE_ALIGN(data->len);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_check_alloc);

static struct dma_buf *uio_heap_ioctl_allocate(struct uio_heap *heap,
					       struct dma_heap_allocation_data *data)
{
	struct dma_buf *dmabuf;
	size_t len;
	int fd, ret;

	ret = uio_heap_check_alloc(data, &len);
	if (ret)
		return ERR_PTR(ret);

	dmabuf = uio_heap_buffer_alloc(heap, len, data->fd_flags);
	if (IS_ERR(dmabuf))
		return dmabuf;

	fd = get_unused_fd_flags(data->fd_flags);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return ERR_PTR(fd);
	}
	data->fd = fd;
	return dmabuf;
}

/*
 * dma_heap_ioctl(): an older (smaller) or newer (larger) struct than ours
 * is accepted, missing fields read as zero, the direction bits of the
 * caller's command decide what is copied in and out, and the fd is
 * installed only once the result has reached userspace.
 */
static long uio_heap_ioctl_alloc(struct uio_heap *heap, unsigned int ucmd,
				 unsigned long arg)
{
	const unsigned int kcmd = DMA_HEAP_IOCTL_ALLOC;
	unsigned int in_size, out_size, ksize;
	char stack_kdata[128] __aligned(8);
	char *kdata = stack_kdata;
	struct dma_buf *dmabuf;
	long ret = 0;
	int fd;

	out_size = _IOC_SIZE(ucmd);
	in_size = out_size;
	if ((ucmd & kcmd & IOC_IN) == 0)
		in_size = 0;
	if ((ucmd & kcmd & IOC_OUT) == 0)
		out_size = 0;
	ksize = max3(in_size, out_size, (unsigned int)_IOC_SIZE(kcmd));

	if (ksize > sizeof(stack_kdata)) {
		kdata = kmalloc(ksize, GFP_KERNEL);
		if (!kdata)
			return -ENOMEM;
	}

	if (copy_from_user(kdata, (void __user *)arg, in_size)) {
		ret = -EFAULT;
		goto free_kdata;
	}
	if (ksize > in_size)
		memset(kdata + in_size, 0, ksize - in_size);

	dmabuf = uio_heap_ioctl_allocate(heap, (void *)kdata);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto free_kdata;
	}

	fd = ((struct dma_heap_allocation_data *)kdata)->fd;
	if (copy_to_user((void __user *)arg, kdata, out_size)) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		ret = -EFAULT;
	} else {
		fd_install(fd, dmabuf->file);
	}

free_kdata:
	if (kdata != stack_kdata)
		kfree(kdata);
	return ret;
}

/*
 * Reads the argument in one user access, all of it so that a pointer
 * that is only partly valid gets EFAULT before any other error, and
 * writes the address out: nothing else crosses.
 */
static long uio_heap_ioctl_get_dma_addr(struct uio_heap *heap,
					struct uio_heap_dma_addr __user *uarg)
{
	u32 fd, flags;
	u64 addr;
	int ret;

	if (!user_read_access_begin(uarg, sizeof(*uarg)))
		return -EFAULT;
	unsafe_get_user(fd, &uarg->fd, efault);
	unsafe_get_user(flags, &uarg->flags, efault);
	unsafe_get_user(addr, &uarg->dma_addr, efault);
	user_read_access_end();
	if (flags & ~UIO_HEAP_VALID_ADDR_FLAGS)
		return -EINVAL;

	ret = uio_heap_buffer_fd_addr(heap, fd, &addr);
	if (ret)
		return ret;
	if (put_user(addr, &uarg->dma_addr))
		return -EFAULT;
	return 0;

efault:
	user_read_access_end();
	return -EFAULT;
}

static long uio_heap_ioctl_import(struct uio_heap_file *hf, void __user *uarg)
{
	struct uio_heap_import_data arg;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	ret = uio_heap_import(hf, &arg);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		uio_heap_unimport(hf, arg.handle);
		return -EFAULT;
	}
	return 0;
}

static long uio_heap_ioctl_unimport(struct uio_heap_file *hf, void __user *uarg)
{
	struct uio_heap_unimport_data arg;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags)
		return -EINVAL;
	return uio_heap_unimport(hf, arg.handle);
}

static long uio_heap_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct uio_heap_file *hf = file->private_data;
	struct uio_heap *heap = hf->heap;

	switch (cmd) {
	case UIO_HEAP_IOCTL_GET_DMA_ADDR:
		return uio_heap_ioctl_get_dma_addr(heap, (void __user *)arg);
	case UIO_HEAP_IOCTL_IMPORT:
		return uio_heap_ioctl_import(hf, (void __user *)arg);
	case UIO_HEAP_IOCTL_UNIMPORT:
		return uio_heap_ioctl_unimport(hf, (void __user *)arg);
	}

	/*
	 * Everything else goes the dma-heap core's way: it looks commands up
	 * by number alone, so nr 0 is ALLOC whatever its size and any other
	 * number is -EINVAL.
	 */
	if (_IOC_NR(cmd) != _IOC_NR(DMA_HEAP_IOCTL_ALLOC))
		return -EINVAL;
	return uio_heap_ioctl_alloc(heap, cmd, arg);
}

static const struct file_operations uio_heap_fops = {
	.owner = THIS_MODULE,
	.open = uio_heap_file_open,
	.release = uio_heap_file_release,
	.unlocked_ioctl = uio_heap_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/* sysfs: /sys/class/uio_heap/uioN/ */

static ssize_t dma_mask_bits_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	struct uio_heap *heap = to_uio_heap(dev);
	ssize_t ret;

	down_read(&heap->sem);
	if (heap->dead)
		ret = -ENODEV;
	else
		ret = sysfs_emit(buf, "%d\n", fls64(dma_get_mask(heap->dma_dev)));
	up_read(&heap->sem);
	return ret;
}

/**
 * uio_heap_set_mask_bits() - set the DMA mask later allocations use
 * @heap:	the heap
 * @bits:	mask width, PAGE_SHIFT to 64
 *
 * The mask is the user's statement of what the hardware can address: the
 * kernel driver (uio_pci_generic) cannot know it.  It is set on the DMA
 * device as its streaming and coherent mask, used by later allocations
 * only, and put back as it was when the heap goes.  The mask belongs to
 * the parent, which another driver owns: it changes under that device's
 * lock, only while the parent has no heaps but the two nodes of one UIO
 * device (so one UIO device saves and restores it), and never so that a
 * live buffer of either node would lie outside it.
 *
 * Context: the device lock of @heap->dma_dev held.
 * Return: 0, -EINVAL for a width out of range, -EIO if the platform cannot
 * honour the mask, -EBUSY if another UIO device shares the parent or a buffer
 * lies beyond the new mask, -ENODEV if the heap is being removed or gone.
 */
int uio_heap_set_mask_bits(struct uio_heap *heap, unsigned int bits)
{
	struct uio_heap *other, *sibling = NULL;
	struct uio_heap_buffer *buf;
	struct uio_heap_import *imp;
	bool listed = false;
	u64 mask;
	int ret = 0;

	device_lock_assert(heap->dma_dev);
	if (bits < PAGE_SHIFT || bits > 64)
		return -EINVAL;
	mask = DMA_BIT_MASK(bits);

	mutex_lock(&uio_heap_list_lock);
	down_write(&heap->sem);
	list_for_each_entry(other, &uio_heap_list, node) {
		listed |= other == heap;
		if (other == heap || other->dma_dev != heap->dma_dev)
			continue;
		if (other->uio_dev != heap->uio_dev) {
			ret = -EBUSY;
			goto unlock;
		}
		sibling = other;
	}
	/* Off the list: being destroyed (or gone), with its sibling. */
	if (!listed) {
		ret = -ENODEV;
		goto unlock;
	}
	/*
	 * Allocations hold their heap's sem: with both held, the buffer lists
	 * are complete.  Only this function takes two, under the list lock.
	 */
	if (sibling)
		down_write_nested(&sibling->sem, SINGLE_DEPTH_NESTING);
	for (other = heap; other; other = other == heap ? sibling : NULL) {
		spin_lock(&other->lock);
		list_for_each_entry(buf, &other->buffers, node)
			if (buf->dma_addr + buf->size - 1 > mask)
				ret = -EBUSY;
		list_for_each_entry(imp, &other->imports, node)
			if (imp->dma_addr + imp->size - 1 > mask)
				ret = -EBUSY;
		spin_unlock(&other->lock);
	}
	if (!ret)
		ret = dma_set_mask_and_coherent(heap->dma_dev, mask);
	if (!ret)
		heap->mask_changed = true;
	if (sibling)
		up_write(&sibling->sem);
unlock:
	up_write(&heap->sem);
	mutex_unlock(&uio_heap_list_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_set_mask_bits);

static ssize_t dma_mask_bits_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t count)
{
	struct uio_heap *heap = to_uio_heap(dev);
	unsigned int bits;
	int ret;

	ret = kstrtouint(buf, 0, &bits);
	if (ret)
		return ret;
	/*
	 * Unbinding the parent holds its lock while removing this file, which
	 * waits for us: try, and restart the write a little later.
	 */
	if (!device_trylock(heap->dma_dev)) {
		usleep_range(5000, 10000);
		return restart_syscall();
	}
	ret = uio_heap_set_mask_bits(heap, bits);
	device_unlock(heap->dma_dev);
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(dma_mask_bits);

static ssize_t max_bytes_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct uio_heap *heap = to_uio_heap(dev);
	u64 val;

	spin_lock(&heap->lock);
	val = heap->max_bytes;
	spin_unlock(&heap->lock);
	return sysfs_emit(buf, "%llu\n", val);
}

/* Lowering the limit below what is allocated only stops new buffers. */
static ssize_t max_bytes_store(struct device *dev,
			       struct device_attribute *attr,
			       const char *buf, size_t count)
{
	struct uio_heap *heap = to_uio_heap(dev);
	u64 val;
	int ret;

	ret = kstrtou64(buf, 0, &val);
	if (ret)
		return ret;

	spin_lock(&heap->lock);
	heap->max_bytes = val;
	spin_unlock(&heap->lock);
	return count;
}
static DEVICE_ATTR_RW(max_bytes);

/* A counter of the heap, read under its lock. */
static ssize_t uio_heap_show_counter(struct uio_heap *heap, char *buf,
				     const u64 *counter)
{
	u64 val;

	spin_lock(&heap->lock);
	val = *counter;
	spin_unlock(&heap->lock);
	return sysfs_emit(buf, "%llu\n", val);
}

static ssize_t allocated_bytes_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	struct uio_heap *heap = to_uio_heap(dev);

	return uio_heap_show_counter(heap, buf, &heap->allocated_bytes);
}
static DEVICE_ATTR_RO(allocated_bytes);

static ssize_t buffers_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct uio_heap *heap = to_uio_heap(dev);

	return uio_heap_show_counter(heap, buf, &heap->nr_buffers);
}
static DEVICE_ATTR_RO(buffers);

static ssize_t imported_bytes_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	struct uio_heap *heap = to_uio_heap(dev);

	return uio_heap_show_counter(heap, buf, &heap->imported_bytes);
}
static DEVICE_ATTR_RO(imported_bytes);

static ssize_t imports_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct uio_heap *heap = to_uio_heap(dev);

	return uio_heap_show_counter(heap, buf, &heap->nr_imports);
}
static DEVICE_ATTR_RO(imports);

/* A word about the DMA device, while the heap still has it. */
static ssize_t uio_heap_show_mode(struct device *dev, char *buf,
				  const char *(*mode)(struct device *dma_dev))
{
	struct uio_heap *heap = to_uio_heap(dev);
	ssize_t ret;

	down_read(&heap->sem);
	if (heap->dead)
		ret = -ENODEV;
	else
		ret = sysfs_emit(buf, "%s\n", mode(heap->dma_dev));
	up_read(&heap->sem);
	return ret;
}

static ssize_t iommu_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return uio_heap_show_mode(dev, buf, uio_heap_iommu_mode);
}
static DEVICE_ATTR_RO(iommu);

static ssize_t revoke_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return uio_heap_show_mode(dev, buf, uio_heap_revoke_mode);
}
static DEVICE_ATTR_RO(revoke);

static ssize_t coherent_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return uio_heap_show_mode(dev, buf, uio_heap_coherent_mode);
}
static DEVICE_ATTR_RO(coherent);

static struct attribute *uio_heap_attrs[] = {
	&dev_attr_iommu.attr,
	&dev_attr_revoke.attr,
	&dev_attr_coherent.attr,
	&dev_attr_dma_mask_bits.attr,
	&dev_attr_max_bytes.attr,
	&dev_attr_allocated_bytes.attr,
	&dev_attr_buffers.attr,
	&dev_attr_imported_bytes.attr,
	&dev_attr_imports.attr,
	NULL
};
ATTRIBUTE_GROUPS(uio_heap);

static void uio_heap_dev_release(struct device *dev)
{
	struct uio_heap *heap = to_uio_heap(dev);

	put_device(heap->uio_dev);
	put_device(heap->dma_dev);
	uio_heap_minor_put(heap->dev.devt);
	kfree(heap);
}

static void uio_heap_destroy(struct uio_heap *heap);

static struct uio_heap *uio_heap_find(struct device *uio_dev, bool cached)
{
	struct uio_heap *heap;

	lockdep_assert_held(&uio_heap_list_lock);
	list_for_each_entry(heap, &uio_heap_list, node)
		if (heap->uio_dev == uio_dev && heap->cached == cached)
			return heap;
	return NULL;
}

/**
 * uio_heap_lookup() - find a live heap of a UIO device
 * @uio_dev:	the UIO class device
 * @cached:	the uioN-cached node rather than uioN
 *
 * Return: the heap with a reference the caller drops with
 * put_device(&heap->dev), or NULL.
 */
struct uio_heap *uio_heap_lookup(struct device *uio_dev, bool cached)
{
	struct uio_heap *heap;

	mutex_lock(&uio_heap_list_lock);
	heap = uio_heap_find(uio_dev, cached);
	if (heap)
		get_device(&heap->dev);
	mutex_unlock(&uio_heap_list_lock);
	return heap;
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_lookup);

static int uio_heap_add(struct device *dma_dev, struct device *uio_dev,
			bool cached)
{
	struct uio_heap *heap;
	int ret;

	heap = kzalloc(sizeof(*heap), GFP_KERNEL);
	if (!heap)
		return -ENOMEM;

	ret = uio_heap_minor_get(&heap->dev.devt);
	if (ret) {
		kfree(heap);
		return ret;
	}

	heap->dma_dev = get_device(dma_dev);
	heap->uio_dev = get_device(uio_dev);
	heap->cached = cached;
	heap->orig_mask = dma_get_mask(dma_dev);
	heap->orig_coherent_mask = dma_dev->coherent_dma_mask;
	heap->max_bytes = uio_heap_default_max_bytes();
	init_rwsem(&heap->sem);
	spin_lock_init(&heap->lock);
	INIT_LIST_HEAD(&heap->buffers);
	INIT_LIST_HEAD(&heap->imports);

	/* From here on, put_device() frees everything. */
	device_initialize(&heap->dev);
	heap->dev.class = &uio_heap_class;
	heap->dev.parent = dma_dev;
	heap->dev.groups = uio_heap_groups;
	heap->dev.release = uio_heap_dev_release;
	ret = dev_set_name(&heap->dev, cached ? "%s-cached" : "%s",
			   dev_name(uio_dev));
	if (ret)
		goto put_heap;

	cdev_init(&heap->cdev, &uio_heap_fops);
	heap->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&heap->cdev, &heap->dev);
	if (ret)
		goto put_heap;

	list_add_tail(&heap->node, &uio_heap_list);
	dev_dbg(&heap->dev, "heap for %s\n", dev_name(dma_dev));
	return 0;

put_heap:
	put_device(&heap->dev);
	return ret;
}

/**
 * uio_heap_create() - create the two heap nodes of a UIO device
 * @dma_dev:	the device that does the DMA: the UIO device's parent
 * @uio_dev:	the UIO class device, whose name the heaps take
 *
 * Context: process context, the device lock of @dma_dev held.
 * Return: 0 if the heaps exist (also when they existed already), or an
 * errno; -EOPNOTSUPP where memory encryption is active or swiotlb
 * bounces all of @dma_dev's DMA.
 */
int uio_heap_create(struct device *dma_dev, struct device *uio_dev)
{
	struct uio_heap *heap = NULL;
	int ret = 0;

	/*
	 * SEV, TDX, SME: user mappings of shared memory would need
	 * pgprot_decrypted(), and no exported helper gives a module that.
	 */
	if (cc_platform_has(CC_ATTR_MEM_ENCRYPT)) {
		pr_err_once("uio_heap: memory encryption is active: DMA heaps cannot map shared memory for userspace, none created\n");
		return -EOPNOTSUPP;
	}
	if (uio_heap_dma_bounced(dma_dev)) {
		dev_err(dma_dev, "all DMA of this device is bounced through swiotlb: no DMA heap\n");
		return -EOPNOTSUPP;
	}

	mutex_lock(&uio_heap_list_lock);
	if (uio_heap_find(uio_dev, false))
		goto unlock;
	ret = uio_heap_add(dma_dev, uio_dev, false);
	if (ret)
		goto unlock;
	ret = uio_heap_add(dma_dev, uio_dev, true);
	if (ret) {
		heap = uio_heap_find(uio_dev, false);
		list_del(&heap->node);
	}
unlock:
	mutex_unlock(&uio_heap_list_lock);
	if (ret && heap)
		uio_heap_destroy(heap);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_create);

/*
 * Takes the heap away: no new opens or allocations, every buffer revoked
 * while @heap->dma_dev is still bound and present.  Open files keep the
 * struct alive (through the cdev's reference to @heap->dev) and see -ENODEV.
 * The heap is off the list already: revoking waits for allocations in
 * progress, and other devices' heaps must not wait with it.
 */
static void uio_heap_destroy(struct uio_heap *heap)
{
	cdev_device_del(&heap->cdev, &heap->dev);

	down_write(&heap->sem);
	heap->dead = true;
	uio_heap_revoke_buffers(heap);
	uio_heap_revoke_imports(heap);
	if (heap->mask_changed) {
		dma_set_mask(heap->dma_dev, heap->orig_mask);
		dma_set_coherent_mask(heap->dma_dev, heap->orig_coherent_mask);
	}
	up_write(&heap->sem);

	put_device(&heap->dev);
}

/**
 * uio_heap_remove_for() - remove the heaps whose buffers @dma_dev owns
 * @dma_dev:	a device about to be unbound from its driver
 *
 * Context: process context, the device lock of @dma_dev held.
 */
void uio_heap_remove_for(struct device *dma_dev)
{
	struct uio_heap *heap, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&uio_heap_list_lock);
	list_for_each_entry_safe(heap, tmp, &uio_heap_list, node)
		if (heap->dma_dev == dma_dev)
			list_move_tail(&heap->node, &gone);
	mutex_unlock(&uio_heap_list_lock);

	list_for_each_entry_safe(heap, tmp, &gone, node)
		uio_heap_destroy(heap);
}
EXPORT_SYMBOL_IF_KUNIT(uio_heap_remove_for);

/**
 * uio_heap_remove_all() - remove every heap, on module unload
 */
void uio_heap_remove_all(void)
{
	struct uio_heap *heap, *tmp;
	struct device *dma_dev;
	LIST_HEAD(gone);

	mutex_lock(&uio_heap_list_lock);
	list_splice_init(&uio_heap_list, &gone);
	mutex_unlock(&uio_heap_list_lock);

	/* The masks are restored under the lock unbinding would hold. */
	list_for_each_entry_safe(heap, tmp, &gone, node) {
		dma_dev = get_device(heap->dma_dev);
		device_lock(dma_dev);
		uio_heap_destroy(heap);
		device_unlock(dma_dev);
		put_device(dma_dev);
	}
}
