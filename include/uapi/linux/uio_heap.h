/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * uio-heap userspace API
 *
 * The uio-heap nodes /dev/dma_heap/uioN and /dev/dma_heap/uioN-cached are
 * DMA heaps for the device that does the DMA behind the UIO device uioN
 * (its parent).  uioN's buffers need no cache maintenance for the device;
 * uioN-cached's are always mapped cacheable, and DMA_BUF_IOCTL_SYNC does
 * the cache maintenance for the device.  Both answer DMA_HEAP_IOCTL_ALLOC
 * from <linux/dma-heap.h> exactly like the kernel's dma-heap core, plus
 * the ioctl below, which tells the owner of a buffer the address its
 * device has to be programmed with.
 */
#ifndef _UAPI_LINUX_UIO_HEAP_H
#define _UAPI_LINUX_UIO_HEAP_H

#include <linux/ioctl.h>
#include <linux/types.h>

/**
 * DOC: uio-heap address query
 *
 * The address returned is the one the heap's DMA device uses to reach the
 * buffer: an I/O virtual address when an IOMMU translates for the device,
 * a bus address otherwise.  A buffer is contiguous in that address space,
 * so one address and the buffer's size describe it completely.  The
 * address belongs to that device only; another device must import the
 * dma-buf and map it for itself.
 */

/* No flags are defined yet. */
#define UIO_HEAP_VALID_ADDR_FLAGS	(0U)

/**
 * struct uio_heap_dma_addr - argument of UIO_HEAP_IOCTL_GET_DMA_ADDR
 * @fd:		in: a dma-buf fd allocated from the heap the ioctl is issued on
 * @flags:	in: must be 0
 * @dma_addr:	out: the buffer's DMA address for the heap's device
 */
struct uio_heap_dma_addr {
	__u32 fd;
	__u32 flags;
	__u64 dma_addr;
};

/*
 * The heap node answers DMA_HEAP_IOCTL_ALLOC ('H', nr 0) like the dma-heap
 * core; uio-heap's own commands have a magic of their own, 'J', which
 * Documentation/userspace-api/ioctl/ioctl-number.rst assigns to nothing,
 * from nr 0x40 on.
 */
#define UIO_HEAP_IOC_MAGIC		'J'

/**
 * DOC: UIO_HEAP_IOCTL_GET_DMA_ADDR - DMA address of a buffer of this heap
 *
 * Takes a &struct uio_heap_dma_addr and fills in @dma_addr.  Errors:
 * EBADF if @fd is not open, EINVAL if it is not a dma-buf allocated from
 * this heap or @flags has unknown bits, ENODEV once the heap's device has
 * gone (the buffer was revoked), EPERM if the address is physical (no
 * translating IOMMU) and the caller lacks CAP_SYS_RAWIO, EFAULT for a bad
 * argument pointer.
 */
#define UIO_HEAP_IOCTL_GET_DMA_ADDR	_IOWR(UIO_HEAP_IOC_MAGIC, 0x40, \
					      struct uio_heap_dma_addr)

/**
 * DOC: DMA_BUF_IOCTL_GET_DMA_ADDR - DMA address, asked of the dma-buf itself
 *
 * Only kernels carrying uio-heap's dma-buf core patches implement this
 * ioctl on a dma-buf fd; others answer ENOTTY.  Exporters that cannot give
 * one contiguous address answer EINVAL.  Defined here for systems whose
 * <linux/dma-buf.h> predates it, so that userspace can always try it first
 * and fall back to UIO_HEAP_IOCTL_GET_DMA_ADDR.  The argument is a __u64,
 * so the number is the same for 32- and 64-bit callers.
 */
#ifndef DMA_BUF_IOCTL_GET_DMA_ADDR
#define DMA_BUF_IOCTL_GET_DMA_ADDR	_IOR('b', 4, __u64)
#endif

#endif /* _UAPI_LINUX_UIO_HEAP_H */
