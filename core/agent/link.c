/* SPDX-License-Identifier: MIT */
/* Links between agents; the contract and the wire use are in link.h. */
#include "core/agent/link.h"

#include "core/agent/agent.h"
#include "core/agent/agent_key.h"
#include "core/agent/channel.h"
#include "core/oob/oob.h"
#include "core/transport/endpoint.h"
#include "core/util/clock.h"
#include "core/util/sha256.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define LINK_RX_MAX	128
#define LINK_FRAME_MAX	(PROTO_HEADER_SIZE + 3 + PROTO_NAME_MAX + GW_INLINE)
#define LINK_ORIGIN_MAX 1024 /* requests in flight from this agent */
#define LINK_RETRY_NS	200000000ull
#define LINK_HELLO	0x4148 /* OOB frame types of the handshake */
#define LINK_CHALLENGE	0x4143
#define LINK_PROOF	0x4150
#define NONCE_LEN	16
#define LINK_CHAN_CACHE 32
#define LINK_NO_TOKEN	UINT64_MAX
#define STATE_LEN	(4 + 4 + 8 + 1)

struct link_peer {
	bool up;
	struct oob_conn *oob;
	uint32_t core_peer;
	uint64_t next_try_ns;
	struct gw_peer_stats stats;
};

struct origin {
	bool used;
	uint32_t node;
	uint16_t gen;
	uint8_t op;
	uint64_t token;
};

/* A request from a peer waiting for its channel. */
struct target_item {
	struct target_item *next;
	uint32_t from;
	struct proto_header h;
	char name[PROTO_NAME_MAX + 1];
	uint64_t deadline_ns; /* 0: forever */
	bool deposited;
	uint64_t seq;
	size_t len;
	uint8_t data[];
};

struct agent_links {
	struct link_config cfg;
	char dir[4096];
	struct core_ep *ep;
	struct oob_listener *listener;
	struct link_peer *peers;
	struct origin origins[LINK_ORIGIN_MAX];
	uint32_t next_origin;
	struct target_item *pending, **pending_tail;
	uint8_t *rx[LINK_RX_MAX];
	int nrx;
	uint8_t *scratch; /* a GETMSG's message on its way into a DATA frame */
	unsigned char key[AGENT_KEY_LEN];
	/* Channels this agent serves, kept mapped: mapping and unmapping per request costs more than the
	 * request. */
	struct cached_chan {
		char name[PROTO_NAME_MAX + 1];
		struct chan *c;
		dev_t dev;
		ino_t ino;
	} cache[LINK_CHAN_CACHE];
	uint32_t cache_next;
};

struct hello {
	uint32_t rank;
	uint8_t nonce[NONCE_LEN];
};

struct challenge {
	uint32_t rank;
	uint8_t nonce[NONCE_LEN];
	uint8_t mac[32];
};

static void peer_addr(struct agent_links *lk, uint32_t rank, char *out, size_t len)
{
	uint16_t port = lk->cfg.ports && lk->cfg.ports[rank] ? lk->cfg.ports[rank] : LINK_DEFAULT_PORT;

	snprintf(out, len, "%s:%u", lk->cfg.hosts[rank], (unsigned)port);
}

