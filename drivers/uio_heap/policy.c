// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap: who may learn a buffer's DMA address, and how much memory a
 * heap may take.
 *
 * Behind a translating IOMMU the address is an IOVA: it reaches only this
 * buffer, so whoever may open the heap node may have it.  Without one (no
 * IOMMU, an identity or a blocking domain) it is a physical address: it
 * discloses the physical layout /proc/self/pagemap hides from users, and
 * hands whoever also holds /dev/uioN a precise aim.  As VFIO's no-IOMMU
 * mode does, it then takes CAP_SYS_RAWIO unless the administrator says
 * otherwise.  (The isolation boundary is /dev/uioN itself: a bus master
 * without an IOMMU reaches all memory whatever its user knows.)
 */
#include <linux/capability.h>
#include <linux/dma-direct.h>
#include <linux/dma-map-ops.h>
#include <linux/dma-mapping.h>
#include <linux/iommu.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/moduleparam.h>
#include <linux/panic.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/swiotlb.h>

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

/**
 * uio_heap_translated() - does an IOMMU translate the device's DMA
 * @dev:	the device doing the DMA
 *
 * Return: true for a DMA-API domain (strict or lazy): addresses are IOVAs,
 * and a buffer may be made of any pages.
 */
bool uio_heap_translated(struct device *dev)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);

	return domain && iommu_is_dma_domain(domain);
}

/**
 * uio_heap_iotlb_sync() - make unmappings for a device take effect now
 * @dev:	the device
 *
 * In lazy (flush-queue) mode the IOMMU unmaps without invalidating the
 * IOTLB, which would let the device reach pages after they are freed.
 * The mode can change at run time, so any DMA-API domain is flushed.
 */
void uio_heap_iotlb_sync(struct device *dev)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);

	if (domain && iommu_is_dma_domain(domain))
		iommu_flush_iotlb_all(domain);
}

/*
 * <linux/dma-map-ops.h> is meant for DMA-ops implementers, but only it says
 * whether a device snoops CPU caches and how the DMA API maps coherent
 * memory for one that does not.  Only this file uses it.
 */
bool uio_heap_dma_coherent(struct device *dev)
{
	return dev_is_dma_coherent(dev);
}

/* The heap's ``coherent`` attribute: "1" if @dev snoops CPU caches. */
const char *uio_heap_coherent_mode(struct device *dev)
{
	return dev_is_dma_coherent(dev) ? "1" : "0";
}

/* How the CPU maps memory that @dev sees without cache maintenance. */
pgprot_t uio_heap_coherent_pgprot(struct device *dev, pgprot_t prot)
{
	return dev_is_dma_coherent(dev) ? prot : pgprot_dmacoherent(prot);
}

/**
 * uio_heap_dma_limit() - the highest bus address a device reaches
 * @dev:	the device doing the DMA
 *
 * Return: its mask, lowered by its bus's DMA limit (a device tree's
 * dma-ranges, ACPI's _DMA), which the mask does not show.
 */
u64 uio_heap_dma_limit(struct device *dev)
{
	return min_not_zero(dma_get_mask(dev), dev->bus_dma_limit);
}

/**
 * uio_heap_direct_addr() - where an untranslated device reaches memory
 * @dev:	the device, without an IOMMU
 * @phys:	the first byte
 * @size:	the bytes from @phys on
 *
 * <linux/dma-direct.h>, like <linux/dma-map-ops.h>, is for DMA-API
 * implementers, but only dma-direct's translation (dma-ranges offsets,
 * memory encryption bits) says what bus address it hands out.
 *
 * Return: the bus address dma-direct maps @phys at, or DMA_MAPPING_ERROR
 * if it would bounce the range (beyond the mask or the bus's limit).
 */
dma_addr_t uio_heap_direct_addr(struct device *dev, phys_addr_t phys,
				size_t size)
{
	dma_addr_t first = phys_to_dma(dev, phys);
	dma_addr_t last = phys_to_dma(dev, phys + size - 1);

	if (first == DMA_MAPPING_ERROR || last != first + size - 1 ||
	    last > uio_heap_dma_limit(dev))
		return DMA_MAPPING_ERROR;
	return first;
}

