/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The client API of core/agent/agent.h: local channels directly, remote ones through the gateway. */
#include "core/agent/agent.h"

#include "core/chan/agent_dir.h"
#include "core/chan/gateway.h"
#include "core/chan/sibling.h"
#include "core/util/clock.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct agent_client {
	char dir[PATH_MAX];
	uint32_t rank;
	struct gateway *gw; /* the node's first agent: NULL until needed, or when no agent runs */
	struct gateway *sib[AGENT_SIBLINGS_MAX]; /* the node's other agents, opened when a handle uses them */
};

struct agent_chan {
	struct agent_client *cl;
	struct chan *local;
	struct agent_addr addr;
	uint32_t node;	  /* resolved rank, for remote handles */
	uint32_t sibling; /* the node's agent this handle (a port) goes through (handle_gateway) */
	uint32_t nsib;	  /* the node's agents */
};

static const char *const mode_names[] = {"immediately", "buffered", "deposited", "received"};

int agent_send_mode_parse(const char *text, enum agent_send_mode *mode)
{
	for (int i = 0; i < 4; i++)
		if (text && !strcmp(text, mode_names[i])) {
			*mode = (enum agent_send_mode)i;
			return 0;
		}
	return -EINVAL;
}

const char *agent_send_mode_name(enum agent_send_mode mode)
{
	return (unsigned)mode < 4 ? mode_names[mode] : "?";
}

int agent_addr_parse(const char *text, struct agent_addr *addr)
{
	const char *slash = text ? strchr(text, '/') : NULL;
	const char *name = slash ? slash + 1 : text;

	memset(addr, 0, sizeof(*addr));
	addr->node = AGENT_NODE_LOCAL;
	if (!text || !chan_name_valid(name))
		return -EINVAL;
	if (slash) {
		size_t n = (size_t)(slash - text);
		char *end;

		if (n == 0 || n >= sizeof(addr->host))
			return -EINVAL;
		memcpy(addr->host, text, n);
		addr->host[n] = '\0';
		unsigned long rank = strtoul(addr->host, &end, 10);

		if (!*end && addr->host[0] >= '0' && addr->host[0] <= '9') {
			if (rank >= GW_MAX_NODES)
				return -EINVAL;
			addr->node = (uint32_t)rank;
			addr->host[0] = '\0';
		}
	}
	snprintf(addr->name, sizeof(addr->name), "%s", name);
	return 0;
}

int agent_attach(uint32_t rank, struct agent_client **out, char *why, size_t whylen)
{
	struct agent_client *cl = calloc(1, sizeof(*cl));
	int rc;

	if (!cl)
		return -ENOMEM;
	rc = agent_client_env_check(why, whylen);
	if (!rc)
		rc = agent_dir_resolve(cl->dir, sizeof(cl->dir), true, why, whylen);
	if (rc) {
		free(cl);
		return rc;
	}
	cl->rank = rank;
	*out = cl;
	return 0;
}

void agent_detach(struct agent_client *cl)
{
	if (!cl)
		return;
	gw_close(cl->gw);
	for (int k = 0; k < AGENT_SIBLINGS_MAX; k++)
		gw_close(cl->sib[k]);
	free(cl);
}

const char *agent_client_dir(const struct agent_client *cl)
{
	return cl->dir;
}

/* (Re)connects to the local agent's gateway; a dead agent's mapping is dropped. */
static int client_gateway(struct agent_client *cl)
{
	if (cl->gw) {
		if (gw_alive(cl->gw))
			return 0;
		gw_close(cl->gw);
		cl->gw = NULL;
	}
	return gw_open(cl->dir, cl->rank, &cl->gw);
}

/* The gateway of the node's agent k, (re)opened like the first's; 0 when that agent lives. */
static int sibling_gateway(struct agent_client *cl, uint32_t k, struct gateway **out)
{
	struct gateway **g = &cl->sib[k];
	int rc;

	if (k == 0) {
		rc = client_gateway(cl);
		*out = cl->gw;
		return rc;
	}
	if (*g && !gw_alive(*g)) {
		gw_close(*g);
		*g = NULL;
	}
	if (!*g && (rc = gw_open(cl->dir, agent_id(cl->rank, k), g)))
		return rc;
	*out = *g;
	return 0;
}

