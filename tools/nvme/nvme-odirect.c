// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-odirect: the other side of make bench's NVMe figures.  Reads a
 * block device (an NVMe namespace the kernel's nvme driver owns) with
 * O_DIRECT, keeping QD reads in flight with Linux AIO, and prints the
 * same line as "uio-nvme bench" (iobench.h).
 *
 * Usage: nvme-odirect DEVICE rand|seq SIZE QD SECONDS
 *
 * What fio --ioengine=libaio --direct=1 does, in one static binary that
 * the test VMs' busybox initramfs can run: io_setup(), io_submit() and
 * io_getevents() called directly, without libaio.  O_DIRECT sends each
 * read from our buffer to the device, past the page cache.
 */
#define _GNU_SOURCE		/* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "iobench.h"

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

/* Submits the reads in @todo, all of them (io_submit may take fewer). */
static int submit(aio_context_t ctx, struct iocb **todo, int n)
{
	int done = 0, ret;

	while (done < n) {
		ret = io_submit(ctx, n - done, todo + done);
		if (ret <= 0) {
			fprintf(stderr, "nvme-odirect: io_submit: %s\n",
				ret ? strerror(errno) : "took nothing");
			return -1;
		}
		done += ret;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct iocb *iocbs, **todo;
	struct io_event *ev;
	aio_context_t ctx = 0;
	unsigned int i, inflight;
	struct iobench b;
	struct stat st;
	uint64_t bytes;
	int fd, n, k, rc = 1;
	void *buf;

	if (argc != 6 || iobench_parse(&b, argv + 2, 512)) {
		fprintf(stderr, "usage: nvme-odirect DEVICE rand|seq SIZE QD SECONDS\n");
		return 2;
	}
	/* A block device; a regular file will do for trying it out. */
	fd = open(argv[1], O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode))
		bytes = st.st_size;
	else if (fd >= 0 && ioctl(fd, BLKGETSIZE64, &bytes))
		fd = -1;
	if (fd < 0) {
		fprintf(stderr, "nvme-odirect: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	iocbs = calloc(b.qd, sizeof(*iocbs));
	todo = calloc(b.qd, sizeof(*todo));
	ev = calloc(b.qd, sizeof(*ev));
	if (!iocbs || !todo || !ev || io_setup(b.qd, &ctx)) {
		fprintf(stderr, "nvme-odirect: setting up %u reads: %s\n", b.qd,
			strerror(errno));
		return 1;
	}
	/* One page-aligned buffer per read in flight, as the slots of uio-nvme. */
	for (i = 0; i < b.qd; i++) {
		if (posix_memalign(&buf, 4096, b.size))
			return 1;
		memset(buf, 0, b.size);
		iocbs[i].aio_fildes = fd;
		iocbs[i].aio_lio_opcode = IOCB_CMD_PREAD;
		iocbs[i].aio_buf = (uintptr_t)buf;
		iocbs[i].aio_nbytes = b.size;
		iocbs[i].aio_data = i;
	}
	if (iobench_start(&b, bytes))
		return 1;
	for (i = 0; i < b.qd; i++) {
		iocbs[i].aio_offset = iobench_offset(&b);
		todo[i] = &iocbs[i];
	}
	if (submit(ctx, todo, b.qd))
		goto out;
	for (inflight = b.qd; inflight; ) {
		n = io_getevents(ctx, 1, b.qd, ev);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "nvme-odirect: io_getevents: %s\n", strerror(errno));
			goto out;
		}
		inflight -= n;
		/* Each completed read's iocb goes out again at a new offset. */
		for (k = 0, i = 0; k < n; k++) {
			if (ev[k].res != (__s64)b.size) {
				fprintf(stderr, "nvme-odirect: read of %zu bytes: %s\n", b.size,
					ev[k].res < 0 ? strerror(-ev[k].res) : "short");
				goto out;
			}
			b.ios++;
			if (iobench_over(&b))
				continue;
			todo[i] = &iocbs[ev[k].data];
			todo[i++]->aio_offset = iobench_offset(&b);
		}
		if (submit(ctx, todo, i))
			goto out;
		inflight += i;
	}
	iobench_report(&b, "kernel");
	rc = 0;
out:
	io_destroy(ctx);
	close(fd);
	return rc;
}
