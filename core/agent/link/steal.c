/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Siblings sharing the READ backlog through their board (core/chan/steal.h, link_impl.h). */
#include "core/agent/link/link_impl.h"

/*
 * Stealing (core/chan/steal.h).  Ranks of one node: rank / siblings is the
 * node, rank % siblings the sibling.  Alone on the node, or without rma,
 * there is no board and none of this runs.
 */
#define STEAL_GRACE_NS	 2000000ull /* an offered READ a sibling has not taken is ours again after */
#define STEAL_IN_FLIGHT	 8	    /* READs one agent does for its siblings at once */
#define STEAL_REFRESH_NS LINK_RETRY_NS

static uint32_t my_sibling(const struct agent_links *lk)
{
	return lk->cfg.siblings > 1 ? lk->cfg.rank % lk->cfg.siblings : 0;
}

static uint32_t sibling_id(const struct agent_links *lk, uint32_t sibling)
{
	return agent_id(lk->cfg.rank / lk->cfg.siblings, sibling);
}

void link_steal_open(struct agent_links *lk)
{
	int rc;

	if (lk->cfg.siblings < 2 || !lk->rma || !lk->steal)
		return;
	rc = steal_board_create(lk->dir, sibling_id(lk, my_sibling(lk)), &lk->board);
	if (rc)
		agent_logf(&lk->cfg.log, "no stealing between this node's agents: cannot make the board: %s",
			   strerror(-rc));
}

/* A READ that came back from the board (taken back, or its thief failed): ours to post, if still wanted. */
static void read_requeue(struct agent_links *lk, struct rma_read *rd)
{
	if (rd->epoch != lk->peers[rd->from].epoch || !lk->peers[rd->from].up) {
		link_read_finish(lk, rd, -EHOSTDOWN);
		return;
	}
	rd->next = lk->reads_waiting;
	lk->reads_waiting = rd;
	if (!rd->next)
		lk->reads_tail = &rd->next;
}

/* Owner: the READs that wait for ejection room go on the board, for an idle sibling to do. */
static int offer_backlog(struct agent_links *lk, uint64_t now)
{
	int n = 0;

	while (lk->board && lk->reads_waiting) {
		struct rma_read *rd = lk->reads_waiting;
		struct steal_job job = {
		    .from = rd->from, .len = rd->rma.len, .rkey = rd->rma.rkey, .addr = rd->rma.addr};
		int slot = steal_offer(lk->board, &job);

		if (slot < 0)
			break;
		lk->reads_waiting = rd->next;
		if (!lk->reads_waiting)
			lk->reads_tail = &lk->reads_waiting;
		rd->next = NULL;
		lk->offered[slot] = rd;
		lk->offered_ns[slot] = now;
		n++;
	}
	for (uint32_t k = 0; n && k < AGENT_SIBLINGS_MAX; k++)
		if (lk->sib[k])
			steal_wake(lk->sib[k]);
	return n;
}

/* Owner: READs siblings did land in their messages; the ones nobody took come back after a while. */
static int offered_progress(struct agent_links *lk, uint64_t now, bool check)
{
	int work = 0;

	for (int k = 0; lk->board && k < STEAL_SLOTS; k++) {
		struct rma_read *rd = lk->offered[k];
		const uint8_t *data;
		int status, st;

		if (!rd)
			continue;
		st = steal_poll(lk->board, k, check, &status, &data);
		if (st == 0 &&
		    (now - lk->offered_ns[k] < STEAL_GRACE_NS ||
		     !flow_fits(&lk->flow[FLOW_EJECTION], rd->rma.len) || !steal_reclaim(lk->board, k)))
			continue;
		lk->offered[k] = NULL;
		work++;
		if (st == 1) {
			if (!status && link_target_reserve(rd->t))
				status = -ENOBUFS; /* no heap room for the message yet: read again later */
			if (!status)
				memcpy(target_data(rd->t) + rd->offset, data, rd->rma.len);
			if (!status)
				lk->copied += rd->rma.len;
			steal_release(lk->board, k);
		}
		if (st == 1 && !status) {
			lk->stolen++;
			link_read_finish(lk, rd, 0);
		} else {
			read_requeue(lk, rd); /* taken back, its thief died, or its READ failed: ours */
		}
	}
	return work;
}