/*
 * The gateway of the agent a handle (a port) goes through.  A port stays
 * with its agent, so its items go in order on one link (sibling.h), until
 * that agent dies or its link to the target node is down (the node's agent
 * on that rail died): then the port moves, for good, to the next sibling
 * that lives and has its link up, or failing that one that lives.  Moving
 * keeps the port's order: what the old agent had taken either went out
 * before the move or is lost (its requests fail; a target drops the items
 * of a link that went down), never delivered after what follows the move,
 * except in the moment before a target notices the link is down (an item
 * it holds for a full channel could still go in then).
 */
static int handle_gateway(struct agent_chan *h, struct gateway **out)
{
	struct gateway *g;
	int rc = sibling_gateway(h->cl, h->sibling, out);

	if (h->nsib <= 1 || (!rc && gw_peer_is_up(*out, h->node)))
		return rc;
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 1; i < h->nsib; i++) {
			uint32_t k = (h->sibling + i) % h->nsib;

			if ((pass == 0 || rc) && !sibling_gateway(h->cl, k, &g) &&
			    (pass == 1 || gw_peer_is_up(g, h->node))) {
				h->sibling = k;
				*out = g;
				return 0;
			}
		}
	return rc; /* no better one: its own agent answers (-EHOSTDOWN), or the error */
}

bool agent_client_connected(struct agent_client *cl)
{
	return client_gateway(cl) == 0;
}

int agent_chan_create(struct agent_client *cl, const char *name, const struct chan_attr *attr)
{
	return chan_create(cl->dir, name, attr);
}

int agent_chan_destroy(struct agent_client *cl, const char *name)
{
	return chan_destroy(cl->dir, name);
}

static bool host_is_me(const char *host)
{
	char me[256] = "";

	if (!strcmp(host, "localhost"))
		return true;
	gethostname(me, sizeof(me) - 1);
	return !strcmp(host, me) ||
	       (strchr(me, '.') && !strncmp(host, me, strcspn(me, ".")) && host[strcspn(me, ".")] == '\0');
}

/* Where an address points: this node (true) or a rank of the agent's host table. */
static int resolve_node(struct agent_client *cl, const struct agent_addr *a, bool *local, uint32_t *node)
{
	struct gw_info info;
	int gw_rc = client_gateway(cl); /* -ENOTCONN: no agent; others say why its gateway is unusable */
	bool connected = gw_rc == 0;

	if (connected)
		gw_info(cl->gw, &info);
	*local = false;
	if (a->node == AGENT_NODE_LOCAL && !a->host[0]) {
		*local = true;
		return 0;
	}
	if (a->host[0]) {
		if (connected)
			for (uint32_t i = 0; i < info.nodes; i++)
				if (!strcmp(info.hosts[i], a->host)) {
					*local = i == info.rank;
					*node = i;
					return 0;
				}
		if (host_is_me(a->host)) {
			*local = true;
			return 0;
		}
		return connected ? -EHOSTUNREACH : gw_rc;
	}
	if (a->node == (connected ? info.rank : cl->rank)) {
		*local = true;
		return 0;
	}
	if (!connected)
		return gw_rc;
	if (a->node >= info.nodes)
		return -EHOSTUNREACH;
	*node = a->node;
	return 0;
}

