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
 * the ioctls below: one tells the owner of a buffer the address its
 * device has to be programmed with, two import a dma-buf of any other
 * exporter for the device and release it.
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

/*
 * UIO_HEAP_IMPORT_NO_WAIT: do not wait for the exporter's fences; the
 * caller waits itself (poll() on the dma-buf fd, or a sync_file from
 * DMA_BUF_IOCTL_EXPORT_SYNC_FILE).  Fences the dma-buf core itself waits
 * for while mapping (an exporter's migration) are still waited for.
 */
#define UIO_HEAP_IMPORT_NO_WAIT		(1U << 0)
#define UIO_HEAP_VALID_IMPORT_FLAGS	(UIO_HEAP_IMPORT_NO_WAIT)

/*
 * UIO_HEAP_IMPORT_OUT_READ_ONLY: the dma-buf fd was not open for writing,
 * so the buffer was mapped for device reads only (DMA_TO_DEVICE): an IOMMU
 * that translates for the device faults its writes.
 */
#define UIO_HEAP_IMPORT_OUT_READ_ONLY	(1U << 0)

/**
 * struct uio_heap_import_data - argument of UIO_HEAP_IOCTL_IMPORT
 * @fd:		in: a dma-buf fd from any exporter
 * @flags:	in: UIO_HEAP_IMPORT_* flags of UIO_HEAP_VALID_IMPORT_FLAGS
 * @handle:	out: names the import for UIO_HEAP_IOCTL_UNIMPORT; never 0, and
 *		not given out again by this heap fd until 2^31 imports later
 * @out_flags:	out: UIO_HEAP_IMPORT_OUT_* flags (ignored on input)
 * @dma_addr:	out: the buffer's address for the heap's device
 * @size:	out: the buffer's size in bytes
 */
struct uio_heap_import_data {
	__u32 fd;
	__u32 flags;
	__u32 handle;
	__u32 out_flags;
	__u64 dma_addr;
	__u64 size;
};

/**
 * struct uio_heap_unimport_data - argument of UIO_HEAP_IOCTL_UNIMPORT
 * @handle:	in: an import of the heap fd the ioctl is issued on
 * @flags:	in: must be 0
 */
struct uio_heap_unimport_data {
	__u32 handle;
	__u32 flags;
};

/**
 * DOC: UIO_HEAP_IOCTL_IMPORT - map a dma-buf of any exporter for the device
 *
 * Takes a &struct uio_heap_import_data: the dma-buf is attached and mapped
 * for the heap's device, held until UIO_HEAP_IOCTL_UNIMPORT, the close of
 * the heap fd that imported it, or the device's removal (then it is
 * unmapped, and the exporter gets its buffer back, while the device still
 * exists).  Unless UIO_HEAP_IMPORT_NO_WAIT, it first waits for the
 * exporter's fences: for every one if the device may write, for writers
 * only if it may only read.  A dma-buf fd open read-only is mapped for
 * device reads only (UIO_HEAP_IMPORT_OUT_READ_ONLY in @out_flags).  Fills
 * in @handle, @out_flags, and @dma_addr and @size: the device reaches the
 * whole buffer from @dma_addr on.  Imports count against the heap's
 * max_bytes.  Errors: EBADF if @fd is not open, EINVAL if it is not a
 * dma-buf or @flags has unknown bits, EPERM as for
 * UIO_HEAP_IOCTL_GET_DMA_ADDR, ETIMEDOUT if the fences did not signal
 * within the module's import_fence_timeout_ms (0: at once if one is
 * pending), EINTR for a signal while waiting, ERANGE if the device cannot
 * reach the buffer as one range below its DMA mask (without an IOMMU:
 * scattered pages, or a mask that does not cover all memory), ENOSPC
 * beyond max_bytes, ENODEV once the device has gone, or an error of the
 * exporter.
 */
#define UIO_HEAP_IOCTL_IMPORT		_IOWR(UIO_HEAP_IOC_MAGIC, 0x41, \
					      struct uio_heap_import_data)

/**
 * DOC: UIO_HEAP_IOCTL_UNIMPORT - release an import
 *
 * Takes a &struct uio_heap_unimport_data.  The device must no longer use
 * the address.  Works after the device has gone too.  Errors: ENOENT if
 * the heap fd holds no import @handle, EINVAL for unknown @flags.
 */
#define UIO_HEAP_IOCTL_UNIMPORT		_IOW(UIO_HEAP_IOC_MAGIC, 0x42, \
					     struct uio_heap_unimport_data)

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
