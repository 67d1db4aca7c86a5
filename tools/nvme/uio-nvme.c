// SPDX-License-Identifier: GPL-2.0
/*
 * uio-nvme: a polled NVMe driver in userspace, on uio_pci_generic and
 * uio-heap.  The driver is nvme.c; this is what a program does with it.
 *
 * Usage: uio-nvme [-c] [-q DEPTH] uioN [identify]
 *        uio-nvme [-c] [-q DEPTH] uioN read LBA COUNT  > data
 *        uio-nvme [-c] [-q DEPTH] uioN write LBA COUNT < data
 *        uio-nvme [-c] [-q DEPTH] uioN bench rand|seq SIZE QD SECONDS
 *
 *   -q DEPTH  entries per I/O queue (default 256, or more for a deep bench)
 *   -c        data buffers from /dev/dma_heap/uioN-cached, the cacheable
 *             node, with DMA_BUF_IOCTL_SYNC around CPU access; the queues
 *             stay on the coherent node either way
 *   bench     reads of SIZE bytes, random or sequential, QD of them in
 *             flight, for SECONDS; prints one line of figures (iobench.h)
 *
 * Bind the controller to uio_pci_generic first (its kernel driver must
 * let go of it), and load uio_heap:
 *
 *   echo 0000:01:00.0 > /sys/bus/pci/drivers/nvme/unbind
 *   echo "VENDOR DEVICE" > /sys/bus/pci/drivers/uio_pci_generic/new_id
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iobench.h"
#include "nvme.h"

/* Data buffers from uioN-cached (-c) rather than uioN. */
static bool cached;

static int usage(void)
{
	fprintf(stderr,
		"usage: uio-nvme [-c] [-q DEPTH] uioN [identify | read LBA COUNT | write LBA COUNT |\n"
		"                                      bench rand|seq SIZE QD SECONDS]\n");
	return 2;
}

/* A data buffer from the node -c chose. */
static int failed(struct nvme_ctrl *c, const char *what)
{
	fprintf(stderr, "uio-nvme: %s: %s\n", what, c->err);
	return 1;
}

static void identify(struct nvme_ctrl *c)
{
	const struct nvme_queue *q = &c->ioq[0];

	printf("controller %s (%s): %s, serial %s, firmware %s, NVMe %u.%u\n",
	       c->uio, c->pci, c->mn, c->sn, c->fr, c->vs >> 16,
	       (c->vs >> 8) & 0xff);
	printf("  page %zu bytes, max transfer %zu bytes, doorbell stride %u\n",
	       c->page, c->max_xfer, c->db_stride);
	printf("  %d I/O queue pair(s) of %u entries; admin SQ at %#llx\n",
	       c->nr_ioq, q->depth, (unsigned long long)c->admin.sq.addr);
	printf("namespace %u: %llu blocks of %u bytes (%llu MiB)\n", c->nsid,
	       (unsigned long long)c->nsze, c->lba_size,
	       (unsigned long long)(c->nsze * c->lba_size >> 20));
}

/* Fills @len bytes at @p from stdin. */
static int fill(uint8_t *p, size_t len)
{
	size_t done;
	ssize_t got;

	for (done = 0; done < len; done += got) {
		got = read(0, p + done, len - done);
		if (got <= 0) {
			fprintf(stderr, "uio-nvme: stdin ended early\n");
			return -1;
		}
	}
	return 0;
}

/* Reaps until @q is idle; 0, or 1 after saying what failed. */
/* A completion's status, decoded: 1 if the command failed. */
static int cmd_failed(const struct nvme_cpl *cpl)
{
	char text[96];

	if (!cpl->status)
		return 0;
	fprintf(stderr, "uio-nvme: command %u: %s\n", cpl->cid,
		nvme_status_str(cpl->status, text, sizeof(text)));
	return 1;
}

static int reap_all(struct nvme_ctrl *c, struct nvme_queue *q)
{
	struct nvme_cpl cpl[64];
	int got, k;

	while (q->inflight) {
		got = nvme_reap(c, q, cpl, 64);
		if (got < 0)
			return failed(c, "completion");
		for (k = 0; k < got; k++)
			if (cmd_failed(&cpl[k]))
				return 1;
	}
	return 0;
}