int agent_chan_open(struct agent_client *cl, const char *text, struct agent_chan **out)
{
	struct agent_chan *h = calloc(1, sizeof(*h));
	bool local;
	int rc;

	if (!h)
		return -ENOMEM;
	h->cl = cl;
	rc = agent_addr_parse(text, &h->addr);
	if (!rc)
		rc = resolve_node(cl, &h->addr, &local, &h->node);
	if (!rc && local)
		rc = chan_open(cl->dir, h->addr.name, &h->local);
	if (!rc && !local) {
		h->sibling = gw_deal_sibling(cl->gw); /* per-port order holds on its one link */
		h->nsib = gw_siblings(cl->gw);
	}
	if (rc) {
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

void agent_chan_close(struct agent_chan *h)
{
	if (!h)
		return;
	chan_close(h->local);
	free(h);
}

bool agent_chan_is_local(const struct agent_chan *h)
{
	return h->local != NULL;
}

/*
 * An immediately send waits for no answer, so a node the agent knows is down
 * fails it here, at once, as the agent fails the other modes: queued, it
 * would be dropped without a word (agent.h).
 */
static bool immediately_to_down_node(const struct agent_chan *h, struct gateway *gw, uint32_t op,
				     enum agent_send_mode mode)
{
	return op == GW_OP_SEND && mode == AGENT_SEND_IMMEDIATELY && !gw_peer_is_up(gw, h->node);
}

static int remote_call(struct agent_chan *h, uint32_t op, enum agent_send_mode mode, int timeout_ms,
		       const void *in, size_t inlen, void *out, size_t cap, size_t *outlen)
{
	struct gw_request req = {
	    .op = op, .mode = mode, .node = h->node, .timeout_ms = timeout_ms, .cap = cap};
	struct gateway *gw, *was;
	int rc = handle_gateway(h, &gw);

	if (rc)
		return rc;
	if (immediately_to_down_node(h, gw, op, mode))
		return -EHOSTDOWN;
	snprintf(req.name, sizeof(req.name), "%s", h->addr.name);
	rc = gw_call(gw, &req, in, inlen, out, cap, outlen,
		     op != GW_OP_SEND || mode != AGENT_SEND_IMMEDIATELY);
	/* The agent died before it took the request (nothing of it went out): once more through a sibling. */
	was = gw;
	if (rc == -ENOTCONN && h->nsib > 1 && !handle_gateway(h, &gw) && gw != was)
		rc = gw_call(gw, &req, in, inlen, out, cap, outlen,
			     op != GW_OP_SEND || mode != AGENT_SEND_IMMEDIATELY);
	return rc;
}

/* RDMATOOL_AGENT_CHUNK_KB in bytes; the default (and the bound) is what one gateway slot carries. */
static size_t chunk_bytes(void)
{
	const char *v = getenv(AGENT_CHUNK_ENV);
	char *end;
	unsigned long kb;

	if (!v || !*v)
		return (size_t)AGENT_CHUNK_MAX_KB << 10;
	kb = strtoul(v, &end, 10);
	if (*end || kb == 0 || kb > AGENT_CHUNK_MAX_KB)
		return 0;
	return kb << 10;
}

int agent_client_env_check(char *why, size_t whylen)
{
	const char *v = getenv(AGENT_CHUNK_ENV);

	if (chunk_bytes())
		return 0;
	snprintf(why, whylen, "%s=%s is not a chunk size: give 1 to %d (KiB), or unset it for %d",
		 AGENT_CHUNK_ENV, v, AGENT_CHUNK_MAX_KB, AGENT_CHUNK_MAX_KB);
	return -EINVAL;
}

/*
 * A remote send larger than one chunk: chunks in order, each a buffered
 * request (the agent takes a client's requests in ticket order, so they stay
 * in order on the link), the last one in the caller's mode.  Up to
 * CHUNK_WINDOW chunks are in the agent's hands at once: waiting for each
 * before copying the next made every 64 KiB chunk pay a whole round trip to
 * the target (with rma the target reads the chunk out of its slot before
 * the slot is answered).  Every posted chunk is waited for, even after one
 * failed; the first failure is the result.
 */
#define CHUNK_WINDOW 8

static int remote_send_chunked(struct agent_chan *h, const uint8_t *buf, size_t len,
			       enum agent_send_mode mode, int timeout_ms, size_t chunk)
{
	static _Atomic uint32_t counter;
	struct gw_request req = {
	    .op = GW_OP_SEND, .node = h->node, .timeout_ms = timeout_ms, .msg_total = len};
	struct gw_posted window[CHUNK_WINDOW];
	unsigned oldest = 0, posted = 0;
	struct gateway *gw;
	int rc = handle_gateway(h, &gw), first_error = 0;

	if (rc)
		return rc;
	if (len > AGENT_REMOTE_MAX)
		return -EMSGSIZE;
	if (immediately_to_down_node(h, gw, GW_OP_SEND, mode))
		return -EHOSTDOWN;
	req.msg_id = (uint64_t)getpid() << 32 | atomic_fetch_add(&counter, 1);
	snprintf(req.name, sizeof(req.name), "%s", h->addr.name);
	for (size_t off = 0; off < len && !first_error; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		bool last = off + n == len, wait = !last || mode != AGENT_SEND_IMMEDIATELY;

		req.msg_offset = off;
		req.mode = last ? mode : AGENT_SEND_BUFFERED;
		for (;;) {
			if (posted - oldest == CHUNK_WINDOW) { /* the window is full: the oldest first */
				rc = gw_wait(gw, &window[oldest++ % CHUNK_WINDOW], NULL, 0, NULL);
				if (rc && !first_error)
					first_error = rc;
			}
			if (first_error)
				break;
			struct gateway *was = gw;

			rc = gw_post(gw, &req, buf + off, n, wait, &window[posted % CHUNK_WINDOW]);
			if (!rc) {
				posted += wait;
				break;
			}
			/* Its agent died before the first chunk: the whole message through a sibling. */
			if (rc == -ENOTCONN && off == 0 && h->nsib > 1 && !handle_gateway(h, &gw) &&
			    gw != was)
				continue;
			if (rc != -EAGAIN) {
				first_error = rc;
				break;
			}
			/* The gateway is full: free a slot of ours, or let the agent run; a message half sent
			 * must not give up now. */
			if (posted != oldest) {
				rc = gw_wait(gw, &window[oldest++ % CHUNK_WINDOW], NULL, 0, NULL);
				if (rc && !first_error)
					first_error = rc;
			} else {
				sched_yield();
			}
		}
	}
	while (oldest != posted) {
		rc = gw_wait(gw, &window[oldest++ % CHUNK_WINDOW], NULL, 0, NULL);
		if (rc && !first_error)
			first_error = rc;
	}
	return first_error;
}

int agent_send(struct agent_chan *h, const void *buf, size_t len, enum agent_send_mode mode, int timeout_ms)
{
	uint64_t start = clock_ns(), seq;
	int rc;

	if ((unsigned)mode > AGENT_SEND_RECEIVED)
		return -EINVAL;
	if (!h->local) {
		size_t chunk = chunk_bytes();

		if (!chunk)
			return -EINVAL;
		if (len > chunk)
			return remote_send_chunked(h, buf, len, mode, timeout_ms, chunk);
		return remote_call(h, GW_OP_SEND, mode, timeout_ms, buf, len, NULL, 0, NULL);
	}
	rc = chan_send(h->local, buf, len, timeout_ms, &seq);
	if (rc || mode != AGENT_SEND_RECEIVED)
		return rc;
	if (timeout_ms > 0) {
		uint64_t spent_ms = (clock_ns() - start) / 1000000ull;

		timeout_ms = spent_ms >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)spent_ms;
		if (timeout_ms == 0)
			return -ETIMEDOUT;
	}
	rc = chan_wait_taken(h->local, seq, timeout_ms);
	return rc == -EAGAIN ? -ETIMEDOUT : rc;
}

int agent_recv(struct agent_chan *h, void *buf, size_t cap, size_t *len, int timeout_ms)
{
	if (!h->local)
		return remote_call(h, GW_OP_RECV, AGENT_SEND_BUFFERED, timeout_ms, NULL, 0, buf, cap, len);
	return chan_recv(h->local, buf, cap, len, timeout_ms);
}

int agent_poll(struct agent_chan *h, struct chan_state *st, int timeout_ms)
{
	size_t len = 0;

	if (!h->local) {
		int rc = remote_call(h, GW_OP_POLL, AGENT_SEND_BUFFERED, timeout_ms, NULL, 0, st, sizeof(*st),
				     &len);

		return rc ? rc : len == sizeof(*st) ? 0 : -EBADMSG;
	}
	return chan_poll(h->local, st, timeout_ms);
}