/**
 * uio_heap_dma_bounced() - does dma-direct bounce all of a device's DMA
 * @dev:	the device doing the DMA
 *
 * A restricted-dma-pool, swiotlb=force or a confidential guest copies
 * every untranslated mapping through swiotlb: the device never reaches
 * the buffer itself, so no address of it may be handed out.
 *
 * Return: true if so.
 */
bool uio_heap_dma_bounced(struct device *dev)
{
	return !uio_heap_translated(dev) && is_swiotlb_force_bounce(dev);
}

/**
 * uio_heap_dma_range() - check that a device reaches a mapped table as one range
 * @dev:	the device the table was mapped for
 * @sgt:	the mapped table
 * @size:	the bytes it maps
 * @addr:	out: the range's first address
 *
 * The DMA API may map pages in several ranges (no IOMMU, scattered pages)
 * or bounce them through swiotlb, and the device would then reach a copy,
 * not the buffer.  Neither can be given to userspace as one address.
 *
 * Return: 0 if @dev reaches all @size bytes from @addr on, below its mask
 * and its bus's limit; -ERANGE otherwise.
 */
int uio_heap_dma_range(struct device *dev, struct sg_table *sgt, size_t size,
		       dma_addr_t *addr)
{
	struct scatterlist *sg;
	dma_addr_t next;
	int i;

	*addr = sg_dma_address(sgt->sgl);
	next = *addr;
	for_each_sgtable_dma_sg(sgt, sg, i) {
		if (sg_dma_address(sg) != next)
			return -ERANGE;
		next += sg_dma_len(sg);
	}
	if (next - *addr != size || next - 1 > uio_heap_dma_limit(dev))
		return -ERANGE;
	/* dma-direct on a coherent device syncs only what it bounced. */
	if (!uio_heap_translated(dev) && dev_is_dma_coherent(dev) &&
	    dma_need_sync(dev, *addr))
		return -ERANGE;
	return 0;
}

/**
 * uio_heap_revoke_mode() - what stops the device when its heap goes
 * @dev:	the device doing the DMA
 *
 * Return: "iommu" (buffers unmapped, IOTLB invalidated), "bus-master" (PCI
 * bus mastering off), or "none": nothing can stop a platform device
 * without an IOMMU, so its buffers' pages are kept from the allocator
 * until an administrator releases them (release_orphans).  The value of
 * the heap's ``revoke`` attribute.
 */
const char *uio_heap_revoke_mode(struct device *dev)
{
	if (uio_heap_translated(dev))
		return "iommu";
	return dev_is_pci(dev) ? "bus-master" : "none";
}

/**
 * uio_heap_dma_stop() - stop the device's DMA at revocation
 * @dev:	the device doing the DMA, about to be unbound
 *
 * A PCI device stops mastering the bus, behind an IOMMU too: unmapping
 * already cuts it off there, but a device left running would then fault
 * on every transfer, and a migrating exporter's unpin of an import must
 * not meet a device still running (uio_heap_revoke_imports()).
 *
 * Return: false if nothing stops @dev (revoke mode "none").
 */
