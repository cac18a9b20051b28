/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The agent's side of the gateway (gateway_impl.h): serving and completing slots, sleeping, removing it. */
#include "core/chan/gateway_impl.h"

/*
 * Pairs with the client's seq_cst store of sleeping before its last look at
 * state.  A seq_cst read-modify-write rather than a fence and a load: the
 * same store-load ordering, and one ThreadSanitizer models (it rejects
 * atomic_thread_fence).
 */
static void slot_wake(struct gw_slot *sl)
{
	if (atomic_fetch_or(&sl->sleeping, 0))
		futex_wake_all(&sl->state);
}

/* The agent finished a request: hand it back, or free it when nobody waits any more. */
void gw_slot_complete(struct gw_shared *s, struct gw_slot *sl, int status)
{
	uint32_t busy = SLOT_BUSY;

	sl->status = status;
	atomic_fetch_add(status ? &s->failed : &s->completed, 1);
	if (sl->detached) {
		atomic_store_explicit(&sl->state, SLOT_FREE, memory_order_release);
		return;
	}
	if (!atomic_compare_exchange_strong(&sl->state, &busy, SLOT_DONE))
		atomic_store_explicit(&sl->state, SLOT_FREE, memory_order_release); /* abandoned */
	slot_wake(sl);
}

static bool pid_gone(int32_t pid)
{
	return pid <= 0 || (kill(pid, 0) && errno == ESRCH);
}

bool gw_slot_orphaned(struct gateway *g, uint32_t slot, struct gw_request *req)
{
	struct gw_slot *sl;

	if (slot >= GW_SLOTS)
		return false;
	sl = &g->s->slots[slot];
	*req = sl->req;
	req->name[sizeof(req->name) - 1] = '\0';
	return atomic_load(&sl->state) == SLOT_ABANDONED || (!sl->detached && pid_gone(sl->pid));
}

void gw_complete(struct gateway *g, uint32_t slot, int status, const void *out, size_t outlen)
{
	struct gw_slot *sl;

	if (slot >= GW_SLOTS)
		return;
	sl = &g->s->slots[slot];
	sl->spilled = 0;
	if (outlen > GW_INLINE && !status && atomic_load(&sl->state) == SLOT_BUSY) {
		char path[SPILL_PATH_MAX];

		status = gw_spill_path(path, sizeof(path), g->dir, g->rank, slot, sl->ticket)
			     ? gw_spill_write(path, out, outlen)
			     : -ENAMETOOLONG;
		sl->spilled = status == 0;
		sl->spill_len = outlen;
		sl->outlen = 0;
		gw_slot_complete(g->s, sl, status);
		/* Nobody will read it after all: the client died, or gave up meanwhile. */
		if (sl->spilled && atomic_load(&sl->state) == SLOT_FREE)
			unlink(path);
		return;
	}
	if (outlen > GW_INLINE)
		outlen = GW_INLINE;
	if (outlen && out != sl->data)
		memcpy(sl->data, out, outlen);
	sl->outlen = (uint32_t)outlen;
	gw_slot_complete(g->s, sl, status);
}