int links_open(const struct link_config *cfg, struct agent_links **out, char *why, size_t whylen)
{
	struct agent_links *lk = calloc(1, sizeof(*lk));
	struct core_ep_attr attr;
	char addr[GW_HOST_LEN + 16];
	int rc;

	if (!lk)
		return -ENOMEM;
	lk->cfg = *cfg;
	snprintf(lk->dir, sizeof(lk->dir), "%s", cfg->dir);
	lk->peers = calloc(cfg->nodes, sizeof(*lk->peers));
	lk->scratch = malloc(GW_INLINE);
	lk->pending_tail = &lk->pending;
	if (!lk->peers || !lk->scratch) {
		links_close(lk);
		return -ENOMEM;
	}
	rc = agent_key_load(lk->key, why, whylen);
	if (rc) {
		links_close(lk);
		return rc;
	}
	/* Listen on every address at our entry's port: peers dial the host name they were given. */
	snprintf(addr, sizeof(addr), "0.0.0.0:%u",
		 (unsigned)(cfg->ports && cfg->ports[cfg->rank] ? cfg->ports[cfg->rank] : LINK_DEFAULT_PORT));
	rc = oob_listen(addr, &lk->listener);
	if (rc) {
		snprintf(why, whylen,
			 "cannot listen for other agents on %s: %s; give this rank a free port in --hosts",
			 addr, strerror(-rc));
		links_close(lk);
		return rc;
	}
	core_ep_attr_defaults(&attr);
	attr.name = "agent";
	attr.threading = CORE_THREAD_SINGLE;
	attr.env.tx_stripes = 1;
	rc = core_ep_open(&attr, &lk->ep, why, whylen);
	if (rc) {
		links_close(lk);
		return rc;
	}
	lk->nrx = (int)(cfg->nodes * 4 < LINK_RX_MAX ? cfg->nodes * 4 : LINK_RX_MAX);
	for (int i = 0; i < lk->nrx; i++) {
		lk->rx[i] = malloc(LINK_FRAME_MAX);
		if (!lk->rx[i] || core_recv(lk->ep, lk->rx[i], LINK_FRAME_MAX, lk->rx[i])) {
			snprintf(why, whylen, "cannot post the agent's receive buffers");
			links_close(lk);
			return -ENOMEM;
		}
	}
	*out = lk;
	return 0;
}

static void finish_origin(struct agent_links *lk, uint32_t idx, int status, const void *data, size_t len)
{
	struct origin *o = &lk->origins[idx];

	o->used = false;
	if (status < 0)
		lk->peers[o->node].stats.last_error = status;
	if (o->token != LINK_NO_TOKEN && lk->cfg.done)
		lk->cfg.done(lk->cfg.arg, o->token, status, data, len);
}

static void peer_down(struct agent_links *lk, uint32_t rank, const char *why)
{
	struct link_peer *p = &lk->peers[rank];

	if (p->oob)
		oob_close(p->oob);
	p->oob = NULL;
	if (p->up)
		agent_logf(&lk->cfg.log, "link to rank %u (%s) down: %s", rank, lk->cfg.hosts[rank], why);
	p->up = false;
	p->next_try_ns = clock_ns() + LINK_RETRY_NS;
	for (uint32_t i = 0; i < LINK_ORIGIN_MAX; i++)
		if (lk->origins[i].used && lk->origins[i].node == rank)
			finish_origin(lk, i, -EHOSTDOWN, NULL, 0);
	/* Requests from it can no longer be answered (a deposited message stays where it is). */
	for (struct target_item **t = &lk->pending; *t;) {
		if ((*t)->from == rank) {
			struct target_item *dead = *t;

			*t = dead->next;
			free(dead);
		} else {
			t = &(*t)->next;
		}
	}
	lk->pending_tail = &lk->pending;
	while (*lk->pending_tail)
		lk->pending_tail = &(*lk->pending_tail)->next;
}

void links_close(struct agent_links *lk)
{
	if (!lk)
		return;
	for (uint32_t i = 0; i < LINK_ORIGIN_MAX; i++)
		if (lk->origins[i].used)
			finish_origin(lk, i, -ESHUTDOWN, NULL, 0);
	for (uint32_t r = 0; lk->peers && r < lk->cfg.nodes; r++)
		if (lk->peers[r].oob)
			oob_close(lk->peers[r].oob);
	while (lk->pending) {
		struct target_item *t = lk->pending;

		lk->pending = t->next;
		free(t);
	}
	for (uint32_t i = 0; i < LINK_CHAN_CACHE; i++)
		chan_close(lk->cache[i].c);
	core_ep_close(lk->ep); /* before the receive buffers it may still write */
	for (int i = 0; i < lk->nrx; i++)
		free(lk->rx[i]);
	if (lk->listener)
		oob_listener_close(lk->listener);
	free(lk->peers);
	free(lk->scratch);
	free(lk);
}

bool links_up(struct agent_links *lk, uint32_t node)
{
	return node < lk->cfg.nodes && lk->peers[node].up;
}

void links_peer_stats(struct agent_links *lk, uint32_t node, struct gw_peer_stats *out)
{
	static const struct gw_peer_stats none;

	*out = node < lk->cfg.nodes ? lk->peers[node].stats : none;
}

