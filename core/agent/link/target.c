/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The target side: channel operations for queued requests, their answers; target items (link_impl.h). */
#include "core/agent/link/link_impl.h"

#define LINK_CHAN_RECHECK_NS 10000000ull /* a served channel's name is looked up again after 10 ms */
#define LINK_DATA_PIECE	     (GW_INLINE - 4 - PROTO_CHUNK_SIZE) /* message bytes per chunk of a GETMSG answer */

void link_answer(struct agent_links *lk, const struct target_item *t, int status, const struct chan_state *st,
		 size_t msg_len)
{
	uint8_t eager[PROTO_STATE_LEN];
	uint8_t *body = eager;
	size_t len = 4;
	int32_t s = status;
	struct proto_header h = {.type = t->h.type == PROTO_SENDMSG  ? PROTO_ACK
					 : t->h.type == PROTO_GETMSG ? PROTO_DATA
								     : PROTO_STATE,
				 .protocol = PROTO_EAGER,
				 .mode = t->h.mode,
				 .port = t->h.port};
	int rc;

	if (t->h.type == PROTO_SENDMSG && t->h.mode <= AGENT_SEND_BUFFERED) {
		/* Nobody waits for it: an error only shows in the counters. */
		if (status < 0)
			lk->peers[t->from].stats.last_error = status;
		return;
	}
	memcpy(eager, &s, 4);
	if (h.type == PROTO_STATE) {
		static const struct chan_state none;

		proto_state_encode(st ? st : &none, eager + 4);
		len = PROTO_STATE_LEN;
	} else if (h.type == PROTO_DATA) {
		body = lk->scratch; /* status, then the message chan_recv left at scratch + 4 */
		memcpy(body, &s, 4);
		len = 4 + (status ? 0 : msg_len);
	}
	rc = link_tx_item(lk, t->from, h, body, len, LINK_NO_TOKEN, FLOW_GETMSG,
			  h.type == PROTO_DATA ? PROTO_HEADER_SIZE + len : 0);
	if (rc && rc != -EINPROGRESS)
		agent_logf(&lk->cfg.log, "could not answer rank %u (port %llx): %s", t->from,
			   (unsigned long long)t->h.port, strerror(-rc));
}

/*
 * The channel named name, from the cache when the file is still the one it
 * mapped (a channel destroyed and made again is a new file), else opened.
 * The file is looked at once per progress pass: the items of one buffer for
 * one channel cost one system call, not one each.
 */
