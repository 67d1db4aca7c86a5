/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A polled userspace NVMe driver over uio_pci_generic and uio-heap: an
 * example of the whole pattern, small enough to read in one sitting.
 *
 *   registers   BAR0, mmap()ed from /sys/bus/pci/devices/BDF/resource0
 *               (uio_pci_generic exposes no UIO maps)
 *   DMA memory  queues, PRP lists and data buffers all come from the
 *               device's heap, and the controller is given the address the
 *               heap reports for each buffer: queues and PRP lists from
 *               the coherent node /dev/dma_heap/uioN, data buffers from it
 *               or from the cacheable node /dev/dma_heap/uioN-cached
 *   completion  polled: the phase bit of the next completion entry
 *
 * Everything the controller can do differently is read from it: queue
 * sizes (CAP.MQES), doorbell stride (CAP.DSTRD), ready timeout (CAP.TO),
 * memory page size (CAP.MPSMIN/MPSMAX), transfer size (MDTS), LBA size.
 *
 * Functions return 0 or a negative errno; on failure c->err says what
 * went wrong in words.  A command the controller failed returns -EIO and
 * its status is in c->status (nvme_status_str() decodes it).
 */
#ifndef UIO_NVME_H
#define UIO_NVME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One buffer from the heap: the CPU's view and the controller's. */
struct nvme_dma {
	int fd;			/* the dma-buf */
	void *cpu;		/* mmap()ed */
	uint64_t addr;		/* what the controller is programmed with */
	size_t len;
	bool cached;		/* from uioN-cached: sync around CPU access */
};

/* Submission queue entry: 64 bytes, one command. */
struct nvme_sqe {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint32_t nsid;
	uint32_t cdw2, cdw3;
	uint64_t mptr;
	uint64_t prp1, prp2;
	uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};

/* Completion queue entry: 16 bytes. */
struct nvme_cqe {
	uint32_t result;
	uint32_t rsvd;
	uint16_t sq_head;
	uint16_t sq_id;
	uint16_t cid;
	uint16_t status;	/* bit 0: phase tag, 15:1 status field */
};

/* A completion handed to the caller. */
struct nvme_cpl {
	uint16_t cid;
	uint16_t status;	/* 0: success; else SC | SCT << 8 | ... */
	uint32_t result;
};

/* A submission/completion queue pair and what the driver tracks for it. */
struct nvme_queue {
	uint16_t qid;			/* 0: the admin queue */
	uint32_t depth;			/* entries in each queue (up to 65536) */
	uint16_t sq_tail;		/* next SQ slot we fill */
	uint16_t cq_head;		/* next CQ slot we look at */
	uint8_t phase;			/* phase tag a new entry carries */
	uint32_t inflight;		/* submitted, not yet completed */
	uint8_t created;		/* I/O queues: which exist on the device */
	struct nvme_dma sq, cq;
	struct nvme_dma prps;		/* one PRP list per command id */
	size_t prp_list_bytes;		/* size of each of those lists */
	volatile uint32_t *sq_db, *cq_db;	/* doorbell registers */
	bool plugged;			/* submissions wait for nvme_unplug() */
	uint8_t *busy;			/* per command id: submitted */
};

#define NVME_MAX_IOQ	8

/*
 * The largest buffer worth asking the heap for: without an IOMMU it must
 * be physically contiguous, which the page allocator gives up to 4 MiB
 * and not reliably.  Queues and PRP lists stay within it; so should data.
 */
#define NVME_DMA_CHUNK_MAX	(2u << 20)

struct nvme_ctrl {
	char uio[16];			/* "uio2" */
	char pci[32];			/* "0000:00:12.0" */
	int heap_fd;			/* /dev/dma_heap/uioN */
	int cached_fd;			/* /dev/dma_heap/uioN-cached, or -errno */
	int cfg_fd;			/* PCI config space */
	volatile uint8_t *bar;		/* BAR0 */
	size_t bar_len;

	uint64_t cap;			/* CAP register */
	uint32_t vs;			/* version register */
	unsigned int timeout_ms;	/* CAP.TO: enable/disable time limit */
	unsigned int db_stride;		/* bytes between doorbells */
	size_t page;			/* controller memory page (CC.MPS) */
	size_t max_xfer;		/* bytes per I/O command */
	unsigned int cmd_timeout_ms;	/* per command; nvme_open sets 30 s */

	char sn[21], mn[41], fr[9];	/* from Identify, NUL-terminated */
	uint32_t nn;			/* number of namespaces */
	uint32_t nsid;			/* the namespace used for I/O */
	uint64_t nsze;			/* its size in LBAs */
	uint32_t lba_size;		/* bytes per LBA */

	struct nvme_queue admin;
	struct nvme_queue ioq[NVME_MAX_IOQ];
	int nr_ioq;
	struct nvme_dma ident;		/* one page for Identify data */

	bool enabled;			/* CC.EN set by us */
	uint16_t status;		/* status of the last failed command */
	unsigned long long ios;		/* I/O commands completed */
	char err[256];			/* what the last failure was */
};

/* Options of nvme_open(); zero means "the default". */
struct nvme_opts {
	unsigned int io_queues;		/* I/O queue pairs (default 1) */
	unsigned int io_depth;		/* entries per I/O queue (default
					 * 256); CAP.MQES may allow fewer
					 */
};

