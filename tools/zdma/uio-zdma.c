// SPDX-License-Identifier: GPL-2.0
/*
 * uio-zdma: one memory-to-memory copy by a ZynqMP ZDMA channel, driven
 * from userspace through uio_pdrv_genirq, on uio-heap buffers.  The
 * driver is zdma.c; this is what a program does with it.
 *
 * Usage: uio-zdma uioN [--poll] [--cached] SIZE
 *
 *   --poll    wait by polling the channel's status, not for its interrupt
 *   --cached  buffers from /dev/dma_heap/uioN-cached, the cacheable node,
 *             with DMA_BUF_IOCTL_SYNC around CPU access; else from
 *             /dev/dma_heap/uioN (uncached where the channel does not
 *             snoop, as on the ZynqMP)
 *
 * The source is filled with a pattern, the destination with guard bytes;
 * after the copy every byte is checked, and the guard bytes on both sides
 * of the copy must be untouched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/dma-buf.h>

#include "zdma.h"

#define GUARD		64	/* bytes each side of the copy */
#define GUARD_BYTE	0xa5
#define TIMEOUT_MS	5000

static int usage(void)
{
	fprintf(stderr, "usage: uio-zdma uioN [--poll] [--cached] SIZE\n");
	return 2;
}

static int failed(struct zdma_chan *ch, const char *what)
{
	fprintf(stderr, "uio-zdma: %s: %s\n", what, ch->err);
	return 1;
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 11) + 7);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The first wrong byte of the destination, or -1 if all are right. */
static long long check(const unsigned char *dst, size_t size)
{
	size_t i;

	for (i = 0; i < GUARD; i++)
		if (dst[i] != GUARD_BYTE || dst[GUARD + size + i] != GUARD_BYTE)
			return dst[i] != GUARD_BYTE ? (long long)i :
			       (long long)(GUARD + size + i);
	for (i = 0; i < size; i++)
		if (dst[GUARD + i] != pattern(GUARD + i))
			return GUARD + i;
	return -1;
}

int main(int argc, char **argv)
{
	enum zdma_wait how = ZDMA_IRQ;
	struct zdma_buf src, dst;
	const char *uio = NULL;
	unsigned long long size = 0;
	bool cached = false;
	struct zdma_chan ch;
	long long bad;
	double t0, t1;
	char *end;
	size_t i;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--poll")) {
			how = ZDMA_POLL;
		} else if (!strcmp(argv[a], "--cached")) {
			cached = true;
		} else if (!uio) {
			uio = argv[a];
		} else if (!size) {
			size = strtoull(argv[a], &end, 0);
			if (*end || !size)
				return usage();
		} else {
			return usage();
		}
	}
	if (!uio || !size)
		return usage();

	if (zdma_open(&ch, uio))
		return failed(&ch, "opening the channel");
	printf("channel: %s is %s (ZDMA, registers through UIO map 0)\n",
	       ch.uio, ch.name);

	/* Refused before anything is allocated if the channel cannot do it. */
	if (size > ZDMA_MAX_SIZE) {
		fprintf(stderr, "uio-zdma: %llu bytes: a transfer is at most %u\n",
			size, ZDMA_MAX_SIZE);
		return 1;
	}
	if (zdma_buf_alloc(&ch, &src, size + 2 * GUARD, cached) ||
	    zdma_buf_alloc(&ch, &dst, size + 2 * GUARD, cached))
		return failed(&ch, "allocating");
	printf("buffers: two of %zu bytes from /dev/dma_heap/%s%s,\n"
	       "         device addresses %#llx and %#llx\n",
	       src.len, ch.uio, cached ? "-cached" : "",
	       (unsigned long long)src.addr, (unsigned long long)dst.addr);

	/* The CPU writes both; the channel reads one, writes the other. */
	if (zdma_buf_for_cpu(&src, DMA_BUF_SYNC_WRITE) ||
	    zdma_buf_for_cpu(&dst, DMA_BUF_SYNC_WRITE)) {
		perror("uio-zdma: DMA_BUF_IOCTL_SYNC");
		return 1;
	}
	for (i = 0; i < src.len; i++)
		src.cpu[i] = pattern(i);
	memset(dst.cpu, GUARD_BYTE, dst.len);
	if (zdma_buf_for_device(&src, DMA_BUF_SYNC_WRITE) ||
	    zdma_buf_for_device(&dst, DMA_BUF_SYNC_WRITE)) {
		perror("uio-zdma: DMA_BUF_IOCTL_SYNC");
		return 1;
	}

	t0 = now_us();
	if (zdma_copy(&ch, src.addr + GUARD, dst.addr + GUARD, size, how,
		      TIMEOUT_MS))
		return failed(&ch, "copying");
	t1 = now_us();
	if (how == ZDMA_IRQ)
		printf("dma:     %llu bytes copied, done by interrupt (event %u) after %.0f us\n",
		       size, ch.irqs, t1 - t0);
	else
		printf("dma:     %llu bytes copied, done by polling after %.0f us\n",
		       size, t1 - t0);

	/* Now the CPU reads what the channel wrote. */
	if (zdma_buf_for_cpu(&dst, DMA_BUF_SYNC_READ)) {
		perror("uio-zdma: DMA_BUF_IOCTL_SYNC");
		return 1;
	}
	bad = check(dst.cpu, size);
	if (bad >= 0)
		printf("verify:  FAILED at byte %lld of the destination: %#x, expected %#x\n",
		       bad, dst.cpu[bad],
		       bad < GUARD || bad >= (long long)(GUARD + size) ?
		       GUARD_BYTE : pattern(bad));
	zdma_buf_for_device(&dst, DMA_BUF_SYNC_READ);
	if (bad >= 0)
		return 1;
	printf("verify:  all %llu bytes arrived intact, %d guard bytes each side untouched\n",
	       size, GUARD);

	zdma_buf_free(&src);
	zdma_buf_free(&dst);
	zdma_close(&ch);
	printf("result:  ZDMA through uio-heap buffers works\n");
	return 0;
}
