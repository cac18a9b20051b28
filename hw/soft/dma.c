/* SPDX-License-Identifier: MIT */
/*
 * The soft NIC's accesses to registered memory: the stand-in for DMA.
 *
 * A real NIC reads and writes registered memory outside the C memory model;
 * an application that lets RDMA race with its own loads and stores (the
 * random walker does, on purpose) gets undefined bytes, not a data race in
 * the driver.  Every payload and atomic access of the soft NIC goes through
 * these functions, and tests/sanitizers/tsan.supp names them, so
 * ThreadSanitizer reports races on the NIC's own state and not the races an
 * application creates through RDMA.  noinline keeps them in every stack.
 */
#include "hw/soft/soft.h"

#include <string.h>

__attribute__((noinline)) void soft_dma_copy(void *dst, const void *src, size_t len)
{
	/* memmove: a loopback WRITE or READ may copy between overlapping ranges. */
	memmove(dst, src, len);
}

__attribute__((noinline)) uint64_t soft_dma_fetch_add(uint64_t *target, uint64_t add)
{
	return __atomic_fetch_add(target, add, __ATOMIC_SEQ_CST);
}

__attribute__((noinline)) uint64_t soft_dma_cmp_swap(uint64_t *target, uint64_t compare, uint64_t swap)
{
	__atomic_compare_exchange_n(target, &compare, swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return compare;
}
