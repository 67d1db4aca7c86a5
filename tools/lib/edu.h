/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A userspace driver for QEMU's "edu" PCI device (1234:11e8) bound to
 * uio_pci_generic: registers through BAR0, DMA completion through the UIO
 * interrupt.  The device copies between host memory and its own 4 KiB
 * buffer.  See QEMU's docs/specs/edu.rst.
 */
#ifndef UIOHEAP_EDU_H
#define UIOHEAP_EDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pci.h"

#define EDU_BUF_SIZE	4096u

struct edu {
	char uio[16];			/* "uio0" */
	char pci[32];			/* "0000:00:03.0" */
	int uio_fd;			/* /dev/uioN: interrupts */
	int cfg_fd;			/* PCI config space */
	volatile uint8_t *bar;		/* BAR0, 1 MiB of registers */
	size_t bar_len;
	unsigned long long irqs;	/* interrupts seen so far */
};

/*
 * Opens the edu behind UIO device @uio_name and enables bus mastering.
 * Returns 0, -ENODEV if it is not an edu, or -errno.
 */
int edu_open(struct edu *edu, const char *uio_name);
void edu_close(struct edu *edu);

/* Finds the UIO names of edu devices; returns how many (up to @max). */
int edu_find(char names[][16], int max);

/*
 * Copies @len bytes by DMA between the host address @dma_addr and the
 * device buffer at @edu_off: to the device if @to_device, else from it.
 * Waits for the completion interrupt for at most @timeout_ms.
 * Returns 0, -ETIMEDOUT, -EINVAL for a range outside the device buffer.
 */
int edu_dma(struct edu *edu, uint64_t dma_addr, uint32_t edu_off,
	    uint32_t len, bool to_device, int timeout_ms);

/*
 * The same without interrupts: polls for the end of the transfer, so that
 * a transfer the caller gives up on (its device went) leaves no interrupt
 * behind.  Needs no UIO device, only the BAR.
 */
int edu_dma_polled(struct edu *edu, uint64_t dma_addr, uint32_t edu_off,
		   uint32_t len, bool to_device, int timeout_ms);

/* The device's identification register (0x010000ed for version 1.0). */
uint32_t edu_id(struct edu *edu);

#endif
