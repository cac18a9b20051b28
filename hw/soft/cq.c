/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Completion queues and completion channels.  A CQ is a bounded ring; one
 * completion too many sets it in overflow (later completions are lost) and
 * raises IBV_EVENT_CQ_ERR.  A channel is a pipe carrying the CQ pointer of
 * each notification, so its fd works with poll() and blocking reads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "hw/soft/soft.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sched.h>
#include <unistd.h>

/*
 * Empty polls in a row before a poller yields its CPU, also when each one
 * reads the wire.  Yielding every 4 of those kept the two spinning pollers
 * of a ping-pong on one CPU in about half the runs (each always just ran, so
 * the balancer did not move either), doubling the round trip.
 */
#define SOFT_POLL_YIELD 64

struct ibv_comp_channel *soft_create_comp_channel(struct ibv_context *ctx)
{
	struct soft_channel *ch = calloc(1, sizeof(*ch));
	int fds[2];

	if (!ch)
		return NULL;
	if (pipe2(fds, O_CLOEXEC)) {
		free(ch);
		return NULL;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	ch->ibv.context = ctx;
	ch->ibv.fd = fds[0];
	ch->wr_fd = fds[1];
	return &ch->ibv;
}

int soft_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct soft_channel *ch = to_soft_channel(channel);

	if (__atomic_load_n(&channel->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	close(ch->ibv.fd);
	close(ch->wr_fd);
	free(ch);
	return 0;
}

int soft_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct ibv_cq *got;
	ssize_t n = read(channel->fd, &got, sizeof(got));

	if (n != (ssize_t)sizeof(got)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	*cq = got;
	*cq_context = got->cq_context;
	atomic_fetch_add(&to_soft_cq(got)->events_unacked, 1);
	return 0;
}

void soft_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	atomic_fetch_sub(&to_soft_cq(cq)->events_unacked, nevents);
}

struct ibv_cq *soft_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			      struct ibv_comp_channel *channel, int comp_vector)
{
	struct soft_nic *nic = soft_nic_of(ctx);
	struct soft_cq *cq;

	if (cqe < 1 || cqe > SOFT_MAX_CQE || comp_vector != 0 || (channel && channel->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_fetch_add(&nic->n_cq, 1) >= SOFT_MAX_CQ) {
		atomic_fetch_sub(&nic->n_cq, 1);
		errno = ENOMEM;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		atomic_fetch_sub(&nic->n_cq, 1);
		errno = ENOMEM;
		return NULL;
	}
	cq->size = (uint32_t)cqe;
	pthread_mutex_init(&cq->lock, NULL);
	cq->ibv.context = ctx;
	cq->ibv.channel = channel;
	cq->ibv.cq_context = cq_context;
	cq->ibv.cqe = cqe;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	if (channel)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_ACQ_REL);
	return &cq->ibv;
}

int soft_destroy_cq(struct ibv_cq *ibcq)
{
	struct soft_cq *cq = to_soft_cq(ibcq);

	if (atomic_load(&cq->qp_refs))
		return EBUSY;
	soft_async_forget(ibcq->context, ibcq, &cq->async_reported, &ibcq->mutex, &ibcq->cond,
			  &ibcq->async_events_completed);
	if (ibcq->channel)
		__atomic_sub_fetch(&ibcq->channel->refcnt, 1, __ATOMIC_ACQ_REL);
	atomic_fetch_sub(&soft_nic_of(ibcq->context)->n_cq, 1);
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->ibv.mutex);
	pthread_cond_destroy(&cq->ibv.cond);
	free(cq->ring);
	free(cq);
	return 0;
}

/* Keeps the completions waiting, oldest first; fails if they do not fit (ibv_resize_cq). */
int soft_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct soft_cq *cq = to_soft_cq(ibcq);
	struct ibv_wc *ring, *old;

	if (cqe < 1 || cqe > SOFT_MAX_CQE)
		return EINVAL;
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	soft_run_queued(soft_nic_of(ibcq->context));
	soft_lock(&cq->lock);
	if (cq->count > (uint32_t)cqe) {
		soft_unlock(&cq->lock);
		free(ring);
		return EINVAL;
	}
	for (uint32_t i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->size];
	old = cq->ring;
	cq->ring = ring;
	cq->head = 0;
	cq->size = (uint32_t)cqe;
	ibcq->cqe = cqe;
	soft_unlock(&cq->lock);
	free(old);
	return 0;
}

void soft_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct soft_cq *cq = to_soft_cq(ibcq);
	uint32_t kept = 0;

	soft_lock(&cq->lock);
	for (uint32_t i = 0; i < cq->count; i++) {
		const struct ibv_wc *wc = &cq->ring[(cq->head + i) % cq->size];

		if (wc->qp_num != qpn)
			cq->ring[(cq->head + kept++) % cq->size] = *wc;
	}
	__atomic_store_n(&cq->count, kept, __ATOMIC_RELEASE);
	soft_unlock(&cq->lock);
}

