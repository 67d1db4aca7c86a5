// SPDX-License-Identifier: GPL-2.0
/*
 * A userspace ZDMA channel driver over uio_pdrv_genirq and uio-heap.
 *
 * Read it top to bottom: registers, opening a channel, a transfer
 * (program, start, wait), errors, buffers.  Register names and fields are
 * those of the Zynq UltraScale+ register reference (ZDMA, module
 * "zdma_ch"); the comments say why each step is taken.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "lib/pci.h"
#include "lib/uioheap.h"
#include "zdma.h"

/* Channel registers (UIO map 0). */
#define ZDMA_ISR		0x100	/* interrupt status, write 1 to clear */
#define ZDMA_IEN		0x108	/* interrupt enable: unmask */
#define ZDMA_IDS		0x10c	/* interrupt disable: mask */
#define ZDMA_CTRL0		0x110	/* mode */
#define ZDMA_DATA_ATTR		0x120	/* AXI attributes of data transfers */
#define ZDMA_SRC_DSCR_WORD0	0x128	/* source: address bits 31:0 */
#define ZDMA_SRC_DSCR_WORD1	0x12c	/* address bits 48:32 */
#define ZDMA_SRC_DSCR_WORD2	0x130	/* size */
#define ZDMA_SRC_DSCR_WORD3	0x134	/* flags */
#define ZDMA_DST_DSCR_WORD0	0x138	/* the same for the destination */
#define ZDMA_DST_DSCR_WORD1	0x13c
#define ZDMA_DST_DSCR_WORD2	0x140
#define ZDMA_DST_DSCR_WORD3	0x144
#define ZDMA_TOTAL_BYTE		0x188	/* bytes moved, write 1 to clear */
#define ZDMA_IRQ_SRC_ACCT	0x190	/* descriptor interrupt counts, */
#define ZDMA_IRQ_DST_ACCT	0x194	/* cleared on read */
#define ZDMA_CTRL2		0x200	/* bit 0: enable, i.e. start */
#define ZDMA_REGS_END		0x204

#define ZDMA_INV_APB		(1u << 0)
#define ZDMA_BYTE_CNT_OVRFL	(1u << 3)
#define ZDMA_IRQ_SRC_ACCT_ERR	(1u << 4)
#define ZDMA_IRQ_DST_ACCT_ERR	(1u << 5)
#define ZDMA_AXI_RD_SRC_DSCR	(1u << 6)
#define ZDMA_AXI_RD_DST_DSCR	(1u << 7)
#define ZDMA_AXI_RD_DATA	(1u << 8)
#define ZDMA_AXI_WR_DATA	(1u << 9)
#define ZDMA_DMA_DONE		(1u << 10)
#define ZDMA_INT_ALL		0xfffu
#define ZDMA_INT_ERRORS		(ZDMA_INV_APB | ZDMA_BYTE_CNT_OVRFL |	\
				 ZDMA_IRQ_SRC_ACCT_ERR | ZDMA_IRQ_DST_ACCT_ERR | \
				 ZDMA_AXI_RD_SRC_DSCR | ZDMA_AXI_RD_DST_DSCR | \
				 ZDMA_AXI_RD_DATA | ZDMA_AXI_WR_DATA)

/* DATA_ATTR: AXI burst types, 1 = INCR (the reset value; 0 = FIXED). */
#define ZDMA_ARBURST_SHIFT	26
#define ZDMA_AWBURST_SHIFT	12
#define ZDMA_BURST_MASK		3u
#define ZDMA_BURST_INCR		1u

#define ZDMA_CTRL2_EN		(1u << 0)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * Ordering between our memory and the channel, as the kernel's writel()
 * and readl() give it: the CPU's writes to a buffer must reach memory
 * before the register write that starts the channel, and the buffer may
 * be read only after the status that says the channel is done.  On arm64
 * the buffer (Normal memory, uncached or not) and the registers (Device
 * memory) are ordered by a barrier over the outer shareable domain; a
 * full fence elsewhere.
 */
