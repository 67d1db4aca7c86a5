// SPDX-License-Identifier: GPL-2.0
/*
 * The PCI side of a device bound to uio_pci_generic: sysfs attributes,
 * config space and BARs through the PCI core's files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/pci_regs.h>

#include "pci.h"

int uio_pci_name(const char *uio_name, char *pci, size_t size)
{
	char link[PATH_MAX], path[128];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/uio/%s/device", uio_name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (strlen(base) >= size)
		return -ENAMETOOLONG;
	memcpy(pci, base, strlen(base) + 1);
	return 0;
}

int uio_of_pci(const char *pci, char *uio, size_t size)
{
	char path[160];
	struct dirent *de;
	DIR *dir;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/uio", pci);
	dir = opendir(path);
	if (!dir) {
		snprintf(path, sizeof(path), "/sys/bus/platform/devices/%s/uio", pci);
		dir = opendir(path);
	}
	if (!dir)
		return -errno;
	while (ret && (de = readdir(dir))) {
		if (!strncmp(de->d_name, "uio", 3) && strlen(de->d_name) < size) {
			memcpy(uio, de->d_name, strlen(de->d_name) + 1);
			ret = 0;
		}
	}
	closedir(dir);
	return ret;
}

int uio_pci_attr(const char *pci, const char *attr, unsigned int *val)
{
	char path[PATH_MAX];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", pci, attr);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ret = fscanf(f, "%x", val) == 1 ? 0 : -EIO;
	fclose(f);
	return ret;
}

int uio_pci_config_open(const char *pci)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", pci);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int uio_pci_command(int cfg_fd, uint16_t set, uint16_t clear)
{
	uint16_t cmd;

	if (pread(cfg_fd, &cmd, sizeof(cmd), PCI_COMMAND) != sizeof(cmd))
		return -EIO;
	cmd = (cmd & ~clear) | set;
	if (pwrite(cfg_fd, &cmd, sizeof(cmd), PCI_COMMAND) != sizeof(cmd))
		return -EIO;
	return 0;
}

/*
 * The PCI core's resourceN file maps the BAR for root; O_SYNC makes the
 * mapping uncached.
 */
int uio_pci_map_bar(const char *pci, unsigned int bar, size_t min,
		    volatile uint8_t **map, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	void *p;
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource%u",
		 pci, bar);
	fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (size_t)st.st_size < min) {
		close(fd);
		return -ENODEV;
	}
	p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*map = p;
	*len = st.st_size;
	return 0;
}

int uio_irq_wait(int uio_fd, int timeout_ms, uint32_t *count)
{
	struct pollfd pfd = { .fd = uio_fd, .events = POLLIN };
	int ret;

	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return -errno;
	if (ret == 0)
		return -ETIMEDOUT;
	if (read(uio_fd, count, sizeof(*count)) != sizeof(*count))
		return -errno;
	return 0;
}
