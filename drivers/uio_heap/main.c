// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap: DMA heaps for UIO devices
 *
 * Module entry: the uio_heap class, the heap nodes' character device
 * region, and the start of device discovery.
 */
#include <linux/idr.h>
#include <linux/kdev_t.h>
#include <linux/moduleparam.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "compat.h"
#include "uio_heap.h"

#define UIO_HEAP_MINORS	256

static dev_t uio_heap_devt;

/* A read-only module parameter showing the atomic_long_t at kp->arg. */
static int uio_heap_counter_get(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%ld\n", atomic_long_read(kp->arg));
}

const struct kernel_param_ops uio_heap_counter_ops = {
	.get = uio_heap_counter_get,
};

module_param_cb(revoked_bytes, &uio_heap_counter_ops, &uio_heap_revoked_bytes, 0444);
MODULE_PARM_DESC(revoked_bytes,
		 "Bytes of buffers whose device went, waiting for their last user to let go");

static DEFINE_IDA(uio_heap_minors);

static char *uio_heap_devnode(UIO_HEAP_CLASS_DEV *dev, umode_t *mode)
{
	/* Root only; grant a group with a udev rule (Documentation/). */
	if (mode)
		*mode = 0600;
	return kasprintf(GFP_KERNEL, "dma_heap/%s", dev_name(dev));
}

/*
 * The kernel's own dma-heap class is called "dma_heap" (6.12); ours needs
 * another name, but its nodes live in the same /dev/dma_heap directory.
 */
struct class uio_heap_class = {
	.name = "uio_heap",
	.devnode = uio_heap_devnode,
};

int uio_heap_minor_get(dev_t *devt)
{
	int minor;

	minor = ida_alloc_max(&uio_heap_minors, UIO_HEAP_MINORS - 1, GFP_KERNEL);
	if (minor < 0)
		return minor;
	*devt = MKDEV(MAJOR(uio_heap_devt), minor);
	return 0;
}

void uio_heap_minor_put(dev_t devt)
{
	ida_free(&uio_heap_minors, MINOR(devt));
}

static int __init uio_heap_init(void)
{
	int ret;

	uio_heap_low_zone_init();
	ret = alloc_chrdev_region(&uio_heap_devt, 0, UIO_HEAP_MINORS,
				  "uio_heap");
	if (ret)
		return ret;

	ret = class_register(&uio_heap_class);
	if (ret)
		goto unregister_region;

	ret = uio_heap_discover_init();
	if (ret)
		goto unregister_class;

	return 0;

unregister_class:
	class_unregister(&uio_heap_class);
unregister_region:
	unregister_chrdev_region(uio_heap_devt, UIO_HEAP_MINORS);
	return ret;
}
module_init(uio_heap_init);

static void __exit uio_heap_exit(void)
{
	uio_heap_discover_exit();
	class_unregister(&uio_heap_class);
	unregister_chrdev_region(uio_heap_devt, UIO_HEAP_MINORS);
	ida_destroy(&uio_heap_minors);
}
module_exit(uio_heap_exit);

MODULE_DESCRIPTION("DMA heaps for UIO devices, allocating for the device that does the DMA");
MODULE_AUTHOR("The uio-heap developers");
MODULE_LICENSE("GPL");
MODULE_SOFTDEP("pre: uio");
UIO_HEAP_IMPORT_NS("DMA_BUF");
