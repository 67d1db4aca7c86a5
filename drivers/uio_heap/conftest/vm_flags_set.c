// SPDX-License-Identifier: GPL-2.0
/* HAVE_VM_FLAGS_SET: vm_flags_set() exists (v6.3) */
#include <linux/mm.h>

void probe_vm_flags_set(struct vm_area_struct *vma);
void probe_vm_flags_set(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_IO);
}
