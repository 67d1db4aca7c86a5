// SPDX-License-Identifier: GPL-2.0
/*
 * uio-heap-demo: the smallest complete userspace DMA driver.
 *
 * Opens the DMA heap of an edu device bound to uio_pci_generic, allocates
 * two buffers, learns their device addresses, and has the device copy a
 * pattern from one buffer into itself and back out into the other.
 *
 * Usage: uio-heap-demo [uioN]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/edu.h"
#include "lib/uioheap.h"

#define DEMO_BUF_SIZE	(64 * 1024)
#define DEMO_LEN	3000
#define DEMO_OUT_OFF	100

static int fail(const char *what, int err)
{
	fprintf(stderr, "uio-heap-demo: %s: %s\n", what, strerror(-err));
	return 1;
}

int main(int argc, char **argv)
{
	enum uioheap_addr_source source;
	uint64_t src_addr, dst_addr;
	unsigned char *src, *dst;
	char names[8][16];
	const char *uio;
	int heap, a, b, ret, i;
	struct edu edu;

	if (argc > 1) {
		uio = argv[1];
	} else {
		if (edu_find(names, 8) < 1)
			return fail("no edu device bound to uio_pci_generic",
				    -ENODEV);
		uio = names[0];
	}

	ret = edu_open(&edu, uio);
	if (ret)
		return fail("opening the edu device", ret);
	printf("device:  %s is PCI device %s (edu, id %#x)\n", uio, edu.pci,
	       edu_id(&edu));

	heap = uioheap_open(uio);
	if (heap < 0)
		return fail("opening its heap", heap);
	printf("heap:    /dev/dma_heap/%s opened\n", uio);

	a = uioheap_alloc(heap, DEMO_BUF_SIZE, O_RDWR | O_CLOEXEC);
	b = uioheap_alloc(heap, DEMO_BUF_SIZE, O_RDWR | O_CLOEXEC);
	if (a < 0 || b < 0)
		return fail("allocating", a < 0 ? a : b);
	ret = uioheap_dma_addr(heap, a, &src_addr, &source);
	if (!ret)
		ret = uioheap_dma_addr(heap, b, &dst_addr, NULL);
	if (ret)
		return fail("asking the DMA address", ret);
	printf("buffers: two of %d KiB, device addresses %#llx and %#llx\n",
	       DEMO_BUF_SIZE / 1024, (unsigned long long)src_addr,
	       (unsigned long long)dst_addr);
	printf("         (address from %s)\n",
	       source == UIOHEAP_ADDR_DMA_BUF ?
	       "DMA_BUF_IOCTL_GET_DMA_ADDR on the dma-buf" :
	       "UIO_HEAP_IOCTL_GET_DMA_ADDR on the heap");

	src = uioheap_map(a, DEMO_BUF_SIZE);
	dst = uioheap_map(b, DEMO_BUF_SIZE);
	if (!src || !dst)
		return fail("mapping", -errno);
	for (i = 0; i < DEMO_LEN; i++)
		src[i] = (unsigned char)(i * 7 + 3);

	ret = edu_dma(&edu, src_addr, 0, DEMO_LEN, true, 5000);
	if (ret)
		return fail("DMA into the device", ret);
	ret = edu_dma(&edu, dst_addr + DEMO_OUT_OFF, 0, DEMO_LEN, false, 5000);
	if (ret)
		return fail("DMA out of the device", ret);
	printf("dma:     the device read %d bytes from the first buffer and wrote them\n"
	       "         into the second at offset %d (%llu interrupts so far)\n",
	       DEMO_LEN, DEMO_OUT_OFF, edu.irqs);

	for (i = 0; i < DEMO_LEN; i++)
		if (dst[DEMO_OUT_OFF + i] != src[i])
			break;
	if (i != DEMO_LEN) {
		printf("verify:  FAILED at byte %d: %#x, expected %#x\n", i,
		       dst[DEMO_OUT_OFF + i], src[i]);
		return 1;
	}
	if (dst[0] || dst[DEMO_OUT_OFF - 1] || dst[DEMO_OUT_OFF + DEMO_LEN]) {
		printf("verify:  FAILED: the device wrote outside the %d bytes\n",
		       DEMO_LEN);
		return 1;
	}
	printf("verify:  all %d bytes arrived intact, and nothing around them\n",
	       DEMO_LEN);

	close(a);
	close(b);
	close(heap);
	edu_close(&edu);
	printf("result:  device DMA through uio-heap buffers works\n");
	return 0;
}
