/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A userspace driver for one channel of the ZynqMP's general-purpose DMA
 * engine (ZDMA, device tree "xlnx,zynqmp-dma-1.0") bound to
 * uio_pdrv_genirq, on uio-heap buffers:
 *
 *   registers   the channel's 4 KiB, UIO map 0 of /dev/uioN
 *   DMA memory  /dev/dma_heap/uioN (coherent, or uncached where the
 *               channel does not snoop) and /dev/dma_heap/uioN-cached
 *               (cacheable, DMA_BUF_IOCTL_SYNC around CPU access)
 *   completion  the channel's interrupt through /dev/uioN, or polling of
 *               its status register
 *
 * Bind the channels with
 *
 *   modprobe uio_pdrv_genirq of_id=xlnx,zynqmp-dma-1.0
 *
 * (after unbinding them from the kernel's zynqmp_dma driver) and load
 * uio_heap.  Only "simple mode" is used: one transfer, its source and
 * destination written into the channel's registers, no descriptors in
 * memory.
 *
 * Functions return 0 or a negative errno; on failure ch->err says what
 * went wrong in words.
 */
#ifndef UIO_ZDMA_H
#define UIO_ZDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZDMA_COMPATIBLE	"xlnx,zynqmp-dma-1.0"

/* A simple-mode transfer: the 30-bit size field of descriptor word 2. */
#define ZDMA_MAX_SIZE	((1u << 30) - 1)
/* Addresses: 32 bits in word 0 and 17 in word 1. */
#define ZDMA_ADDR_BITS	49

/* One buffer from the channel's heap: the CPU's view and the channel's. */
struct zdma_buf {
	int fd;				/* the dma-buf */
	unsigned char *cpu;		/* mmap()ed */
	uint64_t addr;			/* what the channel is programmed with */
	size_t len;
	bool cached;			/* from uioN-cached: sync around CPU access */
};

struct zdma_chan {
	char uio[16];			/* "uio3" */
	char name[64];			/* "dma-controller@fd500000" */
	int uio_fd;			/* /dev/uioN: map 0 and the interrupt */
	int heap_fd;			/* /dev/dma_heap/uioN */
	int cached_fd;			/* /dev/dma_heap/uioN-cached */
	void *map;			/* map 0 as mmap()ed */
	size_t map_len;
	volatile uint32_t *regs;	/* the channel's registers in it */
	bool programmed;		/* zdma_program() since the last start */
	uint32_t size;			/* bytes of the last transfer programmed */
	uint32_t isr;			/* status at the end of the last transfer */
	uint32_t irqs;			/* UIO event count: interrupts since bound */
	char err[160];			/* what the last failure was */
};

/* How zdma_wait() and zdma_copy() learn that a transfer ended. */
enum zdma_wait {
	ZDMA_IRQ,			/* poll() and read() on /dev/uioN */
	ZDMA_POLL,			/* read the status register until done */
};

/*
 * Finds the UIO devices that are ZDMA channels (their device-tree node is
 * compatible with ZDMA_COMPATIBLE), sorted by name: returns how many (up
 * to @max).
 */
int zdma_find(char names[][16], int max);

/*
 * Opens the channel behind UIO device @uio ("uio3"): maps its registers,
 * opens /dev/uioN and both heap nodes, and resets the channel.  -ENODEV:
 * no such UIO device or not a ZDMA channel; -ENOENT: no heap node
 * (uio_heap not loaded).  On failure everything is released again.
 */
int zdma_open(struct zdma_chan *ch, const char *uio);

/* Stops the channel and releases everything (buffers are the caller's). */
void zdma_close(struct zdma_chan *ch);

/*
 * Stops the channel, masks and clears its interrupts and clears its
 * counters.  A previous user may have left it running or with status set.
 */
void zdma_reset(struct zdma_chan *ch);

/*
 * Writes a simple-mode copy of @size bytes from device address @src to
 * @dst into the channel's registers, without starting it.  -EINVAL for a
 * size of 0 or above ZDMA_MAX_SIZE or an address beyond ZDMA_ADDR_BITS;
 * then the registers are not touched.
 */
int zdma_program(struct zdma_chan *ch, uint64_t src, uint64_t dst,
		 size_t size);

/*
 * Starts what zdma_program() wrote, with the interrupt enabled if @how
 * is ZDMA_IRQ.  -EINVAL if nothing was programmed.
 */
int zdma_start(struct zdma_chan *ch, enum zdma_wait how);

/*
 * Waits up to @timeout_ms for the started transfer to end, by @how (the
 * same as at the start), and acknowledges it.  -ETIMEDOUT; an error the
 * channel reported (zdma_status_errno()); -EIO if it moved fewer bytes
 * than programmed.  ch->isr keeps the status it ended with.
 */
int zdma_wait(struct zdma_chan *ch, enum zdma_wait how, int timeout_ms);

/* zdma_program(), zdma_start() and zdma_wait() in one. */
int zdma_copy(struct zdma_chan *ch, uint64_t src, uint64_t dst,
	      size_t size, enum zdma_wait how, int timeout_ms);

/*
 * The errno for the error bits of an interrupt status @isr: -EIO for an
 * AXI error on data or descriptors, -EOVERFLOW for a counter overflow,
 * -ENXIO for an invalid register access; 0 if none is set.  @what (may
 * be NULL) gets the name of the first error bit.
 */
int zdma_status_errno(uint32_t isr, const char **what);

/*
 * Allocates @len bytes from the channel's uioN-cached node if @cached,
 * else from uioN, maps them and learns their address.
 */
int zdma_buf_alloc(struct zdma_chan *ch, struct zdma_buf *b, size_t len,
		   bool cached);
void zdma_buf_free(struct zdma_buf *b);

/*
 * Hands a buffer to the CPU (DMA_BUF_SYNC_START) or back to the channel
 * (DMA_BUF_SYNC_END) for the CPU access @rw (DMA_BUF_SYNC_READ, _WRITE or
 * _RW): cache maintenance on a buffer of uioN-cached, nothing on uioN.
 */
int zdma_buf_for_cpu(const struct zdma_buf *b, unsigned int rw);
int zdma_buf_for_device(const struct zdma_buf *b, unsigned int rw);

#endif
