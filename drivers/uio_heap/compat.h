/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences uio-heap builds across (Debian 6.1 to mainline).
 *
 * HAVE_* come from build-time probes (conftest/, run by the top Makefile
 * against the kernel being built for), never from version numbers, so that
 * distribution backports are handled too.  Each shim names the upstream
 * release that changed the API.
 */
#ifndef _UIO_HEAP_COMPAT_H
#define _UIO_HEAP_COMPAT_H

#include <linux/mm.h>
#include <linux/module.h>

#include "conftest.h"

/*
 * v6.2: class ->devnode() takes a const struct device ("driver core:
 * make struct class.devnode() take a const *").
 */
#ifdef HAVE_CLASS_DEVNODE_CONST_DEV
#define UIO_HEAP_CLASS_DEV const struct device
#else
#define UIO_HEAP_CLASS_DEV struct device
#endif

/*
 * v6.3: vma->vm_flags became read-only, written through vm_flags_set()
 * ("mm: introduce vma->vm_flags wrapper functions").
 */
#ifndef HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

/*
 * v6.13: MODULE_IMPORT_NS() takes a string literal ("module: Convert
 * symbol namespace to string literal").  The MODULE_INFO() form below is
 * what every version expands to, so it builds everywhere.
 */
#define UIO_HEAP_IMPORT_NS(ns)	MODULE_INFO(import_ns, ns)

/*
 * <kunit/visibility.h> (v6.2, and in 6.1.y stable): EXPORT_SYMBOL_IF_KUNIT()
 * exports internals to the KUnit suite only, on kernels with KUnit.
 */
#include <kunit/visibility.h>

/*
 * v7.1: dma_buf_attach_ops::move_notify became ::invalidate_mappings, and
 * optional ("dma-buf: Rename .move_notify() callback to a clearer
 * identifier", "dma-buf: Make .invalidate_mapping() truly optional").
 * Having it now tells exporters the importer can revoke its device's access
 * at once (dma_buf_attach_revocable()), which uio-heap cannot: it pins, and
 * has none.  Before v7.1 a pinning importer needed one, doing nothing.
 */
#ifdef HAVE_DMA_BUF_ATTACH_OPS_INVALIDATE_MAPPINGS
#define UIO_HEAP_PINNED_ATTACH_OPS	{ }
#else
struct dma_buf_attachment;
static inline void uio_heap_pinned_move_notify(struct dma_buf_attachment *attach)
{
}

#define UIO_HEAP_PINNED_ATTACH_OPS	{ .move_notify = uio_heap_pinned_move_notify }
#endif

/*
 * v6.12: struct fd became one word, read through fd_file() ("introduce
 * fd_file(), convert all accessors to it", "struct fd: representation
 * change"); before, its file was a member.
 */
#ifndef HAVE_FD_FILE
#define fd_file(f)	((f).file)
#endif

/*
 * struct dma_buf_ops::get_dma_addr exists only in kernels carrying
 * uio-heap's dma-buf core patches (drivers/dma-buf/patches/):
 * HAVE_DMA_BUF_OPS_GET_DMA_ADDR is set by the probe when it does.
 */

#endif /* _UIO_HEAP_COMPAT_H */
