/* SPDX-License-Identifier: MIT */
/*
 * The completion queue: stripes and the receive engine push into one
 * lock-free ring, core_cq_read pops.  The eventfd is written only on the
 * ring's empty -> non-empty edge, and only when a reader may be asleep
 * (cq_sleepers > 0), so a busy-polling reader costs no system call.
 * Lost-wakeup argument: a sleeper increments cq_sleepers (seq_cst), then
 * re-checks the ring; a producer publishes, fences (seq_cst, inside
 * ring_push) and reads cq_sleepers.  One of the two sees the other.
 */
#include "endpoint_impl.h"
#include "clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sched.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int cq_init(struct core_ep *ep, uint32_t size)
{
	int rc = ring_create(size, sizeof(struct core_cqe), &ep->cq_ring);

	if (rc)
		return rc;
	ep->cq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ep->cq_fd < 0)
		return -errno;
	atomic_init(&ep->cq_sleepers, 0);
	char name[STATS_NAME_LEN];

	snprintf(name, sizeof(name), "%s%scq", ep->attr.name ? ep->attr.name : "", ep->attr.name ? "." : "");
	ep->cq_stats = stats_entry_add(name, STATS_KIND_CQ, -1);
	return 0;
}

void cq_fini(struct core_ep *ep)
{
	if (ep->cq_fd >= 0)
		close(ep->cq_fd);
	ep->cq_fd = -1;
	ring_destroy(ep->cq_ring);
	ep->cq_ring = NULL;
}

int cq_push(struct core_ep *ep, const struct core_cqe *e)
{
	bool edge = false;
	int rc = ring_push(ep->cq_ring, e, &edge);

	if (rc) {
		stats_inc(ep->cq_stats, STATS_EAGAIN);
		return rc;
	}
	if (ep->cq_stats) {
		uint32_t depth = ring_count(ep->cq_ring);

		stats_ring_depth(ep->cq_stats, depth);
	}
	if (edge && atomic_load_explicit(&ep->cq_sleepers, memory_order_relaxed) > 0) {
		uint64_t one = 1;
		ssize_t n = write(ep->cq_fd, &one, sizeof(one));

		(void)n; /* EAGAIN only if the counter is saturated: the fd is readable anyway */
	}
	return 0;
}

static int pop_some(struct core_ep *ep, struct core_cqe *entries, int n)
{
	int got = 0;

	while (got < n && ring_pop(ep->cq_ring, &entries[got]) == 0)
		got++;
	return got;
}

int core_cq_read(struct core_ep *ep, struct core_cqe *entries, int n)
{
	int got;

	if (n <= 0)
		return n < 0 ? -EINVAL : 0;
	ep_lock(ep);
	if (!ep->progress_started)
		progress_once(ep);
	got = pop_some(ep, entries, n);
	stats_inc(ep->cq_stats, STATS_POLLS);
	if (!got)
		stats_inc(ep->cq_stats, STATS_EMPTY_POLLS);
	else
		stats_add(ep->cq_stats, STATS_COMPLETED, (uint64_t)got);
	ep_unlock(ep);
	return got;
}

int core_cq_sread(struct core_ep *ep, struct core_cqe *entries, int n, int timeout_ms)
{
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : clock_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		int got = core_cq_read(ep, entries, n);

		if (got)
			return got;
		if (clock_ns() >= deadline)
			return -ETIMEDOUT;
		if (!ep->progress_started) {
			/* Manual progress: nobody else will fill the ring, keep driving it. */
			sched_yield();
			continue;
		}
		uint64_t drain;
		ssize_t rd = read(ep->cq_fd, &drain, sizeof(drain));

		(void)rd;
		atomic_fetch_add(&ep->cq_sleepers, 1);
		got = pop_some(ep, entries, n);
		if (got) {
			atomic_fetch_sub(&ep->cq_sleepers, 1);
			stats_add(ep->cq_stats, STATS_COMPLETED, (uint64_t)got);
			return got;
		}
		uint64_t now = clock_ns();
		int wait_ms = deadline == UINT64_MAX ? -1 : (int)((deadline - now + 999999) / 1000000);
		struct pollfd pfd = { .fd = ep->cq_fd, .events = POLLIN };

		poll(&pfd, 1, wait_ms);
		atomic_fetch_sub(&ep->cq_sleepers, 1);
	}
}

int core_cq_fd(const struct core_ep *ep)
{
	return ep->cq_fd;
}