/* Empty polls in a row by this thread that read the wire. */
static __thread unsigned soft_empty_polls;

/*
 * A thread that polls several CQs in turn (core polls one per stripe and one
 * for receives) reads the wire once per turn, not once per CQ: each read is a
 * system call, and the turn's other polls would find the socket empty.  A
 * turn begins with a poll of a CQ the thread already polled in the current
 * turn; only that first poll reads, and only if its CQ is empty.  So a thread
 * polling one CQ reads on every empty poll.  A read that brought work ends
 * the turn without beginning the next: the completions it left in CQs polled
 * earlier in the turn (an ACK that came with the answer to its SEND) are
 * collected by the next polls of those CQs without another read.  The CQ
 * pointers are compared, never followed.
 */
#define SOFT_POLL_TURN_CQS 8
static __thread const struct soft_cq *soft_turn_cqs[SOFT_POLL_TURN_CQS];
static __thread unsigned soft_turn_len;
static __thread bool soft_turn_after_work; /* the last read brought work: the next turn waits for a repeat */

static bool soft_poll_turn_begins(const struct soft_cq *cq)
{
	bool begins = (soft_turn_len == 0 && !soft_turn_after_work) || soft_turn_len == SOFT_POLL_TURN_CQS;

	for (unsigned i = 0; i < soft_turn_len && !begins; i++)
		begins = soft_turn_cqs[i] == cq;
	if (begins) {
		soft_turn_len = 0;
		soft_turn_after_work = false;
	}
	soft_turn_cqs[soft_turn_len++] = cq;
	return begins;
}

static void soft_poll_turn_found_work(void)
{
	soft_turn_len = 0;
	soft_turn_after_work = true;
}

int soft_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct soft_cq *cq = to_soft_cq(ibcq);
	struct soft_nic *nic = soft_nic_of(ibcq->context);
	bool wire = atomic_load_explicit(&nic->n_conns, memory_order_relaxed) != 0;
	bool turn_begins = wire && soft_poll_turn_begins(cq);
	int n = 0;

	if (num_entries < 0)
		return -1;
	/*
	 * An empty CQ is answered without the lock: spinning pollers leave the
	 * engine alone.  This NIC needs a CPU to make progress, and on a busy
	 * machine its engine may share one with the poller: every so many
	 * empty polls in a row, the poller yields the CPU.
	 */
	if (!__atomic_load_n(&cq->count, __ATOMIC_ACQUIRE)) {
		/* Without connections nothing is read, and every empty poll counts toward the yield. */
		if (wire && !turn_begins)
			return 0;
		/* Over the wire, the poller receives what arrived itself (soft_app_round). */
		bool worked = soft_app_round(nic, true);

		if (worked)
			soft_poll_turn_found_work();
		if (!worked || !__atomic_load_n(&cq->count, __ATOMIC_ACQUIRE)) {
			if (++soft_empty_polls % SOFT_POLL_YIELD == 0)
				sched_yield();
			return 0;
		}
	}
	soft_empty_polls = 0;
	soft_lock(&cq->lock);
	while (n < num_entries && cq->count) {
		wc[n++] = cq->ring[cq->head];
		cq->head = cq->head + 1 == cq->size ? 0 : cq->head + 1;
		__atomic_store_n(&cq->count, cq->count - 1, __ATOMIC_RELEASE);
	}
	soft_unlock(&cq->lock);
	return n;
}

int soft_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct soft_cq *cq = to_soft_cq(ibcq);

	if (!ibcq->channel)
		return EINVAL;
	pthread_mutex_lock(&cq->lock);
	cq->armed = 1 + !!solicited_only;
	pthread_mutex_unlock(&cq->lock);
	/* The poller is going to block: the engine must watch the wire again. */
	soft_apps_leave(soft_nic_of(ibcq->context));
	return 0;
}

void soft_cq_push(struct ibv_cq *ibcq, const struct ibv_wc *wc, bool solicited)
{
	struct soft_cq *cq = to_soft_cq(ibcq);
	bool notify = false, overflowed = false;

	soft_lock(&cq->lock);
	if (cq->overflow) {
		soft_unlock(&cq->lock);
		return;
	}
	if (cq->count == cq->size) {
		cq->overflow = overflowed = true;
	} else {
		uint32_t tail = cq->head + cq->count;

		cq->ring[tail >= cq->size ? tail - cq->size : tail] = *wc;
		__atomic_store_n(&cq->count, cq->count + 1, __ATOMIC_RELEASE);
		if (cq->armed == 1 || (cq->armed == 2 && (solicited || wc->status != IBV_WC_SUCCESS))) {
			cq->armed = 0;
			notify = true;
		}
	}
	soft_unlock(&cq->lock);
	if (overflowed) {
		soft_async_event(ibcq->context, IBV_EVENT_CQ_ERR, ibcq);
	} else if (notify) {
		ssize_t n = write(to_soft_channel(ibcq->channel)->wr_fd, &ibcq, sizeof(ibcq));

		(void)n;
	}
}
