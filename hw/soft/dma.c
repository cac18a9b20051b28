/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft NIC's accesses to registered memory: the stand-in for DMA.
 *
 * A real NIC reads and writes registered memory outside the C memory model;
 * an application that lets RDMA race with its own loads and stores (the
 * random walker does, on purpose) gets undefined bytes, not a data race in
 * the driver.  Every payload and atomic access of the soft NIC goes through
 * these functions, and under ThreadSanitizer they tell it to ignore what
 * they touch: it then reports races on the NIC's own state, not the races
 * an application creates through RDMA.
 *
 * Ignoring at the access, not suppressing by function name: a suppression
 * matches frames of the two stacks of a report, and when the NIC's access is
 * older than TSan's history its stack cannot be restored, so the report
 * showed only the application's side and got through ("walk --verify with
 * faults: exit 66" about one make tsan in three).
 */
#include "hw/soft/soft.h"
#include "hw/soft/shm.h"

#include <string.h>
#include <sys/socket.h>

#if defined(__SANITIZE_THREAD__)
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define DMA_BEGIN() __tsan_ignore_thread_begin()
#define DMA_END()   __tsan_ignore_thread_end()
#else
#define DMA_BEGIN() ((void)0)
#define DMA_END()   ((void)0)
#endif

__attribute__((noinline)) void soft_dma_copy(void *dst, const void *src, size_t len)
{
	if (!len)
		return; /* an empty SGE has no address to speak of (it may be NULL) */
	DMA_BEGIN();
	/* memmove: a loopback WRITE or READ may copy between overlapping ranges. */
	memmove(dst, src, len);
	DMA_END();
}

__attribute__((noinline)) uint64_t soft_dma_fetch_add(uint64_t *target, uint64_t add)
{
	uint64_t old;

	DMA_BEGIN();
	old = __atomic_fetch_add(target, add, __ATOMIC_SEQ_CST);
	DMA_END();
	return old;
}

__attribute__((noinline)) uint64_t soft_dma_cmp_swap(uint64_t *target, uint64_t compare, uint64_t swap)
{
	DMA_BEGIN();
	__atomic_compare_exchange_n(target, &compare, swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	DMA_END();
	return compare;
}

__attribute__((noinline)) void soft_dma_store64(void *target, uint64_t value)
{
	DMA_BEGIN();
	__atomic_store_n((uint64_t *)target, value, __ATOMIC_SEQ_CST);
	DMA_END();
}

/* A large packet leaves straight from registered memory: the kernel reads it as a NIC would. */
__attribute__((noinline)) ssize_t soft_dma_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ssize_t n;

	DMA_BEGIN();
	n = sendmsg(fd, msg, flags);
	DMA_END();
	return n;
}

__attribute__((noinline)) bool soft_dma_pull(struct soft_nic *nic, void *dst, const void *src, int32_t pid,
					     size_t len)
{
	bool ok = true;

	if (!len)
		return true;
	soft_count(&nic->wire_copied_bytes, len);
	if (!pid) {
		soft_dma_copy(dst, src, len);
		return true;
	}
	/* The kernel writes dst (the target MR) as a NIC would; only the peer's pages are read. */
	DMA_BEGIN();
	if (soft_cma_read(pid, dst, (uintptr_t)src, len) != (ssize_t)len) {
		memset(dst, 0, len);
		ok = false;
	}
	DMA_END();
	return ok;
}

/* A payload into the shared-memory ring straight from registered memory. */
__attribute__((noinline)) ssize_t soft_dma_shm_write(struct soft_shm *shm, const void *buf, size_t len)
{
	ssize_t n;

	DMA_BEGIN();
	n = soft_shm_write(shm, buf, len);
	DMA_END();
	return n;
}