int gw_serve(struct gateway *g, gw_handler fn, void *arg)
{
	struct gw_shared *s = g->s;
	struct gw_slot *ready[GW_SLOTS];
	bool taken[GW_SLOTS] = {false};
	uint64_t now = clock_ns(), newest = 0;
	bool reap = now >= g->next_reap_ns;
	int n = 0;
	/*
	 * A client rings the doorbell after marking its slot READY (seq_cst), so
	 * an unchanged count means no request came since the last scan began:
	 * the scan, a cache line on a page of its own per slot, is skipped.
	 */
	uint32_t bell = atomic_load(&s->doorbell);

	if (!reap && !g->deferred && bell == g->bell_seen)
		return 0;
	g->bell_seen = bell;
	g->deferred = false;
	if (reap)
		g->next_reap_ns = now + GW_REAP_NS;

	for (int i = 0; i < GW_SLOTS; i++) {
		struct gw_slot *sl = &s->slots[i];
		uint32_t st = atomic_load_explicit(&sl->state, memory_order_acquire);

		if (st == SLOT_READY) {
			ready[n++] = sl;
			taken[i] = true;
			if (sl->ticket > newest)
				newest = sl->ticket;
		} else if (reap && (st == SLOT_CLAIMED || st == SLOT_DONE) && pid_gone(sl->pid) &&
			   atomic_compare_exchange_strong(&sl->state, &st, SLOT_FREE)) {
			atomic_fetch_add(&s->reaped, 1); /* its client died mid-request */
			if (st == SLOT_DONE && sl->spilled) {
				char path[SPILL_PATH_MAX];

				if (gw_spill_path(path, sizeof(path), g->dir, g->rank, (uint32_t)i,
						  sl->ticket))
					unlink(path);
			}
		}
	}
	/*
	 * The scan can pass a slot just before its client marks it ready, then
	 * find the same client's next request in a later slot.  That request's
	 * earlier ones were ready before it took its ticket, so a second look
	 * finds every one the first missed below the newest ticket taken.
	 */
	for (int i = 0; i < GW_SLOTS && n; i++) {
		struct gw_slot *sl = &s->slots[i];

		if (!taken[i] && atomic_load_explicit(&sl->state, memory_order_acquire) == SLOT_READY &&
		    sl->ticket < newest)
			ready[n++] = sl;
	}
	/* Ticket order keeps each client's requests in the order it made them. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && ready[j]->ticket < ready[j - 1]->ticket; j--) {
			struct gw_slot *t = ready[j];

			ready[j] = ready[j - 1];
			ready[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		struct gw_slot *sl = ready[i];
		uint32_t st = SLOT_READY;
		struct gw_request req;
		size_t outlen = 0;

		if (!atomic_compare_exchange_strong(&sl->state, &st, SLOT_BUSY))
			continue; /* the client gave up first */
		req = sl->req;	  /* a private copy: the client could still scribble on the slot */
		req.name[CHAN_NAME_MAX] = '\0';
		uint32_t inlen = sl->inlen > GW_INLINE ? GW_INLINE : sl->inlen;
		int rc = fn(arg, (uint32_t)(sl - s->slots), &req, sl->data, inlen, sl->data, &outlen);

		if (rc == GW_DEFER) {
			uint32_t busy = SLOT_BUSY;

			/* Back in the queue, and the later ones behind it, so tickets keep their order. */
			if (!atomic_compare_exchange_strong(&sl->state, &busy, SLOT_READY))
				gw_slot_complete(s, sl, -ETIMEDOUT); /* abandoned meanwhile: freed */
			g->deferred = true;
			return i;
		}
		if (rc == -EINPROGRESS)
			continue; /* gw_complete() finishes it */
		sl->outlen = (uint32_t)(outlen > GW_INLINE ? GW_INLINE : outlen);
		gw_slot_complete(s, sl, rc);
	}
	return n;
}

void gw_set_peer_up(struct gateway *g, uint32_t node, bool up)
{
	if (node < GW_MAX_NODES)
		atomic_store_explicit(&g->s->peer_up[node], up, memory_order_relaxed);
}

void gw_set_peer_stats(struct gateway *g, uint32_t node, const struct gw_peer_stats *st)
{
	struct gw_shared_peer *p;

	if (node >= GW_MAX_NODES)
		return;
	p = &g->s->peers[node];
	atomic_store_explicit(&p->msgs_sent, st->msgs_sent, memory_order_relaxed);
	atomic_store_explicit(&p->bytes_sent, st->bytes_sent, memory_order_relaxed);
	atomic_store_explicit(&p->msgs_recv, st->msgs_recv, memory_order_relaxed);
	atomic_store_explicit(&p->bytes_recv, st->bytes_recv, memory_order_relaxed);
	atomic_store_explicit(&p->retries, st->retries, memory_order_relaxed);
	atomic_store_explicit(&p->last_error, st->last_error, memory_order_relaxed);
	atomic_store_explicit(&p->buffers_sent, st->buffers_sent, memory_order_relaxed);
	atomic_store_explicit(&p->buffer_items_sent, st->buffer_items_sent, memory_order_relaxed);
	atomic_store_explicit(&p->buffers_recv, st->buffers_recv, memory_order_relaxed);
	atomic_store_explicit(&p->large_sent, st->large_sent, memory_order_relaxed);
	atomic_store_explicit(&p->eager_in_use, st->eager_in_use, memory_order_relaxed);
	atomic_store_explicit(&p->waiting, st->waiting, memory_order_relaxed);
	atomic_store_explicit(&p->waiting_hwm, st->waiting_hwm, memory_order_relaxed);
	atomic_store_explicit(&p->agents_per_node, st->agents_per_node, memory_order_relaxed);
}

