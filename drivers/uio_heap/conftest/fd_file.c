// SPDX-License-Identifier: GPL-2.0
/* HAVE_FD_FILE: struct fd is read through fd_file() (v6.12) */
#include <linux/file.h>

struct file *probe_fd_file(struct fd f);
struct file *probe_fd_file(struct fd f)
{
	return fd_file(f);
}
