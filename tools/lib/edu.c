// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace edu driver over uio_pci_generic.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "edu.h"

#define EDU_REG_ID		0x00
#define EDU_REG_IRQ_STATUS	0x24
#define EDU_REG_IRQ_ACK		0x64
#define EDU_REG_DMA_SRC		0x80
#define EDU_REG_DMA_DST		0x88
#define EDU_REG_DMA_COUNT	0x90
#define EDU_REG_DMA_CMD		0x98

#define EDU_DMA_START		0x01
#define EDU_DMA_FROM_DEVICE	0x02
#define EDU_DMA_IRQ		0x04
#define EDU_IRQ_DMA		0x100
#define EDU_BUF_BASE		0x40000

#define PCI_COMMAND		0x04
#define PCI_COMMAND_MEMORY	0x02
#define PCI_COMMAND_MASTER	0x04
#define PCI_COMMAND_INTX_DISABLE 0x400

static uint32_t edu_read32(struct edu *edu, unsigned int reg)
{
	return *(volatile uint32_t *)(edu->bar + reg);
}

static void edu_write32(struct edu *edu, unsigned int reg, uint32_t val)
{
	*(volatile uint32_t *)(edu->bar + reg) = val;
}

static void edu_write64(struct edu *edu, unsigned int reg, uint64_t val)
{
	*(volatile uint64_t *)(edu->bar + reg) = val;
}

static int read_hex(const char *path, unsigned int *val)
{
	FILE *f = fopen(path, "re");
	int ret;

	if (!f)
		return -errno;
	ret = fscanf(f, "%x", val) == 1 ? 0 : -EIO;
	fclose(f);
	return ret;
}

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

static int edu_pci_name(const char *uio_name, char *pci, size_t size)
{
	unsigned int vendor, device;
	char path[128];

	if (uio_pci_name(uio_name, pci, size))
		return -ENODEV;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", pci);
	if (read_hex(path, &vendor))
		return -ENODEV;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", pci);
	if (read_hex(path, &device))
		return -ENODEV;
	return vendor == 0x1234 && device == 0x11e8 ? 0 : -ENODEV;
}

static int edu_enable_master(struct edu *edu)
{
	uint16_t cmd;

	if (pread(edu->cfg_fd, &cmd, sizeof(cmd), PCI_COMMAND) != sizeof(cmd))
		return -EIO;
	cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	if (pwrite(edu->cfg_fd, &cmd, sizeof(cmd), PCI_COMMAND) != sizeof(cmd))
		return -EIO;
	return 0;
}

int edu_open(struct edu *edu, const char *uio_name)
{
	char path[128];
	void *bar;
	int ret;

	memset(edu, 0, sizeof(*edu));
	edu->uio_fd = -1;
	edu->cfg_fd = -1;
	if (strlen(uio_name) >= sizeof(edu->uio))
		return -ENODEV;
	memcpy(edu->uio, uio_name, strlen(uio_name) + 1);

	ret = edu_pci_name(uio_name, edu->pci, sizeof(edu->pci));
	if (ret)
		return ret;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", edu->pci);
	edu->cfg_fd = open(path, O_RDWR | O_CLOEXEC);
	if (edu->cfg_fd < 0)
		goto fail_errno;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0",
		 edu->pci);
	ret = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
	if (ret < 0)
		goto fail_errno;
	edu->bar_len = 1 << 20;
	bar = mmap(NULL, edu->bar_len, PROT_READ | PROT_WRITE, MAP_SHARED, ret,
		   0);
	close(ret);
	if (bar == MAP_FAILED)
		goto fail_errno;
	edu->bar = bar;

	snprintf(path, sizeof(path), "/dev/%s", uio_name);
	edu->uio_fd = open(path, O_RDWR | O_CLOEXEC);
	if (edu->uio_fd < 0)
		goto fail_errno;

	ret = edu_enable_master(edu);
	if (ret)
		goto fail;
	return 0;

fail_errno:
	ret = -errno;
fail:
	edu_close(edu);
	return ret;
}

void edu_close(struct edu *edu)
{
	if (edu->bar)
		munmap((void *)edu->bar, edu->bar_len);
	if (edu->uio_fd >= 0)
		close(edu->uio_fd);
	if (edu->cfg_fd >= 0)
		close(edu->cfg_fd);
	edu->bar = NULL;
	edu->uio_fd = -1;
	edu->cfg_fd = -1;
}

uint32_t edu_id(struct edu *edu)
{
	return edu_read32(edu, EDU_REG_ID);
}

