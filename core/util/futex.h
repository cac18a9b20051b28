/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Process-shared futex waits and wakes on a 32-bit word in shared memory, for
 * the agent's channels and gateway: a waiter sleeps in the kernel instead of
 * spinning, and a waker makes a system call only when someone sleeps.
 */
#ifndef RDMATOOL_CORE_FUTEX_H
#define RDMATOOL_CORE_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Sleeps while *word == expected, at most until the CLOCK_MONOTONIC deadline
 * deadline_ns (0: no deadline).  Returns 0 when woken or when the word had
 * already changed, -ETIMEDOUT at the deadline, -EINTR on a signal.  Callers
 * re-check their condition in a loop: wakes may be spurious.
 */
static inline long futex_wait_syscall(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
	struct timespec ts, *tsp = NULL;

	if (deadline_ns) {
		ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
		ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
		tsp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time, so retries keep one deadline. */
	return syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET, expected, tsp, NULL,
		       FUTEX_BITSET_MATCH_ANY);
}

static inline int futex_wait_until(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
	if (futex_wait_syscall(word, expected, deadline_ns) == 0)
		return 0;
	if (errno == EAGAIN)
		return 0;
	return -errno;
}

/* Wakes every sleeper on word. */
static inline void futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * The same pair for callers that count their sleepers: the wait returns 1
 * only when a wake took it off the word (that waker counted it), 0 when the
 * word had already changed, or -ETIMEDOUT / -EINTR; the wake returns how
 * many sleepers it took off.
 */
static inline int futex_wait_counted(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
	if (futex_wait_syscall(word, expected, deadline_ns) == 0)
		return 1;
	return errno == EAGAIN ? 0 : -errno;
}

static inline uint32_t futex_wake_counted(_Atomic uint32_t *word)
{
	long n = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);

	return n > 0 ? (uint32_t)n : 0;
}

#endif