/* Thief: maps the siblings' boards that appeared, drops the ones whose agent is gone. */
static void refresh_siblings(struct agent_links *lk)
{
	for (uint32_t k = 0; k < lk->cfg.siblings && k < AGENT_SIBLINGS_MAX; k++) {
		uint32_t id = sibling_id(lk, k);

		if (k == my_sibling(lk))
			continue;
		if (lk->sib[k] && !lk->sib_reads[k] && !steal_board_current(lk->sib[k], lk->dir, id)) {
			steal_board_close(lk->sib[k]);
			lk->sib[k] = NULL;
		}
		if (!lk->sib[k] && steal_board_open(lk->dir, id, &lk->sib[k]))
			lk->sib[k] = NULL;
	}
}

bool link_offered_any(const struct agent_links *lk)
{
	for (int k = 0; lk->board && k < STEAL_SLOTS; k++)
		if (lk->offered[k])
			return true;
	return false;
}

/* Thief: with no backlog of its own, READs what the siblings offered, over its own links. */
static int steal_progress(struct agent_links *lk)
{
	int work = 0;

	if (link_offered_any(lk))
		return 0; /* busy itself: its own offers are still out */
	for (uint32_t k = 0; k < AGENT_SIBLINGS_MAX && !lk->reads_waiting; k++) {
		struct steal_board *b = lk->sib[k];
		struct steal_job job;
		struct rma_read *rd;
		int slot;

		while (b && lk->stealing < STEAL_IN_FLIGHT &&
		       flow_fits(&lk->flow[FLOW_EJECTION], STEAL_SLOT_MAX) &&
		       (slot = steal_take(b, &job)) >= 0) {
			bool usable = job.from < lk->cfg.nodes && !same_node(lk, job.from, lk->cfg.rank) &&
				      lk->peers[job.from].up && job.len > 0 && job.len <= STEAL_SLOT_MAX;

			rd = usable ? calloc(1, sizeof(*rd)) : NULL;
			if (rd) {
				*rd = (struct rma_read){
				    .board = b,
				    .slot = slot,
				    .sibling = k,
				    .from = job.from,
				    .rma = {.addr = job.addr, .rkey = job.rkey, .len = job.len}};
				if (core_read(lk->ep, lk->peers[job.from].core_peer, steal_slot_data(b, slot),
					      job.len, job.addr, job.rkey, rd)) {
					free(rd);
					rd = NULL;
				} else {
					lk->nic_bytes += job.len;
				}
			}
			if (!rd) {
				steal_untake(b, slot); /* not ours to do: its owner takes it back */
				break;
			}
			flow_take(&lk->flow[FLOW_EJECTION], job.len);
			lk->stealing++;
			lk->sib_reads[k]++;
			work++;
		}
	}
	return work;
}

/* Thief: a stolen READ is over; its owner finds the chunk (or the error) on its board. */
void link_steal_complete(struct agent_links *lk, struct rma_read *rd, int status)
{
	flow_give(&lk->flow[FLOW_EJECTION], rd->rma.len);
	steal_finish(rd->board, rd->slot, status);
	steal_wake(rd->board);
	lk->stealing--;
	lk->sib_reads[rd->sibling]--;
	if (!status) {
		lk->steals++;
		lk->steal_bytes += rd->rma.len;
	}
	free(rd);
}

int link_steal_pass(struct agent_links *lk, uint64_t now)
{
	bool check = now >= lk->next_steal_check_ns; /* the system calls: not on every pass */
	int work;

	if (!lk->board)
		return 0;
	if (check) {
		lk->next_steal_check_ns = now + STEAL_REFRESH_NS;
		refresh_siblings(lk);
	}
	work = offered_progress(lk, now, check);
	if (lk->reads_waiting)
		work += link_reads_progress(lk);
	if (lk->reads_waiting)
		work += offer_backlog(lk, now);
	return work + steal_progress(lk);
}

/* Owner, its link to rank down: offered READs nobody took are dropped with it (link_drop_reads). */
void link_drop_offered(struct agent_links *lk, uint32_t from, bool all)
{
	for (int k = 0; lk->board && k < STEAL_SLOTS; k++) {
		struct rma_read *rd = lk->offered[k];

		if (!rd || (!all && rd->from != from) || (!all && !steal_reclaim(lk->board, k)))
			continue; /* one a sibling reads comes back and is answered to nobody
				     (link_read_finish) */
		lk->offered[k] = NULL;
		rd->t->read_status = -EHOSTDOWN;
		if (--rd->t->reads_left == 0 && rd->t->orphan)
			link_target_destroy(rd->t);
		free(rd);
	}
}
