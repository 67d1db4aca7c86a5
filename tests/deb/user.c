// SPDX-License-Identifier: GPL-2.0
/*
 * A program as a user of libuioheap-dev writes it: tests/deb.sh builds it
 * with nothing but "pkg-config --cflags --libs uioheap" against the
 * installed packages, and the VMs run it (tests/guest/run.sh).
 *
 * Usage: user NODE.  Allocates 1 MiB from NODE, fills it through the CPU
 * inside SYNC, reads it back and prints the buffer's DMA address.  Exits
 * 0 when that worked, 3 when there is no such node (as on the host), 1
 * otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/uio_heap.h>
#include <uioheap.h>

#define LEN	(1 << 20)

static int fail(const char *what, int err)
{
	fprintf(stderr, "user: %s: %s\n", what, strerror(-err));
	return 1;
}

int main(int argc, char **argv)
{
	const char *node = argc > 1 ? argv[1] : "uio0";
	unsigned char *cpu;
	int heap, buf, ret;
	uint64_t addr;

	heap = uioheap_open(node);
	if (heap == -ENOENT) {
		printf("no node %s\n", node);
		return 3;
	}
	if (heap < 0)
		return fail(node, heap);
	buf = uioheap_alloc(heap, LEN, O_RDWR | O_CLOEXEC);
	if (buf < 0)
		return fail("alloc", buf);
	ret = uioheap_dma_addr(heap, buf, &addr, NULL);
	if (ret)
		return fail("dma_addr", ret);
	cpu = uioheap_map(buf, LEN);
	if (!cpu)
		return fail("map", -errno);

	/* Written, then read, by the CPU: each inside SYNC. */
	ret = uioheap_sync(buf, 1, 1);
	if (ret)
		return fail("sync", ret);
	memset(cpu, 0x5a, LEN);
	ret = uioheap_sync(buf, 0, 1);
	if (!ret)
		ret = uioheap_sync(buf, 1, 0);
	if (ret)
		return fail("sync", ret);
	if (cpu[0] != 0x5a || cpu[LEN - 1] != 0x5a)
		return fail("reading back", -EIO);
	ret = uioheap_sync(buf, 0, 0);
	if (ret)
		return fail("sync", ret);
	printf("%s: %d bytes at %#llx, uAPI ioctl %#lx\n", node, LEN,
	       (unsigned long long)addr,
	       (unsigned long)UIO_HEAP_IOCTL_GET_DMA_ADDR);
	return 0;
}