static inline void dma_mb(void)
{
#if defined(__aarch64__)
	__asm__ __volatile__("dmb osh" ::: "memory");
#else
	__sync_synchronize();
#endif
}

static int fail(struct zdma_chan *ch, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records what failed, in words, and returns @err (a negative errno). */
static int fail(struct zdma_chan *ch, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ch->err, sizeof(ch->err), fmt, ap);
	va_end(ap);
	return err;
}

static uint32_t zdma_read(struct zdma_chan *ch, unsigned int reg)
{
	return ch->regs[reg / 4];
}

static void zdma_write(struct zdma_chan *ch, unsigned int reg, uint32_t val)
{
	ch->regs[reg / 4] = val;
}

/* A line of /sys/class/uio/<uio>/<attr>, without its newline. */
static int uio_attr(const char *uio, const char *attr, char *buf, size_t size)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/uio/%s/%s", uio, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * The device tree's "compatible" is a list of NUL-terminated strings;
 * reading it as one line sees the first, which is the one ZDMA nodes
 * carry.
 */
static bool is_zdma(const char *uio)
{
	char compat[64];

	return !uio_attr(uio, "device/of_node/compatible", compat,
			 sizeof(compat)) && !strcmp(compat, ZDMA_COMPATIBLE);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int zdma_find(char names[][16], int max)
{
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir("/sys/class/uio");
	if (!dir)
		return 0;
	while (n < max && (de = readdir(dir))) {
		if (strlen(de->d_name) < 16 && is_zdma(de->d_name))
			strcpy(names[n++], de->d_name);
	}
	closedir(dir);
	qsort(names, n, sizeof(names[0]), by_name);
	return n;
}

/*
 * UIO maps are mmap()ed at offset N pages for map N; a map that does not
 * start on a page boundary starts "offset" bytes into the first page.
 */
static int zdma_map(struct zdma_chan *ch)
{
	char val[32];
	size_t size, offset;

	if (uio_attr(ch->uio, "maps/map0/size", val, sizeof(val)))
		return fail(ch, -ENODEV, "%s has no UIO map 0", ch->uio);
	size = strtoul(val, NULL, 0);
	offset = uio_attr(ch->uio, "maps/map0/offset", val, sizeof(val)) ?
		 0 : strtoul(val, NULL, 0);
	if (size < ZDMA_REGS_END)
		return fail(ch, -ENODEV, "%s: map 0 has %zu bytes, the channel %d",
			    ch->uio, size, ZDMA_REGS_END);
	ch->map_len = offset + size;
	ch->map = mmap(NULL, ch->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ch->uio_fd, 0);
	if (ch->map == MAP_FAILED) {
		ch->map = NULL;
		return fail(ch, -errno, "mmap of %s's registers: %s", ch->uio,
			    strerror(errno));
	}
	ch->regs = (volatile uint32_t *)((char *)ch->map + offset);
	return 0;
}

int zdma_open(struct zdma_chan *ch, const char *uio)
{
	char path[64];
	int ret;

	memset(ch, 0, sizeof(*ch));
	ch->uio_fd = ch->heap_fd = ch->cached_fd = -1;
	if (strlen(uio) >= sizeof(ch->uio))
		return fail(ch, -ENODEV, "%s: no such UIO device", uio);
	strcpy(ch->uio, uio);
	if (!is_zdma(uio))
		return fail(ch, -ENODEV, "%s is not a ZDMA channel (%s)", uio,
			    ZDMA_COMPATIBLE);
	uio_attr(uio, "name", ch->name, sizeof(ch->name));

	snprintf(path, sizeof(path), "/dev/%s", uio);
	ch->uio_fd = open(path, O_RDWR | O_CLOEXEC);
	if (ch->uio_fd < 0) {
		ret = fail(ch, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	ret = zdma_map(ch);
	if (ret)
		goto out;

	ch->heap_fd = uioheap_open(uio);
	if (ch->heap_fd >= 0) {
		snprintf(path, sizeof(path), "%s-cached", uio);
		ch->cached_fd = uioheap_open(path);
	}
	if (ch->heap_fd < 0 || ch->cached_fd < 0) {
		ret = ch->heap_fd < 0 ? ch->heap_fd : ch->cached_fd;
		ret = fail(ch, ret, "/dev/dma_heap/%s%s: %s (uio_heap loaded?)",
			   uio, ch->heap_fd < 0 ? "" : "-cached", strerror(-ret));
		goto out;
	}
	zdma_reset(ch);
	return 0;
out:
	zdma_close(ch);
	return ret;
}

void zdma_close(struct zdma_chan *ch)
{
	if (ch->regs)
		zdma_reset(ch);
	if (ch->map)
		munmap(ch->map, ch->map_len);
	if (ch->cached_fd >= 0)
		close(ch->cached_fd);
	if (ch->heap_fd >= 0)
		close(ch->heap_fd);
	if (ch->uio_fd >= 0)
		close(ch->uio_fd);
	ch->map = NULL;
	ch->regs = NULL;
	ch->uio_fd = ch->heap_fd = ch->cached_fd = -1;
}

void zdma_reset(struct zdma_chan *ch)
{
	uint32_t attr;

	zdma_write(ch, ZDMA_CTRL2, 0);
	zdma_write(ch, ZDMA_IDS, ZDMA_INT_ALL);
	zdma_write(ch, ZDMA_ISR, ZDMA_INT_ALL);
	(void)zdma_read(ch, ZDMA_IRQ_SRC_ACCT);
	(void)zdma_read(ch, ZDMA_IRQ_DST_ACCT);
	zdma_write(ch, ZDMA_TOTAL_BYTE, zdma_read(ch, ZDMA_TOTAL_BYTE));
	/* Bursts that walk through the buffers, whatever was left. */
	attr = zdma_read(ch, ZDMA_DATA_ATTR);
	attr &= ~(ZDMA_BURST_MASK << ZDMA_ARBURST_SHIFT |
		  ZDMA_BURST_MASK << ZDMA_AWBURST_SHIFT);
	attr |= ZDMA_BURST_INCR << ZDMA_ARBURST_SHIFT |
		ZDMA_BURST_INCR << ZDMA_AWBURST_SHIFT;
	zdma_write(ch, ZDMA_DATA_ATTR, attr);
	ch->programmed = false;
	ch->isr = 0;
}

int zdma_program(struct zdma_chan *ch, uint64_t src, uint64_t dst,
		 size_t size)
{
	if (!size || size > ZDMA_MAX_SIZE)
		return fail(ch, -EINVAL, "%zu bytes: a transfer is 1 to %u bytes",
			    size, ZDMA_MAX_SIZE);
	if ((src | dst) >> ZDMA_ADDR_BITS)
		return fail(ch, -EINVAL, "%#llx -> %#llx: beyond %d address bits",
			    (unsigned long long)src, (unsigned long long)dst,
			    ZDMA_ADDR_BITS);

	/*
	 * Simple mode (CTRL0.POINT_TYPE 0), reading and writing (MODE 0):
	 * the descriptors are these registers.  Word 3 stays 0: the data
	 * is not marked coherent, and the end of the transfer shows as
	 * DMA_DONE, not as per-descriptor interrupts.  The destination's
	 * size is ignored in this mode but written all the same.
	 */
	zdma_write(ch, ZDMA_CTRL0, 0);
	zdma_write(ch, ZDMA_SRC_DSCR_WORD0, (uint32_t)src);
	zdma_write(ch, ZDMA_SRC_DSCR_WORD1, src >> 32);
	zdma_write(ch, ZDMA_SRC_DSCR_WORD2, size);
	zdma_write(ch, ZDMA_SRC_DSCR_WORD3, 0);
	zdma_write(ch, ZDMA_DST_DSCR_WORD0, (uint32_t)dst);
	zdma_write(ch, ZDMA_DST_DSCR_WORD1, dst >> 32);
	zdma_write(ch, ZDMA_DST_DSCR_WORD2, size);
	zdma_write(ch, ZDMA_DST_DSCR_WORD3, 0);
	ch->programmed = true;
	ch->size = size;
	return 0;
}

/* Drops an interrupt event nobody read, so that it does not pass for ours. */
static void zdma_drain_event(struct zdma_chan *ch)
{
	struct pollfd pfd = { .fd = ch->uio_fd, .events = POLLIN };
	uint32_t count;

	if (poll(&pfd, 1, 0) == 1 && read(ch->uio_fd, &count, 4) == 4)
		ch->irqs = count;
}

int zdma_start(struct zdma_chan *ch, enum zdma_wait how)
{
	uint32_t on = 1;

	if (!ch->programmed)
		return fail(ch, -EINVAL, "%s: no transfer programmed", ch->uio);
	ch->programmed = false;

	/* Status and byte count of the last transfer out of the way. */
	zdma_write(ch, ZDMA_ISR, ZDMA_INT_ALL);
	zdma_write(ch, ZDMA_TOTAL_BYTE, zdma_read(ch, ZDMA_TOTAL_BYTE));
	if (how == ZDMA_IRQ) {
		zdma_drain_event(ch);
		zdma_write(ch, ZDMA_IEN, ZDMA_DMA_DONE | ZDMA_INT_ERRORS);
		/*
		 * uio_pdrv_genirq disables the interrupt line when it fires;
		 * writing 1 to /dev/uioN enables it again.
		 */
		if (write(ch->uio_fd, &on, sizeof(on)) != sizeof(on))
			return fail(ch, -errno, "enabling %s's interrupt: %s",
				    ch->uio, strerror(errno));
	} else {
		zdma_write(ch, ZDMA_IDS, ZDMA_INT_ALL);
	}
	dma_mb();
	zdma_write(ch, ZDMA_CTRL2, ZDMA_CTRL2_EN);
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int zdma_wait_irq(struct zdma_chan *ch, int timeout_ms)
{
	int ret = uio_irq_wait(ch->uio_fd, timeout_ms, &ch->irqs);

	if (ret == -ETIMEDOUT)
		return fail(ch, ret, "%s: no interrupt within %d ms (status %#x)",
			    ch->uio, timeout_ms, zdma_read(ch, ZDMA_ISR));
	if (ret)
		return fail(ch, ret, "waiting on %s: %s", ch->uio, strerror(-ret));
	return 0;
}

static int zdma_wait_poll(struct zdma_chan *ch, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	while (!(zdma_read(ch, ZDMA_ISR) & (ZDMA_DMA_DONE | ZDMA_INT_ERRORS))) {
		if (now_ms() > end)
			return fail(ch, -ETIMEDOUT, "%s: not done within %d ms",
				    ch->uio, timeout_ms);
		sched_yield();
	}
	return 0;
}

int zdma_wait(struct zdma_chan *ch, enum zdma_wait how, int timeout_ms)
{
	const char *what;
	uint32_t total;
	int ret;

	ret = how == ZDMA_IRQ ? zdma_wait_irq(ch, timeout_ms) :
				zdma_wait_poll(ch, timeout_ms);
	if (ret)
		return ret;
	ch->isr = zdma_read(ch, ZDMA_ISR);
	total = zdma_read(ch, ZDMA_TOTAL_BYTE);
	/*
	 * Acknowledge and mask.  The interrupt is level-triggered: its
	 * status must be clear before the line is enabled again, which the
	 * next zdma_start() does.
	 */
	zdma_write(ch, ZDMA_ISR, ch->isr);
	zdma_write(ch, ZDMA_IDS, ZDMA_INT_ALL);
	dma_mb();

	ret = zdma_status_errno(ch->isr, &what);
	if (ret)
		return fail(ch, ret, "%s: %s (status %#x)", ch->uio, what, ch->isr);
	if (!(ch->isr & ZDMA_DMA_DONE))
		return fail(ch, -EIO, "%s: interrupt without DMA_DONE (status %#x)",
			    ch->uio, ch->isr);
	if (total != ch->size)
		return fail(ch, -EIO, "%s: moved %u of %u bytes", ch->uio, total,
			    ch->size);
	return 0;
}

int zdma_copy(struct zdma_chan *ch, uint64_t src, uint64_t dst,
	      size_t size, enum zdma_wait how, int timeout_ms)
{
	int ret = zdma_program(ch, src, dst, size);

	if (!ret)
		ret = zdma_start(ch, how);
	return ret ? ret : zdma_wait(ch, how, timeout_ms);
}

static const struct {
	uint32_t bit;
	int err;
	const char *what;
} zdma_errors[] = {
	{ ZDMA_AXI_RD_DATA, -EIO, "AXI error reading the source" },
	{ ZDMA_AXI_WR_DATA, -EIO, "AXI error writing the destination" },
	{ ZDMA_AXI_RD_SRC_DSCR, -EIO, "AXI error reading a source descriptor" },
	{ ZDMA_AXI_RD_DST_DSCR, -EIO, "AXI error reading a destination descriptor" },
	{ ZDMA_BYTE_CNT_OVRFL, -EOVERFLOW, "total byte count overflowed" },
	{ ZDMA_IRQ_SRC_ACCT_ERR, -EOVERFLOW, "source interrupt count overflowed" },
	{ ZDMA_IRQ_DST_ACCT_ERR, -EOVERFLOW, "destination interrupt count overflowed" },
	{ ZDMA_INV_APB, -ENXIO, "invalid register access" },
};

int zdma_status_errno(uint32_t isr, const char **what)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(zdma_errors); i++) {
		if (isr & zdma_errors[i].bit) {
			if (what)
				*what = zdma_errors[i].what;
			return zdma_errors[i].err;
		}
	}
	if (what)
		*what = "no error";
	return 0;
}

int zdma_buf_alloc(struct zdma_chan *ch, struct zdma_buf *b, size_t len,
		   bool cached)
{
	const char *node = cached ? "-cached" : "";
	int ret;

	memset(b, 0, sizeof(*b));
	b->len = len;
	b->cached = cached;
	b->fd = uioheap_alloc(cached ? ch->cached_fd : ch->heap_fd, len,
			      O_RDWR | O_CLOEXEC);
	if (b->fd < 0)
		return fail(ch, b->fd, "%zu bytes from %s%s: %s", len, ch->uio,
			    node, strerror(-b->fd));
	ret = uioheap_dma_addr(cached ? ch->cached_fd : ch->heap_fd, b->fd,
			       &b->addr, NULL);
	if (ret) {
		fail(ch, ret, "address of a buffer of %s%s: %s", ch->uio, node,
		     strerror(-ret));
		goto out;
	}
	b->cpu = uioheap_map(b->fd, len);
	if (!b->cpu) {
		ret = fail(ch, -errno, "mmap of a buffer of %s%s: %s", ch->uio,
			   node, strerror(errno));
		goto out;
	}
	return 0;
out:
	zdma_buf_free(b);
	return ret;
}

void zdma_buf_free(struct zdma_buf *b)
{
	if (b->cpu)
		munmap(b->cpu, b->len);
	if (b->fd >= 0)
		close(b->fd);
	b->cpu = NULL;
	b->fd = -1;
}

int zdma_buf_for_cpu(const struct zdma_buf *b, unsigned int rw)
{
	return b->cached ? uioheap_sync_rw(b->fd, 1, rw) : 0;
}

int zdma_buf_for_device(const struct zdma_buf *b, unsigned int rw)
{
	return b->cached ? uioheap_sync_rw(b->fd, 0, rw) : 0;
}