int edu_find(char names[][16], int max)
{
	struct dirent *de;
	struct edu probe;
	int n = 0;
	DIR *dir;

	dir = opendir("/sys/class/uio");
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		if (strncmp(de->d_name, "uio", 3) || strlen(de->d_name) >= 16)
			continue;
		if (edu_pci_name(de->d_name, probe.pci, sizeof(probe.pci)))
			continue;
		memcpy(names[n++], de->d_name, strlen(de->d_name) + 1);
	}
	closedir(dir);
	/* readdir order is arbitrary; callers want uio0 before uio1. */
	qsort(names, n, 16, (int (*)(const void *, const void *))strcmp);
	return n;
}

/*
 * uio_pci_generic masks INTx in its handler (PCI_COMMAND_INTX_DISABLE) and
 * leaves unmasking to userspace, through config space.
 */
static int edu_irq_unmask(struct edu *edu)
{
	uint16_t cmd;

	if (pread(edu->cfg_fd, &cmd, sizeof(cmd), PCI_COMMAND) != sizeof(cmd))
		return -EIO;
	cmd &= ~PCI_COMMAND_INTX_DISABLE;
	if (pwrite(edu->cfg_fd, &cmd, sizeof(cmd), PCI_COMMAND) != sizeof(cmd))
		return -EIO;
	return 0;
}

static int edu_irq_wait(struct edu *edu, int timeout_ms)
{
	struct pollfd pfd = { .fd = edu->uio_fd, .events = POLLIN };
	uint32_t count;
	int ret;

	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return -errno;
	if (ret == 0)
		return -ETIMEDOUT;
	if (read(edu->uio_fd, &count, sizeof(count)) != sizeof(count))
		return -errno;
	edu->irqs = count;
	return 0;
}

/* Programs a transfer; with @irq, one that interrupts when it is done. */
static int edu_dma_start(struct edu *edu, uint64_t dma_addr, uint32_t edu_off,
			 uint32_t len, bool to_device, bool irq)
{
	uint32_t cmd = EDU_DMA_START | (irq ? EDU_DMA_IRQ : 0);
	int ret;

	/*
	 * QEMU 7.2 aborts on a transfer that ends exactly at the end of the
	 * device buffer, so the last byte of the buffer is never used.
	 */
	if (!len || edu_off >= EDU_BUF_SIZE || len >= EDU_BUF_SIZE - edu_off)
		return -EINVAL;

	if (irq) {
		/*
		 * A transfer that completed after the device's last user let
		 * go (unbound mid-transfer, say) leaves its interrupt raised:
		 * clear it, or it would pass for ours.
		 */
		edu_write32(edu, EDU_REG_IRQ_ACK,
			    edu_read32(edu, EDU_REG_IRQ_STATUS));
		ret = edu_irq_unmask(edu);
		if (ret)
			return ret;
	}

	if (to_device) {
		edu_write64(edu, EDU_REG_DMA_SRC, dma_addr);
		edu_write64(edu, EDU_REG_DMA_DST, EDU_BUF_BASE + edu_off);
	} else {
		edu_write64(edu, EDU_REG_DMA_SRC, EDU_BUF_BASE + edu_off);
		edu_write64(edu, EDU_REG_DMA_DST, dma_addr);
		cmd |= EDU_DMA_FROM_DEVICE;
	}
	edu_write64(edu, EDU_REG_DMA_COUNT, len);
	edu_write64(edu, EDU_REG_DMA_CMD, cmd);
	return 0;
}

int edu_dma(struct edu *edu, uint64_t dma_addr, uint32_t edu_off,
	    uint32_t len, bool to_device, int timeout_ms)
{
	int ret = edu_dma_start(edu, dma_addr, edu_off, len, to_device, true);

	while (!ret) {
		ret = edu_irq_wait(edu, timeout_ms);
		if (ret)
			return ret;
		if (!(edu_read32(edu, EDU_REG_IRQ_STATUS) & EDU_IRQ_DMA))
			return -EIO;
		edu_write32(edu, EDU_REG_IRQ_ACK, EDU_IRQ_DMA);
		/* The transfer is done when the start bit has cleared. */
		if (!(edu_read32(edu, EDU_REG_DMA_CMD) & EDU_DMA_START))
			return 0;
		/* An interrupt raised before ours was acknowledged: wait on. */
		ret = edu_irq_unmask(edu);
	}
	return ret;
}

int edu_dma_polled(struct edu *edu, uint64_t dma_addr, uint32_t edu_off,
		   uint32_t len, bool to_device, int timeout_ms)
{
	int ret = edu_dma_start(edu, dma_addr, edu_off, len, to_device, false);

	for (; !ret; timeout_ms--) {
		if (!(edu_read32(edu, EDU_REG_DMA_CMD) & EDU_DMA_START))
			return 0;
		if (timeout_ms <= 0)
			return -ETIMEDOUT;
		usleep(1000);
	}
	return ret;
}