bool uio_heap_dma_stop(struct device *dev)
{
	if (dev_is_pci(dev))
		pci_clear_master(to_pci_dev(dev));
	return dev_is_pci(dev) || uio_heap_translated(dev);
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

/**
 * uio_heap_charge() - reserve bytes of the heap's max_bytes
 * @heap:	the heap
 * @len:	bytes of a buffer, or of an imported buffer if @buffer is NULL
 * @buffer:	the new buffer's entry, put on @heap->buffers in the same
 *		critical section; NULL to count an import
 *
 * Buffers and imports share the limit.  The first buffer also takes a
 * reference to @heap->dev for all of them, which the last one's
 * uio_heap_uncharge() gives back: one lock, and no shared count bumped
 * per buffer.
 *
 * Context: a buffer only with @heap->sem held (walkers of the list hold
 * it for writing, and may meet a buffer still being set up otherwise).
 * Return: 0, or -ENOSPC beyond max_bytes.
 */
int uio_heap_charge(struct uio_heap *heap, size_t len, struct list_head *buffer)
{
	int ret = 0;

	spin_lock(&heap->lock);
	if (heap->max_bytes &&
	    (len > heap->max_bytes ||
	     heap->allocated_bytes + heap->imported_bytes > heap->max_bytes - len)) {
		ret = -ENOSPC;
	} else if (!buffer) {
		heap->imported_bytes += len;
		heap->nr_imports++;
	} else {
		heap->allocated_bytes += len;
		if (!heap->nr_buffers++)
			get_device(&heap->dev);
		list_add_tail(buffer, &heap->buffers);
	}
	spin_unlock(&heap->lock);
	return ret;
}

/**
 * uio_heap_uncharge() - give back what uio_heap_charge() reserved
 * @heap:	the heap
 * @len:	the bytes charged
 * @buffer:	the buffer's entry, taken off @heap->buffers; NULL for an import
 *
 * Return: true if that was the heap's last buffer: the caller drops the
 * reference to @heap->dev with put_device() once it is done with @heap.
 */
bool uio_heap_uncharge(struct uio_heap *heap, size_t len,
		       struct list_head *buffer)
{
	bool last = false;

	spin_lock(&heap->lock);
	if (!buffer) {
		heap->imported_bytes -= len;
		heap->nr_imports--;
	} else {
		heap->allocated_bytes -= len;
		last = !--heap->nr_buffers;
		list_del(buffer);
	}
	spin_unlock(&heap->lock);
	return last;
}

static unsigned long long uio_heap_default_max;
module_param_named(default_max_bytes, uio_heap_default_max, ullong, 0644);
MODULE_PARM_DESC(default_max_bytes,
		 "max_bytes of a new heap; 0 (default) for half of the RAM");

/**
 * uio_heap_default_max_bytes() - the limit a new heap starts with
 *
 * Return: default_max_bytes, or half of the RAM when that is 0.
 */
u64 uio_heap_default_max_bytes(void)
{
	u64 max = READ_ONCE(uio_heap_default_max);

	return max ?: (u64)totalram_pages() << (PAGE_SHIFT - 1);
}

/*
 * Without translation, a limit below 32 bits (mask or bus) takes memory
 * from the small zones that the kernel's own drivers need: all heaps
 * together get low_zone_max_bytes of it, by default a quarter of
 * ZONE_DMA (4 MiB of x86's 16; an arm64 ZONE_DMA reaches as far as the
 * most limited bus does).  A 32-bit limit draws on ZONE_DMA32, which
 * max_bytes and the memory cgroup bound instead.
 */
static unsigned long uio_heap_low_zone_max;
module_param_named(low_zone_max_bytes, uio_heap_low_zone_max, ulong, 0644);
MODULE_PARM_DESC(low_zone_max_bytes,
		 "Bytes all heaps together may allocate untranslated below a 32-bit limit (0 at load: a quarter of ZONE_DMA)");

/**
 * uio_heap_low_zone_init() - size the low-zone budget unless given at load
 */
void uio_heap_low_zone_init(void)
{
	unsigned long pages = 0;
	int __maybe_unused nid;

	if (uio_heap_low_zone_max)
		return;
#ifdef CONFIG_ZONE_DMA
	for_each_online_node(nid)
		pages += zone_managed_pages(&NODE_DATA(nid)->node_zones[ZONE_DMA]);
#endif
	uio_heap_low_zone_max = pages ? pages << (PAGE_SHIFT - 2) : SZ_4M;
}

static atomic_long_t uio_heap_low_zone_used;

module_param_cb(low_zone_bytes, &uio_heap_counter_ops, &uio_heap_low_zone_used, 0444);
MODULE_PARM_DESC(low_zone_bytes, "Bytes allocated untranslated below a 32-bit mask");

/**
 * uio_heap_low_zone_charge() - charge an allocation to the low-zone budget
 * @dev:	the device doing the DMA
 * @len:	bytes about to be allocated below its current DMA limit
 *
 * Return: @len if charged (give it back with uio_heap_low_zone_uncharge()),
 * 0 if the allocation does not come from the low zones, or -ENOSPC.
 */
long uio_heap_low_zone_charge(struct device *dev, size_t len)
{
	if (uio_heap_dma_limit(dev) >= DMA_BIT_MASK(32) || uio_heap_translated(dev))
		return 0;
	if (atomic_long_add_return(len, &uio_heap_low_zone_used) >
	    READ_ONCE(uio_heap_low_zone_max)) {
		atomic_long_sub(len, &uio_heap_low_zone_used);
		return -ENOSPC;
	}
	return len;
}

void uio_heap_low_zone_uncharge(size_t len)
{
	atomic_long_sub(len, &uio_heap_low_zone_used);
}