/* HMAC(key, role | our rank | their rank | their nonce): proves we hold the key, bound to this exchange. */
static void proof(struct agent_links *lk, char role, uint32_t mine, uint32_t theirs, const uint8_t *nonce,
		  uint8_t mac[32])
{
	uint8_t msg[1 + 4 + 4 + NONCE_LEN];

	msg[0] = (uint8_t)role;
	memcpy(msg + 1, &mine, 4);
	memcpy(msg + 5, &theirs, 4);
	memcpy(msg + 9, nonce, NONCE_LEN);
	hmac_sha256(lk->key, sizeof(lk->key), msg, sizeof(msg), mac);
}

static bool same_mac(const uint8_t *a, const uint8_t *b)
{
	uint8_t diff = 0;

	for (int i = 0; i < 32; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/*
 * Mutual proof of the key before anything else: the dialer sends its rank
 * and a nonce; the acceptor answers with its nonce and its proof over the
 * dialer's nonce; the dialer checks it and proves itself over the
 * acceptor's nonce.  Returns the peer's rank, or a negative errno.
 */
static int handshake(struct agent_links *lk, struct oob_conn *c, int32_t dialing)
{
	struct hello hello;
	struct challenge ch;
	uint8_t mac[32], expect[32];
	uint16_t type;
	uint32_t len;
	int rc;

	if (dialing >= 0) {
		hello.rank = lk->cfg.rank;
		if (getrandom(hello.nonce, NONCE_LEN, 0) != NONCE_LEN)
			return -EIO;
		if ((rc = oob_send(c, LINK_HELLO, &hello, sizeof(hello))) ||
		    (rc = oob_recv(c, &type, &ch, sizeof(ch), &len, 2000)))
			return rc;
		if (type != LINK_CHALLENGE || len != sizeof(ch) || ch.rank != (uint32_t)dialing)
			return -EPROTO;
		proof(lk, 'A', ch.rank, lk->cfg.rank, hello.nonce, expect);
		if (!same_mac(ch.mac, expect))
			return -EACCES;
		proof(lk, 'D', lk->cfg.rank, ch.rank, ch.nonce, mac);
		rc = oob_send(c, LINK_PROOF, mac, sizeof(mac));
		return rc ? rc : dialing;
	}
	if ((rc = oob_recv(c, &type, &hello, sizeof(hello), &len, 2000)))
		return rc;
	/* Only higher ranks dial us. */
	if (type != LINK_HELLO || len != sizeof(hello) || hello.rank >= lk->cfg.nodes ||
	    hello.rank <= lk->cfg.rank)
		return -EPROTO;
	ch.rank = lk->cfg.rank;
	if (getrandom(ch.nonce, NONCE_LEN, 0) != NONCE_LEN)
		return -EIO;
	proof(lk, 'A', lk->cfg.rank, hello.rank, hello.nonce, ch.mac);
	if ((rc = oob_send(c, LINK_CHALLENGE, &ch, sizeof(ch))) ||
	    (rc = oob_recv(c, &type, mac, sizeof(mac), &len, 2000)))
		return rc;
	proof(lk, 'D', hello.rank, lk->cfg.rank, ch.nonce, expect);
	if (type != LINK_PROOF || len != sizeof(mac) || !same_mac(mac, expect))
		return -EACCES;
	return (int)hello.rank;
}

/* The OOB connection is up: prove the key both ways, then exchange endpoint addresses. */
static void peer_join(struct agent_links *lk, struct oob_conn *c, int32_t dialing)
{
	int theirs = handshake(lk, c, dialing), rc = theirs < 0 ? theirs : 0;

	if (!rc && lk->peers[theirs].up)
		peer_down(lk, (uint32_t)theirs, "it connected again");
	if (!rc)
		rc = core_ep_connect_oob(lk->ep, c, &lk->peers[theirs].core_peer);
	if (rc) {
		agent_logf(&lk->cfg.log, "a peer agent%s failed to join: %s",
			   rc == -EACCES ? " (or a process without the key)" : "",
			   rc == -EACCES ? "it does not hold this user's agent key" : strerror(-rc));
		oob_close(c);
		return;
	}
	lk->peers[theirs].oob = c;
	lk->peers[theirs].up = true;
	agent_logf(&lk->cfg.log, "link to rank %d (%s) up", theirs, lk->cfg.hosts[theirs]);
}

static void connect_peers(struct agent_links *lk)
{
	uint64_t now = clock_ns();
	struct oob_conn *c;

	while (oob_accept(lk->listener, 0, &c) == 0)
		peer_join(lk, c, -1);
	for (uint32_t r = 0; r < lk->cfg.rank; r++) {
		struct link_peer *p = &lk->peers[r];
		char addr[GW_HOST_LEN + 16];

		if (p->up || now < p->next_try_ns)
			continue;
		p->next_try_ns = now + LINK_RETRY_NS;
		peer_addr(lk, r, addr, sizeof(addr));
		if (oob_connect(addr, 20, &c) == 0)
			peer_join(lk, c, (int32_t)r);
	}
	/* A peer's OOB connection closing is how its death shows. */
	for (uint32_t r = 0; r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];
		struct pollfd pfd;

		if (!p->up)
			continue;
		pfd = (struct pollfd){.fd = oob_conn_fd(p->oob), .events = POLLIN};
		if (poll(&pfd, 1, 0) == 1)
			peer_down(lk, r, "its connection closed");
	}
}

static int send_frame(struct agent_links *lk, uint32_t rank, const struct proto_header *h, const void *eager,
		      const void *payload, size_t payload_len)
{
	size_t len = PROTO_HEADER_SIZE + h->eager_size + payload_len;
	uint8_t *buf;
	int rc;

	if (!links_up(lk, rank))
		return -EHOSTDOWN;
	if (len > LINK_FRAME_MAX)
		return -EMSGSIZE;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	proto_header_encode(h, buf);
	memcpy(buf + PROTO_HEADER_SIZE, eager, h->eager_size);
	if (payload_len)
		memcpy(buf + PROTO_HEADER_SIZE + h->eager_size, payload, payload_len);
	rc = core_send(lk->ep, lk->peers[rank].core_peer, buf, len, buf);
	if (rc) {
		free(buf);
		lk->peers[rank].stats.last_error = rc;
		return rc;
	}
	lk->peers[rank].stats.msgs_sent++;
	lk->peers[rank].stats.bytes_sent += len;
	return 0;
}

int links_request(struct agent_links *lk, const struct gw_request *req, const void *data, size_t len,
		  uint64_t token)
{
	static const uint8_t op_type[] = {
	    [GW_OP_SEND] = PROTO_SENDMSG, [GW_OP_RECV] = PROTO_GETMSG, [GW_OP_POLL] = PROTO_POLL};
	struct proto_connect bind = {.node = (uint16_t)req->node};
	uint8_t eager[3 + PROTO_NAME_MAX];
	uint32_t idx;
	int n, rc;

	if (req->op < GW_OP_SEND || req->op > GW_OP_POLL)
		return -EINVAL;
	if (!links_up(lk, req->node))
		return -EHOSTDOWN;
	for (idx = 0; idx < LINK_ORIGIN_MAX && lk->origins[(lk->next_origin + idx) % LINK_ORIGIN_MAX].used;
	     idx++)
		;
	if (idx == LINK_ORIGIN_MAX)
		return -EAGAIN;
	idx = (lk->next_origin + idx) % LINK_ORIGIN_MAX;
	lk->next_origin = idx + 1;
	snprintf(bind.name, sizeof(bind.name), "%s", req->name);
	n = proto_connect_encode(&bind, eager, sizeof(eager));
	if (n < 0)
		return n;
	struct origin *o = &lk->origins[idx];
	struct proto_header h = {.type = op_type[req->op],
				 .protocol = PROTO_P2P,
				 .mode = (uint8_t)(req->mode & 3),
				 .eager_size = (uint16_t)n,
				 .timeout = proto_timeout_encode(req->timeout_ms),
				 .port = (uint64_t)(uint16_t)(o->gen + 1) << 32 | idx};

	rc = send_frame(lk, req->node, &h, eager, data, req->op == GW_OP_SEND ? len : 0);
	if (rc)
		return rc;
	o->used = true;
	o->gen++;
	o->node = req->node;
	o->op = h.type;
	o->token = token;
	return -EINPROGRESS;
}

static void answer(struct agent_links *lk, const struct target_item *t, int status,
		   const struct chan_state *st, const void *msg, size_t msg_len)
{
	uint8_t eager[STATE_LEN];
	int32_t s = status;
	struct proto_header h = {.type = t->h.type == PROTO_SENDMSG  ? PROTO_ACK
					 : t->h.type == PROTO_GETMSG ? PROTO_DATA
								     : PROTO_STATE,
				 .protocol = PROTO_P2P,
				 .mode = t->h.mode,
				 .eager_size = 4,
				 .port = t->h.port};

	memcpy(eager, &s, 4);
	if (h.type == PROTO_STATE) {
		uint32_t count = st ? st->count : 0;
		uint64_t bytes = st ? st->bytes : 0;

		memcpy(eager + 4, &count, 4);
		memcpy(eager + 8, &bytes, 8);
		eager[16] = (uint8_t)((st && st->empty) | (st && st->full) << 1);
		h.eager_size = STATE_LEN;
	}
	if (send_frame(lk, t->from, &h, eager, msg, status ? 0 : msg_len))
		agent_logf(&lk->cfg.log, "could not answer rank %u (port %llx)", t->from,
			   (unsigned long long)t->h.port);
}

/*
 * The channel named name, from the cache when the file is still the one it
 * mapped (a channel destroyed and made again is a new file), else opened.
 */
static int serve_chan(struct agent_links *lk, const char *name, struct chan **out)
{
	char path[4200];
	struct stat st;
	struct cached_chan *slot = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s%s", lk->dir, CHAN_FILE_PREFIX, name);
	if (lstat(path, &st))
		return -errno;
	for (uint32_t i = 0; i < LINK_CHAN_CACHE && !slot; i++)
		if (lk->cache[i].c && !strcmp(lk->cache[i].name, name))
			slot = &lk->cache[i];
	if (slot && slot->dev == st.st_dev && slot->ino == st.st_ino) {
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
	snprintf(slot->name, sizeof(slot->name), "%s", name);
	slot->dev = st.st_dev;
	slot->ino = st.st_ino;
	*out = slot->c;
	return 0;
}

/* One try at a waiting request: true when it is finished (answered). */
static bool serve_item(struct agent_links *lk, struct target_item *t, bool *blocks)
{
	bool late = t->deadline_ns && clock_ns() >= t->deadline_ns;
	int64_t timeout = proto_timeout_decode(t->h.timeout);
	struct chan_state st;
	struct chan *c = NULL;
	size_t len = 0;
	int rc = serve_chan(lk, t->name, &c);

	*blocks = false;
	if (rc) {
		answer(lk, t, rc, NULL, NULL, 0);
		return true;
	}
	switch (t->h.type) {
	case PROTO_SENDMSG:
		if (!t->deposited) {
			rc = chan_send(c, t->data, t->len, 0, &t->seq);
			t->deposited = rc == 0;
		}
		if (t->deposited && t->h.mode == AGENT_SEND_RECEIVED)
			rc = chan_wait_taken(c, t->seq, 0);
		break;
	case PROTO_GETMSG:
		rc = chan_recv(c, lk->scratch, GW_INLINE, &len, 0);
		break;
	default:
		rc = chan_poll(c, &st, 0);
		if (!rc && st.empty && timeout != 0)
			rc = -EAGAIN;
		break;
	}
	if (rc == -EAGAIN && !late && timeout != 0) {
		lk->peers[t->from].stats.retries++;
		*blocks = !t->deposited; /* later requests for this channel wait behind it */
		return false;
	}
	if (rc == -EAGAIN && timeout != 0)
		rc = -ETIMEDOUT;
	answer(lk, t, rc, t->h.type == PROTO_POLL && !rc ? &st : NULL, lk->scratch, len);
	return true;
}

static void serve_pending(struct agent_links *lk)
{
	char blocked[16][PROTO_NAME_MAX + 1];
	int nblocked = 0;

	for (struct target_item **pp = &lk->pending; *pp;) {
		struct target_item *t = *pp;
		bool skip = false, blocks;

		for (int i = 0; i < nblocked && !skip; i++)
			skip = !strcmp(blocked[i], t->name);
		if (!skip && serve_item(lk, t, &blocks)) {
			*pp = t->next;
			free(t);
			continue;
		}
		if (!skip && blocks && nblocked < 16)
			snprintf(blocked[nblocked++], sizeof(blocked[0]), "%s", t->name);
		pp = &t->next;
	}
	lk->pending_tail = &lk->pending;
	while (*lk->pending_tail)
		lk->pending_tail = &(*lk->pending_tail)->next;
}

static void take_request(struct agent_links *lk, uint32_t from, const struct proto_header *h,
			 const uint8_t *eager, const uint8_t *payload, size_t payload_len)
{
	struct proto_connect bind;
	int64_t timeout = proto_timeout_decode(h->timeout);
	struct target_item *t;

	if (proto_connect_decode(eager, h->eager_size, &bind, NULL) || bind.node != lk->cfg.rank ||
	    (h->type != PROTO_SENDMSG && payload_len))
		return;
	t = malloc(sizeof(*t) + payload_len);
	if (!t)
		return;
	*t = (struct target_item){.from = from, .h = *h, .len = payload_len};
	snprintf(t->name, sizeof(t->name), "%s", bind.name);
	t->deadline_ns = timeout > 0 ? clock_ns() + (uint64_t)timeout * 1000000ull : 0;
	if (payload_len)
		memcpy(t->data, payload, payload_len);
	*lk->pending_tail = t;
	lk->pending_tail = &t->next;
}

static void take_answer(struct agent_links *lk, uint32_t from, const struct proto_header *h,
			const uint8_t *eager, const uint8_t *payload, size_t payload_len)
{
	uint32_t idx = (uint32_t)(h->port & 0xffffffffu);
	uint16_t gen = (uint16_t)(h->port >> 32);
	struct origin *o;
	int32_t status;

	if (idx >= LINK_ORIGIN_MAX || h->eager_size < 4)
		return;
	o = &lk->origins[idx];
	/* Only the answer to a request of ours in flight to that very peer. */
	if (!o->used || o->gen != gen || o->node != from || h->type != o->op + PROTO_ACK)
		return;
	memcpy(&status, eager, 4);
	if (status > 0 || status < -4095)
		status = -EPROTO;
	if (h->type == PROTO_STATE && h->eager_size == STATE_LEN) {
		struct chan_state st = {0};
		uint32_t count;
		uint64_t bytes;

		memcpy(&count, eager + 4, 4);
		memcpy(&bytes, eager + 8, 8);
		st.count = count;
		st.bytes = bytes;
		st.empty = eager[16] & 1;
		st.full = (eager[16] >> 1) & 1;
		finish_origin(lk, idx, status, &st, sizeof(st));
		return;
	}
	finish_origin(lk, idx, status, payload, h->type == PROTO_DATA ? payload_len : 0);
}

static void take_frame(struct agent_links *lk, uint32_t core_peer, const uint8_t *buf, size_t len)
{
	struct proto_header h;
	uint32_t from;

	for (from = 0; from < lk->cfg.nodes; from++)
		if (lk->peers[from].up && lk->peers[from].core_peer == core_peer)
			break;
	if (from == lk->cfg.nodes || len < PROTO_HEADER_SIZE || proto_header_decode(buf, &h, NULL) ||
	    len - PROTO_HEADER_SIZE < h.eager_size)
		return; /* not from a peer we know, or malformed: dropped */
	const uint8_t *eager = buf + PROTO_HEADER_SIZE, *payload = eager + h.eager_size;
	size_t payload_len = len - PROTO_HEADER_SIZE - h.eager_size;

	lk->peers[from].stats.msgs_recv++;
	lk->peers[from].stats.bytes_recv += len;
	if (h.type <= PROTO_POLL)
		take_request(lk, from, &h, eager, payload, payload_len);
	else if (h.type >= PROTO_ACK)
		take_answer(lk, from, &h, eager, payload, payload_len);
}

int links_progress(struct agent_links *lk)
{
	struct core_cqe e[16];
	int n, work = 0;

	connect_peers(lk);
	while ((n = core_cq_read(lk->ep, e, 16)) > 0) {
		work += n;
		for (int i = 0; i < n; i++) {
			if (e[i].flags & CORE_CQE_RECV) {
				if (e[i].status == IBV_WC_SUCCESS && !e[i].err)
					take_frame(lk, e[i].peer, e[i].context, e[i].len);
				if (core_recv(lk->ep, e[i].context, LINK_FRAME_MAX, e[i].context))
					agent_logf(&lk->cfg.log, "could not repost a receive buffer");
			} else if (e[i].flags & CORE_CQE_SEND) {
				free(e[i].context);
			}
		}
	}
	if (lk->pending)
		serve_pending(lk);
	return work;
}
