// SPDX-License-Identifier: GPL-2.0
/* HAVE_CLASS_DEVNODE_CONST_DEV: ->devnode() takes a const device (v6.2) */
#include <linux/device.h>

static char *probe_devnode(const struct device *dev, umode_t *mode)
{
	return NULL;
}

struct class probe_class = {
	.name = "probe",
	.devnode = probe_devnode,
};
