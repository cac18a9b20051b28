/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The completion queue: stripes and the receive engine push into one
 * lock-free ring, core_cq_read pops.  The eventfd is written only on the
 * ring's empty -> non-empty edge, and only when a reader may be asleep
 * (cq_sleepers > 0), so a busy-polling reader costs no system call.
 * Lost-wakeup argument: a sleeper increments cq_sleepers (seq_cst), then
 * re-checks the ring; a producer publishes, fences (seq_cst, inside
 * ring_push) and reads cq_sleepers.  One of the two sees the other.
 *
 * Manual progress has nobody else to fill the ring, so a sleeper sleeps on
 * the hardware instead: every CQ reports to one completion channel.  It
 * arms each CQ, then polls once more (a completion that landed between the
 * last poll and the arming raises no event), then poll()s the channel fd
 * and the eventfd (for completions another thread drained, and receives
 * posted meanwhile).  Events are acknowledged as soon as they are taken.
 */
#include "core/transport/endpoint_impl.h"
#include "core/util/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
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

	snprintf(name, sizeof(name), "%s.cq", ep->label);
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
	stats_entry_remove(ep->cq_stats);
	ep->cq_stats = NULL;
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

void cq_wake(struct core_ep *ep)
{
	if (ep->progress_started)
		return;
	/* Pairs with the sleeper's seq_cst increment before its last look. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&ep->cq_sleepers, memory_order_relaxed) > 0) {
		uint64_t one = 1;
		ssize_t n = write(ep->cq_fd, &one, sizeof(one));

		(void)n; /* EAGAIN only if the counter is saturated: the fd is readable anyway */
	}
}

void cq_channel_drain(struct core_ep *ep)
{
	struct ibv_cq *cq;
	void *context;

	while (hw_get_cq_event(ep->cq_channel, &cq, &context) == 0)
		hw_ack_cq_events(cq, 1);
}

static void drain_eventfd(struct core_ep *ep)
{
	uint64_t drain;
	ssize_t rd = read(ep->cq_fd, &drain, sizeof(drain));

	(void)rd; /* EAGAIN: nothing was written */
}

static int wait_ms_until(uint64_t deadline)
{
	uint64_t now = clock_ns();

	if (deadline == UINT64_MAX)
		return -1;
	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/*
 * The receive engine's timed work (keepalive probes for rendezvous sends
 * waiting on a FIN, FINs to retry) runs only inside progress: while there
 * is some, a manual-progress sleeper wakes this often.
 */
#define SREAD_TICK_MS 100

static bool timed_work_pending(struct core_ep *ep)
{
	uint32_t np = atomic_load_explicit(&ep->npeers, memory_order_acquire);

	if (ep->fin_retry && ring_count(ep->fin_retry))
		return true;
	for (uint32_t i = 0; i < np; i++) {
		struct peer *p = ep->peers[i];

		for (uint32_t k = 0; k < p->nconn; k++)
			if (atomic_load_explicit(&p->conns[k].rndv_out, memory_order_relaxed) &&
			    !atomic_load_explicit(&p->conns[k].dead, memory_order_relaxed))
				return true;
	}
	return false;
}

static void arm_cqs(struct core_ep *ep)
{
	ep_lock(ep);
	for (int i = 0; i < ep->nstripes; i++)
		hw_req_notify_cq(ep->stripes[i].cq, 0);
	hw_req_notify_cq(ep->rx_cq, 0);
	/* What landed before arming raises no event: into the ring with it, where the next read finds it. */
	progress_all(ep);
	ep_unlock(ep);
}

/* Manual progress: sleep on the hardware until a completion, a wake-up or the deadline. */
static int sleep_manual(struct core_ep *ep, struct core_cqe *entries, int n, uint64_t deadline)
{
	int got, wait_ms;

	drain_eventfd(ep);
	atomic_fetch_add(&ep->cq_sleepers, 1);
	arm_cqs(ep);
	got = core_cq_read(ep, entries, n);
	if (!got) {
		struct pollfd pfd[2] = {
			{ .fd = ep->cq_channel->fd, .events = POLLIN },
			{ .fd = ep->cq_fd, .events = POLLIN },
		};

		wait_ms = wait_ms_until(deadline);
		if ((wait_ms < 0 || wait_ms > SREAD_TICK_MS) && timed_work_pending(ep))
			wait_ms = SREAD_TICK_MS;
		if (poll(pfd, 2, wait_ms) > 0 && pfd[0].revents)
			cq_channel_drain(ep);
	}
	atomic_fetch_sub(&ep->cq_sleepers, 1);
	return got;
}

/* Progress thread: it fills the ring and writes the eventfd for sleepers. */
static int sleep_on_ring(struct core_ep *ep, struct core_cqe *entries, int n, uint64_t deadline)
{
	int got;

	drain_eventfd(ep);
	atomic_fetch_add(&ep->cq_sleepers, 1);
	got = pop_some(ep, entries, n);
	if (got) {
		stats_add(ep->cq_stats, STATS_COMPLETED, (uint64_t)got);
	} else {
		struct pollfd pfd = { .fd = ep->cq_fd, .events = POLLIN };

		poll(&pfd, 1, wait_ms_until(deadline));
	}
	atomic_fetch_sub(&ep->cq_sleepers, 1);
	return got;
}

int core_cq_sread(struct core_ep *ep, struct core_cqe *entries, int n, int timeout_ms)
{
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : clock_ns() + (uint64_t)timeout_ms * 1000000ull;

	if (n <= 0)
		return n < 0 ? -EINVAL : 0;
	for (;;) {
		int got = core_cq_read(ep, entries, n);

		if (got)
			return got;
		if (clock_ns() >= deadline)
			return -ETIMEDOUT;
		got = ep->progress_started ? sleep_on_ring(ep, entries, n, deadline)
					   : sleep_manual(ep, entries, n, deadline);
		if (got)
			return got;
	}
}

int core_cq_fd(const struct core_ep *ep)
{
	return ep->cq_fd;
}

int core_cq_arm(struct core_ep *ep)
{
	if (ep->progress_started)
		return -EINVAL;
	arm_cqs(ep);
	return ep->cq_channel->fd;
}

void core_cq_ack_events(struct core_ep *ep)
{
	if (!ep->progress_started)
		cq_channel_drain(ep);
}
