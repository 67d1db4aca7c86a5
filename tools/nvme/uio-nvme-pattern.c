// SPDX-License-Identifier: GPL-2.0
/*
 * uio-nvme-pattern: writes the NVMe test image (see pattern.h).
 *
 * Usage: uio-nvme-pattern FILE MIB SEED
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

#define CHUNK	(1024 * 1024)

int main(int argc, char **argv)
{
	static uint64_t buf[CHUNK / 8];
	unsigned long long mib, seed, i;
	char *end;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: uio-nvme-pattern FILE MIB SEED\n");
		return 2;
	}
	mib = strtoull(argv[2], &end, 0);
	if (*end || !mib) {
		fprintf(stderr, "uio-nvme-pattern: bad size '%s'\n", argv[2]);
		return 2;
	}
	seed = strtoull(argv[3], &end, 0);
	if (*end) {
		fprintf(stderr, "uio-nvme-pattern: bad seed '%s'\n", argv[3]);
		return 2;
	}
	f = fopen(argv[1], "we");
	if (!f) {
		fprintf(stderr, "uio-nvme-pattern: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	for (i = 0; i < mib; i++) {
		nvme_pattern_fill(buf, i * CHUNK, CHUNK, seed);
		if (fwrite(buf, CHUNK, 1, f) != 1)
			break;
	}
	if (fclose(f) || i != mib) {
		fprintf(stderr, "uio-nvme-pattern: writing %s failed\n", argv[1]);
		return 1;
	}
	return 0;
}
