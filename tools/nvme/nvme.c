// SPDX-License-Identifier: GPL-2.0
/*
 * A polled userspace NVMe driver over uio_pci_generic and uio-heap.
 *
 * Read it top to bottom: registers, DMA memory, queues, bring-up,
 * commands, shutdown.  The NVMe base specification names every register
 * and field used here; the comments say why each step is taken.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/pci_regs.h>

#include "lib/pci.h"
#include "lib/uioheap.h"
#include "nvme.h"

/* Controller registers (BAR0). */
#define NVME_REG_CAP	0x00	/* capabilities, 64 bit */
#define NVME_REG_VS	0x08	/* version */
#define NVME_REG_INTMS	0x0c	/* interrupt mask set */
#define NVME_REG_CC	0x14	/* controller configuration */
#define NVME_REG_CSTS	0x1c	/* controller status */
#define NVME_REG_AQA	0x24	/* admin queue attributes */
#define NVME_REG_ASQ	0x28	/* admin SQ base address, 64 bit */
#define NVME_REG_ACQ	0x30	/* admin CQ base address, 64 bit */
#define NVME_REG_DBS	0x1000	/* first doorbell */

#define CAP_MQES(cap)	((unsigned int)((cap) & 0xffff))	/* 0-based */
#define CAP_TO(cap)	((unsigned int)(((cap) >> 24) & 0xff))	/* 500 ms */
#define CAP_DSTRD(cap)	((unsigned int)(((cap) >> 32) & 0xf))
#define CAP_CSS_NVM(cap) (((cap) >> 37) & 1)
#define CAP_MPSMIN(cap)	((unsigned int)(((cap) >> 48) & 0xf))
#define CAP_MPSMAX(cap)	((unsigned int)(((cap) >> 52) & 0xf))

#define CC_EN		(1u << 0)
#define CC_MPS(shift)	(((shift) - 12u) << 7)
#define CC_SHN_NORMAL	(1u << 14)
#define CC_SHN_MASK	(3u << 14)
#define CC_IOSQES	(6u << 16)	/* 2^6 = 64-byte SQ entries */
#define CC_IOCQES	(4u << 20)	/* 2^4 = 16-byte CQ entries */

#define CSTS_RDY	(1u << 0)
#define CSTS_CFS	(1u << 1)	/* controller fatal status */
#define CSTS_SHST_MASK	(3u << 2)
#define CSTS_SHST_DONE	(2u << 2)

/* Admin and NVM command opcodes. */
#define ADM_DELETE_SQ	0x00
#define ADM_CREATE_SQ	0x01
#define ADM_DELETE_CQ	0x04
#define ADM_CREATE_CQ	0x05
#define ADM_IDENTIFY	0x06
#define ADM_SET_FEATURES 0x09
#define NVM_WRITE	0x01
#define NVM_READ	0x02

#define IDENTIFY_NS	0
#define IDENTIFY_CTRL	1
#define IDENTIFY_NS_LIST 2
#define FEAT_NUM_QUEUES	0x07

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define CREATED_CQ	1
#define CREATED_SQ	2

#define ADMIN_DEPTH	32		/* our choice; AQA allows up to 4096 */
#define DEFAULT_IO_DEPTH 256
#define CMD_TIMEOUT_MS	30000

#define PCI_CLASS_NVME		0x010802	/* mass storage, NVM, NVMe */

_Static_assert(sizeof(struct nvme_sqe) == 64, "SQ entry is 64 bytes");
_Static_assert(sizeof(struct nvme_cqe) == 16, "CQ entry is 16 bytes");

/*
 * Ordering between our memory and the device.  Queue entries live in
 * coherent heap memory, so no cache maintenance is needed, only ordering:
 * an entry must be complete before the doorbell that hands it over, and a
 * completion's fields must be read only after its phase bit was seen.  A
 * full fence is more than x86 needs, and right everywhere.
 */
#define dma_wmb()	__sync_synchronize()
#define dma_rmb()	__sync_synchronize()

