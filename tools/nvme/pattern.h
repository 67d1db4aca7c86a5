/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contents of the NVMe test image, defined in this one place: the
 * host fills the image with uio-nvme-pattern before the VM boots, and the
 * tests recompute what each block must hold, so that what a read returns
 * is checked against the device's own data, not against the driver.
 *
 * The image is a sequence of 512-byte sectors, whatever LBA size the
 * namespace reports.  Sector s holds 64 little-endian 64-bit words:
 * word 0 is s itself, word w > 0 is nvme_pattern_word(seed, s, w).  The
 * seed is chosen by the host and given to the guest (UIOHEAP_NVME_SEED).
 *
 * The tests only write to the scratch area, the last quarter of the
 * namespace; the rest stays as the host wrote it.
 */
#ifndef UIO_NVME_PATTERN_H
#define UIO_NVME_PATTERN_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NVME_PATTERN_SECTOR	512u

/* The first byte of the scratch area of a @bytes-long namespace. */
static inline uint64_t nvme_pattern_scratch(uint64_t bytes)
{
	return (bytes - bytes / 4) & ~(uint64_t)(64 * 1024 - 1);
}

/* splitmix64's finaliser over (seed, sector, word). */
static inline uint64_t nvme_pattern_word(uint64_t seed, uint64_t sector,
					 unsigned int w)
{
	uint64_t z;

	if (!w)
		return sector;
	z = seed ^ ((sector << 6 | w) * 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Fills @buf with the @len bytes at image offset @off (both in sectors). */
static inline void nvme_pattern_fill(void *buf, uint64_t off, size_t len,
				     uint64_t seed)
{
	uint64_t *p = buf, s;
	unsigned int w;
	size_t i;

	for (i = 0; i < len / NVME_PATTERN_SECTOR; i++) {
		s = off / NVME_PATTERN_SECTOR + i;
		for (w = 0; w < NVME_PATTERN_SECTOR / 8; w++)
			*p++ = htole64(nvme_pattern_word(seed, s, w));
	}
}

/*
 * Checks @len bytes of @buf against image offset @off: returns the
 * offset in @buf of the first wrong 64-bit word, or -1 if all match.
 */
static inline long long nvme_pattern_check(const void *buf, uint64_t off,
					   size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	uint64_t v, s;
	unsigned int w;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		s = off / NVME_PATTERN_SECTOR + i / (NVME_PATTERN_SECTOR / 8);
		w = i % (NVME_PATTERN_SECTOR / 8);
		memcpy(&v, p + 8 * i, 8);
		if (le64toh(v) != nvme_pattern_word(seed, s, w))
			return 8 * i;
	}
	return -1;
}

#endif