static int serve_chan(struct agent_links *lk, const char *name, struct chan **out)
{
	char path[4200];
	struct stat st;
	struct cached_chan *slot = NULL;
	uint64_t now = clock_ns();
	int rc;

	for (uint32_t i = 0; i < LINK_CHAN_CACHE && !slot; i++)
		if (lk->cache[i].c && !strcmp(lk->cache[i].name, name))
			slot = &lk->cache[i];
	/*
	 * chan_destroy marks the mapping, so a destroyed channel is left at once; the name is
	 * looked up again (lstat: a microsecond on every request otherwise) only now and then,
	 * for a file replaced by other means.
	 */
	if (slot && !chan_destroyed(slot->c) && now - slot->checked_ns < LINK_CHAN_RECHECK_NS) {
		*out = slot->c;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s%s", lk->dir, CHAN_FILE_PREFIX, name);
	if (lstat(path, &st))
		return -errno;
	/*
	 * A file cut shorter than the mapping (another process of the user) would raise SIGBUS when
	 * written: it is opened again, which refuses it (-EBADMSG), instead of being served.
	 */
	if (slot && !chan_destroyed(slot->c) && slot->dev == st.st_dev && slot->ino == st.st_ino &&
	    (uint64_t)st.st_size == chan_file_size(slot->c)) {
		slot->checked_ns = now;
		*out = slot->c;
		return 0;
	}
	if (!slot)
		slot = &lk->cache[lk->cache_next++ % LINK_CHAN_CACHE];
	chan_close(slot->c);
	slot->c = NULL;
	rc = chan_open(lk->dir, name, &slot->c);
	if (rc)
		return rc;
	chan_set_try_lock(slot->c); /* a stopped lock holder must not stall the agent */
	snprintf(slot->name, sizeof(slot->name), "%s", name);
	slot->dev = st.st_dev;
	slot->ino = st.st_ino;
	slot->checked_ns = now;
	*out = slot->c;
	return 0;
}

/* Bytes the GETMSG cap counts for an answer of len message bytes: its frames, as they go out. */
static uint64_t getmsg_charge(size_t len)
{
	uint64_t pieces = len > GW_INLINE ? (len + LINK_DATA_PIECE - 1) / LINK_DATA_PIECE : 1;

	return len + pieces * (PROTO_HEADER_SIZE + 4 + PROTO_CHUNK_SIZE);
}

/*
 * A GETMSG's message, taken from the channel only when the GETMSG cap has
 * room for its answer and it fits the caller's buffer (else it stays:
 * -EAGAIN to try again, -EMSGSIZE to answer).  Up to a slot it lands in
 * scratch; a larger one in *big (the caller frees it).
 */
static int getmsg_take(struct agent_links *lk, const struct target_item *t, struct chan *c, uint8_t **big,
		       size_t *len)
{
	struct flow_gauge *g = &lk->flow[FLOW_GETMSG];
	uint64_t want = GW_INLINE;
	size_t got;
	int rc;

	if (t->len == 8)
		memcpy(&want, t->data, 8);
	if (want > AGENT_REMOTE_MAX)
		want = AGENT_REMOTE_MAX;
	if (!flow_fits(g, getmsg_charge(GW_INLINE)))
		return -EAGAIN;
	rc = chan_recv(c, lk->scratch + 4, want < GW_INLINE ? want : GW_INLINE, len, 0);
	lk->copied += rc ? 0 : *len;
	if (rc != -EMSGSIZE || *len <= GW_INLINE)
		return rc;
	if (*len > want || getmsg_charge(*len) > g->cap)
		return -EMSGSIZE; /* never fits: it stays in the channel */
	if (!flow_fits(g, getmsg_charge(*len)))
		return -EAGAIN;
	*big = malloc(*len);
	if (!*big)
		return -EAGAIN;
	rc = chan_recv(c, *big, *len, &got, 0);
	if (rc) { /* another receiver took it first */
		free(*big);
		*big = NULL;
		return rc == -EMSGSIZE ? -EAGAIN : rc;
	}
	*len = got;
	lk->copied += got;
	return 0;
}

/*
 * A GETMSG answer larger than a slot: large DATA frames with mode
 * PROTO_MODE_CHUNKED, each the status (0), the chunk descriptor and a piece
 * (proto.h); they go out in order on the link and the origin puts them
 * together.
 */
static void answer_chunks(struct agent_links *lk, const struct target_item *t, const uint8_t *msg, size_t len)
{
	struct proto_header h = {
	    .type = PROTO_DATA, .protocol = PROTO_P2P, .mode = PROTO_MODE_CHUNKED, .port = t->h.port};
	struct proto_chunk c = {.total = len, .id = t->h.port};
	uint8_t *body = lk->scratch;

	memset(body, 0, 4);
	for (size_t off = 0; off < len; off += LINK_DATA_PIECE) {
		size_t n = len - off < LINK_DATA_PIECE ? len - off : LINK_DATA_PIECE;
		int rc;

		c.offset = off;
		proto_chunk_encode(&c, body + 4);
		memcpy(body + 4 + PROTO_CHUNK_SIZE, msg + off, n);
		lk->copied += n;
		rc = link_tx_item(lk, t->from, h, body, 4 + PROTO_CHUNK_SIZE + n, LINK_NO_TOKEN, FLOW_GETMSG,
				  PROTO_HEADER_SIZE + 4 + PROTO_CHUNK_SIZE + n);
		if (rc && rc != -EINPROGRESS) {
			agent_logf(&lk->cfg.log, "could not answer rank %u (port %llx): %s", t->from,
				   (unsigned long long)t->h.port, strerror(-rc));
			return;
		}
	}
}

/* One try at a waiting request: true when it is finished (answered). */
static bool serve_item(struct agent_links *lk, struct target_item *t, bool *blocks)
{
	bool late = t->deadline_ns && clock_ns() >= t->deadline_ns;
	int64_t timeout = proto_timeout_decode(t->h.timeout);
	struct chan_state st;
	struct chan *c = NULL;
	uint8_t *big = NULL;
	size_t len = 0;
	int rc;

	*blocks = false;
	if (t->reads_left) { /* rma chunks still arriving: later requests for its channel wait too */
		*blocks = true;
		return false;
	}
	if (t->read_status) {
		link_answer(lk, t, t->read_status, NULL, 0);
		return true;
	}
	rc = serve_chan(lk, t->name, &c);
	if (rc) {
		link_answer(lk, t, rc, NULL, 0);
		return true;
	}
	switch (t->h.type) {
	case PROTO_SENDMSG:
		if (!t->deposited) {
			rc = chan_send_quiet(c, target_data(t), t->len, &t->seq);
			t->deposited = rc == 0;
			lk->copied += t->deposited ? t->len : 0;
		}
		if (t->deposited && t->h.mode == AGENT_SEND_RECEIVED)
			rc = chan_wait_taken(c, t->seq, 0);
		break;
	case PROTO_GETMSG:
		rc = getmsg_take(lk, t, c, &big, &len);
		if (big) {
			answer_chunks(lk, t, big, len);
			free(big);
			return true;
		}
		break;
	default:
		rc = chan_poll(c, &st, 0);
		if (!rc && st.empty && timeout != 0)
			rc = -EAGAIN;
		break;
	}
	if (rc == -EBADMSG && chan_corrupt(c) && clock_ns() >= lk->corrupt_log_ns) {
		/* Quarantined (the handle never follows it again); said at most once a second. */
		lk->corrupt_log_ns = clock_ns() + 1000000000ull;
		agent_logf(
		    &lk->cfg.log,
		    "channel %s is corrupt (its shared state points outside it): quarantined, its requests "
		    "fail with EBADMSG; destroy it and create it again",
		    t->name);
	}
	if (rc == -EAGAIN && !late && timeout != 0) {
		lk->peers[t->from].stats.retries++;
		*blocks = !t->deposited; /* later requests for this channel wait behind it */
		return false;
	}
	if (rc == -EAGAIN && timeout != 0)
		rc = -ETIMEDOUT;
	link_answer(lk, t, rc, t->h.type == PROTO_POLL && !rc ? &st : NULL, len);
	return true;
}

/*
 * Whether name is among the n channels blocked earlier in this pass.  The set
 * has no bound: per-port order must hold for any number of blocked channels
 * (what bounds them is flow control, toward the senders).
 */
static bool name_blocked(char (*set)[PROTO_NAME_MAX + 1], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(set[i], name))
			return true;
	return false;
}

