/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Client bookkeeping: random choice among eligible objects, WR slots, outbox. */
#include "cmd/walk/bus.h"
#include "cmd/walk/client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Uniform choice among indices i < n with ok(i); -1 if none (reservoir sampling). */
int walk_pick_index(struct walk_client *c, int n, bool (*ok)(struct walk_client *, int, const void *),
		    const void *arg)
{
	int chosen = -1, seen = 0;

	for (int i = 0; i < n; i++) {
		if (!ok(c, i, arg))
			continue;
		seen++;
		if (rng_range(&c->rng, 0, (uint64_t)seen - 1) == 0)
			chosen = i;
	}
	return chosen;
}

int walk_pick_hinted(struct walk_client *c, int n, bool (*ok)(struct walk_client *, int, const void *),
		     const void *arg, int hint)
{
	if (c->hint.on && hint >= 0 && hint < n && ok(c, hint, arg))
		return hint;
	return walk_pick_index(c, n, ok, arg);
}

int walk_count_mw(struct walk_client *c, int type)
{
	int n = 0;

	for (int i = 0; i < 2 * MAX_MW; i++)
		n += c->mw[i].used && c->mw[i].type == type;
	return n;
}

int walk_count_qp(struct walk_client *c, enum ibv_qp_type type, bool initiated_only)
{
	int n = 0;

	for (int i = 0; i < MAX_QP; i++)
		n += c->qp[i].used && c->qp[i].type == type && (!initiated_only || c->qp[i].initiator);
	return n;
}

/*
 * wr_id = generation << 32 | slot: a completion finds its WR in O(1), and a second completion for the same WR
 * (or one for a WR never posted) is caught because the slot is free or its generation moved on.
 */
int walk_alloc_wr(struct walk_client *c, enum walk_action a, int qp, int mr, uint64_t *wr_id)
{
	uint32_t slot;

	if (!c->nfree_wr)
		return -1;
	if (c->lockstep) {
		/* Replay: the lowest free slot, whatever order completions came in. */
		int low = 0;

		for (int i = 1; i < c->nfree_wr; i++)
			if (c->free_wr[i] < c->free_wr[low])
				low = i;
		slot = c->free_wr[low];
		c->free_wr[low] = c->free_wr[--c->nfree_wr];
	} else {
		slot = c->free_wr[--c->nfree_wr];
	}
	c->wr[slot] = (struct wr_rec){.busy = true,
				      .action = (uint8_t)a,
				      .qp = (int8_t)qp,
				      .mr = (int8_t)mr,
				      .mw = -1,
				      .srq = -1,
				      .gen = ++c->gen};
	*wr_id = (uint64_t)c->gen << 32 | slot;
	c->inflight++;
	return (int)slot;
}

void walk_release_wr(struct walk_client *c, uint32_t slot)
{
	c->wr[slot].busy = false;
	c->free_wr[c->nfree_wr++] = slot;
	c->inflight--;
}

bool walk_outbox_busy(struct walk_client *c)
{
	return c->nout >= OUTBOX_SOFT_LIMIT;
}

/* Queues a message; it leaves in order when the destination has room. */
void walk_publish(struct walk_client *c, struct walk_msg *m)
{
	m->src = (uint16_t)c->id;
	if (c->nout == c->outcap) {
		int cap = c->outcap ? c->outcap * 2 : 64;
		struct walk_msg *grown = realloc(c->outbox, (size_t)cap * sizeof(*grown));

		if (!grown) { /* the update is lost, and said so */
			WALK_FAIL(c, "out of memory queueing an update");
			return;
		}
		c->outbox = grown;
		c->outcap = cap;
	}
	c->outbox[c->nout++] = *m;
	walk_flush_outbox(c);
}

void walk_broadcast(struct walk_client *c, struct walk_msg *m)
{
	for (int d = 0; d < c->clients; d++) {
		m->dst = (uint16_t)d;
		walk_publish(c, m);
	}
}

/*
 * A type-2 window's key is only usable by the peer of the QP it is bound to: without --verify it goes to that
 * client alone, so the bus carries fewer updates and the peer gets it before the window is gone. --verify
 * keeps the broadcast: its probes use the key from beside the bound QP.
 */
void walk_publish_key(struct walk_client *c, struct walk_msg *m, int qp)
{
	if (c->cfg->verify || m->kind != 2 || qp < 0 || !c->qp[qp].used || c->qp[qp].peer < 0 ||
	    c->qp[qp].peer >= c->clients) {
		walk_broadcast(c, m);
		return;
	}
	m->dst = (uint16_t)c->qp[qp].peer;
	walk_publish(c, m);
}

/* Sends queued messages in order; a full destination holds back the rest. */
void walk_flush_outbox(struct walk_client *c)
{
	int sent = 0;

	while (sent < c->nout) {
		int rc = walk_bus_send(c->bus, &c->outbox[sent]);

		if (rc == -EAGAIN) {
			c->stats.outbox_full++;
			break;
		}
		sent++; /* sent, or the bus is closed and it can never be */
	}
	if (sent) {
		memmove(c->outbox, c->outbox + sent, (size_t)(c->nout - sent) * sizeof(*c->outbox));
		c->nout -= sent;
	}
}

uint64_t walk_objects_alive(struct walk_client *c)
{
	uint64_t n = 0;

	n += (uint64_t)WALK_COUNT_USED(c->cq) + (uint64_t)WALK_COUNT_USED(c->pd) +
	     (uint64_t)WALK_COUNT_USED(c->mr);
	for (int i = 0; i < 2 * MAX_MW; i++)
		n += c->mw[i].used;
	for (int i = 0; i < MAX_QP; i++)
		n += c->qp[i].used;
	for (int i = 0; i < MAX_AH; i++)
		n += c->ah[i].used;
	for (int i = 0; i < MAX_SRQ; i++)
		n += c->srq[i].used;
	return n;
}

void walk_fill_pattern(unsigned char *p, uint32_t len, uint64_t seed)
{
	struct rng r;

	rng_seed(&r, seed, 0x5a5a);
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = rng_next(&r);

		memcpy(p + i, &v, len - i < 8 ? len - i : 8);
	}
}

void walk_note_key(struct walk_client *c, uint32_t rkey, bool issued)
{
	uint64_t n = c->nkey_events++;

	c->key_event[n % KEY_EVENTS].rkey = rkey;
	c->key_event[n % KEY_EVENTS].issued = issued;
}

/*
 * A probe that worked may have run while the key was valid again: a key value removed, issued again and
 * removed again looks removed when the hit arrives.  So the hit names the removal it probed, and only an
 * issue of the same value after that removal excuses it.
 */
int walk_key_since(struct walk_client *c, uint32_t rkey, uint64_t event, bool issued)
{
	uint64_t first = c->nkey_events > KEY_EVENTS ? c->nkey_events - KEY_EVENTS : 0;

	if (event < first || event >= c->nkey_events || c->key_event[event % KEY_EVENTS].rkey != rkey ||
	    c->key_event[event % KEY_EVENTS].issued != issued)
		return -1;
	for (uint64_t n = event + 1; n < c->nkey_events; n++) /* removed: only an issue counts */
		if (c->key_event[n % KEY_EVENTS].rkey == rkey &&
		    (issued || c->key_event[n % KEY_EVENTS].issued))
			return 0;
	return 1;
}