/*
 * Moves COUNT blocks in chunks of max_xfer, keeping up to a window of
 * chunks in flight: submit the whole window, then reap it.  Chunks may
 * complete in any order; each has its own part of one buffer.
 *
 * The buffer changes hands twice per window: the CPU fills it (write) or
 * reads it (read), the controller reads or fills it.  nvme_dma_for_cpu()
 * and nvme_dma_for_device() mark those hand-overs; they cost nothing on
 * a coherent buffer and are the cache maintenance on a cached one (-c).
 */
static int transfer(struct nvme_ctrl *c, bool write, uint64_t lba,
		    uint64_t count)
{
	enum nvme_dma_dir dir = write ? NVME_DMA_TO_DEVICE : NVME_DMA_FROM_DEVICE;
	struct nvme_queue *q = &c->ioq[0];
	uint32_t per = c->max_xfer / c->lba_size, nlb;
	unsigned int window = q->depth - 1, n, chunks;
	size_t blocks, left;
	struct nvme_dma buf;
	int ret;

	/* As many chunks as the queue and one heap buffer hold. */
	if (window > 64)
		window = 64;
	if (window > NVME_DMA_CHUNK_MAX / c->max_xfer)
		window = NVME_DMA_CHUNK_MAX / c->max_xfer;
	if (!window)
		window = 1;
	ret = nvme_dma_alloc_data(c, &buf, (size_t)window * c->max_xfer, cached);
	if (ret)
		return failed(c, "buffer");
	while (count) {
		/* This window: chunks of max_xfer, all full but the last. */
		blocks = count < (uint64_t)window * per ? count : (uint64_t)window * per;
		chunks = (blocks + per - 1) / per;
		/* A write: the CPU fills the buffer, then hands it over. */
		if (write && nvme_dma_for_cpu(c, &buf, dir))
			return failed(c, "sync");
		if (write && fill(buf.cpu, blocks * c->lba_size))
			return 1;
		if (nvme_dma_for_device(c, &buf, dir))
			return failed(c, "sync");
		/*
		 * Submit the window, each chunk with its part of the buffer,
		 * and tell the controller once, for all of them.
		 */
		nvme_plug(q);
		for (n = 0, left = blocks; n < chunks; n++, left -= nlb) {
			nlb = left < per ? left : per;
			ret = nvme_submit_rw(c, q, write, lba, nlb, &buf,
					     (size_t)n * c->max_xfer, NULL);
			if (ret)
				return failed(c, "submit");
			lba += nlb;
		}
		nvme_unplug(q);
		count -= blocks;
		/* Then reap them, in whatever order they complete. */
		if (reap_all(c, q))
			return 1;
		/* A read: the buffer comes back before the CPU looks at it. */
		if (!write && nvme_dma_for_cpu(c, &buf, dir))
			return failed(c, "sync");
		if (!write && fwrite(buf.cpu, c->lba_size, blocks, stdout) != blocks)
			return 1;
	}
	nvme_dma_free(&buf);
	return 0;
}

/*
 * One bench read into slot @s: the buffer goes to the device, and the
 * command id remembers the slot for the completion.
 */
static int bench_read(struct nvme_ctrl *c, struct iobench *b,
		      struct nvme_dma *slots, uint16_t *slot_of, unsigned int s)
{
	uint16_t cid;

	if (nvme_dma_for_device(c, &slots[s], NVME_DMA_FROM_DEVICE) ||
	    nvme_submit_rw(c, &c->ioq[0], false, iobench_offset(b) / c->lba_size,
			   b->size / c->lba_size, &slots[s], 0, &cid))
		return failed(c, "submit");
	slot_of[cid] = s;
	return 0;
}

/*
 * bench: keeps b->qd reads in flight until the time is up, then reaps
 * the rest.  Each read has a slot of its own, a buffer of b->size bytes,
 * and a completed read hands its slot to the next one.  Nothing looks at
 * the data, but each read syncs as a consumer of it would: for the device
 * before, for the CPU after (free on the coherent node, two system calls
 * per read on the cached one).
 */
