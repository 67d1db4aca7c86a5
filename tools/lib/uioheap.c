// SPDX-License-Identifier: GPL-2.0
/*
 * libuioheap: the few steps every uio-heap user takes, written once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/uio_heap.h>

#include "uioheap.h"

int uioheap_open(const char *uio_name)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/dma_heap/%s", uio_name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int uioheap_alloc(int heap_fd, size_t len, unsigned int fd_flags)
{
	struct dma_heap_allocation_data data = {
		.len = len,
		.fd_flags = fd_flags,
	};

	if (ioctl(heap_fd, DMA_HEAP_IOCTL_ALLOC, &data) < 0)
		return -errno;
	return data.fd;
}

/*
 * Set once DMA_BUF_IOCTL_GET_DMA_ADDR got ENOTTY on a buffer the heap then
 * answered for: the dma-buf core of the running kernel has no such ioctl,
 * and a process outlives no kernel, so it is not asked again.
 */
static int dma_buf_ioctl_absent;

int uioheap_dma_addr(int heap_fd, int buf_fd, uint64_t *addr,
		     enum uioheap_addr_source *source)
{
	struct uio_heap_dma_addr arg = { .fd = buf_fd };
	int notty = 0;
	__u64 val;

	/*
	 * ENOTTY: the kernel's dma-buf core has no such ioctl (or @buf_fd is
	 * no dma-buf: the heap tells); EINVAL: the exporter gives no address
	 * that way.  Either way, ask the heap.
	 */
	if (!__atomic_load_n(&dma_buf_ioctl_absent, __ATOMIC_RELAXED)) {
		if (ioctl(buf_fd, DMA_BUF_IOCTL_GET_DMA_ADDR, &val) == 0) {
			*addr = val;
			if (source)
				*source = UIOHEAP_ADDR_DMA_BUF;
			return 0;
		}
		if (errno != ENOTTY && errno != EINVAL)
			return -errno;
		notty = errno == ENOTTY;
	}

	if (ioctl(heap_fd, UIO_HEAP_IOCTL_GET_DMA_ADDR, &arg) < 0)
		return -errno;
	/* @buf_fd is a dma-buf: the ENOTTY was the core's. */
	if (notty)
		__atomic_store_n(&dma_buf_ioctl_absent, 1, __ATOMIC_RELAXED);
	*addr = arg.dma_addr;
	if (source)
		*source = UIOHEAP_ADDR_HEAP;
	return 0;
}

void *uioheap_map(int buf_fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, buf_fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

int uioheap_sync_rw(int buf_fd, int start, unsigned int rw)
{
	struct dma_buf_sync sync = {
		.flags = (start ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END) | rw,
	};

	if (!rw || rw & ~DMA_BUF_SYNC_RW)
		return -EINVAL;
	return ioctl(buf_fd, DMA_BUF_IOCTL_SYNC, &sync) < 0 ? -errno : 0;
}

int uioheap_sync(int buf_fd, int start, int write)
{
	return uioheap_sync_rw(buf_fd, start,
			       write ? DMA_BUF_SYNC_RW : DMA_BUF_SYNC_READ);
}

int uioheap_import(int heap_fd, int dmabuf_fd, uint64_t *addr, uint64_t *size)
{
	struct uio_heap_import_data data = { .fd = dmabuf_fd };

	if (ioctl(heap_fd, UIO_HEAP_IOCTL_IMPORT, &data) < 0)
		return -errno;
	*addr = data.dma_addr;
	if (size)
		*size = data.size;
	return data.handle;
}

int uioheap_unimport(int heap_fd, int handle)
{
	struct uio_heap_unimport_data data = { .handle = handle };

	return ioctl(heap_fd, UIO_HEAP_IOCTL_UNIMPORT, &data) < 0 ? -errno : 0;
}

static int uioheap_sysfs_path(char *path, size_t size, const char *uio_name,
			      const char *attr)
{
	int n = snprintf(path, size, "/sys/class/uio_heap/%s/%s", uio_name,
			 attr);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int uioheap_sysfs_read(const char *uio_name, const char *attr,
		       unsigned long long *val)
{
	char path[128];
	FILE *f;
	int ret;

	ret = uioheap_sysfs_path(path, sizeof(path), uio_name, attr);
	if (ret)
		return ret;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ret = fscanf(f, "%llu", val) == 1 ? 0 : -EIO;
	fclose(f);
	return ret;
}

int uioheap_sysfs_write(const char *uio_name, const char *attr,
			unsigned long long val)
{
	char path[128], text[32];
	int fd, ret, n;

	ret = uioheap_sysfs_path(path, sizeof(path), uio_name, attr);
	if (ret)
		return ret;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(text, sizeof(text), "%llu\n", val);
	ret = write(fd, text, n) == n ? 0 : -errno;
	close(fd);
	return ret;
}
