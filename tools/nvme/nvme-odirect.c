// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-odirect: the other side of make bench's NVMe figures.  Reads a
 * block device (an NVMe namespace the kernel's nvme driver owns) with
 * O_DIRECT, keeping QD reads in flight, and prints the same line as
 * "uio-nvme bench" (iobench.h).
 *
 * Usage: nvme-odirect [-e aio|uring] [-f] [-F] [-p] [-c SEED] [-n NAME]
 *                     DEVICE rand|seq SIZE QD SECONDS
 *
 *   -e aio    Linux AIO (the default): what fio --ioengine=libaio
 *             --direct=1 does, io_setup(), io_submit() and io_getevents()
 *             called directly, without libaio.
 *   -e uring  io_uring: what fio --ioengine=io_uring --direct=1 does,
 *             io_uring_setup(), io_uring_enter() and io_uring_register()
 *             called directly on the rings, without liburing: one
 *             io_uring_enter() per loop submits what is ready and waits
 *             for at least one completion (fio's iodepth_batch_complete_min=1);
 *             the ring set up with fio's flags (CQSIZE, COOP_TASKRUN,
 *             SINGLE_ISSUER, DEFER_TASKRUN).
 *   -f        io_uring: registered buffers (IORING_REGISTER_BUFFERS,
 *             IORING_OP_READ_FIXED; fio's fixedbufs).
 *   -F        io_uring: registered file (IORING_REGISTER_FILES,
 *             IOSQE_FIXED_FILE; fio's registerfiles).
 *   -p        io_uring: polled completions (IORING_SETUP_IOPOLL; fio's
 *             hipri).  Needs poll queues (nvme poll_queues=N): without
 *             them the block layer fails polled reads (EOPNOTSUPP, a
 *             failed read here) or, in other kernel versions, completes
 *             them by interrupt without a word, so the device's
 *             queue/io_poll is checked first and a 0 there is an error,
 *             not a fallback.
 *   -c SEED   verify the data against the test image (pattern.h): before
 *             the timed run, the same reads through the same engine for a
 *             quarter of a second (at most SECONDS), each one checked;
 *             after it (the clocks stopped), each buffer's last read.
 *   -n NAME   the driver name in the result line ("kernel").
 *
 * O_DIRECT sends each read from our buffer to the device, past the page
 * cache.
 */
#define _GNU_SOURCE		/* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "iobench.h"
#include "pattern.h"

struct reader {
	int fd;
	size_t size;
	unsigned int qd;
	bool fixed, regfile, poll;
	void **buf;			/* per slot */
	uint64_t *off;			/* per slot: its read's offset */
	unsigned int *done;		/* wait(): the completed slots */
	long long *res;			/* and their results */
	/* Queues slot @i's read at off[i]; wait() submits it. */
	void (*prep)(struct reader *r, unsigned int i);
	/* Submits what is queued, waits for >= 1 completion: how many, -1. */
	int (*wait)(struct reader *r);
	/* Linux AIO */
	aio_context_t ctx;
	struct iocb *iocbs, **todo;
	struct io_event *ev;
	unsigned int ntodo;
	/* io_uring */
	int ring;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	unsigned int queued;		/* SQEs written, not yet submitted */
};

/* Linux AIO */

static int io_setup(unsigned int nr, aio_context_t *ctx)
{
	return syscall(__NR_io_setup, nr, ctx);
}

static int io_destroy(aio_context_t ctx)
{
	return syscall(__NR_io_destroy, ctx);
}

static int io_submit(aio_context_t ctx, long nr, struct iocb **iocbs)
{
	return syscall(__NR_io_submit, ctx, nr, iocbs);
}

static int io_getevents(aio_context_t ctx, long min, long max,
			struct io_event *events)
{
	return syscall(__NR_io_getevents, ctx, min, max, events, NULL);
}

static void aio_prep(struct reader *r, unsigned int i)
{
	r->iocbs[i].aio_offset = r->off[i];
	r->todo[r->ntodo++] = &r->iocbs[i];
}

static int aio_wait(struct reader *r)
{
	unsigned int done = 0;
	int n, k;

	/* All of them: io_submit may take fewer. */
	while (done < r->ntodo) {
		n = io_submit(r->ctx, r->ntodo - done, r->todo + done);
		if (n <= 0) {
			fprintf(stderr, "nvme-odirect: io_submit: %s\n",
				n ? strerror(errno) : "took nothing");
			return -1;
		}
		done += n;
	}
	r->ntodo = 0;
	do
		n = io_getevents(r->ctx, 1, r->qd, r->ev);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		fprintf(stderr, "nvme-odirect: io_getevents: %s\n", strerror(errno));
		return -1;
	}
	for (k = 0; k < n; k++) {
		r->done[k] = r->ev[k].data;
		r->res[k] = r->ev[k].res;
	}
	return n;
}

static int aio_init(struct reader *r)
{
	unsigned int i;

	r->iocbs = calloc(r->qd, sizeof(*r->iocbs));
	r->todo = calloc(r->qd, sizeof(*r->todo));
	r->ev = calloc(r->qd, sizeof(*r->ev));
	if (!r->iocbs || !r->todo || !r->ev || io_setup(r->qd, &r->ctx)) {
		fprintf(stderr, "nvme-odirect: setting up %u reads: %s\n", r->qd,
			strerror(errno));
		return -1;
	}
	for (i = 0; i < r->qd; i++) {
		r->iocbs[i].aio_fildes = r->fd;
		r->iocbs[i].aio_lio_opcode = IOCB_CMD_PREAD;
		r->iocbs[i].aio_buf = (uintptr_t)r->buf[i];
		r->iocbs[i].aio_nbytes = r->size;
		r->iocbs[i].aio_data = i;
	}
	r->prep = aio_prep;
	r->wait = aio_wait;
	return 0;
}

/* io_uring */

static int sys_io_uring_setup(unsigned int entries, struct io_uring_params *p)
{
	return syscall(__NR_io_uring_setup, entries, p);
}

static int sys_io_uring_enter(int fd, unsigned int to_submit,
			      unsigned int min_complete, unsigned int flags)
{
	return syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags,
		       NULL, 0);
}

static int sys_io_uring_register(int fd, unsigned int op, void *arg,
				 unsigned int nr)
{
	return syscall(__NR_io_uring_register, fd, op, arg, nr);
}

static void uring_prep(struct reader *r, unsigned int i)
{
	unsigned int tail = *r->sq_tail + r->queued++;
	unsigned int idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = r->fixed ? IORING_OP_READ_FIXED : IORING_OP_READ;
	sqe->fd = r->regfile ? 0 : r->fd;
	sqe->flags = r->regfile ? IOSQE_FIXED_FILE : 0;
	sqe->addr = (uintptr_t)r->buf[i];
	sqe->len = r->size;
	sqe->off = r->off[i];
	sqe->buf_index = r->fixed ? i : 0;
	sqe->user_data = i;
	r->sq_array[idx] = idx;
}

static int uring_wait(struct reader *r)
{
	unsigned int head, tail, n = 0;
	int ret;

	if (r->queued) {
		/* The SQEs before the tail that makes them visible. */
		__atomic_store_n(r->sq_tail, *r->sq_tail + r->queued,
				 __ATOMIC_RELEASE);
	}
	head = *r->cq_head;
	tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
	/* Submits the queued SQEs and waits (or, IOPOLL, polls) for one. */
	while (r->queued || head == tail) {
		ret = sys_io_uring_enter(r->ring, r->queued, head == tail ? 1 : 0,
					 IORING_ENTER_GETEVENTS);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			fprintf(stderr, "nvme-odirect: io_uring_enter: %s\n", strerror(errno));
			return -1;
		}
		if ((unsigned int)ret > r->queued) {
			fprintf(stderr, "nvme-odirect: io_uring_enter took %d of %u\n",
				ret, r->queued);
			return -1;
		}
		r->queued -= ret;
		tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
	}
	for (; head != tail && n < r->qd; head++, n++) {
		struct io_uring_cqe *cqe = &r->cqes[head & *r->cq_mask];

		r->done[n] = cqe->user_data;
		r->res[n] = cqe->res;
	}
	__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	return n;
}

