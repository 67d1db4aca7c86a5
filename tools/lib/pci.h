/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The PCI side of a device bound to uio_pci_generic, which gives no UIO
 * maps: its sysfs attributes, config space and BARs, through the PCI
 * core's files in /sys/bus/pci/devices/BDF.  Shared by the edu driver and
 * the NVMe example (tools/nvme); the interrupt wait by any UIO driver.
 */
#ifndef UIOHEAP_PCI_H
#define UIOHEAP_PCI_H

#include <stddef.h>
#include <stdint.h>

/*
 * The name of the device behind UIO device @uio_name (its PCI address for
 * a PCI device) into @pci.  Returns 0, -ENAMETOOLONG, or -errno.
 */
int uio_pci_name(const char *uio_name, char *pci, size_t size);

/*
 * The reverse: the UIO device (uioN) of PCI device @pci, or else of the
 * platform device of that name, into @uio.  Returns 0 or -errno.
 */
int uio_of_pci(const char *pci, char *uio, size_t size);

/* A hexadecimal attribute ("vendor", "class") of PCI device @pci. */
int uio_pci_attr(const char *pci, const char *attr, unsigned int *val);

/* Opens the config space of PCI device @pci: an fd, or -errno. */
int uio_pci_config_open(const char *pci);

/*
 * Clears @clear and sets @set (PCI_COMMAND_* of <linux/pci_regs.h>) in the
 * command register, through config space fd @cfg_fd.  0 or -EIO.
 */
int uio_pci_command(int cfg_fd, uint16_t set, uint16_t clear);

/*
 * Maps all of BAR @bar of @pci, uncached, into *@map and its size into
 * *@len.  Returns 0, -ENODEV if the BAR is smaller than @min, or -errno.
 */
int uio_pci_map_bar(const char *pci, unsigned int bar, size_t min,
		    volatile uint8_t **map, size_t *len);

/*
 * Waits up to @timeout_ms for an interrupt on @uio_fd (an open /dev/uioN)
 * and stores UIO's event count in *@count.  0, -ETIMEDOUT or -errno.
 */
int uio_irq_wait(int uio_fd, int timeout_ms, uint32_t *count);

#endif