/*
 * Opens the controller behind UIO device @uio ("uio2"), resets it, brings
 * it up with admin and I/O queues in heap memory, and identifies it and
 * its first active namespace.  -ENODEV: no such UIO device, or not an
 * NVMe controller; -ENOENT: no heap node; -ETIMEDOUT: never became ready.
 * On failure everything is released again (c->err stays).
 */
int nvme_open(struct nvme_ctrl *c, const char *uio,
	      const struct nvme_opts *opts);

/*
 * Deletes the I/O queues and shuts the controller down (CC.SHN), then
 * releases everything.  If the heap's device went away meanwhile (the
 * buffers were revoked), only disables the controller: revoked buffers
 * must not be touched.  Returns the first error, 0 if clean.
 */
int nvme_close(struct nvme_ctrl *c);

/*
 * Allocates @len bytes of DMA memory from the controller's coherent heap
 * node, uioN: what the CPU writes the controller sees, and the other way
 * round, without cache maintenance.
 */
int nvme_dma_alloc(struct nvme_ctrl *c, struct nvme_dma *d, size_t len);

/*
 * Allocates a data buffer: from uioN-cached if @cached, else as
 * nvme_dma_alloc().  uioN-cached is always mapped cacheable, so the CPU
 * reads and copies it at memory speed, but where the device does not
 * snoop CPU caches the two views differ until synced.  Only for data: the
 * driver's queues stay coherent.  -ENOENT: the node does not exist.
 */
int nvme_dma_alloc_data(struct nvme_ctrl *c, struct nvme_dma *d, size_t len,
			bool cached);
void nvme_dma_free(struct nvme_dma *d);

/*
 * Handing a data buffer back and forth between the CPU and the device,
 * as a kernel driver does with dma_sync_single_for_device()/_for_cpu():
 *
 *   write command:  for_cpu(TO_DEVICE), the CPU fills the buffer,
 *                   for_device(TO_DEVICE), submit, reap
 *   read command:   for_device(FROM_DEVICE), submit, reap,
 *                   for_cpu(FROM_DEVICE), the CPU reads the data
 *
 * BIDIRECTIONAL where the CPU both wrote the buffer and reads what the
 * device wrote into it.  These are DMA_BUF_IOCTL_SYNC with
 * DMA_BUF_SYNC_END (for_device) and _START (for_cpu); on a coherent
 * buffer they do nothing, so code that calls them works with both nodes.
 * The whole buffer is synced: one call may cover many commands' slots.
 */
enum nvme_dma_dir {
	NVME_DMA_FROM_DEVICE,	/* a read command: the device writes */
	NVME_DMA_TO_DEVICE,	/* a write command: the device reads */
	NVME_DMA_BIDIRECTIONAL,
};

int nvme_dma_for_device(struct nvme_ctrl *c, struct nvme_dma *d,
			enum nvme_dma_dir dir);
int nvme_dma_for_cpu(struct nvme_ctrl *c, struct nvme_dma *d,
		     enum nvme_dma_dir dir);

/*
 * Queues a read or write of @nlb blocks at @slba, to or from @buf at byte
 * offset @off (4-byte aligned), without waiting.  The command id is
 * stored in @cid.  -EAGAIN: the queue is full, reap completions first;
 * -EINVAL: beyond max_xfer, the namespace, or the buffer.
 */
int nvme_submit_rw(struct nvme_ctrl *c, struct nvme_queue *q, bool write,
		   uint64_t slba, uint32_t nlb, const struct nvme_dma *buf,
		   size_t off, uint16_t *cid);

/*
 * Batching: between nvme_plug() and nvme_unplug(), submissions on @q only
 * fill SQ slots, and nvme_unplug() rings the doorbell once for all of
 * them.  A doorbell is an uncached write to the device that it must react
 * to; one per batch rather than one per command is what blk-mq's plugging
 * does in the kernel.  Reaping a plugged queue is refused.
 */
void nvme_plug(struct nvme_queue *q);
void nvme_unplug(struct nvme_queue *q);

/*
 * Reaps up to @max completions of @q into @cpl, waiting up to
 * c->cmd_timeout_ms for the first one.  Returns how many (>= 1), or
 * -ETIMEDOUT (with the controller status in c->err).
 */
int nvme_reap(struct nvme_ctrl *c, struct nvme_queue *q, struct nvme_cpl *cpl,
	      int max);

/* Submits one read or write on the first I/O queue and waits for it. */
int nvme_rw(struct nvme_ctrl *c, bool write, uint64_t slba, uint32_t nlb,
	    const struct nvme_dma *buf, size_t off);

/* Runs one admin command and waits for it; @result may be NULL. */
int nvme_admin(struct nvme_ctrl *c, struct nvme_sqe *cmd, const char *what,
	       uint32_t *result);

/* "LBA Out of Range (SCT 0x0 SC 0x80)" for a completion status. */
const char *nvme_status_str(uint16_t status, char *buf, size_t size);

/* CSTS, decoded into words ("RDY CFS SHST=complete"). */
const char *nvme_csts_str(struct nvme_ctrl *c, char *buf, size_t size);

#endif