void gw_set_flow(struct gateway *g, const struct flow_gauge flow[FLOW_NKINDS])
{
	for (int k = 0; k < FLOW_NKINDS; k++) {
		atomic_store_explicit(&g->s->flow[k][0], flow[k].now, memory_order_relaxed);
		atomic_store_explicit(&g->s->flow[k][1], flow[k].hwm, memory_order_relaxed);
		atomic_store_explicit(&g->s->flow[k][2], flow[k].cap, memory_order_relaxed);
	}
}

void gw_set_agent_stats(struct gateway *g, const struct gw_agent_stats *st)
{
	const uint64_t v[GW_AGENT_STATS] = {
	    st->steals,		st->steal_bytes, st->stolen,	 st->pool_bytes,      st->pool_slots,
	    st->slots_in_use,	st->slots_hwm,	 st->hugepages,	 st->hugepages_asked, st->tx_buffers,
	    st->tx_hwm,		st->frames,	 st->frames_hwm, st->fallbacks,	      st->registrations,
	    st->registered_now, st->copied,	 st->nic_bytes};

	for (int i = 0; i < GW_AGENT_STATS; i++)
		atomic_store_explicit(&g->s->agent[i], v[i], memory_order_relaxed);
}

int gw_bell_fd(const struct gateway *g)
{
	return g->bell_fd;
}

bool gw_sleep_begin(struct gateway *g)
{
	struct gw_shared *s = g->s;

	/* Pairs with gw_call's seq_cst doorbell increment after READY: one of the two sees the other. */
	atomic_store(&s->agent_sleeping, 1);
	for (int i = 0; i < GW_SLOTS; i++)
		if (atomic_load(&s->slots[i].state) == SLOT_READY) {
			atomic_store(&s->agent_sleeping, 0);
			return false;
		}
	return true;
}

void gw_sleep_end(struct gateway *g)
{
	char buf[64];

	atomic_store(&g->s->agent_sleeping, 0);
	while (g->bell_fd >= 0 && recv(g->bell_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

void gw_wait_for_work(struct gateway *g, int timeout_us)
{
	struct pollfd pfd = {.fd = g->bell_fd, .events = POLLIN};
	struct timespec ts = {.tv_sec = timeout_us / 1000000, .tv_nsec = (long)(timeout_us % 1000000) * 1000};

	if (!gw_sleep_begin(g))
		return;
	if (g->bell_fd >= 0)
		ppoll(&pfd, 1, &ts, NULL);
	else
		nanosleep(&ts, NULL);
	gw_sleep_end(g);
}

void gw_destroy(struct gateway *g, const char *dir)
{
	char path[PATH_MAX];
	struct gw_shared *s;

	if (!g)
		return;
	s = g->s;
	atomic_store(&s->running, 0);
	/* Every request still waiting or in progress fails: nothing is left hanging. */
	for (int i = 0; i < GW_SLOTS; i++) {
		struct gw_slot *sl = &s->slots[i];
		uint32_t st = SLOT_READY;

		if (atomic_compare_exchange_strong(&sl->state, &st, SLOT_BUSY) || st == SLOT_BUSY ||
		    st == SLOT_ABANDONED) {
			sl->outlen = 0;
			gw_slot_complete(s, sl, -ESHUTDOWN);
		}
	}
	gw_path(path, sizeof(path), dir, g->rank);
	unlink(path);
	if (g->bell_fd >= 0) {
		close(g->bell_fd);
		unlink(g->bell.sun_path);
	}
	munmap(s, sizeof(*s));
	free(g);
}