/* "1" in the device's queue/io_poll: it has poll queues. */
static int can_poll(int fd, const char *path)
{
	char name[64], v = '0';
	struct stat st;
	FILE *f;

	if (fstat(fd, &st) || !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "nvme-odirect: %s: IOPOLL wants a block device\n", path);
		return 0;
	}
	snprintf(name, sizeof(name), "/sys/dev/block/%u:%u/queue/io_poll",
		 major(st.st_rdev), minor(st.st_rdev));
	f = fopen(name, "re");
	if (!f || fread(&v, 1, 1, f) != 1)
		v = '0';
	if (f)
		fclose(f);
	if (v != '1')
		fprintf(stderr, "nvme-odirect: %s: no poll queues (%s is not 1): polled reads would fail or complete by interrupt (load nvme with poll_queues=N)\n",
			path, name);
	return v == '1';
}

static int uring_init(struct reader *r)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	struct iovec *iov;
	unsigned int i;
	void *sq, *cq;

	/*
	 * As fio's io_uring engine sets up its ring: a CQ no larger than the
	 * depth, no IPI for completions (COOP_TASKRUN), and their task work
	 * run when the one submitting thread reaps (SINGLE_ISSUER,
	 * DEFER_TASKRUN), each dropped if the kernel refuses it.
	 */
	memset(&p, 0, sizeof(p));
	p.flags = (r->poll ? IORING_SETUP_IOPOLL : 0) | IORING_SETUP_CQSIZE |
		  IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
		  IORING_SETUP_DEFER_TASKRUN;
	p.cq_entries = r->qd;
	for (;;) {
		r->ring = sys_io_uring_setup(r->qd, &p);
		if (r->ring >= 0 || errno != EINVAL)
			break;
		if (p.flags & IORING_SETUP_DEFER_TASKRUN)
			p.flags &= ~(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
		else if (p.flags & IORING_SETUP_COOP_TASKRUN)
			p.flags &= ~IORING_SETUP_COOP_TASKRUN;
		else if (p.flags & IORING_SETUP_CQSIZE)
			p.flags &= ~IORING_SETUP_CQSIZE;
		else
			break;
		fprintf(stderr, "nvme-odirect: io_uring_setup: EINVAL, trying flags 0x%x\n",
			p.flags);
	}
	if (r->ring < 0) {
		fprintf(stderr, "nvme-odirect: io_uring_setup(%u%s): %s\n", r->qd,
			r->poll ? ", IOPOLL" : "", strerror(errno));
		return -1;
	}
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		fprintf(stderr, "nvme-odirect: io_uring without IORING_FEAT_SINGLE_MMAP\n");
		return -1;
	}
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (cq_len > sq_len)
		sq_len = cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  r->ring, IORING_OFF_SQ_RING);
	cq = sq;
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->ring,
		       IORING_OFF_SQES);
	if (sq == MAP_FAILED || r->sqes == MAP_FAILED) {
		fprintf(stderr, "nvme-odirect: mapping the io_uring: %s\n", strerror(errno));
		return -1;
	}
	r->sq_tail = (unsigned int *)((char *)sq + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)sq + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)cq + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes);

	if (r->fixed) {
		iov = calloc(r->qd, sizeof(*iov));
		if (!iov)
			return -1;
		for (i = 0; i < r->qd; i++) {
			iov[i].iov_base = r->buf[i];
			iov[i].iov_len = r->size;
		}
		if (sys_io_uring_register(r->ring, IORING_REGISTER_BUFFERS, iov, r->qd)) {
			fprintf(stderr, "nvme-odirect: registering %u buffers: %s\n",
				r->qd, strerror(errno));
			return -1;
		}
		free(iov);
	}
	if (r->regfile &&
	    sys_io_uring_register(r->ring, IORING_REGISTER_FILES, &r->fd, 1)) {
		fprintf(stderr, "nvme-odirect: registering the file: %s\n", strerror(errno));
		return -1;
	}
	r->prep = uring_prep;
	r->wait = uring_wait;
	return 0;
}

