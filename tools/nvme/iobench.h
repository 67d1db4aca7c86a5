/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The measuring half of a read benchmark, shared by uio-nvme's "bench"
 * command (the userspace driver) and nvme-odirect (the kernel's driver,
 * through a block device), so that both pick offsets, count and report
 * the same way.
 *
 *   rand  reads of SIZE bytes at random SIZE-aligned offsets
 *   seq   reads of SIZE bytes one after the other, wrapping at the end
 *
 * QD reads are kept in flight for SECONDS.  The result is one line:
 *
 *   bench: driver=uio pattern=rand size=4096 qd=32 ios=N ns=N user_ns=N
 *          sys_ns=N busy_ns=N
 *
 * ns is the wall time, user_ns and sys_ns the process's CPU time
 * (getrusage(): what the driver costs its caller, with the kernel's work
 * done on its behalf), and busy_ns the whole machine's non-idle CPU time
 * (interrupts too, whichever task they hit), all of it between the first
 * submission and the last completion.  busy_ns is the CPUs' time minus
 * their idle time from /proc/stat: idle time is measured when a CPU goes
 * idle and wakes, while /proc/stat's busy columns are sampled by the tick,
 * which in a VM mostly finds a CPU that an interrupt just woke from idle.
 */
#ifndef UIO_NVME_IOBENCH_H
#define UIO_NVME_IOBENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct iobench {
	bool random;
	size_t size;			/* bytes per read */
	unsigned int qd;		/* reads in flight */
	double seconds;
	uint64_t span;			/* bytes the offsets cover */
	uint64_t next;			/* seq: the next offset */
	uint64_t rng;			/* rand: xorshift64 state */
	unsigned long long ios;		/* reads completed */
	long long t0, end;		/* ns, CLOCK_MONOTONIC */
	struct rusage ru0;
	unsigned long long idle0;	/* /proc/stat, ns */
};

static inline long long iobench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* All CPUs' idle time so far (idle + iowait), from /proc/stat. */
static inline unsigned long long iobench_idle_ns(void)
{
	unsigned long long v[5] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "re");
	int n = 0;

	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu", &v[0], &v[1],
			   &v[2], &v[3], &v[4]);
		fclose(f);
	}
	if (n < 5 || hz <= 0)
		return 0;
	/* user nice system idle iowait ... */
	return (v[3] + v[4]) * (1000000000ull / hz);
}

static inline long long iobench_tv_ns(const struct timeval *tv)
{
	return tv->tv_sec * 1000000000LL + tv->tv_usec * 1000LL;
}

/*
 * Parses "rand|seq SIZE QD SECONDS" from @argv; 0, or -1 with a message
 * on stderr.  @align: what SIZE must be a multiple of (the block size).
 */
static inline int iobench_parse(struct iobench *b, char **argv, size_t align)
{
	memset(b, 0, sizeof(*b));
	b->random = !strcmp(argv[0], "rand");
	b->size = strtoull(argv[1], NULL, 0);
	b->qd = strtoul(argv[2], NULL, 0);
	b->seconds = strtod(argv[3], NULL);
	if ((!b->random && strcmp(argv[0], "seq")) || !b->size || !b->qd ||
	    b->seconds <= 0 || b->size % align) {
		fprintf(stderr, "bench: want rand|seq SIZE QD SECONDS, SIZE a multiple of %zu\n",
			align);
		return -1;
	}
	return 0;
}

/* Starts the clocks; offsets will cover the first @span bytes. */
static inline int iobench_start(struct iobench *b, uint64_t span)
{
	b->span = span - span % b->size;
	if (b->span < b->size) {
		fprintf(stderr, "bench: %zu-byte reads do not fit %llu bytes\n",
			b->size, (unsigned long long)span);
		return -1;
	}
	b->rng = 0x9e3779b97f4a7c15ull ^ b->size ^ b->qd;
	b->idle0 = iobench_idle_ns();
	getrusage(RUSAGE_SELF, &b->ru0);
	b->t0 = iobench_now();
	b->end = b->t0 + (long long)(b->seconds * 1e9);
	return 0;
}

/* Where the next read goes. */
static inline uint64_t iobench_offset(struct iobench *b)
{
	uint64_t off;

	if (!b->random) {
		off = b->next;
		b->next = (b->next + b->size) % b->span;
		return off;
	}
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return b->rng % (b->span / b->size) * b->size;
}

/* Time is up: submit no more, reap what is in flight. */
static inline bool iobench_over(const struct iobench *b)
{
	return iobench_now() >= b->end;
}

/* Stops the clocks and prints the result line for @driver. */
static inline void iobench_report(struct iobench *b, const char *driver)
{
	long long ns = iobench_now() - b->t0, busy;
	unsigned long long idle = iobench_idle_ns() - b->idle0;
	struct rusage ru;

	busy = ns * sysconf(_SC_NPROCESSORS_ONLN) - (long long)idle;
	if (busy < 0)
		busy = 0;

	getrusage(RUSAGE_SELF, &ru);
	printf("bench: driver=%s pattern=%s size=%zu qd=%u ios=%llu ns=%lld user_ns=%lld sys_ns=%lld busy_ns=%lld\n",
	       driver, b->random ? "rand" : "seq", b->size, b->qd, b->ios, ns,
	       iobench_tv_ns(&ru.ru_utime) - iobench_tv_ns(&b->ru0.ru_utime),
	       iobench_tv_ns(&ru.ru_stime) - iobench_tv_ns(&b->ru0.ru_stime),
	       busy);
	fflush(stdout);
}

#endif
