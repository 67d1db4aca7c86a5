// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace edu driver over uio_pci_generic.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/pci_regs.h>

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

#define EDU_BAR_SIZE		(1u << 20)

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

static int edu_pci_name(const char *uio_name, char *pci, size_t size)
{
	unsigned int vendor, device;

	if (uio_pci_name(uio_name, pci, size) ||
	    uio_pci_attr(pci, "vendor", &vendor) ||
	    uio_pci_attr(pci, "device", &device))
		return -ENODEV;
	return vendor == 0x1234 && device == 0x11e8 ? 0 : -ENODEV;
}

int edu_open(struct edu *edu, const char *uio_name)
{
	char path[128];
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

	edu->cfg_fd = uio_pci_config_open(edu->pci);
	if (edu->cfg_fd < 0) {
		ret = edu->cfg_fd;
		goto fail;
	}
	ret = uio_pci_map_bar(edu->pci, 0, EDU_BAR_SIZE, &edu->bar,
			      &edu->bar_len);
	if (ret)
		goto fail;

	snprintf(path, sizeof(path), "/dev/%s", uio_name);
	edu->uio_fd = open(path, O_RDWR | O_CLOEXEC);
	if (edu->uio_fd < 0)
		goto fail_errno;

	ret = uio_pci_command(edu->cfg_fd,
			      PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 0);
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
	return uio_pci_command(edu->cfg_fd, 0, PCI_COMMAND_INTX_DISABLE);
}

static int edu_irq_wait(struct edu *edu, int timeout_ms)
{
	uint32_t count;
	int ret = uio_irq_wait(edu->uio_fd, timeout_ms, &count);

	if (!ret)
		edu->irqs = count;
	return ret;
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