/* Adds name to the pass's blocked set; false when there is no memory for it. */
static bool block_name(struct agent_links *lk, size_t *n, const char *name)
{
	if (*n == lk->nblocked_max) {
		size_t cap = lk->nblocked_max ? lk->nblocked_max * 2 : 16;
		char(*grown)[PROTO_NAME_MAX + 1] = realloc(lk->blocked, cap * sizeof(*grown));

		if (!grown)
			return false;
		lk->blocked = grown;
		lk->nblocked_max = cap;
	}
	snprintf(lk->blocked[(*n)++], sizeof(lk->blocked[0]), "%s", name);
	return true;
}

void link_serve_pending(struct agent_links *lk)
{
	size_t nblocked = 0;
	bool stop = false; /* no memory to remember a blocked channel: serve nothing after it this pass */

	for (struct target_item **pp = &lk->pending; *pp;) {
		struct target_item *t = *pp;
		bool skip = stop || name_blocked(lk->blocked, nblocked, t->name), blocks;

		if (!skip && serve_item(lk, t, &blocks)) {
			*pp = t->next;
			link_target_destroy(t);
			continue;
		}
		if (!skip && blocks && !block_name(lk, &nblocked, t->name))
			stop = true;
		pp = &t->next;
	}
	lk->pending_tail = &lk->pending;
	while (*lk->pending_tail)
		lk->pending_tail = &(*lk->pending_tail)->next;
	/* The pass's deposits wake each channel's receivers once, not once per message. */
	for (uint32_t i = 0; i < LINK_CHAN_CACHE; i++)
		if (lk->cache[i].c)
			chan_wake_owed(lk->cache[i].c);
}