/* Checks slot @i's buffer against the image; 0 or -1 with a message. */
static int check(struct reader *r, unsigned int i, uint64_t seed)
{
	long long bad = nvme_pattern_check(r->buf[i], r->off[i], r->size, seed);

	if (bad < 0)
		return 0;
	fprintf(stderr, "nvme-odirect: wrong data: read of %zu bytes at %llu, byte %lld\n",
		r->size, (unsigned long long)r->off[i], bad);
	return -1;
}

/*
 * Keeps QD reads in flight until @b's time is up; with @check_all, each
 * one is verified against the image of @seed (and poisoned before).
 */
static int run(struct reader *r, struct iobench *b, bool check_all, uint64_t seed)
{
	unsigned int i, inflight;
	int n, k;

	for (i = 0; i < r->qd; i++) {
		r->off[i] = iobench_offset(b);
		if (check_all)
			memset(r->buf[i], 0xa5, r->size);
		r->prep(r, i);
	}
	for (inflight = r->qd; inflight; ) {
		n = r->wait(r);
		if (n < 0)
			return -1;
		inflight -= n;
		/* Each completed slot's read goes out again at a new offset. */
		for (k = 0; k < n; k++) {
			i = r->done[k];
			if (r->res[k] != (long long)r->size) {
				fprintf(stderr, "nvme-odirect: read of %zu bytes: %s\n", r->size,
					r->res[k] < 0 ? strerror(-r->res[k]) : "short");
				return -1;
			}
			b->ios++;
			if (check_all && check(r, i, seed))
				return -1;
			if (iobench_over(b))
				continue;
			r->off[i] = iobench_offset(b);
			if (check_all)
				memset(r->buf[i], 0xa5, r->size);
			r->prep(r, i);
			inflight++;
		}
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: nvme-odirect [-e aio|uring] [-f] [-F] [-p] [-c SEED] [-n NAME] DEVICE rand|seq SIZE QD SECONDS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct reader r = { .fd = -1, .ring = -1 };
	const char *engine = "aio", *name = "kernel";
	bool verify = false;
	struct iobench b, pre;
	uint64_t bytes, seed = 0;
	unsigned int i;
	struct stat st;
	int opt, rc = 1;
	char *end;

	while ((opt = getopt(argc, argv, "e:fFpc:n:")) != -1) {
		switch (opt) {
		case 'e': engine = optarg; break;
		case 'f': r.fixed = true; break;
		case 'F': r.regfile = true; break;
		case 'p': r.poll = true; break;
		case 'c':
			seed = strtoull(optarg, &end, 0);
			if (*end || end == optarg)
				usage();
			verify = true;
			break;
		case 'n': name = optarg; break;
		default: usage();
		}
	}
	if (argc - optind != 5 || iobench_parse(&b, argv + optind + 1, 512) ||
	    (strcmp(engine, "aio") && strcmp(engine, "uring")) ||
	    (!strcmp(engine, "aio") && (r.fixed || r.regfile || r.poll)))
		usage();
	r.size = b.size;
	r.qd = b.qd;
	/* A block device; a regular file will do for trying it out. */
	r.fd = open(argv[optind], O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (r.fd >= 0 && !fstat(r.fd, &st) && S_ISREG(st.st_mode))
		bytes = st.st_size;
	else if (r.fd >= 0 && ioctl(r.fd, BLKGETSIZE64, &bytes))
		r.fd = -1;
	if (r.fd < 0) {
		fprintf(stderr, "nvme-odirect: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	if (r.poll && !can_poll(r.fd, argv[optind]))
		return 1;
	r.buf = calloc(r.qd, sizeof(*r.buf));
	r.off = calloc(r.qd, sizeof(*r.off));
	r.done = calloc(r.qd, sizeof(*r.done));
	r.res = calloc(r.qd, sizeof(*r.res));
	if (!r.buf || !r.off || !r.done || !r.res)
		return 1;
	/* One page-aligned buffer per read in flight, as the slots of uio-nvme. */
	for (i = 0; i < r.qd; i++) {
		if (posix_memalign(&r.buf[i], 4096, r.size))
			return 1;
		memset(r.buf[i], 0, r.size);
	}
	if (strcmp(engine, "aio") ? uring_init(&r) : aio_init(&r))
		goto out;

	if (verify) {
		pre = b;
		pre.seconds = b.seconds < 0.25 ? b.seconds : 0.25;
		if (iobench_start(&pre, bytes) || run(&r, &pre, true, seed))
			goto out;
		fprintf(stderr, "nvme-odirect: %s: %llu reads verified against the image (seed %llu)\n",
			name, pre.ios, (unsigned long long)seed);
	}
	if (iobench_start(&b, bytes) || run(&r, &b, false, seed))
		goto out;
	iobench_report(&b, name);
	/* The clocks are stopped: each slot's last read is checked too. */
	for (i = 0; verify && i < r.qd; i++)
		if (check(&r, i, seed))
			goto out;
	rc = 0;
out:
	if (r.ctx)
		io_destroy(r.ctx);
	if (r.ring >= 0)
		close(r.ring);
	close(r.fd);
	return rc;
}
