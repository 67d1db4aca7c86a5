/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the uio_heap selftests.
 *
 * The VM bench gives each guest two edu devices bound to uio_pci_generic:
 * one at the device's default 28-bit DMA mask, one with a 64-bit mask.
 * UIOHEAP_EDU_NARROW names the PCI address of the 28-bit one.
 */
#ifndef UIO_HEAP_SELFTEST_COMMON_H
#define UIO_HEAP_SELFTEST_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/edu.h"
#include "lib/uioheap.h"

#define SZ_4K	4096UL
#define SZ_64K	(64 * 1024UL)
#define SZ_1M	(1024 * 1024UL)
#define SZ_4M	(4 * 1024 * 1024UL)

static inline bool path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static inline int write_str(const char *path, const char *text)
{
	ssize_t n, len = strlen(text);
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	n = n == len ? 0 : -errno;
	close(fd);
	return n;
}

static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Waits up to @ms for @path to exist (@want) or not; returns elapsed ms or -1. */
static inline long long wait_path(const char *path, bool want, int ms)
{
	long long start = now_ms();

	while (path_exists(path) != want) {
		if (now_ms() - start > ms)
			return -1;
		usleep(5000);
	}
	return now_ms() - start;
}

/* The edu UIO devices, sorted: returns how many, names in @names. */
static inline int find_edus(char names[][16], int max)
{
	return edu_find(names, max);
}

static inline void node_of(char *node, size_t size, const char *uio)
{
	snprintf(node, size, "/dev/dma_heap/%s", uio);
}

/*
 * The heaps of the first @max edu devices: UIO names into @uio, nodes into
 * @node, each node waited for; with @mask, also the address mask each
 * heap's dma_mask_bits allows.  Returns how many (0: the caller skips), or
 * a negative errno when a heap is missing.
 */
static inline int edu_heaps(char uio[][16], char node[][64], uint64_t *mask,
			    int max)
{
	unsigned long long bits;
	char names[8][16];
	int n, i;

	n = find_edus(names, 8);
	for (i = 0; i < n && i < max; i++) {
		node_of(node[i], sizeof(node[0]), names[i]);
		if (wait_path(node[i], true, 2000) < 0)
			return -ENOENT;
		strcpy(uio[i], names[i]);
		if (!mask)
			continue;
		if (uioheap_sysfs_read(names[i], "dma_mask_bits", &bits))
			return -EIO;
		mask[i] = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
	}
	return i;
}

/* Is the edu behind @uio the one with the 28-bit DMA engine? */
static inline bool edu_is_narrow(const char *uio)
{
	const char *narrow = getenv("UIOHEAP_EDU_NARROW");
	struct edu edu;
	bool ret;

	if (edu_open(&edu, uio))
		return false;
	ret = narrow && !strcmp(edu.pci, narrow);
	edu_close(&edu);
	return ret;
}

#define UIO_PCI_GENERIC	"/sys/bus/pci/drivers/uio_pci_generic"

/*
 * Takes PCI device @pci away from under its heap: removes it from the bus
 * (@remove) or unbinds it from uio_pci_generic.  0 or -errno.
 */
static inline int unplug_pci(const char *pci, bool remove)
{
	char path[128];

	if (!remove)
		return write_str(UIO_PCI_GENERIC "/unbind", pci);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/remove", pci);
	return write_str(path, "1");
}

/* The UIO device of PCI device @pci, or -ENOENT. */
static inline int pci_uio(const char *pci, char *uio, size_t size)
{
	char names[16][16], other[32];
	int n = find_edus(names, 16), i;

	for (i = 0; i < n; i++) {
		if (uio_pci_name(names[i], other, sizeof(other)))
			continue;
		if (!strcmp(other, pci) && strlen(names[i]) < size) {
			memcpy(uio, names[i], strlen(names[i]) + 1);
			return 0;
		}
	}
	return -ENOENT;
}

/* delete_module(O_NONBLOCK): returns 0 or the errno. */
static inline int rmmod_nb(const char *name)
{
	return syscall(__NR_delete_module, name, O_NONBLOCK) ? errno : 0;
}

/* finit_module() of a .ko file: returns 0 or the errno. */
static inline int insmod_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return errno;
	ret = syscall(__NR_finit_module, fd, "", 0) ? errno : 0;
	close(fd);
	return ret;
}

/* Touches memory that may fault: returns 0, or the signal it raised. */
static sigjmp_buf probe_env;

static inline void probe_sigbus(int sig)
{
	siglongjmp(probe_env, sig);
}

static inline int access_signal(volatile unsigned char *p, bool write)
{
	struct sigaction sa = { .sa_handler = probe_sigbus }, old_bus, old_segv;
	int sig;

	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	sig = sigsetjmp(probe_env, 1);
	if (sig == 0) {
		if (write)
			*p = 0x5a;
		else
			(void)*p;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return sig;
}

#endif