/* Queues a complete request (t->data filled) behind the others, or answers it when its port is unbound. */
void link_queue_request(struct agent_links *lk, struct target_item *t)
{
	int64_t timeout = proto_timeout_decode(t->h.timeout);
	const char *name = lk->peers[t->from].bind_in[(t->h.port >> 32) & (PORT_BINDINGS - 1)];

	snprintf(t->name, sizeof(t->name), "%s", name);
	t->deadline_ns = timeout > 0 ? clock_ns() + (uint64_t)timeout * 1000000ull : 0;
	if (!name[0]) { /* a port never bound: answered, never served */
		lk->errors.count[PROTO_ERR_CONNECT]++;
		link_answer(lk, t, -EBADMSG, NULL, 0);
		link_target_free(t);
		return;
	}
	t->next = NULL;
	*lk->pending_tail = t;
	lk->pending_tail = &t->next;
}

/*
 * The origin's client of a GETMSG died: the GETMSG is withdrawn if it still
 * waits here, so it takes no message (answered -ECANCELED).  One already
 * served answered with its message, which the origin puts back.
 */
void link_take_cancel(struct agent_links *lk, uint32_t from, const struct proto_header *h)
{
	for (struct target_item **pp = &lk->pending; *pp; pp = &(*pp)->next) {
		struct target_item *t = *pp;

		if (t->from != from || t->h.type != PROTO_GETMSG || t->h.port != h->port)
			continue;
		*pp = t->next;
		link_answer(lk, t, -ECANCELED, NULL, 0);
		link_target_free(t);
		break;
	}
	lk->pending_tail = &lk->pending;
	while (*lk->pending_tail)
		lk->pending_tail = &(*lk->pending_tail)->next;
}

void link_take_connect(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		       const uint8_t *eager, size_t len)
{
	struct proto_connect bind;

	if ((h->port >> 32) >= PORT_BINDINGS || proto_connect_decode(eager, len, &bind, &lk->errors))
		return;
	if (bind.node != lk->cfg.rank) {
		lk->errors.count[PROTO_ERR_CONNECT]++;
		return;
	}
	snprintf(lk->peers[from].bind_in[h->port >> 32], PROTO_NAME_MAX + 1, "%s", bind.name);
}

/* A target item that may still have reads landing in it: freed by the last one then. */
void link_target_free(struct target_item *t)
{
	if (t && t->reads_left)
		t->orphan = true;
	else
		link_target_destroy(t);
}

/* Frees a target item and its large message's buffer, which the heap gauge gets back. */
void link_target_destroy(struct target_item *t)
{
	if (t && t->big) {
		free(t->big);
		flow_give(t->heap, t->big_len);
	}
	free(t);
}

/*
 * Takes a large message's buffer when it has none yet: 0 (also when it needs
 * none), -EAGAIN while the heap gauge has no room (try again once a message
 * left), -ENOMEM.
 */
int link_target_reserve(struct target_item *t)
{
	if (t->big || !t->big_len)
		return 0;
	if (!flow_fits(t->heap, t->big_len))
		return -EAGAIN;
	t->big = malloc(t->big_len);
	if (!t->big)
		return -ENOMEM;
	flow_take(t->heap, t->big_len);
	return 0;
}

/* Requests from rank waiting for their channel: they can no longer be answered. */
void link_drop_pending(struct agent_links *lk, uint32_t rank)
{
	for (struct target_item **t = &lk->pending; *t;) {
		if ((*t)->from == rank) {
			struct target_item *dead = *t;

			*t = dead->next;
			link_target_free(dead);
		} else {
			t = &(*t)->next;
		}
	}
	lk->pending_tail = &lk->pending;
	while (*lk->pending_tail)
		lk->pending_tail = &(*lk->pending_tail)->next;
}
