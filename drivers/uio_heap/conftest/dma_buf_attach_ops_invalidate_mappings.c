// SPDX-License-Identifier: GPL-2.0
/* HAVE_DMA_BUF_ATTACH_OPS_INVALIDATE_MAPPINGS: move_notify renamed (v7.1) */
#include <linux/dma-buf.h>

static void probe_invalidate_mappings(struct dma_buf_attachment *attach)
{
}

const struct dma_buf_attach_ops probe_attach_ops = {
	.invalidate_mappings = probe_invalidate_mappings,
};
