// SPDX-License-Identifier: GPL-2.0
/*
 * Finding UIO devices.
 *
 * The UIO class is private to uio.ko, so heaps follow the UIO devices'
 * parents instead: UIO drivers (uio_pci_generic, uio_pdrv_genirq,
 * uio_dmem_genirq, ...) register their UIO device in probe() and remove it
 * in remove().  A bus notifier sees every bind (after probe, so the UIO
 * device exists) and every unbind (before remove, so the parent is still
 * bound, still present and still has its IOMMU domain).  That is where a
 * heap is born and where its buffers are revoked.
 */
#include <linux/device.h>
#include <linux/notifier.h>
#include <linux/pci.h>
#include <linux/platform_device.h>

#include "uio_heap.h"

static bool uio_heap_is_uio_device(const struct device *dev)
{
	return dev->class && !strcmp(dev->class->name, "uio");
}

static int uio_heap_add_child(struct device *child, void *data)
{
	struct device *parent = data;
	int ret;

	if (!uio_heap_is_uio_device(child))
		return 0;

	ret = uio_heap_create(parent, child);
	/* -EOPNOTSUPP: uio_heap_create() has said why. */
	if (ret && ret != -EOPNOTSUPP)
		dev_warn(parent, "no DMA heap for %s: %d\n", dev_name(child), ret);
	return 0;
}

/* Called with the device lock of @dev held. */
static void uio_heap_scan(struct device *dev)
{
	if (!dev->driver)
		return;
	device_for_each_child(dev, dev, uio_heap_add_child);
}

static int uio_heap_bus_notify(struct notifier_block *nb,
			       unsigned long action, void *data)
{
	struct device *dev = data;

	switch (action) {
	case BUS_NOTIFY_BOUND_DRIVER:
		uio_heap_scan(dev);
		break;
	case BUS_NOTIFY_UNBIND_DRIVER:
		uio_heap_remove_for(dev);
		break;
	}
	return NOTIFY_DONE;
}

static int uio_heap_scan_one(struct device *dev, void *data)
{
	device_lock(dev);
	uio_heap_scan(dev);
	device_unlock(dev);
	return 0;
}

static struct notifier_block uio_heap_pci_nb = {
	.notifier_call = uio_heap_bus_notify,
};

static struct notifier_block uio_heap_platform_nb = {
	.notifier_call = uio_heap_bus_notify,
};

int uio_heap_discover_init(void)
{
	int ret;

	/*
	 * Notifiers first, then the scan: a bind in between is seen twice,
	 * and uio_heap_create() ignores the second time.
	 */
	ret = bus_register_notifier(&pci_bus_type, &uio_heap_pci_nb);
	if (ret)
		return ret;
	ret = bus_register_notifier(&platform_bus_type, &uio_heap_platform_nb);
	if (ret)
		goto unregister_pci;

	bus_for_each_dev(&pci_bus_type, NULL, NULL, uio_heap_scan_one);
	bus_for_each_dev(&platform_bus_type, NULL, NULL, uio_heap_scan_one);
	return 0;

unregister_pci:
	bus_unregister_notifier(&pci_bus_type, &uio_heap_pci_nb);
	/* A PCI bind in between made heaps already. */
	uio_heap_remove_all();
	return ret;
}

void uio_heap_discover_exit(void)
{
	bus_unregister_notifier(&platform_bus_type, &uio_heap_platform_nb);
	bus_unregister_notifier(&pci_bus_type, &uio_heap_pci_nb);
	uio_heap_remove_all();
}
