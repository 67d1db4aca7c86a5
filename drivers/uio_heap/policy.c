// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap: who may learn a buffer's DMA address.
 *
 * Behind a translating IOMMU the address is an IOVA: it reaches only this
 * buffer, so whoever may open the heap node may have it.  Without one (no
 * IOMMU, or an identity domain) it is a physical address, and its holder
 * can aim the device at any memory; like VFIO's no-IOMMU mode, it then
 * takes CAP_SYS_RAWIO unless the administrator says otherwise.
 */
#include <linux/capability.h>
#include <linux/iommu.h>
#include <linux/moduleparam.h>
#include <linux/panic.h>

#include "uio_heap.h"

static bool uio_heap_unsafe_noiommu;
module_param_named(unsafe_noiommu_addresses, uio_heap_unsafe_noiommu, bool, 0644);
MODULE_PARM_DESC(unsafe_noiommu_addresses,
		 "Give physical DMA addresses (no translating IOMMU) to callers without CAP_SYS_RAWIO; taints the kernel");

/**
 * uio_heap_iommu_mode() - how the DMA device's addresses are translated
 * @dev:	the device doing the DMA
 *
 * Return: "none", "identity", "dma", "dma-fq" (lazy unmapping), or another
 * domain type's name; the value of the heap's ``iommu`` attribute.
 */
const char *uio_heap_iommu_mode(struct device *dev)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);

	if (!domain)
		return "none";
	switch (domain->type) {
	case IOMMU_DOMAIN_IDENTITY:
		return "identity";
	case IOMMU_DOMAIN_DMA:
		return "dma";
	case IOMMU_DOMAIN_DMA_FQ:
		return "dma-fq";
	case IOMMU_DOMAIN_BLOCKED:
		return "blocked";
	default:
		return "unmanaged";
	}
}

static bool uio_heap_translated(struct device *dev)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);

	return domain && (domain->type & __IOMMU_DOMAIN_PAGING);
}

/**
 * uio_heap_addr_permitted() - may the caller learn addresses of this device
 * @dev:	the device doing the DMA
 *
 * Return: 0, or -EPERM for a physical address and a caller without
 * CAP_SYS_RAWIO while unsafe_noiommu_addresses is off.
 */
int uio_heap_addr_permitted(struct device *dev)
{
	if (uio_heap_translated(dev) || capable(CAP_SYS_RAWIO))
		return 0;
	if (!READ_ONCE(uio_heap_unsafe_noiommu))
		return -EPERM;
	add_taint(TAINT_USER, LOCKDEP_STILL_OK);
	pr_warn_once("uio_heap: unsafe_noiommu_addresses: %s (pid %d) gets physical DMA addresses of %s without CAP_SYS_RAWIO; kernel tainted\n",
		     current->comm, task_pid_nr(current), dev_name(dev));
	return 0;
}