static int fail(struct nvme_ctrl *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records what failed, in words, and returns @err (a negative errno). */
static int fail(struct nvme_ctrl *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return err;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Registers: 32-bit accesses only.  The specification allows a 64-bit
 * register to be accessed as two 32-bit halves, and every controller
 * takes those, while not every host bridge does 64-bit MMIO.
 */
static uint32_t rd32(struct nvme_ctrl *c, unsigned int reg)
{
	return *(volatile uint32_t *)(c->bar + reg);
}

static void wr32(struct nvme_ctrl *c, unsigned int reg, uint32_t val)
{
	*(volatile uint32_t *)(c->bar + reg) = val;
}

static uint64_t rd64(struct nvme_ctrl *c, unsigned int reg)
{
	return rd32(c, reg) | (uint64_t)rd32(c, reg + 4) << 32;
}

static void wr64(struct nvme_ctrl *c, unsigned int reg, uint64_t val)
{
	wr32(c, reg, (uint32_t)val);
	wr32(c, reg + 4, (uint32_t)(val >> 32));
}

const char *nvme_csts_str(struct nvme_ctrl *c, char *buf, size_t size)
{
	static const char * const shst[] = {
		"normal", "shutting down", "shutdown complete", "reserved",
	};
	uint32_t csts = rd32(c, NVME_REG_CSTS);

	if (csts == ~0u)
		snprintf(buf, size, "CSTS all ones: the device does not answer");
	else
		snprintf(buf, size, "CSTS %#x: RDY=%u CFS=%u SHST=%s", csts,
			 csts & CSTS_RDY, !!(csts & CSTS_CFS),
			 shst[(csts & CSTS_SHST_MASK) >> 2]);
	return buf;
}

/*
 * Waits until (CSTS & @mask) == @want: -ETIMEDOUT after @ms, -ENODEV if
 * the device stops answering, -EIO on a fatal controller error if
 * @cfs_fatal (waiting would not make it go away).
 */
static int wait_csts(struct nvme_ctrl *c, uint32_t mask, uint32_t want,
		     unsigned int ms, bool cfs_fatal)
{
	long long end = now_ms() + ms;
	uint32_t csts;

	for (;;) {
		csts = rd32(c, NVME_REG_CSTS);
		if (csts == ~0u)
			return -ENODEV;
		if ((csts & mask) == want)
			return 0;
		if (cfs_fatal && (csts & CSTS_CFS))
			return -EIO;
		if (now_ms() > end)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

/* ---- the PCI device: which one, its config space, its BAR (sysfs: lib/pci.h) ---- */

/* The PCI address of UIO device c->uio, which must be an NVMe controller. */
static int find_pci(struct nvme_ctrl *c)
{
	unsigned int class;
	int ret;

	ret = uio_pci_name(c->uio, c->pci, sizeof(c->pci));
	if (ret == -ENAMETOOLONG)
		return fail(c, -ENODEV, "%s: odd parent name", c->uio);
	if (ret)
		return fail(c, -ENODEV, "%s: no such UIO device (/sys/class/uio/%s/device: %s)",
			    c->uio, c->uio, strerror(-ret));

	/* NVMe is a PCI class: mass storage, non-volatile memory, NVMe. */
	if (uio_pci_attr(c->pci, "class", &class))
		return fail(c, -ENODEV, "%s: parent %s is not a PCI device",
			    c->uio, c->pci);
	if (class != PCI_CLASS_NVME)
		return fail(c, -ENODEV,
			    "%s: %s is not an NVMe controller (PCI class %#08x, NVMe is %#08x)",
			    c->uio, c->pci, class, PCI_CLASS_NVME);
	return 0;
}

static int pci_command(struct nvme_ctrl *c, uint16_t set)
{
	if (uio_pci_command(c->cfg_fd, set, 0))
		return fail(c, -EIO, "%s: cannot read or write PCI config space",
			    c->pci);
	return 0;
}

/* uio_pci_generic gives no UIO maps: BAR0 through the PCI core's files. */
static int map_bar(struct nvme_ctrl *c)
{
	int ret;

	c->cfg_fd = uio_pci_config_open(c->pci);
	if (c->cfg_fd < 0) {
		ret = c->cfg_fd;
		c->cfg_fd = -1;
		return fail(c, ret, "/sys/bus/pci/devices/%s/config: %s",
			    c->pci, strerror(-ret));
	}
	ret = uio_pci_map_bar(c->pci, 0, NVME_REG_DBS + 8, &c->bar,
			      &c->bar_len);
	if (ret == -ENODEV)
		return fail(c, ret, "%s: BAR0 too small for an NVMe controller",
			    c->pci);
	if (ret)
		return fail(c, ret, "/sys/bus/pci/devices/%s/resource0: %s",
			    c->pci, strerror(-ret));
	return 0;
}

/* ---- DMA memory: every byte the controller touches comes from here ---- */

static int dma_alloc_from(struct nvme_ctrl *c, struct nvme_dma *d, size_t len,
			  bool cached)
{
	int heap = cached ? c->cached_fd : c->heap_fd;
	int ret;

	memset(d, 0, sizeof(*d));
	d->fd = -1;
	if (heap < 0)
		return fail(c, heap, "/dev/dma_heap/%s%s: %s", c->uio,
			    cached ? "-cached" : "", strerror(-heap));
	d->fd = uioheap_alloc(heap, len, O_RDWR | O_CLOEXEC);
	if (d->fd < 0) {
		ret = d->fd;
		d->fd = -1;
		return fail(c, ret, "allocating %zu bytes from /dev/dma_heap/%s%s: %s",
			    len, c->uio, cached ? "-cached" : "", strerror(-ret));
	}
	d->len = len;
	d->cached = cached;
	/*
	 * The address the *device* uses: an IOVA behind an IOMMU, a bus
	 * address without one.  Never a physical address from pagemap.
	 */
	ret = uioheap_dma_addr(heap, d->fd, &d->addr, NULL);
	if (ret) {
		nvme_dma_free(d);
		/* Physical addresses (no IOMMU) are for CAP_SYS_RAWIO only. */
		return fail(c, ret, "DMA address of a %zu-byte buffer: %s%s", len,
			    strerror(-ret), ret == -EPERM ?
			    " (no translating IOMMU: the address is physical, and needs CAP_SYS_RAWIO)" :
			    "");
	}
	d->cpu = uioheap_map(d->fd, len);
	if (!d->cpu) {
		ret = -errno;
		nvme_dma_free(d);
		return fail(c, ret, "mapping a %zu-byte buffer: %s", len,
			    strerror(-ret));
	}
	return 0;
}

int nvme_dma_alloc(struct nvme_ctrl *c, struct nvme_dma *d, size_t len)
{
	return dma_alloc_from(c, d, len, false);
}

int nvme_dma_alloc_data(struct nvme_ctrl *c, struct nvme_dma *d, size_t len,
			bool cached)
{
	return dma_alloc_from(c, d, len, cached);
}

/*
 * What the CPU does with the data, in DMA_BUF_IOCTL_SYNC's terms: it
 * reads what the device wrote (a read command), or the device reads what
 * it wrote (a write command).
 */
static unsigned int sync_rw(enum nvme_dma_dir dir)
{
	switch (dir) {
	case NVME_DMA_FROM_DEVICE:
		return DMA_BUF_SYNC_READ;
	case NVME_DMA_TO_DEVICE:
		return DMA_BUF_SYNC_WRITE;
	default:
		return DMA_BUF_SYNC_RW;
	}
}

static int dma_sync(struct nvme_ctrl *c, struct nvme_dma *d,
		    enum nvme_dma_dir dir, bool for_cpu)
{
	int ret;

	/* Coherent memory: the CPU and the device already agree. */
	if (!d->cached)
		return 0;
	ret = uioheap_sync_rw(d->fd, for_cpu, sync_rw(dir));
	if (ret)
		return fail(c, ret, "DMA_BUF_IOCTL_SYNC %s of a %zu-byte buffer: %s",
			    for_cpu ? "START" : "END", d->len, strerror(-ret));
	return 0;
}

int nvme_dma_for_device(struct nvme_ctrl *c, struct nvme_dma *d,
			enum nvme_dma_dir dir)
{
	return dma_sync(c, d, dir, false);
}

int nvme_dma_for_cpu(struct nvme_ctrl *c, struct nvme_dma *d,
		     enum nvme_dma_dir dir)
{
	return dma_sync(c, d, dir, true);
}

void nvme_dma_free(struct nvme_dma *d)
{
	if (d->cpu)
		munmap(d->cpu, d->len);
	if (d->fd >= 0)
		close(d->fd);
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}

/* Queues need memory aligned to the controller's page. */
static int dma_alloc_aligned(struct nvme_ctrl *c, struct nvme_dma *d,
			     size_t len)
{
	int ret;

	len = (len + c->page - 1) & ~(c->page - 1);
	ret = nvme_dma_alloc(c, d, len);
	if (ret)
		return ret;
	if (d->addr & (c->page - 1)) {
		nvme_dma_free(d);
		return fail(c, -EINVAL, "heap address %#llx is not aligned to the %zu-byte controller page",
			    (unsigned long long)d->addr, c->page);
	}
	return 0;
}

/* ---- queues ---- */

static void queue_free(struct nvme_queue *q)
{
	nvme_dma_free(&q->sq);
	nvme_dma_free(&q->cq);
	nvme_dma_free(&q->prps);
	free(q->busy);
	q->busy = NULL;
	q->depth = 0;
}

static int queue_alloc(struct nvme_ctrl *c, struct nvme_queue *q,
		       uint16_t qid, unsigned int depth, size_t prp_list_bytes)
{
	int ret;

	memset(q, 0, sizeof(*q));
	q->sq.fd = q->cq.fd = q->prps.fd = -1;
	q->qid = qid;
	q->depth = depth;
	q->phase = 1;	/* the controller's first pass writes phase 1 */
	q->prp_list_bytes = prp_list_bytes;
	q->busy = calloc(depth, 1);
	if (!q->busy)
		return fail(c, -ENOMEM, "out of memory");
	ret = dma_alloc_aligned(c, &q->sq, depth * sizeof(struct nvme_sqe));
	if (!ret)
		ret = dma_alloc_aligned(c, &q->cq, depth * sizeof(struct nvme_cqe));
	/*
	 * One PRP list per command id, each a power of two no larger than a
	 * page, so that no list crosses a page boundary (a list that did
	 * would need chaining).  Preallocated: the I/O path never allocates.
	 */
	if (!ret && prp_list_bytes)
		ret = dma_alloc_aligned(c, &q->prps, depth * prp_list_bytes);
	if (ret)
		queue_free(q);
	/* Doorbells: SQ y tail at 2y, CQ y head at 2y + 1, DSTRD apart. */
	q->sq_db = (volatile uint32_t *)(c->bar + NVME_REG_DBS +
					 (2 * qid) * c->db_stride);
	q->cq_db = (volatile uint32_t *)(c->bar + NVME_REG_DBS +
					 (2 * qid + 1) * c->db_stride);
	return ret;
}

/*
 * A free command id; there is one, since fewer than depth are in flight.
 * Starting at the tail keeps ids and slots mostly in step.
 */
static uint16_t free_cid(struct nvme_queue *q)
{
	unsigned int i;

	for (i = q->sq_tail; q->busy[i]; i = (i + 1) % q->depth)
		;
	return i;
}

/* Puts @cmd into the SQ and rings the tail doorbell. */
static int queue_submit(struct nvme_queue *q,
			struct nvme_sqe *cmd, uint16_t *cid)
{
	struct nvme_sqe *slot;
	uint16_t i;

	/*
	 * The SQ is full when the tail would catch up with the head.  The
	 * controller may have fetched entries we have no completion for yet,
	 * so counting commands in flight is the safe measure of space.
	 */
	if (q->inflight >= q->depth - 1)
		return -EAGAIN;
	i = free_cid(q);
	cmd->cid = i;
	q->busy[i] = 1;
	q->inflight++;

	slot = (struct nvme_sqe *)q->sq.cpu + q->sq_tail;
	*slot = *cmd;
	q->sq_tail = (q->sq_tail + 1) % q->depth;
	if (!q->plugged) {
		dma_wmb();	/* the entry, then the doorbell */
		*q->sq_db = q->sq_tail;
	}
	if (cid)
		*cid = i;
	return 0;
}

void nvme_plug(struct nvme_queue *q)
{
	q->plugged = true;
}

void nvme_unplug(struct nvme_queue *q)
{
	q->plugged = false;
	dma_wmb();		/* all the entries, then one doorbell */
	*q->sq_db = q->sq_tail;
}

int nvme_reap(struct nvme_ctrl *c, struct nvme_queue *q, struct nvme_cpl *cpl,
	      int max)
{
	long long end = now_ms() + c->cmd_timeout_ms;
	volatile struct nvme_cqe *cqe;
	unsigned int spins = 0;
	uint16_t status, cid;
	char csts[96];
	int n = 0;

	/* Commands the controller was never told about would never complete. */
	if (q->plugged)
		return fail(c, -EINVAL, "queue %u: plugged, nvme_unplug() before reaping",
			    q->qid);
	while (n < max) {
		cqe = (volatile struct nvme_cqe *)q->cq.cpu + q->cq_head;
		status = cqe->status;
		/*
		 * An entry is new when its phase tag matches the one the
		 * controller writes on this pass through the ring; it flips
		 * on every wrap, so nothing ever needs clearing.
		 */
		if ((status & 1) != q->phase) {
			if (n)
				break;
			if (!q->inflight)
				return fail(c, -EINVAL, "queue %u: nothing in flight to wait for",
					    q->qid);
			if (++spins % 256 == 0) {
				if (now_ms() > end)
					return fail(c, -ETIMEDOUT,
						    "queue %u: no completion within %u ms, %u commands in flight (%s)",
						    q->qid, c->cmd_timeout_ms, q->inflight,
						    nvme_csts_str(c, csts, sizeof(csts)));
				sched_yield();
			}
			continue;
		}
		dma_rmb();	/* the phase tag, then the rest */
		cid = cqe->cid;
		if (cid >= q->depth || !q->busy[cid])
			return fail(c, -EIO, "queue %u: completion for command id %u that is not in flight",
				    q->qid, cid);
		q->busy[cid] = 0;
		q->inflight--;
		cpl[n].cid = cid;
		cpl[n].status = status >> 1;
		cpl[n].result = cqe->result;
		n++;
		if (++q->cq_head == q->depth) {
			q->cq_head = 0;
			q->phase ^= 1;
		}
	}
	/* One head doorbell for the batch: the slots may be reused. */
	*q->cq_db = q->cq_head;
	if (q->qid)
		c->ios += n;
	return n;
}

/* Submits @cmd on @q and waits for it; the queue must be idle. */
static int queue_run(struct nvme_ctrl *c, struct nvme_queue *q,
		     struct nvme_sqe *cmd, const char *what, uint32_t *result)
{
	char text[96], reason[sizeof(c->err)];
	struct nvme_cpl cpl;
	int ret;

	if (q->inflight)
		return fail(c, -EBUSY, "%s: queue %u is busy", what, q->qid);
	ret = queue_submit(q, cmd, NULL);
	if (ret)
		return fail(c, ret, "%s: cannot submit", what);
	ret = nvme_reap(c, q, &cpl, 1);
	if (ret < 0) {
		memcpy(reason, c->err, sizeof(reason));
		return fail(c, ret, "%s: %s", what, reason);
	}
	if (cpl.status) {
		c->status = cpl.status;
		return fail(c, -EIO, "%s: %s", what,
			    nvme_status_str(cpl.status, text, sizeof(text)));
	}
	if (result)
		*result = cpl.result;
	return 0;
}

int nvme_admin(struct nvme_ctrl *c, struct nvme_sqe *cmd, const char *what,
	       uint32_t *result)
{
	return queue_run(c, &c->admin, cmd, what, result);
}

/* ---- bring-up ---- */

/*
 * Clears CC.EN and waits for CSTS.RDY to follow: a reset, which also
 * makes the controller forget queues and addresses a previous user left.
 */
static int ctrl_disable(struct nvme_ctrl *c)
{
	char csts[96];
	uint32_t cc = rd32(c, NVME_REG_CC);
	int ret;

	if (cc & CC_EN)
		wr32(c, NVME_REG_CC, cc & ~CC_EN);
	/* Also the way out of a fatal error: CFS does not stop a reset. */
	ret = wait_csts(c, CSTS_RDY, 0, c->timeout_ms, false);
	if (ret)
		return fail(c, ret, "%s: controller did not become disabled within CAP.TO = %u ms (%s)",
			    c->pci, c->timeout_ms,
			    nvme_csts_str(c, csts, sizeof(csts)));
	c->enabled = false;
	return 0;
}

static int ctrl_enable(struct nvme_ctrl *c)
{
	char csts[96];
	int ret;

	/* The admin queues: sizes (0-based) and addresses from the heap. */
	wr32(c, NVME_REG_AQA, (c->admin.depth - 1) << 16 | (c->admin.depth - 1));
	wr64(c, NVME_REG_ASQ, c->admin.sq.addr);
	wr64(c, NVME_REG_ACQ, c->admin.cq.addr);
	wr32(c, NVME_REG_CC, CC_IOCQES | CC_IOSQES |
	     CC_MPS(__builtin_ctzl(c->page)) | CC_EN);
	ret = wait_csts(c, CSTS_RDY, CSTS_RDY, c->timeout_ms, true);
	if (ret)
		return fail(c, ret, "%s: controller %s (%s)", c->pci,
			    ret == -EIO ? "failed while enabling" :
			    "never became ready within CAP.TO",
			    nvme_csts_str(c, csts, sizeof(csts)));
	c->enabled = true;
	return 0;
}

/* Reads CAP and chooses what depends on it. */
static int read_cap(struct nvme_ctrl *c)
{
	unsigned int host_shift = __builtin_ctzl(sysconf(_SC_PAGESIZE));
	unsigned int min_shift, max_shift, shift;

	c->cap = rd64(c, NVME_REG_CAP);
	c->vs = rd32(c, NVME_REG_VS);
	if (c->cap == ~0ull)
		return fail(c, -ENODEV, "%s: BAR0 reads all ones: the device does not answer",
			    c->pci);
	if (!CAP_CSS_NVM(c->cap))
		return fail(c, -ENODEV, "%s: controller does not support the NVM command set",
			    c->pci);
	/* CAP.TO is in 500 ms units; 0 would be a broken controller. */
	c->timeout_ms = (CAP_TO(c->cap) ? CAP_TO(c->cap) : 1) * 500;
	c->db_stride = 4u << CAP_DSTRD(c->cap);
	if (NVME_REG_DBS + (2 * NVME_MAX_IOQ + 2) * c->db_stride > c->bar_len)
		return fail(c, -ENODEV, "%s: BAR0 of %zu bytes has no room for the doorbells",
			    c->pci, c->bar_len);
	/*
	 * The controller page: the host's page if the controller allows it,
	 * else the nearest size it does.  PRP entries are in these units.
	 */
	min_shift = 12 + CAP_MPSMIN(c->cap);
	max_shift = 12 + CAP_MPSMAX(c->cap);
	shift = host_shift < min_shift ? min_shift :
		host_shift > max_shift ? max_shift : host_shift;
	c->page = 1ul << shift;
	return 0;
}

static int identify(struct nvme_ctrl *c, unsigned int cns, uint32_t nsid,
		    const char *what)
{
	struct nvme_sqe cmd = {
		.opc = ADM_IDENTIFY,
		.nsid = nsid,
		.prp1 = c->ident.addr,	/* 4 KiB, within one page */
		.cdw10 = cns,
	};

	memset(c->ident.cpu, 0, 4096);
	return nvme_admin(c, &cmd, what, NULL);
}

/* Copies a space-padded Identify string and trims it. */
static void id_string(char *dst, const uint8_t *src, size_t len)
{
	memcpy(dst, src, len);
	dst[len] = '\0';
	while (len && dst[len - 1] == ' ')
		dst[--len] = '\0';
}

static uint32_t le32_at(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static int identify_all(struct nvme_ctrl *c)
{
	const uint8_t *id = c->ident.cpu;
	unsigned int mdts, flbas, lbads, ms;
	size_t max, prp_max;
	uint32_t lbaf;
	int ret;

	ret = identify(c, IDENTIFY_CTRL, 0, "Identify controller");
	if (ret)
		return ret;
	id_string(c->sn, id + 4, 20);
	id_string(c->mn, id + 24, 40);
	id_string(c->fr, id + 64, 8);
	mdts = id[77];
	c->nn = le32_at(id + 516);
	/*
	 * MDTS: the largest transfer, as a power of two of the minimum
	 * page size; 0 means no limit.  We also keep each command's PRP
	 * list within one page, which bounds it at page / 8 entries.
	 */
	prp_max = (c->page / 8) * c->page;
	max = mdts ? (1ul << mdts) << (12 + CAP_MPSMIN(c->cap)) : prp_max;
	c->max_xfer = max < prp_max ? max : prp_max;

	/* The first active namespace; 1.0 controllers only know CNS 0/1. */
	ret = identify(c, IDENTIFY_NS_LIST, 0, "Identify active namespaces");
	if (!ret)
		c->nsid = le32_at(id);
	else if (c->nn)
		c->nsid = 1;
	if (!c->nsid)
		return fail(c, -ENODEV, "%s: controller has no active namespace",
			    c->pci);

	ret = identify(c, IDENTIFY_NS, c->nsid, "Identify namespace");
	if (ret)
		return ret;
	c->nsze = le32_at(id) | (uint64_t)le32_at(id + 4) << 32;
	/* FLBAS picks the LBA format in use: data size 2^LBADS, metadata MS. */
	flbas = (id[26] & 0xf) | ((id[26] >> 5) & 3) << 4;
	lbaf = le32_at(id + 128 + 4 * flbas);
	lbads = (lbaf >> 16) & 0xff;
	ms = lbaf & 0xffff;
	if (lbads < 9 || lbads > 16)
		return fail(c, -ENODEV, "namespace %u: LBA size 2^%u is not usable",
			    c->nsid, lbads);
	if (ms)
		return fail(c, -ENODEV, "namespace %u: LBA format with %u bytes of metadata is not supported",
			    c->nsid, ms);
	c->lba_size = 1u << lbads;
	if (!c->nsze)
		return fail(c, -ENODEV, "namespace %u is empty", c->nsid);
	/* Whole blocks per command. */
	c->max_xfer -= c->max_xfer % c->lba_size;
	if (!c->max_xfer)
		return fail(c, -ENODEV, "transfer limit below one block");
	return 0;
}

static int create_io_queues(struct nvme_ctrl *c, const struct nvme_opts *o)
{
	unsigned int want = o && o->io_queues ? o->io_queues : 1;
	unsigned int depth = o && o->io_depth ? o->io_depth : DEFAULT_IO_DEPTH;
	unsigned int entries, granted;
	struct nvme_queue *q;
	struct nvme_sqe cmd;
	uint32_t res;
	size_t list;
	int i, ret;

	if (want > NVME_MAX_IOQ)
		want = NVME_MAX_IOQ;
	/* Ask for the queues before creating them; the answer may be less. */
	cmd = (struct nvme_sqe){
		.opc = ADM_SET_FEATURES,
		.cdw10 = FEAT_NUM_QUEUES,
		.cdw11 = (want - 1) << 16 | (want - 1),
	};
	ret = nvme_admin(c, &cmd, "Set Features (Number of Queues)", &res);
	if (ret)
		return ret;
	granted = 1 + ((res & 0xffff) < (res >> 16) ? res & 0xffff : res >> 16);
	c->nr_ioq = want < granted ? want : granted;

	/* MQES is 0-based: MQES + 1 entries at most. */
	if (depth > CAP_MQES(c->cap) + 1u)
		depth = CAP_MQES(c->cap) + 1;
	/* The SQ, and the queue's PRP lists, each in one heap buffer. */
	entries = c->max_xfer / c->page;
	for (list = 8; list < entries * 8; list <<= 1)
		;
	if (depth > NVME_DMA_CHUNK_MAX / sizeof(struct nvme_sqe))
		depth = NVME_DMA_CHUNK_MAX / sizeof(struct nvme_sqe);
	if (depth * list > NVME_DMA_CHUNK_MAX)
		depth = NVME_DMA_CHUNK_MAX / list;
	if (depth < 2)
		return fail(c, -EINVAL, "an I/O queue needs at least 2 entries");

	for (i = 0; i < c->nr_ioq; i++) {
		q = &c->ioq[i];
		ret = queue_alloc(c, q, i + 1, depth, list);
		if (ret)
			return ret;
		/* CQ first: the SQ names it.  PC=1: one contiguous buffer. */
		cmd = (struct nvme_sqe){
			.opc = ADM_CREATE_CQ,
			.prp1 = q->cq.addr,
			.cdw10 = (depth - 1) << 16 | q->qid,
			.cdw11 = 1,	/* physically contiguous, no interrupts */
		};
		ret = nvme_admin(c, &cmd, "Create I/O Completion Queue", NULL);
		if (ret)
			return ret;
		q->created |= CREATED_CQ;
		cmd = (struct nvme_sqe){
			.opc = ADM_CREATE_SQ,
			.prp1 = q->sq.addr,
			.cdw10 = (depth - 1) << 16 | q->qid,
			.cdw11 = (uint32_t)q->qid << 16 | 1,
		};
		ret = nvme_admin(c, &cmd, "Create I/O Submission Queue", NULL);
		if (ret)
			return ret;
		q->created |= CREATED_SQ;
	}
	return 0;
}

static void release(struct nvme_ctrl *c)
{
	int i;

	for (i = 0; i < NVME_MAX_IOQ; i++)
		queue_free(&c->ioq[i]);
	queue_free(&c->admin);
	nvme_dma_free(&c->ident);
	if (c->bar)
		munmap((void *)c->bar, c->bar_len);
	if (c->cfg_fd >= 0)
		close(c->cfg_fd);
	if (c->heap_fd >= 0)
		close(c->heap_fd);
	if (c->cached_fd >= 0)
		close(c->cached_fd);
	c->bar = NULL;
	c->cfg_fd = c->heap_fd = c->cached_fd = -1;
	c->nr_ioq = 0;
}

int nvme_open(struct nvme_ctrl *c, const char *uio,
	      const struct nvme_opts *opts)
{
	char err[sizeof(c->err)], cached[sizeof(c->uio) + 8];
	int i, ret;

	memset(c, 0, sizeof(*c));
	c->cfg_fd = c->heap_fd = c->cached_fd = -1;
	c->ident.fd = c->admin.sq.fd = c->admin.cq.fd = c->admin.prps.fd = -1;
	for (i = 0; i < NVME_MAX_IOQ; i++)
		c->ioq[i].sq.fd = c->ioq[i].cq.fd = c->ioq[i].prps.fd = -1;
	c->cmd_timeout_ms = CMD_TIMEOUT_MS;
	if (strlen(uio) >= sizeof(c->uio))
		return fail(c, -ENODEV, "%s: no such UIO device", uio);
	memcpy(c->uio, uio, strlen(uio) + 1);

	ret = find_pci(c);
	if (ret)
		return ret;
	/* The heap of the UIO device: memory allocated for its parent. */
	c->heap_fd = uioheap_open(uio);
	if (c->heap_fd < 0) {
		ret = c->heap_fd;
		c->heap_fd = -1;
		return fail(c, ret, "/dev/dma_heap/%s: %s (is uio_heap loaded?)",
			    uio, strerror(-ret));
	}
	/*
	 * Its cacheable twin, for data buffers only.  Queues stay on the
	 * coherent node: the controller writes completion entries that the
	 * CPU polls, and the CPU writes submission entries the controller
	 * fetches whenever it likes; neither side could say when to sync.
	 * Optional: without it, only nvme_dma_alloc_data() of a cached
	 * buffer fails, with the -errno kept here.
	 */
	snprintf(cached, sizeof(cached), "%s-cached", uio);
	c->cached_fd = uioheap_open(cached);
	ret = map_bar(c);
	if (ret)
		goto out;
	/*
	 * Registers first, DMA last: decode memory to reach BAR0, reset the
	 * controller so that nothing a previous user programmed is live, and
	 * only then let it master the bus.
	 */
	ret = pci_command(c, PCI_COMMAND_MEMORY);
	if (!ret)
		ret = read_cap(c);
	if (!ret)
		ret = ctrl_disable(c);
	if (ret)
		goto out;
	ret = pci_command(c, PCI_COMMAND_MASTER);
	if (ret)
		goto out;

	ret = queue_alloc(c, &c->admin, 0, ADMIN_DEPTH, 0);
	if (!ret)
		ret = dma_alloc_aligned(c, &c->ident, 4096);
	if (!ret)
		ret = ctrl_enable(c);
	/* Polled: mask the controller's interrupts (INTx/MSI, not MSI-X). */
	if (!ret)
		wr32(c, NVME_REG_INTMS, ~0u);
	if (!ret)
		ret = identify_all(c);
	if (!ret)
		ret = create_io_queues(c, opts);
	if (!ret)
		return 0;
	/* Undo what was set up; the first failure is the one to report. */
	memcpy(err, c->err, sizeof(err));
	nvme_close(c);
	memcpy(c->err, err, sizeof(err));
	return ret;
out:
	release(c);
	return ret;
}

/* ---- I/O ---- */

int nvme_submit_rw(struct nvme_ctrl *c, struct nvme_queue *q, bool write,
		   uint64_t slba, uint32_t nlb, const struct nvme_dma *buf,
		   size_t off, uint16_t *cid)
{
	size_t len = (size_t)nlb * c->lba_size, first, i, n;
	uint64_t addr = buf->addr + off, *list;
	struct nvme_sqe cmd = {
		.opc = write ? NVM_WRITE : NVM_READ,
		.nsid = c->nsid,
		.cdw10 = (uint32_t)slba,
		.cdw11 = (uint32_t)(slba >> 32),
		.cdw12 = nlb - 1,	/* 0-based */
	};
	uint16_t id;
	int ret;

	if (!nlb || len > c->max_xfer || off > buf->len ||
	    len > buf->len - off || (off & 3))
		return fail(c, -EINVAL, "%s of %u blocks at buffer offset %zu: beyond max_xfer %zu or the %zu-byte buffer, or unaligned",
			    write ? "write" : "read", nlb, off, c->max_xfer,
			    buf->len);
	/*
	 * The namespace's bounds are the controller's to check: a command
	 * past its end completes with "LBA Out of Range".
	 *
	 * PRPs describe the buffer page by page.  PRP1 is the first byte
	 * (it may start inside a page); the rest are whole pages.  One more
	 * page fits in PRP2; beyond that PRP2 points at a list of them.
	 */
	cmd.prp1 = addr;
	first = c->page - (addr & (c->page - 1));
	if (len > first) {
		n = (len - first + c->page - 1) / c->page;
		if (n == 1) {
			cmd.prp2 = addr + first;
		} else {
			/* The list of the id queue_submit() will pick. */
			if (q->inflight >= q->depth - 1)
				return -EAGAIN;
			id = free_cid(q);
			list = (uint64_t *)((uint8_t *)q->prps.cpu +
					    (size_t)id * q->prp_list_bytes);
			for (i = 0; i < n; i++)
				list[i] = addr + first + i * c->page;
			cmd.prp2 = q->prps.addr + (size_t)id * q->prp_list_bytes;
		}
	}
	ret = queue_submit(q, &cmd, cid);
	return ret;
}

int nvme_rw(struct nvme_ctrl *c, bool write, uint64_t slba, uint32_t nlb,
	    const struct nvme_dma *buf, size_t off)
{
	struct nvme_queue *q = &c->ioq[0];
	struct nvme_cpl cpl;
	char text[96];
	int ret;

	if (q->inflight)
		return fail(c, -EBUSY, "queue %u is busy", q->qid);
	ret = nvme_submit_rw(c, q, write, slba, nlb, buf, off, NULL);
	if (ret)
		return ret;
	ret = nvme_reap(c, q, &cpl, 1);
	if (ret < 0)
		return ret;
	if (cpl.status) {
		c->status = cpl.status;
		return fail(c, -EIO, "%s of %u blocks at LBA %llu: %s",
			    write ? "write" : "read", nlb,
			    (unsigned long long)slba,
			    nvme_status_str(cpl.status, text, sizeof(text)));
	}
	return 0;
}

/* ---- shutdown ---- */

/* Have the heap's buffers been revoked (the device unbound)? */
static bool revoked(struct nvme_ctrl *c)
{
	uint64_t addr;

	return c->admin.sq.fd >= 0 &&
	       uioheap_dma_addr(c->heap_fd, c->admin.sq.fd, &addr, NULL) == -ENODEV;
}

static int delete_io_queues(struct nvme_ctrl *c)
{
	struct nvme_queue *q;
	struct nvme_sqe cmd;
	int i, ret, first = 0;

	/* Each SQ before its CQ: the reverse of creation. */
	for (i = c->nr_ioq - 1; i >= 0; i--) {
		q = &c->ioq[i];
		if (q->created & CREATED_SQ) {
			cmd = (struct nvme_sqe){ .opc = ADM_DELETE_SQ, .cdw10 = q->qid };
			ret = nvme_admin(c, &cmd, "Delete I/O Submission Queue", NULL);
			if (ret && !first)
				first = ret;
		}
		if (!(q->created & CREATED_CQ))
			continue;
		cmd = (struct nvme_sqe){ .opc = ADM_DELETE_CQ, .cdw10 = q->qid };
		ret = nvme_admin(c, &cmd, "Delete I/O Completion Queue", NULL);
		if (ret && !first)
			first = ret;
	}
	return first;
}

int nvme_close(struct nvme_ctrl *c)
{
	const uint8_t *id = c->ident.cpu;
	unsigned int ms;
	char csts[96];
	int ret = 0, r;

	if (!c->bar) {
		release(c);
		return 0;
	}
	if (revoked(c)) {
		/*
		 * The device was unbound: uio-heap switched bus mastering off
		 * and zapped our mappings.  Touching a queue now would raise
		 * SIGBUS; the registers still answer, so just reset.
		 */
		ret = fail(c, -ENODEV, "%s: buffers were revoked (device unbound); controller reset without shutdown",
			   c->pci);
		r = ctrl_disable(c);
		release(c);
		return ret ? ret : r;
	}
	if (c->enabled) {
		ret = delete_io_queues(c);
		/* RTD3E (microseconds), else a generous default. */
		ms = id ? le32_at(id + 88) / 1000 : 0;
		if (ms < 10000)
			ms = 10000;
		wr32(c, NVME_REG_CC,
		     (rd32(c, NVME_REG_CC) & ~CC_SHN_MASK) | CC_SHN_NORMAL);
		r = wait_csts(c, CSTS_SHST_MASK, CSTS_SHST_DONE, ms, true);
		if (r && !ret)
			ret = fail(c, r, "%s: shutdown did not complete within %u ms (%s)",
				   c->pci, ms, nvme_csts_str(c, csts, sizeof(csts)));
	}
	/*
	 * Disable too, so that no register points at memory we free next;
	 * a controller that is not enabled does no DMA at all.
	 */
	r = ctrl_disable(c);
	if (r && !ret)
		ret = r;
	release(c);
	return ret;
}

/* ---- status codes, in words ---- */

struct status_name {
	uint16_t code;		/* SC | SCT << 8 */
	const char *name;
};

static const struct status_name status_names[] = {
	{ 0x000, "Successful Completion" },
	{ 0x001, "Invalid Command Opcode" },
	{ 0x002, "Invalid Field in Command" },
	{ 0x003, "Command ID Conflict" },
	{ 0x004, "Data Transfer Error" },
	{ 0x005, "Commands Aborted due to Power Loss Notification" },
	{ 0x006, "Internal Error" },
	{ 0x007, "Command Abort Requested" },
	{ 0x008, "Command Aborted due to SQ Deletion" },
	{ 0x00b, "Invalid Namespace or Format" },
	{ 0x00c, "Command Sequence Error" },
	{ 0x013, "PRP Offset Invalid" },
	{ 0x015, "Operation Denied" },
	{ 0x020, "Namespace is Write Protected" },
	{ 0x021, "Command Interrupted" },
	{ 0x080, "LBA Out of Range" },
	{ 0x081, "Capacity Exceeded" },
	{ 0x082, "Namespace Not Ready" },
	{ 0x083, "Reservation Conflict" },
	{ 0x084, "Format In Progress" },
	{ 0x100, "Completion Queue Invalid" },
	{ 0x101, "Invalid Queue Identifier" },
	{ 0x102, "Invalid Queue Size" },
	{ 0x108, "Invalid Interrupt Vector" },
	{ 0x10c, "Invalid Queue Deletion" },
	{ 0x180, "Conflicting Attributes" },
	{ 0x182, "Attempted Write to Read Only Range" },
	{ 0x280, "Write Fault" },
	{ 0x281, "Unrecovered Read Error" },
	{ 0x285, "Compare Failure" },
	{ 0x286, "Access Denied" },
	{ 0x287, "Deallocated or Unwritten Logical Block" },
};

const char *nvme_status_str(uint16_t status, char *buf, size_t size)
{
	static const char * const sct_names[8] = {
		"generic", "command specific", "media error", "path related",
		"reserved", "reserved", "reserved", "vendor specific",
	};
	unsigned int sc = status & 0xff, sct = (status >> 8) & 7;
	const char *name = NULL;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(status_names); i++)
		if (status_names[i].code == (sct << 8 | sc))
			name = status_names[i].name;
	if (name)
		snprintf(buf, size, "%s (SCT %#x SC %#04x%s)", name, sct, sc,
			 status & (1 << 14) ? ", do not retry" : "");
	else
		snprintf(buf, size, "unknown %s status (SCT %#x SC %#04x%s)",
			 sct_names[sct], sct, sc,
			 status & (1 << 14) ? ", do not retry" : "");
	return buf;
}