static int bench(struct nvme_ctrl *c, struct iobench *b)
{
	struct nvme_queue *q = &c->ioq[0];
	struct nvme_dma *slots = NULL;
	uint16_t *slot_of = NULL;
	struct nvme_cpl cpl[64];
	unsigned int s;
	int got, k, ret = 1;

	if (b->qd > q->depth - 1u || b->size > c->max_xfer ||
	    b->size % c->lba_size) {
		fprintf(stderr, "uio-nvme: bench needs QD <= %u (-q), SIZE <= %zu and a multiple of %u\n",
			q->depth - 1, c->max_xfer, c->lba_size);
		return 1;
	}
	slots = calloc(b->qd, sizeof(*slots));
	slot_of = calloc(q->depth, sizeof(*slot_of));
	if (!slots || !slot_of)
		goto out;
	for (s = 0; s < b->qd; s++)
		slots[s].fd = -1;
	for (s = 0; s < b->qd; s++)
		if (nvme_dma_alloc_data(c, &slots[s], b->size, cached)) {
			failed(c, "buffer");
			goto out;
		}
	if (iobench_start(b, c->nsze * c->lba_size))
		goto out;
	nvme_plug(q);
	for (s = 0; s < b->qd; s++)
		if (bench_read(c, b, slots, slot_of, s))
			goto out;
	nvme_unplug(q);
	while (q->inflight) {
		got = nvme_reap(c, q, cpl, 64);
		if (got < 0) {
			failed(c, "completion");
			goto out;
		}
		/* The reads that replace these go out with one doorbell. */
		nvme_plug(q);
		for (k = 0; k < got; k++) {
			if (cmd_failed(&cpl[k]))
				goto out;
			b->ios++;
			s = slot_of[cpl[k].cid];
			if (nvme_dma_for_cpu(c, &slots[s], NVME_DMA_FROM_DEVICE)) {
				failed(c, "sync");
				goto out;
			}
			if (!iobench_over(b) && bench_read(c, b, slots, slot_of, s))
				goto out;
		}
		nvme_unplug(q);
	}
	iobench_report(b, cached ? "uio-cached" : "uio");
	ret = 0;
out:
	for (s = 0; slots && s < b->qd; s++)
		nvme_dma_free(&slots[s]);
	free(slots);
	free(slot_of);
	return ret;
}

int main(int argc, char **argv)
{
	struct nvme_opts opts = { 0 };
	unsigned long long lba = 0, count = 0;
	const char *cmd = "identify";
	struct iobench b;
	struct nvme_ctrl c;
	int opt, ret;

	while ((opt = getopt(argc, argv, "cq:")) != -1) {
		if (opt == 'c')
			cached = true;
		else if (opt == 'q')
			opts.io_depth = strtoul(optarg, NULL, 0);
		else
			return usage();
	}
	if (optind >= argc)
		return usage();
	if (optind + 1 < argc)
		cmd = argv[optind + 1];
	if (!strcmp(cmd, "bench")) {
		if (optind + 6 != argc || iobench_parse(&b, argv + optind + 2, 512))
			return usage();
		/* Room for QD commands: a queue is full at depth - 1. */
		if (!opts.io_depth)
			opts.io_depth = b.qd + 1 > 256 ? b.qd + 1 : 256;
	} else if (strcmp(cmd, "identify")) {
		if (optind + 4 != argc ||
		    (strcmp(cmd, "read") && strcmp(cmd, "write")))
			return usage();
		lba = strtoull(argv[optind + 2], NULL, 0);
		count = strtoull(argv[optind + 3], NULL, 0);
	}

	ret = nvme_open(&c, argv[optind], &opts);
	if (ret)
		return failed(&c, "bring-up");
	if (!strcmp(cmd, "identify"))
		identify(&c);
	else if (!strcmp(cmd, "bench"))
		ret = bench(&c, &b);
	else
		ret = transfer(&c, !strcmp(cmd, "write"), lba, count);
	fflush(stdout);
	fprintf(stderr, "uio-nvme: %llu I/O commands\n", c.ios);
	if (nvme_close(&c))
		return failed(&c, "shutdown");
	return ret;
}
