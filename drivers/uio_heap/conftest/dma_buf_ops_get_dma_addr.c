// SPDX-License-Identifier: GPL-2.0
/* HAVE_DMA_BUF_OPS_GET_DMA_ADDR: the patched dma-buf core's address op */
#include <linux/dma-buf.h>

static int probe_get_dma_addr(struct dma_buf *dmabuf, u64 *addr)
{
	return 0;
}

const struct dma_buf_ops probe_ops = {
	.get_dma_addr = probe_get_dma_addr,
};
