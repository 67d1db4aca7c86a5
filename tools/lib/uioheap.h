/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libuioheap: open a UIO device's DMA heap, allocate, map, and learn the
 * device address of a buffer.
 */
#ifndef UIOHEAP_H
#define UIOHEAP_H

#include <stddef.h>
#include <stdint.h>
#include <linux/dma-buf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which interface answered uioheap_dma_addr(). */
enum uioheap_addr_source {
	UIOHEAP_ADDR_DMA_BUF = 1,	/* DMA_BUF_IOCTL_GET_DMA_ADDR (patched core) */
	UIOHEAP_ADDR_HEAP,		/* UIO_HEAP_IOCTL_GET_DMA_ADDR */
};

/* All functions return -errno on failure. */

/* Opens /dev/dma_heap/<uio_name> ("uio0"); returns the heap fd. */
int uioheap_open(const char *uio_name);

/*
 * Allocates @len bytes (rounded up to pages); returns the dma-buf fd.
 * @fd_flags is the dma-buf file's access mode and O_CLOEXEC: O_RDWR to map
 * it writable.
 */
int uioheap_alloc(int heap_fd, size_t len, unsigned int fd_flags);

/*
 * The buffer's DMA address for the heap's device.  Tries the dma-buf's own
 * ioctl first and falls back to the heap node's (only the heap's, once the
 * kernel has shown it lacks the first); @source (may be NULL) tells which
 * one answered.
 */
int uioheap_dma_addr(int heap_fd, int buf_fd, uint64_t *addr,
		     enum uioheap_addr_source *source);

/* mmap()s @len bytes of the buffer shared, read-write; NULL on failure. */
void *uioheap_map(int buf_fd, size_t len);

/*
 * DMA_BUF_IOCTL_SYNC around CPU access: @start 1 to begin, 0 to end;
 * @write 0 for reading only (DMA_BUF_SYNC_READ), else reading and writing.
 */
int uioheap_sync(int buf_fd, int start, int write);

/*
 * The same with the CPU's access spelled out: @rw is DMA_BUF_SYNC_READ
 * (the CPU reads what the device wrote), DMA_BUF_SYNC_WRITE (the device
 * reads what the CPU wrote) or DMA_BUF_SYNC_RW.
 */
int uioheap_sync_rw(int buf_fd, int start, unsigned int rw);

/*
 * Imports the dma-buf @dmabuf_fd, from any exporter, for the heap's device:
 * returns the import's handle (> 0) and fills @addr with the address the
 * device reaches the whole buffer at and @size (may be NULL) with its
 * size.  Held until uioheap_unimport() or until @heap_fd is closed.
 */
int uioheap_import(int heap_fd, int dmabuf_fd, uint64_t *addr, uint64_t *size);

/* Releases an import of @heap_fd. */
int uioheap_unimport(int heap_fd, int handle);

/* Reads /sys/class/uio_heap/<uio_name>/<attr> as a number. */
int uioheap_sysfs_read(const char *uio_name, const char *attr,
		       unsigned long long *val);
int uioheap_sysfs_write(const char *uio_name, const char *attr,
			unsigned long long val);

#ifdef __cplusplus
}
#endif

#endif
