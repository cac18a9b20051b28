/* SPDX-License-Identifier: MIT */
/* Links between agents; the contract and the wire use are in link.h. */
#include "core/agent/link.h"

#include "core/agent/agent.h"
#include "core/agent/agent_key.h"
#include "core/agent/aggregate.h"
#include "core/agent/channel.h"
#include "core/agent/flow.h"
#include "core/agent/pool.h"
#include "core/agent/sibling.h"
#include "core/agent/steal.h"
#include "core/agent/strip.h"
#include "core/oob/oob.h"
#include "core/transport/endpoint.h"
#include "core/util/clock.h"
#include "core/util/sha256.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define LINK_RX_MAX  128
#define LINK_TX_BUFS 4 /* eager buffers per target node */
#define LINK_RX_LARGE_MAX                                                                                    \
	32 /* posted receives for large frames, at most (the ejection cap may allow fewer) */
#define LINK_LARGE_MAX	   (PROTO_HEADER_SIZE + PROTO_CHUNK_SIZE + GW_INLINE) /* a chunk, or a DATA answer */
#define LINK_TAG_EAGER	   1 /* core tags: eager buffers and large frames land in their own receives */
#define LINK_TAG_LARGE	   2
#define LINK_TAG_KIND	   0xffull /* the rest of a core tag: the message's sequence number on its link */
#define LINK_TAG_SEQ_SHIFT 8
#define LINK_ORIGIN_MAX	   1024 /* requests in flight from this agent */
#define LINK_RETRY_NS	   200000000ull
#define LINK_OOB_CHECK_NS  5000000ull /* accepting, and noticing a peer that died */
#define LINK_HELLO	   0x4148     /* OOB frame types of the handshake */
#define LINK_CHALLENGE	   0x4143
#define LINK_PROOF	   0x4150
#define NONCE_LEN	   16
#define LINK_CHAN_CACHE	   32
#define LINK_CHAN_RECHECK_NS 10000000ull /* a served channel's name is looked up again after 10 ms */
#define STATE_LEN	   (4 + 4 + 8 + 1)
#define PORT_BIND_BITS	   10 /* a port's binding: a slot of a direct-mapped table per peer */
#define PORT_BINDINGS	   (1u << PORT_BIND_BITS)
#define PORT_TAG_MASK	   0xffffffffull
#define LINK_REASM_MAX	   (1ull << 30) /* bytes of large messages being put together at once */
#define LINK_DATA_PIECE	   (GW_INLINE - 4 - PROTO_CHUNK_SIZE) /* message bytes per chunk of a GETMSG answer */
#define LINK_RMA_SLOTS_MIN 4 /* staging slots of the rma transport: the injection cap's worth */
#define LINK_RMA_SLOTS_MAX 4096
#define LINK_FRAMES_MIN	   4 /* pooled large frames: the GETMSG cap's worth (and p2p's injection cap's) */
#define LINK_FRAMES_MAX	   1024
#define LINK_HEAP_KEEP	   (256 << 20) /* freed heap the agent keeps for the next large messages */
#define LINK_MMAP_FROM	   (32 << 20)  /* allocations that still get a mapping of their own */

/* What went out to a peer, waiting for its send completion (the core context of the send). */
enum unit_kind { UNIT_EAGER, UNIT_LARGE };

struct unit {
	uint8_t kind;
	uint64_t charge[FLOW_NKINDS]; /* bytes it holds of the flow-control gauges, given back when sent */
	bool orphan;		      /* its peer went down meanwhile: freed on completion, nothing else */
	bool rndv;		      /* core moves it by rendezvous (longer than its eager limit) */
	uint32_t rank;
	struct unit *next; /* in the peer's post queue */
};

/* One of a peer's LINK_TX_BUFS eager buffers. */
struct txbuf {
	struct unit u;
	bool busy; /* queued to post or in flight */
	struct agg_buffer agg;
};

/* A large frame: one item (header, then its body) in a message of its own. */
struct large {
	struct unit u;
	size_t len;
	uint8_t frame[];
};

/*
 * A message that arrived before one sent ahead of it: eager buffers and
 * large frames land in different receives, and one that found no receive
 * posted waits in core's unexpected list while later ones complete.  It is
 * read once the ones before it are (its receive stays taken meanwhile).
 */
struct held {
	struct held *next;
	uint64_t seq;
	uint8_t *buf;
	size_t len;
	bool large, ok;
};

/* An item that found no room on the link yet; kept in order behind the others of its peer. */
struct waiting {
	struct waiting *next;
	struct proto_header h;
	uint64_t token; /* a request to finish (status 0) once the item is on the link, or LINK_NO_TOKEN */
	size_t len;	/* eager data, or a large frame's body */
	bool large;
	enum flow_kind kind; /* the gauge charge counts in */
	uint64_t charge;
	uint8_t data[];
};

struct link_peer {
	bool up;
	struct oob_conn *oob;
	uint32_t core_peer;
	uint64_t next_try_ns;
	struct gw_peer_stats stats;
	/* Sending: the buffer being filled, the units ready to post in order, and what is in flight. */
	struct txbuf *tx[LINK_TX_BUFS];
	struct txbuf *open;
	struct unit *post_head, **post_tail;
	uint32_t eager_out, rndv_out; /* in flight, by how core moves them (see post_units) */
	uint32_t epoch;		      /* links down so far: a READ from an older link answers nobody */
	uint64_t tx_seq, rx_next;     /* sequence numbers (in the core tag) of the next message each way */
	struct held *held;
	struct waiting *wait_head, **wait_tail;
	uint32_t nwaiting;
	/* Ports: our bindings toward it (name per slot, "" = none) and its bindings toward us. */
	char (*bind_out)[PROTO_NAME_MAX + 1];
	char (*bind_in)[PROTO_NAME_MAX + 1];
};

struct origin {
	bool used;
	uint32_t node;
	uint16_t gen;
	uint8_t op;
	uint64_t token;
	uint8_t *answer; /* a GETMSG answer arriving in chunks */
	uint64_t answer_total, answer_got;
};

/* A large message from a peer being put together from its chunks. */
struct reasm {
	struct reasm *next;
	uint32_t from;
	uint64_t id, total, got;
	int status;	       /* 0, or why the message will be answered with an error */
	struct target_item *t; /* its data fills t->data */
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
	uint32_t reads_left; /* rma chunks still being read into data: not served before they are */
	int read_status;     /* 0, or why a chunk could not be read */
	bool orphan;	     /* dropped while reads_left: the last read frees it */
	size_t len;
	uint8_t data[];
};

/*
 * A READ of one rma chunk into its message (the core context of the READ),
 * or, with board set, one stolen from a sibling into that sibling's board.
 */
struct rma_read {
	struct rma_read *next; /* waiting for a request or ejection room */
	struct target_item *t;
	struct steal_board *board; /* a sibling's: this READ is stolen (t is NULL) */
	int slot;		   /* its slot there */
	uint32_t sibling;	   /* its owner */
	uint32_t from, epoch;
	uint64_t offset, port;
	struct proto_rma rma;
};

struct agent_links {
	struct link_config cfg;
	char dir[4096];
	struct core_ep *ep;
	struct oob_listener *listener;
	struct link_peer *peers;
	uint32_t max_items;	/* per eager buffer: AGG_MAX_ITEMS, or 1 with aggregation off */
	bool rma;		/* RDMATOOL_AGENT_TRANSPORT_TYPE=rma: large SENDMSGs are read by the target */
	bool hugepages;		/* RDMATOOL_AGENT_HUGEPAGES=1 */
	bool steal;		/* RDMATOOL_AGENT_STEAL (default 1): siblings share the READ backlog */
	struct agent_pool pool; /* receive buffers, and rma's slots targets read chunks from */
	struct rma_read *reads_waiting, **reads_tail;
	/* Stealing (core/agent/steal.h): our board and what waits on it, and the siblings' boards. */
	struct steal_board *board;
	struct rma_read *offered[STEAL_SLOTS];
	uint64_t offered_ns[STEAL_SLOTS];
	struct steal_board *sib[AGENT_SIBLINGS_MAX];
	uint32_t sib_reads[AGENT_SIBLINGS_MAX]; /* READs in flight into each sibling's board */
	uint32_t stealing;			/* all of them */
	uint64_t steals, steal_bytes, stolen, next_steal_check_ns;
	struct strip strip;	 /* the random order targets get their next unit in */
	uint32_t core_eager_max; /* core sends longer messages by rendezvous */
	struct origin origins[LINK_ORIGIN_MAX];
	uint32_t next_origin;
	struct target_item *pending, **pending_tail;
	struct reasm *reasm; /* large messages arriving in chunks */
	uint64_t reasm_bytes;
	uint8_t *rx_pool; /* eager receive buffers, then large ones: the start of pool */
	int nrx, nlarge;
	struct flow_gauge flow[FLOW_NKINDS];
	uint8_t *scratch; /* a DATA body: status, then a GETMSG's message */
	struct proto_errors errors;
	uint64_t next_oob_check_ns;
	unsigned char key[AGENT_KEY_LEN];
	/* Channels this agent serves, kept mapped: mapping and unmapping per request costs more than the
	 * request. */
	struct cached_chan {
		char name[PROTO_NAME_MAX + 1];
		struct chan *c;
		dev_t dev;
		ino_t ino;
		uint64_t checked_ns; /* when the name last led to this file (LINK_CHAN_RECHECK_NS) */
	} cache[LINK_CHAN_CACHE];
	uint32_t cache_next;
};

/*
 * Both sides say their node rank and how many agents their node runs: link
 * ranks are virtual (node x agents per node + sibling), so two nodes that
 * disagree on the count disagree on every rank but the node's own.  The
 * count is checked after the key is proven (an outsider cannot mark a node
 * mismatched), and a mismatch is a state of the peer node, not a retry loop.
 */
struct hello {
	uint32_t rank, node, siblings;
	uint8_t nonce[NONCE_LEN];
};

struct challenge {
	uint32_t rank, node, siblings;
	uint8_t nonce[NONCE_LEN];
	uint8_t mac[32];
};

#define LINK_MISMATCH (-0x10000) /* handshake(): the key is proven, the agents per node differ (no errno) */

/* Ranks of one node are siblings: they never link (they share work through memory instead). */
static bool same_node(const struct agent_links *lk, uint32_t a, uint32_t b)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1;

	return a / n == b / n;
}

static void steal_open(struct agent_links *lk);

/* A link rank as the user knows it: the node's rank, and "R.S" when the node runs several agents. */
static const char *peer_name(const struct agent_links *lk, uint32_t rank, char *out, size_t len)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1;

	agent_id_text(agent_id(rank / n, rank % n), out, len);
	return out;
}

static void peer_addr(struct agent_links *lk, uint32_t rank, char *out, size_t len)
{
	uint16_t port = lk->cfg.ports && lk->cfg.ports[rank] ? lk->cfg.ports[rank] : LINK_DEFAULT_PORT;

	snprintf(out, len, "%s:%u", lk->cfg.hosts[rank], (unsigned)port);
}

static uint8_t *rx_buf(struct agent_links *lk, int i)
{
	return i < lk->nrx ? lk->rx_pool + (size_t)i * PROTO_EAGER_BUFFER
			   : lk->rx_pool + (size_t)lk->nrx * PROTO_EAGER_BUFFER +
				 (size_t)(i - lk->nrx) * LINK_LARGE_MAX;
}

/* A large receive's bytes count toward the ejection cap while it is posted. */
static int rx_post(struct agent_links *lk, uint8_t *buf, bool large)
{
	int rc;

	if (!large)
		return core_trecv(lk->ep, buf, PROTO_EAGER_BUFFER, LINK_TAG_EAGER, ~LINK_TAG_KIND, buf);
	if (!flow_fits(&lk->flow[FLOW_EJECTION], LINK_LARGE_MAX))
		return -ENOBUFS;
	rc = core_trecv(lk->ep, buf, LINK_LARGE_MAX, LINK_TAG_LARGE, ~LINK_TAG_KIND, buf);
	if (!rc)
		flow_take(&lk->flow[FLOW_EJECTION], LINK_LARGE_MAX);
	return rc;
}

/*
 * Frees a unit that is not in flight: a block goes back to the pool; one from
 * the heap (the pool ran out) drops its MR cache registration first, as core
 * requires of memory a send used (core/transport/endpoint.h).
 */
static void unit_free(struct agent_links *lk, struct unit *u)
{
	size_t len = u->kind == UNIT_LARGE ? sizeof(struct large) + ((struct large *)u)->len : sizeof(struct txbuf);

	if (pool_give(u->kind == UNIT_LARGE ? &lk->pool.frames : &lk->pool.tx, u))
		return;
	if (lk->ep)
		core_mr_dereg(lk->ep, u, len);
	free(u);
}

static void unit_release(struct agent_links *lk, struct unit *u)
{
	for (int k = 0; k < FLOW_NKINDS; k++) {
		flow_give(&lk->flow[k], u->charge[k]);
		u->charge[k] = 0;
	}
}

/* A fresh set of eager buffers for a peer (the old ones may still be in flight on a dead link). */
static int peer_tx_init(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];

	for (int i = 0; i < LINK_TX_BUFS; i++) {
		struct txbuf *b = p->tx[i];

		if (b && b->busy) {
			b->u.orphan = true; /* its completion frees it */
			b = NULL;
		}
		if (!b && !(b = pool_take(&lk->pool.tx)) && !(b = calloc(1, sizeof(*b))))
			return -ENOMEM;
		unit_release(lk, &b->u);
		b->u = (struct unit){.kind = UNIT_EAGER, .rank = rank};
		b->busy = false;
		agg_init(&b->agg, lk->max_items);
		p->tx[i] = b;
	}
	p->open = NULL;
	p->post_head = NULL;
	p->post_tail = &p->post_head;
	p->eager_out = p->rndv_out = 0;
	p->tx_seq = 0;
	return 0;
}

/*
 * Large messages are put together in buffers of up to 4 MiB (and more) that
 * glibc would map and unmap, or trim off the heap, every time: the agent
 * spent a fifth of its time in page faults touching fresh pages.  Freed
 * memory stays for the next message instead (the agent is a process of its
 * own; the flow caps bound what it holds at once).
 */
static void keep_freed_heap(void)
{
	mallopt(M_MMAP_THRESHOLD, LINK_MMAP_FROM);
	mallopt(M_TRIM_THRESHOLD, LINK_HEAP_KEEP);
}

/*
 * The ejection cap's bytes for posted large receives.  The rest is for rma
 * READs from peers (a READ that can never fit would stall its message): at
 * least one READ's worth, half the cap when this agent sends by rma itself
 * (its peers are likely to).
 */
static uint64_t ejection_for_receives(const struct agent_links *lk)
{
	uint64_t cap = lk->cfg.caps.cap[FLOW_EJECTION], reads = lk->rma ? cap / 2 : PROTO_RMA_MAX;

	return cap > reads ? cap - reads : 0;
}

/* RDMATOOL_AGENT_TRANSPORT_TYPE: 0 with *rma set (the default), or -EINVAL. */
static int transport_from_env(bool *rma)
{
	const char *v = getenv(LINK_TRANSPORT_ENV);

	*rma = !v || !*v || !strcmp(v, "rma");
	return *rma || !strcmp(v, "p2p") ? 0 : -EINVAL;
}

/* RDMATOOL_AGENT_HUGEPAGES: 0 with *on set, or -EINVAL. */
static int hugepages_from_env(bool *on)
{
	const char *v = getenv(LINK_HUGEPAGES_ENV);

	*on = v && !strcmp(v, "1");
	return !v || !*v || *on || !strcmp(v, "0") ? 0 : -EINVAL;
}

/* RDMATOOL_AGENT_STEAL: 0 with *on set (unset: on), or -EINVAL. */
static int steal_from_env(bool *on)
{
	const char *v = getenv(LINK_STEAL_ENV);

	*on = !v || !*v || !strcmp(v, "1");
	return *on || !strcmp(v, "0") ? 0 : -EINVAL;
}

/* The receive buffers and, for rma, staging slots for the injection cap's worth of chunks. */
static int open_pool(struct agent_links *lk, char *why, size_t whylen)
{
	uint64_t n = lk->cfg.caps.cap[FLOW_INJECTION] / GW_INLINE;
	uint64_t frames = (lk->cfg.caps.cap[FLOW_GETMSG] + (lk->rma ? 0 : lk->cfg.caps.cap[FLOW_INJECTION])) /
			  GW_INLINE;
	struct pool_layout l = {
	    .rx_bytes = (size_t)lk->nrx * PROTO_EAGER_BUFFER + (size_t)lk->nlarge * LINK_LARGE_MAX,
	    .tx_size = sizeof(struct txbuf),
	    .ntx = lk->cfg.nodes * LINK_TX_BUFS * 2, /* a fresh set per peer while a dead link's drain */
	    .frame_size = sizeof(struct large) + LINK_LARGE_MAX,
	    .nframes = (uint32_t)(frames < LINK_FRAMES_MIN	 ? LINK_FRAMES_MIN
				  : frames > LINK_FRAMES_MAX ? LINK_FRAMES_MAX
							     : frames),
	    .slot_size = GW_INLINE,
	    .hugepages = lk->hugepages};
	char large[64] = "p2p";
	int rc;

	n = !lk->rma		     ? 0
	    : n < LINK_RMA_SLOTS_MIN ? LINK_RMA_SLOTS_MIN
	    : n > LINK_RMA_SLOTS_MAX ? LINK_RMA_SLOTS_MAX
				     : n;
	l.nslots = (uint32_t)n;
	rc = pool_open(&lk->pool, lk->ep, &l);
	if (rc) {
		snprintf(why, whylen, "cannot set up the agent's registered link buffers (%zu KiB): %s",
			 (l.rx_bytes + l.ntx * l.tx_size + l.nframes * l.frame_size + n * GW_INLINE) >> 10,
			 strerror(-rc));
		return rc;
	}
	if (lk->rma)
		snprintf(large, sizeof(large), "rma, %u staging slots of %u KiB", lk->pool.nslots,
			 GW_INLINE >> 10);
	agent_logf(&lk->cfg.log,
		   "link buffers: %zu KiB registered once (receive, %u eager send, %u large frames), on %s; "
		   "large messages: %s",
		   lk->pool.len >> 10, lk->pool.tx.n, lk->pool.frames.n,
		   lk->pool.huge   ? "hugepages"
		   : lk->hugepages ? "ordinary pages (no hugepages reserved)"
				   : "ordinary pages",
		   large);
	return 0;
}

int links_open(const struct link_config *cfg, struct agent_links **out, char *why, size_t whylen)
{
	struct agent_links *lk = calloc(1, sizeof(*lk));
	struct core_ep_attr attr;
	char addr[GW_HOST_LEN + 16];
	int rc;

	if (!lk)
		return -ENOMEM;
	keep_freed_heap();
	lk->cfg = *cfg;
	for (int k = 0; k < FLOW_NKINDS; k++)
		flow_init(&lk->flow[k], cfg->caps.cap[k]);
	snprintf(lk->dir, sizeof(lk->dir), "%s", cfg->dir);
	lk->peers = calloc(cfg->nodes, sizeof(*lk->peers));
	lk->scratch = malloc(4 + GW_INLINE);
	lk->pending_tail = &lk->pending;
	lk->reads_tail = &lk->reads_waiting;
	strip_init(&lk->strip, rng_entropy_seed() ^ cfg->rank);
	if (!lk->peers || !lk->scratch) {
		links_close(lk);
		return -ENOMEM;
	}
	if (agg_max_items_from_env(&lk->max_items)) {
		snprintf(why, whylen, "RDMATOOL_AGENT_AGGREGATE='%s' is invalid; give 1 (on) or 0 (off)",
			 getenv("RDMATOOL_AGENT_AGGREGATE"));
		links_close(lk);
		return -EINVAL;
	}
	if (transport_from_env(&lk->rma)) {
		snprintf(why, whylen, "%s='%s' is invalid; give rma (the default) or p2p", LINK_TRANSPORT_ENV,
			 getenv(LINK_TRANSPORT_ENV));
		links_close(lk);
		return -EINVAL;
	}
	if (hugepages_from_env(&lk->hugepages)) {
		snprintf(why, whylen, "%s='%s' is invalid; give 1 (hugepages when the system has them) or 0",
			 LINK_HUGEPAGES_ENV, getenv(LINK_HUGEPAGES_ENV));
		links_close(lk);
		return -EINVAL;
	}
	if (steal_from_env(&lk->steal)) {
		snprintf(
		    why, whylen,
		    "%s='%s' is invalid; give 1 (the node's agents steal each other's READs, the default) "
		    "or 0",
		    LINK_STEAL_ENV, getenv(LINK_STEAL_ENV));
		links_close(lk);
		return -EINVAL;
	}
	for (uint32_t r = 0; r < cfg->nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		p->wait_tail = &p->wait_head;
		p->bind_out = calloc(PORT_BINDINGS, sizeof(*p->bind_out));
		p->bind_in = calloc(PORT_BINDINGS, sizeof(*p->bind_in));
		if (!p->bind_out || !p->bind_in) {
			links_close(lk);
			return -ENOMEM;
		}
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
			 "cannot listen for other agents on %s: %s; give this rank a free port in --hosts%s",
			 addr, strerror(-rc),
			 lk->cfg.siblings > 1
			     ? " (agent S of a node listens on its port + S: keep those free too)"
			     : "");
		links_close(lk);
		return rc;
	}
	core_ep_attr_defaults(&attr);
	attr.name = "agent";
	attr.device = cfg->device;
	attr.threading = CORE_THREAD_SINGLE;
	attr.env.tx_stripes = 1;
	/*
	 * The link handshake times each step for the address blob (2 s); a peer that
	 * rejoins connects again on the same endpoint.  The CM path is not used here yet.
	 */
	attr.env.connect = CORE_CONNECT_OOB;
	lk->nrx = (int)(cfg->nodes * 4 < LINK_RX_MAX ? cfg->nodes * 4 : LINK_RX_MAX);
	lk->nlarge = (int)(ejection_for_receives(lk) / LINK_LARGE_MAX);
	lk->nlarge = lk->nlarge > LINK_RX_LARGE_MAX ? LINK_RX_LARGE_MAX : lk->nlarge < 1 ? 1 : lk->nlarge;
	rc = core_ep_open(&attr, &lk->ep, why, whylen);
	if (!rc) {
		lk->core_eager_max = core_ep_eager_max(lk->ep);
		rc = open_pool(lk, why, whylen);
	}
	if (rc) {
		links_close(lk);
		return rc;
	}
	lk->rx_pool = lk->pool.region;
	for (uint32_t r = 0; r < cfg->nodes; r++)
		if (peer_tx_init(lk, r)) { /* the eager send buffers: blocks of the pool */
			links_close(lk);
			return -ENOMEM;
		}
	steal_open(lk);
	for (int i = 0; !rc && i < lk->nrx + lk->nlarge; i++)
		rc = rx_post(lk, rx_buf(lk, i), i >= lk->nrx);
	if (rc) {
		snprintf(why, whylen, "cannot post the agent's receive buffers: %s", strerror(-rc));
		links_close(lk);
		return rc;
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
	free(o->answer);
	o->answer = NULL;
}

/* Drops what waits to go to rank: the requests among it fail with status. */
static void drop_waiting(struct agent_links *lk, uint32_t rank, int status)
{
	struct link_peer *p = &lk->peers[rank];

	while (p->wait_head) {
		struct waiting *w = p->wait_head;

		p->wait_head = w->next;
		if (w->token != LINK_NO_TOKEN && lk->cfg.done)
			lk->cfg.done(lk->cfg.arg, w->token, status, NULL, 0);
		flow_give(&lk->flow[w->kind], w->charge);
		free(w);
	}
	p->wait_tail = &p->wait_head;
	p->nwaiting = 0;
	/* Units queued to post never went out: free large frames, mark the buffers free again. */
	for (struct unit *u = p->post_head, *next; u; u = next) {
		next = u->next;
		unit_release(lk, u);
		if (u->kind == UNIT_LARGE)
			unit_free(lk, u);
		else
			((struct txbuf *)u)->busy = false;
	}
	p->post_head = NULL;
	p->post_tail = &p->post_head;
}

/* A target item that may still have reads landing in it: freed by the last one then. */
static void target_free(struct target_item *t)
{
	if (t && t->reads_left)
		t->orphan = true;
	else
		free(t);
}

static void drop_reasm(struct agent_links *lk, uint32_t from, bool all)
{
	for (struct reasm **pp = &lk->reasm; *pp;) {
		struct reasm *r = *pp;

		if (all || r->from == from) {
			*pp = r->next;
			lk->reasm_bytes -= r->t ? r->total : 0;
			target_free(r->t);
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

static void drop_held(struct agent_links *lk, uint32_t rank);
/* Stealing between the node's agents, below with the READs. */
static void drop_offered(struct agent_links *lk, uint32_t from, bool all);
static void steal_complete(struct agent_links *lk, struct rma_read *rd, int status);

/* READs not posted yet, from rank (or all): never will be; their messages lose a reader. */
static void drop_reads(struct agent_links *lk, uint32_t from, bool all)
{
	for (struct rma_read **pp = &lk->reads_waiting; *pp;) {
		struct rma_read *rd = *pp;

		if (all || rd->from == from) {
			*pp = rd->next;
			rd->t->read_status = -EHOSTDOWN;
			if (--rd->t->reads_left == 0 && rd->t->orphan)
				free(rd->t);
			free(rd);
		} else {
			pp = &rd->next;
		}
	}
	lk->reads_tail = &lk->reads_waiting;
	while (*lk->reads_tail)
		lk->reads_tail = &(*lk->reads_tail)->next;
}

static void peer_down(struct agent_links *lk, uint32_t rank, const char *why)
{
	struct link_peer *p = &lk->peers[rank];
	char name[32];

	if (p->oob)
		oob_close(p->oob);
	p->oob = NULL;
	if (p->up)
		agent_logf(&lk->cfg.log, "link to rank %s (%s) down: %s",
			   peer_name(lk, rank, name, sizeof(name)), lk->cfg.hosts[rank], why);
	p->up = false;
	p->next_try_ns = clock_ns() + LINK_RETRY_NS;
	drop_waiting(lk, rank, -EHOSTDOWN);
	drop_held(lk, rank);
	if (peer_tx_init(lk, rank))
		agent_logf(&lk->cfg.log, "out of memory for the eager buffers of rank %u", rank);
	/* Ports are bound again after a rejoin. */
	memset(p->bind_out, 0, PORT_BINDINGS * sizeof(*p->bind_out));
	memset(p->bind_in, 0, PORT_BINDINGS * sizeof(*p->bind_in));
	for (uint32_t i = 0; i < LINK_ORIGIN_MAX; i++)
		if (lk->origins[i].used && lk->origins[i].node == rank)
			finish_origin(lk, i, -EHOSTDOWN, NULL, 0);
	/* Requests from it can no longer be answered (a deposited message stays where it is). */
	p->epoch++;
	flow_give(&lk->flow[FLOW_INJECTION], pool_give_slots(&lk->pool, rank) * lk->pool.slot_size);
	drop_reads(lk, rank, false);
	drop_offered(lk, rank, false);
	drop_reasm(lk, rank, false);
	for (struct target_item **t = &lk->pending; *t;) {
		if ((*t)->from == rank) {
			struct target_item *dead = *t;

			*t = dead->next;
			target_free(dead);
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
	for (uint32_t r = 0; lk->peers && r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		if (p->wait_tail)
			drop_waiting(lk, r, -ESHUTDOWN);
		if (p->oob)
			oob_close(p->oob);
		while (p->held) {
			struct held *h = p->held;

			p->held = h->next;
			free(h);
		}
	}
	drop_reads(lk, 0, true);
	drop_offered(lk, 0, true);
	while (lk->pending) {
		struct target_item *t = lk->pending;

		lk->pending = t->next;
		target_free(t); /* one a READ may still fill is left to the process's end */
	}
	drop_reasm(lk, 0, true);
	for (uint32_t i = 0; i < LINK_CHAN_CACHE; i++)
		chan_close(lk->cache[i].c);
	/* Completions of what is still in flight free orphans; after that, whatever is left. */
	if (lk->ep) {
		struct core_cqe e[16];
		int n;

		while ((n = core_cq_read(lk->ep, e, 16)) > 0)
			for (int i = 0; i < n; i++)
				if ((e[i].flags & CORE_CQE_SEND) && e[i].context) {
					struct unit *u = e[i].context;

					if (u->kind == UNIT_LARGE || u->orphan)
						unit_free(lk, u);
					else
						((struct txbuf *)u)->busy = false;
				}
	}
	core_ep_close(lk->ep); /* before the receive buffers it may still write */
	steal_board_destroy(lk->board, lk->dir);
	for (int k = 0; k < AGENT_SIBLINGS_MAX; k++)
		steal_board_close(lk->sib[k]); /* READs into them were flushed with the endpoint */
	for (uint32_t r = 0; lk->peers && r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		for (int i = 0; i < LINK_TX_BUFS; i++)
			if (p->tx[i] && !p->tx[i]->busy && !pool_give(&lk->pool.tx, p->tx[i]))
				free(p->tx[i]); /* one still busy is in flight: leaked rather than freed under
						   the NIC (the endpoint is closed: no registration is left) */
	}
	pool_close(&lk->pool); /* the receive and send buffers too */
	if (lk->listener)
		oob_listener_close(lk->listener);
	for (uint32_t r = 0; lk->peers && r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		free(p->bind_out);
		free(p->bind_in);
	}
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
	const struct link_peer *p;

	if (node >= lk->cfg.nodes) {
		*out = none;
		return;
	}
	p = &lk->peers[node];
	*out = p->stats;
	out->eager_in_use = 0;
	for (int i = 0; i < LINK_TX_BUFS; i++)
		out->eager_in_use += p->tx[i] && (p->tx[i]->busy || p->tx[i] == p->open);
	out->waiting = p->nwaiting;
}

/*
 * HMAC(key, role | our rank | their rank | our agents per node | theirs | their nonce): proves we hold
 * the key, bound to this exchange and to the counts each side said.
 */
static void proof(struct agent_links *lk, char role, uint32_t mine, uint32_t theirs, uint32_t mine_n,
		  uint32_t theirs_n, const uint8_t *nonce, uint8_t mac[32])
{
	uint8_t msg[1 + 4 * 4 + NONCE_LEN];

	msg[0] = (uint8_t)role;
	memcpy(msg + 1, &mine, 4);
	memcpy(msg + 5, &theirs, 4);
	memcpy(msg + 9, &mine_n, 4);
	memcpy(msg + 13, &theirs_n, 4);
	memcpy(msg + 17, nonce, NONCE_LEN);
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
 * acceptor's nonce.  Returns the peer's rank, LINK_MISMATCH (the peer's
 * node and count in *node and *siblings) or a negative errno.
 */
static int handshake(struct agent_links *lk, struct oob_conn *c, int32_t dialing, uint32_t *node,
		     uint32_t *siblings)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1, me = lk->cfg.rank / n, nodes = lk->cfg.nodes / n;
	struct hello hello;
	struct challenge ch;
	uint8_t mac[32], expect[32];
	uint16_t type;
	uint32_t len;
	int rc;

	if (dialing >= 0) {
		hello.rank = lk->cfg.rank;
		hello.node = me;
		hello.siblings = n;
		if (getrandom(hello.nonce, NONCE_LEN, 0) != NONCE_LEN)
			return -EIO;
		if ((rc = oob_send(c, LINK_HELLO, &hello, sizeof(hello))) ||
		    (rc = oob_recv(c, &type, &ch, sizeof(ch), &len, 2000)))
			return rc;
		if (type != LINK_CHALLENGE || len != sizeof(ch) || ch.node != (uint32_t)dialing / n ||
		    (ch.siblings == n && ch.rank != (uint32_t)dialing))
			return -EPROTO;
		proof(lk, 'A', ch.rank, lk->cfg.rank, ch.siblings, n, hello.nonce, expect);
		if (!same_mac(ch.mac, expect))
			return -EACCES;
		proof(lk, 'D', lk->cfg.rank, ch.rank, n, ch.siblings, ch.nonce, mac);
		rc = oob_send(c, LINK_PROOF, mac, sizeof(mac));
		*node = ch.node;
		*siblings = ch.siblings;
		return rc ? rc : ch.siblings != n ? LINK_MISMATCH : dialing;
	}
	if ((rc = oob_recv(c, &type, &hello, sizeof(hello), &len, 2000)))
		return rc;
	/* Only higher ranks dial us (when the counts agree: else only another node). */
	if (type != LINK_HELLO || len != sizeof(hello) || hello.node >= nodes || hello.node == me ||
	    hello.siblings == 0 || hello.siblings > AGENT_SIBLINGS_MAX ||
	    (hello.siblings == n && (hello.rank >= lk->cfg.nodes || hello.rank <= lk->cfg.rank ||
				     hello.rank / n != hello.node)))
		return -EPROTO;
	ch.rank = lk->cfg.rank;
	ch.node = me;
	ch.siblings = n;
	if (getrandom(ch.nonce, NONCE_LEN, 0) != NONCE_LEN)
		return -EIO;
	proof(lk, 'A', lk->cfg.rank, hello.rank, n, hello.siblings, hello.nonce, ch.mac);
	if ((rc = oob_send(c, LINK_CHALLENGE, &ch, sizeof(ch))) ||
	    (rc = oob_recv(c, &type, mac, sizeof(mac), &len, 2000)))
		return rc;
	proof(lk, 'D', hello.rank, lk->cfg.rank, hello.siblings, n, ch.nonce, expect);
	if (type != LINK_PROOF || len != sizeof(mac) || !same_mac(mac, expect))
		return -EACCES;
	*node = hello.node;
	*siblings = hello.siblings;
	return hello.siblings != n ? LINK_MISMATCH : (int)hello.rank;
}

/*
 * A node whose agents per node differ from ours: every link rank of it is
 * marked (requests to it fail at once with -EBADE, agent status says
 * "mismatch" and its count), and the log names both nodes and counts once.
 */
static void peer_mismatch(struct agent_links *lk, uint32_t node, uint32_t theirs)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1;
	bool news = false;

	for (uint32_t s = 0; s < n; s++) {
		struct link_peer *p = &lk->peers[node * n + s];

		news |= p->stats.agents_per_node != theirs;
		p->stats.agents_per_node = theirs;
		p->stats.last_error = -EBADE;
	}
	if (news)
		agent_logf(&lk->cfg.log,
			   "node %u (%s) runs %u agent(s) per node but this node (%u) runs %u: no link to it; "
			   "start every node with the same --agents-per-node",
			   node, lk->cfg.hosts[node * n], theirs, lk->cfg.rank / n, n);
}

/* The OOB connection is up: prove the key both ways, then exchange endpoint addresses. */
static void peer_join(struct agent_links *lk, struct oob_conn *c, int32_t dialing)
{
	uint32_t node = 0, siblings = 0;
	int theirs = handshake(lk, c, dialing, &node, &siblings), rc = theirs < 0 ? theirs : 0;
	char name[32];

	if (theirs == LINK_MISMATCH) {
		peer_mismatch(lk, node, siblings);
		oob_close(c);
		return;
	}
	if (!rc)
		lk->peers[theirs].stats.agents_per_node = siblings;
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
	agent_logf(&lk->cfg.log, "link to rank %s (%s) up",
		   peer_name(lk, (uint32_t)theirs, name, sizeof(name)), lk->cfg.hosts[theirs]);
}

/* Posts the units queued for rank, in order, as far as the link allows; returns how many. */
static int post_units(struct agent_links *lk, uint32_t rank, int max)
{
	struct link_peer *p = &lk->peers[rank];
	int n = 0;

	while (p->post_head && n < max) {
		struct unit *u = p->post_head;
		bool large = u->kind == UNIT_LARGE;
		int rc;

		/*
		 * Core delivers messages up to its eager limit in order, and rendezvous ones in order, but a
		 * rendezvous message completes at the target after an eager one sent later: the two are
		 * never in flight together, so items keep their order.
		 */
		u->rndv = large && ((struct large *)u)->len > lk->core_eager_max;
		if (u->rndv ? p->eager_out > 0 : p->rndv_out > 0)
			break;
		if (large) {
			struct large *f = (struct large *)u;

			rc = core_tsend(lk->ep, p->core_peer, f->frame, f->len,
					LINK_TAG_LARGE | p->tx_seq << LINK_TAG_SEQ_SHIFT, u);
		} else {
			struct txbuf *b = (struct txbuf *)u;

			rc = core_tsend(lk->ep, p->core_peer, b->agg.data, b->agg.used,
					LINK_TAG_EAGER | p->tx_seq << LINK_TAG_SEQ_SHIFT, u);
		}
		if (rc) {
			if (rc != -EAGAIN) {
				p->stats.last_error = rc;
				peer_down(lk, rank, "a send on it failed");
			}
			break; /* -EAGAIN: no credit or request now; completions will free some */
		}
		p->tx_seq++;
		p->post_head = u->next;
		if (!p->post_head)
			p->post_tail = &p->post_head;
		u->next = NULL;
		if (u->rndv)
			p->rndv_out++;
		else
			p->eager_out++;
		if (large) {
			p->stats.large_sent++;
		} else {
			p->stats.buffers_sent++;
			p->stats.buffer_items_sent += ((struct txbuf *)u)->agg.items;
		}
		n++;
	}
	return n;
}

static void queue_unit(struct link_peer *p, struct unit *u)
{
	u->next = NULL;
	*p->post_tail = u;
	p->post_tail = &u->next;
}

/* The buffer being filled goes into the post queue. */
static void close_open(struct link_peer *p)
{
	if (!p->open)
		return;
	p->open->busy = true;
	queue_unit(p, &p->open->u);
	p->open = NULL;
}

/* The buffer being filled, taking a free one when none is; NULL when all are busy. */
static struct txbuf *open_buffer(struct link_peer *p)
{
	if (p->open)
		return p->open;
	for (int i = 0; i < LINK_TX_BUFS; i++)
		if (!p->tx[i]->busy) {
			p->open = p->tx[i];
			agg_reset(&p->open->agg);
			return p->open;
		}
	return NULL;
}

/* A large frame into the post queue, behind the buffer being filled. */
static int queue_large(struct agent_links *lk, uint32_t rank, const struct proto_header *h, const void *body,
		       size_t len, enum flow_kind kind, uint64_t charge)
{
	struct link_peer *p = &lk->peers[rank];
	struct large *f = PROTO_HEADER_SIZE + len <= LINK_LARGE_MAX ? pool_take(&lk->pool.frames) : NULL;

	if (!f && !(f = malloc(sizeof(*f) + PROTO_HEADER_SIZE + len)))
		return -ENOMEM;
	f->u = (struct unit){.kind = UNIT_LARGE, .rank = rank};
	f->u.charge[kind] = charge;
	f->len = PROTO_HEADER_SIZE + len;
	proto_header_encode(h, f->frame);
	memcpy(f->frame + PROTO_HEADER_SIZE, body, len);
	close_open(p);
	queue_unit(p, &f->u);
	p->stats.msgs_sent++;
	p->stats.bytes_sent += f->len;
	return 0;
}

/* Packs one eager item: 0, or -ENOSPC when no eager buffer has room now. */
static int pack_eager(struct agent_links *lk, uint32_t rank, const struct proto_header *h, const void *data,
		      enum flow_kind kind, uint64_t charge)
{
	struct link_peer *p = &lk->peers[rank];

	for (int tries = 0; tries < 2; tries++) {
		struct txbuf *b = open_buffer(p);
		int rc;

		if (!b)
			return -ENOSPC;
		rc = agg_add(&b->agg, h, data);
		if (rc == 0) {
			b->u.charge[kind] += charge;
			p->stats.msgs_sent++;
			p->stats.bytes_sent += PROTO_HEADER_SIZE + h->eager_size;
			if (b->agg.items >= b->agg.max_items)
				close_open(p); /* full by count: no reason to wait */
			return 0;
		}
		if (rc != -ENOSPC)
			return rc;
		close_open(p); /* full: the next buffer */
	}
	return -ENOSPC;
}

/*
 * Sends one item to rank: eager (its data in h->eager_size bytes) when it
 * fits an eager buffer with its header, else as a large frame of its own
 * (h->eager_size 0, protocol p2p).  Items keep their order per peer: behind
 * the ones still waiting for room.  Returns 0 when the item is on the link
 * (packed or queued to post), -EINPROGRESS when it waits for room (token, if
 * any, is finished with status 0 once it is on the link), or a negative errno.
 */
static int tx_item(struct agent_links *lk, uint32_t rank, struct proto_header h, const void *body, size_t len,
		   uint64_t token, enum flow_kind kind, uint64_t charge)
{
	struct link_peer *p = &lk->peers[rank];
	bool large = h.protocol == PROTO_P2P || PROTO_HEADER_SIZE + len > PROTO_EAGER_BUFFER;
	struct waiting *w;

	if (!p->up)
		return -EHOSTDOWN;
	flow_take(&lk->flow[kind], charge); /* given back once sent (unit_release), or when dropped */
	if (large) {
		h.eager_size = 0;
		h.protocol = PROTO_P2P;
	} else {
		h.eager_size = (uint16_t)len;
	}
	if (!p->wait_head) {
		int rc = large ? queue_large(lk, rank, &h, body, len, kind, charge)
			       : pack_eager(lk, rank, &h, body, kind, charge);

		if (rc && rc != -ENOSPC)
			flow_give(&lk->flow[kind], charge); /* neither on the link nor waiting */
		if (rc != -ENOSPC)
			return rc;
	}
	w = malloc(sizeof(*w) + len);
	if (!w) {
		flow_give(&lk->flow[kind], charge);
		return -ENOMEM;
	}
	*w = (struct waiting){
	    .h = h, .token = token, .len = len, .large = large, .kind = kind, .charge = charge};
	memcpy(w->data, body, len);
	*p->wait_tail = w;
	p->wait_tail = &w->next;
	p->nwaiting++;
	if (p->nwaiting > p->stats.waiting_hwm)
		p->stats.waiting_hwm = p->nwaiting;
	return -EINPROGRESS;
}

/* Moves waiting items onto the link while there is room. */
static int drain_waiting(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];
	int n = 0;

	while (p->wait_head) {
		struct waiting *w = p->wait_head;
		int rc = w->large ? queue_large(lk, rank, &w->h, w->data, w->len, w->kind, w->charge)
				  : pack_eager(lk, rank, &w->h, w->data, w->kind, w->charge);

		if (rc == -ENOSPC)
			break;
		if (rc)
			flow_give(&lk->flow[w->kind], w->charge);
		p->wait_head = w->next;
		if (!p->wait_head)
			p->wait_tail = &p->wait_head;
		p->nwaiting--;
		if (w->token != LINK_NO_TOKEN && lk->cfg.done)
			lk->cfg.done(lk->cfg.arg, w->token, rc, NULL, 0);
		free(w);
		n++;
	}
	return n;
}

/*
 * The buffer being filled holds a single item, and nothing else is queued,
 * waiting or in flight to the peer: nothing will keep it company soon, since
 * company comes with a backlog.  Waiting for its idle passes would only add
 * latency (a request, or its answer, in a ping-pong).
 */
static bool lone_on_idle_link(const struct link_peer *p)
{
	return p->open && p->open->agg.items == 1 && !p->post_head && !p->eager_out && !p->rndv_out &&
	       !p->wait_head;
}

/*
 * Rank's items that waited for room go into buffers; a buffer idle for two
 * passes closes, and so does a lone item on an idle link at the end of the
 * pass that added it.
 */
static int tx_prepare(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];
	int n;

	if (!p->up)
		return 0;
	n = drain_waiting(lk, rank);
	if (p->open && (agg_pass(&p->open->agg) || lone_on_idle_link(p)))
		close_open(p);
	return n;
}

/* Posts what is queued: strip mining (strip.h), one unit per target per round. */
static int tx_post(struct agent_links *lk)
{
	uint32_t order[GW_MAX_NODES];
	int work = 0, n;

	do {
		n = 0;
		strip_order(&lk->strip, lk->cfg.nodes, order);
		for (uint32_t i = 0; i < lk->cfg.nodes; i++)
			if (lk->peers[order[i]].up)
				n += post_units(lk, order[i], 1);
		work += n;
	} while (n);
	return work;
}

/* One progress pass over the sending side. */
static int tx_progress(struct agent_links *lk)
{
	int work = 0;

	for (uint32_t r = 0; r < lk->cfg.nodes; r++)
		work += tx_prepare(lk, r);
	return work + tx_post(lk);
}

/* The binding slot of a channel name (FNV-1a), for the direct-mapped port tables. */
static uint32_t bind_slot(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h & (PORT_BINDINGS - 1);
}

int links_request(struct agent_links *lk, const struct gw_request *req, const void *data, size_t len,
		  uint64_t token)
{
	static const uint8_t op_type[] = {
	    [GW_OP_SEND] = PROTO_SENDMSG, [GW_OP_RECV] = PROTO_GETMSG, [GW_OP_POLL] = PROTO_POLL};
	struct link_peer *p;
	bool chunked = req->op == GW_OP_SEND && req->msg_total;
	bool last = !chunked || req->msg_offset + len == req->msg_total;
	bool answered = req->op != GW_OP_SEND || (req->mode > AGENT_SEND_BUFFERED && last);
	uint8_t *body = NULL, *slot_mem = NULL, cap_le[8], rma_item[PROTO_RMA_ITEM_SIZE];
	uint32_t slot, idx = 0;
	int rc;

	if (req->op < GW_OP_SEND || req->op > GW_OP_POLL)
		return -EINVAL;
	if (req->node < lk->cfg.nodes && lk->peers[req->node].stats.agents_per_node &&
	    lk->peers[req->node].stats.agents_per_node != (lk->cfg.siblings ? lk->cfg.siblings : 1))
		return -EBADE; /* its node runs another count of agents (peer_mismatch) */
	if (!links_up(lk, req->node))
		return -EHOSTDOWN;
	if (len > GW_INLINE || (req->op != GW_OP_SEND && len) ||
	    (chunked && (req->msg_total > AGENT_REMOTE_MAX || req->msg_offset > req->msg_total ||
			 len > req->msg_total - req->msg_offset)))
		return -EMSGSIZE;
	p = &lk->peers[req->node];
	if (answered) {
		for (idx = 0;
		     idx < LINK_ORIGIN_MAX && lk->origins[(lk->next_origin + idx) % LINK_ORIGIN_MAX].used;
		     idx++)
			;
		if (idx == LINK_ORIGIN_MAX)
			return -EAGAIN;
		idx = (lk->next_origin + idx) % LINK_ORIGIN_MAX;
	}
	/* The first item on a port binds it to its channel at the target (a CONNECT); later ones name the
	 * port.
	 */
	slot = bind_slot(req->name);
	if (strcmp(p->bind_out[slot], req->name)) {
		struct proto_connect bind = {.node = (uint16_t)req->node};
		uint8_t eager[3 + PROTO_NAME_MAX];
		struct proto_header ch = {.type = PROTO_CONNECT, .port = (uint64_t)slot << 32};
		int n;

		snprintf(bind.name, sizeof(bind.name), "%s", req->name);
		n = proto_connect_encode(&bind, eager, sizeof(eager));
		if (n < 0)
			return n;
		rc = tx_item(lk, req->node, ch, eager, (size_t)n, LINK_NO_TOKEN, FLOW_INJECTION, 0);
		if (rc && rc != -EINPROGRESS)
			return rc;
		snprintf(p->bind_out[slot], sizeof(p->bind_out[slot]), "%s", req->name);
	}
	struct origin *o = &lk->origins[idx];
	struct proto_header h = {.type = op_type[req->op],
				 .protocol = PROTO_EAGER,
				 .mode = (uint8_t)(req->mode & 3),
				 .timeout = proto_timeout_encode(req->timeout_ms),
				 .port = (uint64_t)slot << 32};

	if (answered)
		h.port |= (uint64_t)(uint16_t)(o->gen + 1) << 16 | idx;
	if (req->op == GW_OP_RECV) {
		uint64_t cap = req->cap ? req->cap : GW_INLINE;

		memcpy(cap_le, &cap, sizeof(cap));
		data = cap_le;
		len = sizeof(cap_le);
	} else if (req->op != GW_OP_SEND) {
		len = 0;
	} else if ((chunked || PROTO_HEADER_SIZE + len > PROTO_EAGER_BUFFER) && lk->rma && len &&
		   (slot_mem = pool_take_slot(&lk->pool, req->node))) {
		/* A copy the target reads, announced by an eager item (proto.h). */
		struct proto_chunk c = {.total = chunked ? req->msg_total : len,
					.offset = chunked ? req->msg_offset : 0,
					.id = chunked ? req->msg_id : 0};
		struct proto_rma r = {
		    .addr = (uintptr_t)slot_mem, .rkey = lk->pool.rkey, .len = (uint32_t)len};

		memcpy(slot_mem, data, len);
		flow_take(&lk->flow[FLOW_INJECTION], lk->pool.slot_size); /* until the target has read it */
		proto_rma_encode(&c, &r, rma_item);
		data = rma_item;
		len = sizeof(rma_item);
		h.protocol = PROTO_RMA;
	} else if (chunked || PROTO_HEADER_SIZE + len > PROTO_EAGER_BUFFER) {
		/* A large frame of its own, its body opened by the chunk descriptor (proto.h). */
		struct proto_chunk c = {.total = chunked ? req->msg_total : len,
					.offset = chunked ? req->msg_offset : 0,
					.id = chunked ? req->msg_id : 0};

		body = malloc(PROTO_CHUNK_SIZE + len);
		if (!body)
			return -ENOMEM;
		proto_chunk_encode(&c, body);
		memcpy(body + PROTO_CHUNK_SIZE, data, len);
		data = body;
		len += PROTO_CHUNK_SIZE;
		h.protocol = PROTO_P2P;
	}
	rc = tx_item(lk, req->node, h, data, len, answered ? LINK_NO_TOKEN : token, FLOW_INJECTION,
		     PROTO_HEADER_SIZE + len);
	free(body);
	if (rc && rc != -EINPROGRESS && slot_mem &&
	    !pool_give_slot(&lk->pool, (uintptr_t)slot_mem, req->node))
		flow_give(&lk->flow[FLOW_INJECTION], lk->pool.slot_size);
	if (rc && rc != -EINPROGRESS)
		return rc;
	if (!answered)
		return rc; /* 0: on the link; -EINPROGRESS: done() once it is */
	lk->next_origin = idx + 1;
	o->used = true;
	o->gen++;
	o->node = req->node;
	o->op = h.type;
	o->token = token;
	return -EINPROGRESS;
}

static void answer(struct agent_links *lk, const struct target_item *t, int status,
		   const struct chan_state *st, size_t msg_len)
{
	uint8_t eager[STATE_LEN];
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
		uint32_t count = st ? st->count : 0;
		uint64_t bytes = st ? st->bytes : 0;

		memcpy(eager + 4, &count, 4);
		memcpy(eager + 8, &bytes, 8);
		eager[16] = (uint8_t)((st && st->empty) | (st && st->full) << 1);
		len = STATE_LEN;
	} else if (h.type == PROTO_DATA) {
		body = lk->scratch; /* status, then the message chan_recv left at scratch + 4 */
		memcpy(body, &s, 4);
		len = 4 + (status ? 0 : msg_len);
	}
	rc = tx_item(lk, t->from, h, body, len, LINK_NO_TOKEN, FLOW_GETMSG,
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
	if (slot && !chan_destroyed(slot->c) && slot->dev == st.st_dev && slot->ino == st.st_ino) {
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
		rc = tx_item(lk, t->from, h, body, 4 + PROTO_CHUNK_SIZE + n, LINK_NO_TOKEN, FLOW_GETMSG,
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
		answer(lk, t, t->read_status, NULL, 0);
		return true;
	}
	rc = serve_chan(lk, t->name, &c);
	if (rc) {
		answer(lk, t, rc, NULL, 0);
		return true;
	}
	switch (t->h.type) {
	case PROTO_SENDMSG:
		if (!t->deposited) {
			rc = chan_send_quiet(c, t->data, t->len, &t->seq);
			t->deposited = rc == 0;
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
	if (rc == -EAGAIN && !late && timeout != 0) {
		lk->peers[t->from].stats.retries++;
		*blocks = !t->deposited; /* later requests for this channel wait behind it */
		return false;
	}
	if (rc == -EAGAIN && timeout != 0)
		rc = -ETIMEDOUT;
	answer(lk, t, rc, t->h.type == PROTO_POLL && !rc ? &st : NULL, len);
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
	/* The pass's deposits wake each channel's receivers once, not once per message. */
	for (uint32_t i = 0; i < LINK_CHAN_CACHE; i++)
		if (lk->cache[i].c)
			chan_wake_owed(lk->cache[i].c);
}

/* Queues a complete request (t->data filled) behind the others, or answers it when its port is unbound. */
static void queue_request(struct agent_links *lk, struct target_item *t)
{
	int64_t timeout = proto_timeout_decode(t->h.timeout);
	const char *name = lk->peers[t->from].bind_in[(t->h.port >> 32) & (PORT_BINDINGS - 1)];

	snprintf(t->name, sizeof(t->name), "%s", name);
	t->deadline_ns = timeout > 0 ? clock_ns() + (uint64_t)timeout * 1000000ull : 0;
	if (!name[0]) { /* a port never bound: answered, never served */
		lk->errors.count[PROTO_ERR_CONNECT]++;
		answer(lk, t, -EBADMSG, NULL, 0);
		target_free(t);
		return;
	}
	t->next = NULL;
	*lk->pending_tail = t;
	lk->pending_tail = &t->next;
}

/*
 * The message a chunk belongs to: chunks of one message come in order (one
 * link, the sender's ticket order).  NULL when the chunk is dropped: a piece
 * of a message whose start was lost (answered with -EPROTO if last), or no
 * memory.  *pp is where the message sits in the list.
 */
static struct reasm *reasm_for(struct agent_links *lk, uint32_t from, const struct proto_header *h,
			       const struct proto_chunk *c, bool last, struct reasm ***pp)
{
	struct reasm *r;

	for (*pp = &lk->reasm; **pp; *pp = &(**pp)->next)
		if ((**pp)->from == from && (**pp)->id == c->id)
			return **pp;
	if (c->offset != 0) {
		struct target_item t = {.from = from, .h = *h};

		lk->errors.count[PROTO_ERR_SIZE]++;
		if (last)
			answer(lk, &t, -EPROTO, NULL, 0);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	*r = (struct reasm){.from = from, .id = c->id, .total = c->total, .next = lk->reasm};
	if (c->total > AGENT_REMOTE_MAX || lk->reasm_bytes + c->total > LINK_REASM_MAX)
		r->status = -EMSGSIZE;
	else if (!(r->t = malloc(sizeof(*r->t) + c->total)))
		r->status = -ENOMEM;
	else {
		*r->t = (struct target_item){.from = from};
		lk->reasm_bytes += c->total;
	}
	lk->reasm = r;
	*pp = &lk->reasm;
	return r;
}

/*
 * The last chunk is in: the message becomes a request like any other, with
 * its own header (mode, answer), queued now so it keeps its place among its
 * port's items even while rma reads still fill it.  A message that cannot be
 * put together is answered with the error.
 */
static void reasm_last(struct agent_links *lk, struct reasm *r, struct reasm **pp, uint32_t from,
		       const struct proto_header *h)
{
	struct target_item *t = r->t;

	*pp = r->next;
	lk->reasm_bytes -= t ? r->total : 0;
	if (r->status && (!t || !t->reads_left)) {
		struct target_item err = {.from = from, .h = *h};

		lk->peers[from].stats.last_error = r->status;
		answer(lk, &err, r->status, NULL, 0);
		free(t);
	} else {
		uint32_t reads_left = t->reads_left;

		*t = (struct target_item){.from = from,
					  .h = *h,
					  .len = r->total,
					  .reads_left = reads_left,
					  .read_status = r->status ? r->status : t->read_status};
		queue_request(lk, t);
	}
	free(r);
}

/* A chunk of a large p2p SENDMSG: appended to its message. */
static void take_chunk(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		       const struct proto_chunk *c, const uint8_t *data, size_t len)
{
	bool last = c->offset + len == c->total;
	struct reasm **pp, *r = reasm_for(lk, from, h, c, last, &pp);

	if (!r)
		return;
	if (!r->status && (c->offset != r->got || c->total != r->total))
		r->status = -EPROTO;
	if (!r->status) {
		memcpy(r->t->data + c->offset, data, len);
		r->got += len;
	}
	if (last)
		reasm_last(lk, r, pp, from, h);
}

/* Tells the sender its chunk at addr was read (or will never be): it may reuse the slot. */
static void rma_done(struct agent_links *lk, uint32_t to, uint64_t port, uint64_t addr, int status)
{
	struct proto_header h = {.type = PROTO_ACK, .protocol = PROTO_RMA, .port = port};
	uint8_t done[PROTO_RMA_DONE_SIZE];
	int32_t s = status;
	int rc;

	memcpy(done, &s, 4);
	memcpy(done + 4, &addr, 8);
	rc = tx_item(lk, to, h, done, sizeof(done), LINK_NO_TOKEN, FLOW_INJECTION, 0);
	if (rc && rc != -EINPROGRESS && rc != -EHOSTDOWN)
		agent_logf(&lk->cfg.log, "could not tell rank %u a chunk was read: %s", to, strerror(-rc));
}

/* Posts one READ: 0, or -EAGAIN when core or the ejection cap has no room now. */
static int read_post(struct agent_links *lk, struct rma_read *rd)
{
	int rc;

	if (!flow_fits(&lk->flow[FLOW_EJECTION], rd->rma.len))
		return -EAGAIN;
	rc = core_read(lk->ep, lk->peers[rd->from].core_peer, rd->t->data + rd->offset, rd->rma.len,
		       rd->rma.addr, rd->rma.rkey, rd);
	if (!rc)
		flow_take(&lk->flow[FLOW_EJECTION], rd->rma.len);
	return rc;
}

/* A READ is over (status 0: done, else a negative errno): the sender gets its slot back. */
static void read_finish(struct agent_links *lk, struct rma_read *rd, int status)
{
	struct target_item *t = rd->t;

	if (status)
		t->read_status = status;
	if (rd->epoch == lk->peers[rd->from].epoch && lk->peers[rd->from].up)
		rma_done(lk, rd->from, rd->port, rd->rma.addr, status);
	if (--t->reads_left == 0 && t->orphan)
		free(t);
	free(rd);
}

/* Posts the READs that waited, in order, while there is room. */
static int reads_progress(struct agent_links *lk)
{
	int n = 0;

	while (lk->reads_waiting) {
		struct rma_read *rd = lk->reads_waiting;
		int rc = read_post(lk, rd);

		if (rc == -EAGAIN)
			break;
		lk->reads_waiting = rd->next;
		if (!lk->reads_waiting)
			lk->reads_tail = &lk->reads_waiting;
		if (rc)
			read_finish(lk, rd, rc); /* not posted: its message fails */
		n++;
	}
	return n;
}

/* A READ finished: the sender may reuse its slot; the message may now be complete. */
static void read_complete(struct agent_links *lk, struct rma_read *rd, const struct core_cqe *e)
{
	int status = e->status == IBV_WC_SUCCESS && !e->err ? 0 : e->err ? e->err : -EIO;

	if (rd->board) {
		steal_complete(lk, rd, status);
		return;
	}
	flow_give(&lk->flow[FLOW_EJECTION], rd->rma.len);
	read_finish(lk, rd, status);
}

/*
 * Stealing (core/agent/steal.h).  Ranks of one node: rank / siblings is the
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

static void steal_open(struct agent_links *lk)
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
		read_finish(lk, rd, -EHOSTDOWN);
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
			if (!status)
				memcpy(rd->t->data + rd->offset, data, rd->rma.len);
			steal_release(lk->board, k);
		}
		if (st == 1 && !status) {
			lk->stolen++;
			read_finish(lk, rd, 0);
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

static bool offered_any(const struct agent_links *lk)
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

	if (offered_any(lk))
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
static void steal_complete(struct agent_links *lk, struct rma_read *rd, int status)
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

static int steal_pass(struct agent_links *lk, uint64_t now)
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
		work += reads_progress(lk);
	if (lk->reads_waiting)
		work += offer_backlog(lk, now);
	return work + steal_progress(lk);
}

/* Owner, its link to rank down: offered READs nobody took are dropped with it (drop_reads). */
static void drop_offered(struct agent_links *lk, uint32_t from, bool all)
{
	for (int k = 0; lk->board && k < STEAL_SLOTS; k++) {
		struct rma_read *rd = lk->offered[k];

		if (!rd || (!all && rd->from != from) || (!all && !steal_reclaim(lk->board, k)))
			continue; /* one a sibling reads comes back and is answered to nobody (read_finish) */
		lk->offered[k] = NULL;
		rd->t->read_status = -EHOSTDOWN;
		if (--rd->t->reads_left == 0 && rd->t->orphan)
			free(rd->t);
		free(rd);
	}
}

/* A chunk of a large rma SENDMSG: read from the sender's buffer straight into its message. */
static void take_rma(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		     const struct proto_chunk *c, const struct proto_rma *rma)
{
	bool last = c->offset + rma->len == c->total;
	struct reasm **pp, *r = reasm_for(lk, from, h, c, last, &pp);
	struct rma_read *rd;

	if (!r) {
		rma_done(lk, from, h->port, rma->addr, -EPROTO);
		return;
	}
	if (!r->status && (c->offset != r->got || c->total != r->total))
		r->status = -EPROTO;
	rd = r->status ? NULL : malloc(sizeof(*rd));
	if (!rd) {
		r->status = r->status ? r->status : -ENOMEM;
		rma_done(lk, from, h->port, rma->addr, r->status);
	} else {
		*rd = (struct rma_read){.t = r->t,
					.from = from,
					.epoch = lk->peers[from].epoch,
					.offset = c->offset,
					.port = h->port,
					.rma = *rma};
		r->got += rma->len;
		r->t->reads_left++;
		if (lk->reads_waiting || read_post(lk, rd)) { /* in order behind the others */
			*lk->reads_tail = rd;
			lk->reads_tail = &rd->next;
		}
	}
	if (last)
		reasm_last(lk, r, pp, from, h);
}

/* The target read our chunk at the address in body: its slot is free again. */
static void take_read_done(struct agent_links *lk, uint32_t from, const uint8_t *body)
{
	int32_t status;
	uint64_t addr;

	memcpy(&status, body, 4);
	memcpy(&addr, body + 4, 8);
	if (pool_give_slot(&lk->pool, addr, from)) {
		lk->errors.count[PROTO_ERR_RESPONSE]++;
		return;
	}
	flow_give(&lk->flow[FLOW_INJECTION], lk->pool.slot_size);
	if (status < 0)
		lk->peers[from].stats.last_error = status;
}

/* A request item from a peer: to the queue of requests, in arrival order. */
static void take_request(struct agent_links *lk, uint32_t from, const struct proto_header *h,
			 const uint8_t *payload, size_t payload_len)
{
	struct proto_chunk c;
	struct target_item *t;

	if ((h->type == PROTO_POLL && payload_len) ||
	    (h->type == PROTO_GETMSG && payload_len != 0 && payload_len != 8) ||
	    (h->port >> 32) >= PORT_BINDINGS) {
		lk->errors.count[PROTO_ERR_CONNECT]++;
		return;
	}
	if (h->type == PROTO_SENDMSG && h->protocol == PROTO_RMA) {
		struct proto_rma rma;

		if (!proto_rma_decode(payload, payload_len, &c, &rma, &lk->errors))
			take_rma(lk, from, h, &c, &rma);
		return;
	}
	if (h->type == PROTO_SENDMSG && h->protocol == PROTO_P2P) {
		if (proto_chunk_decode(payload, payload_len, &c, &lk->errors))
			return;
		payload += PROTO_CHUNK_SIZE;
		payload_len -= PROTO_CHUNK_SIZE;
		if (c.offset != 0 || c.total != payload_len) {
			take_chunk(lk, from, h, &c, payload, payload_len);
			return;
		}
	}
	t = malloc(sizeof(*t) + payload_len);
	if (!t)
		return;
	*t = (struct target_item){.from = from, .h = *h, .len = payload_len};
	if (payload_len)
		memcpy(t->data, payload, payload_len);
	queue_request(lk, t);
}

static void take_connect(struct agent_links *lk, uint32_t from, const struct proto_header *h,
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

/* A chunk of a GETMSG answer larger than a slot: chunks come in order; the last one finishes the request. */
static void take_answer_chunk(struct agent_links *lk, uint32_t idx, const uint8_t *body, size_t len)
{
	struct origin *o = &lk->origins[idx];
	struct proto_chunk c;

	if (proto_chunk_decode(body, len, &c, &lk->errors)) {
		finish_origin(lk, idx, -EPROTO, NULL, 0);
		return;
	}
	len -= PROTO_CHUNK_SIZE;
	if (c.offset == 0 && !o->answer) {
		if (c.total > AGENT_REMOTE_MAX || !(o->answer = malloc(c.total))) {
			finish_origin(lk, idx, c.total > AGENT_REMOTE_MAX ? -EPROTO : -ENOMEM, NULL, 0);
			return;
		}
		o->answer_total = c.total;
		o->answer_got = 0;
	}
	if (!o->answer || c.offset != o->answer_got || c.total != o->answer_total) {
		lk->errors.count[PROTO_ERR_RESPONSE]++;
		finish_origin(lk, idx, -EPROTO, NULL, 0);
		return;
	}
	memcpy(o->answer + c.offset, body + PROTO_CHUNK_SIZE, len);
	o->answer_got += len;
	if (o->answer_got == o->answer_total)
		finish_origin(lk, idx, 0, o->answer, (size_t)o->answer_total);
}

static void take_answer(struct agent_links *lk, uint32_t from, const struct proto_header *h,
			const uint8_t *body, size_t len)
{
	uint32_t idx = (uint32_t)(h->port & 0xffff);
	uint16_t gen = (uint16_t)(h->port >> 16);
	struct origin *o;
	int32_t status;

	if (h->type == PROTO_ACK && h->protocol == PROTO_RMA && len == PROTO_RMA_DONE_SIZE) {
		take_read_done(lk, from, body);
		return;
	}
	if (idx >= LINK_ORIGIN_MAX || len < 4) {
		lk->errors.count[PROTO_ERR_RESPONSE]++;
		return;
	}
	o = &lk->origins[idx];
	/* Only the answer to a request of ours in flight to that very peer. */
	if (!o->used || o->gen != gen || o->node != from || h->type != o->op + PROTO_ACK)
		return;
	memcpy(&status, body, 4);
	if (status > 0 || status < -4095)
		status = -EPROTO;
	if (h->type == PROTO_DATA && h->protocol == PROTO_P2P && h->mode == PROTO_MODE_CHUNKED) {
		take_answer_chunk(lk, idx, body + 4, len - 4);
		return;
	}
	if (h->type == PROTO_STATE) {
		struct chan_state st = {0};
		uint32_t count;
		uint64_t bytes;

		if (len != STATE_LEN) {
			lk->errors.count[PROTO_ERR_RESPONSE]++;
			finish_origin(lk, idx, -EPROTO, NULL, 0);
			return;
		}
		memcpy(&count, body + 4, 4);
		memcpy(&bytes, body + 8, 8);
		st.count = count;
		st.bytes = bytes;
		st.empty = body[16] & 1;
		st.full = (body[16] >> 1) & 1;
		finish_origin(lk, idx, status, &st, sizeof(st));
		return;
	}
	finish_origin(lk, idx, status, body + 4, h->type == PROTO_DATA ? len - 4 : 0);
}

static void take_item(struct agent_links *lk, uint32_t from, const struct proto_header *h,
		      const uint8_t *body, size_t len)
{
	if (h->type == PROTO_CONNECT)
		take_connect(lk, from, h, body, len);
	else if (h->type <= PROTO_POLL)
		take_request(lk, from, h, body, len);
	else
		take_answer(lk, from, h, body, len);
}

struct take_ctx {
	struct agent_links *lk;
	uint32_t from;
};

static void take_parsed(void *arg, const struct proto_header *h, const uint8_t *data, size_t len)
{
	struct take_ctx *ctx = arg;
	struct link_peer *p = &ctx->lk->peers[ctx->from];

	p->stats.msgs_recv++;
	p->stats.bytes_recv += PROTO_HEADER_SIZE + len;
	take_item(ctx->lk, ctx->from, h, data, len);
}

/* A message from a peer: an eager buffer of items, or one large frame (checked by proto_parse). */
static void take_message(struct agent_links *lk, uint32_t core_peer, const uint8_t *buf, size_t len,
			 bool large)
{
	struct take_ctx ctx = {.lk = lk};

	for (ctx.from = 0; ctx.from < lk->cfg.nodes; ctx.from++)
		if (lk->peers[ctx.from].up && lk->peers[ctx.from].core_peer == core_peer)
			break;
	if (ctx.from == lk->cfg.nodes)
		return; /* not from a peer we know: dropped */
	if (!large)
		lk->peers[ctx.from].stats.buffers_recv++;
	proto_parse(buf, len, large, take_parsed, &ctx, &lk->errors);
}

/* Peers: accept and dial, and notice a peer's OOB connection closing (how its death shows). */
static int connect_peers(struct agent_links *lk)
{
	uint64_t now = clock_ns();
	struct oob_conn *c;
	int n = 0;

	while (oob_accept(lk->listener, 0, &c) == 0) {
		peer_join(lk, c, -1);
		n++;
	}
	for (uint32_t r = 0; r < lk->cfg.rank; r++) {
		struct link_peer *p = &lk->peers[r];
		char addr[GW_HOST_LEN + 16];

		if (p->up || now < p->next_try_ns || same_node(lk, r, lk->cfg.rank))
			continue;
		p->next_try_ns = now + LINK_RETRY_NS;
		peer_addr(lk, r, addr, sizeof(addr));
		if (oob_connect(addr, 20, &c) == 0) {
			peer_join(lk, c, (int32_t)r);
			n++;
		}
	}
	for (uint32_t r = 0; r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];
		struct pollfd pfd;

		if (!p->up)
			continue;
		pfd = (struct pollfd){.fd = oob_conn_fd(p->oob), .events = POLLIN};
		if (poll(&pfd, 1, 0) == 1) {
			peer_down(lk, r, "its connection closed");
			n++;
		}
	}
	return n;
}

static void send_done(struct agent_links *lk, struct unit *u, const struct core_cqe *e)
{
	struct link_peer *p = &lk->peers[u->rank];

	unit_release(lk, u);
	if (u->orphan) {
		unit_free(lk, u);
		return;
	}
	if (u->rndv)
		p->rndv_out--;
	else
		p->eager_out--;
	if (u->kind == UNIT_LARGE)
		unit_free(lk, u);
	else
		((struct txbuf *)u)->busy = false;
	if (e->status != IBV_WC_SUCCESS || e->err)
		p->stats.last_error = e->err ? e->err : -EIO;
}

/* Reads one received message (if it came whole) and posts its receive again. */
static void rx_done(struct agent_links *lk, uint32_t core_peer, uint8_t *buf, size_t len, bool large, bool ok)
{
	if (ok)
		take_message(lk, core_peer, buf, len, large);
	if (large)
		flow_give(&lk->flow[FLOW_EJECTION], LINK_LARGE_MAX);
	if (rx_post(lk, buf, large))
		agent_logf(&lk->cfg.log, "could not repost a receive buffer");
}

/* Receives held for a peer go back to the device unread (the peer went down or joined again). */
static void drop_held(struct agent_links *lk, uint32_t rank)
{
	struct link_peer *p = &lk->peers[rank];

	while (p->held) {
		struct held *h = p->held;

		p->held = h->next;
		rx_done(lk, 0, h->buf, 0, h->large, false);
		free(h);
	}
	p->rx_next = 0;
}

/* A completed receive: read in the order its peer sent it (the sequence number in its tag). */
static void rx_complete(struct agent_links *lk, const struct core_cqe *e)
{
	bool large = (e->tag & LINK_TAG_KIND) == LINK_TAG_LARGE;
	/* A message longer than the buffer was cut: never read past the buffer. */
	bool ok =
	    e->status == IBV_WC_SUCCESS && !e->err && e->len <= (large ? LINK_LARGE_MAX : PROTO_EAGER_BUFFER);
	uint64_t seq = e->tag >> LINK_TAG_SEQ_SHIFT;
	struct link_peer *p = NULL;

	for (uint32_t r = 0; r < lk->cfg.nodes && !p && e->status == IBV_WC_SUCCESS; r++)
		if (lk->peers[r].up && lk->peers[r].core_peer == e->peer)
			p = &lk->peers[r];
	if (!p) {
		rx_done(lk, e->peer, e->context, e->len, large, false);
		return;
	}
	if (seq != p->rx_next) {
		struct held *h = malloc(sizeof(*h));

		if (h) {
			*h = (struct held){.next = p->held,
					   .seq = seq,
					   .buf = e->context,
					   .len = e->len,
					   .large = large,
					   .ok = ok};
			p->held = h;
			return;
		}
		lk->errors.count[PROTO_ERR_TRUNCATED]++; /* no memory to wait: read out of order */
	}
	rx_done(lk, e->peer, e->context, e->len, large, ok);
	p->rx_next = seq + 1;
	for (struct held **pp = &p->held; *pp;) {
		struct held *h = *pp;

		if (h->seq != p->rx_next) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		rx_done(lk, e->peer, h->buf, h->len, h->large, h->ok);
		p->rx_next++;
		free(h);
		pp = &p->held; /* the next one may sit anywhere in the list */
	}
}

int links_progress(struct agent_links *lk)
{
	struct core_cqe e[16];
	uint64_t now = clock_ns();
	int n, work = 0;

	/* Accepting and the death checks are system calls: not on every pass of a busy loop. */
	if (now >= lk->next_oob_check_ns) {
		lk->next_oob_check_ns = now + LINK_OOB_CHECK_NS;
		work += connect_peers(lk);
	}
	while ((n = core_cq_read(lk->ep, e, 16)) > 0) {
		work += n;
		for (int i = 0; i < n; i++) {
			if (e[i].flags & CORE_CQE_RECV)
				rx_complete(lk, &e[i]);
			else if ((e[i].flags & CORE_CQE_SEND) && e[i].context)
				send_done(lk, e[i].context, &e[i]);
			else if ((e[i].flags & CORE_CQE_READ) && e[i].context)
				read_complete(lk, e[i].context, &e[i]);
		}
	}
	if (lk->reads_waiting)
		work += reads_progress(lk);
	work += steal_pass(lk, now);
	if (lk->pending)
		serve_pending(lk);
	return work + tx_progress(lk);
}

int links_tx_pass(struct agent_links *lk)
{
	return tx_progress(lk);
}

int links_post(struct agent_links *lk)
{
	for (uint32_t r = 0; r < lk->cfg.nodes; r++)
		if (lk->peers[r].up && lone_on_idle_link(&lk->peers[r]))
			close_open(&lk->peers[r]);
	return tx_post(lk);
}

bool links_can_inject(struct agent_links *lk)
{
	return flow_fits(&lk->flow[FLOW_INJECTION], LINK_LARGE_MAX) && (!lk->rma || lk->pool.nfree > 0);
}

void links_agent_stats(struct agent_links *lk, struct gw_agent_stats *out)
{
	struct core_mr_cache_stats mr;

	core_mr_cache_stats(lk->ep, &mr);
	*out = (struct gw_agent_stats){.pool_bytes = lk->pool.len,
				       .pool_slots = lk->pool.nslots,
				       .slots_in_use = lk->pool.nslots - lk->pool.nfree,
				       .slots_hwm = lk->pool.slots_hwm,
				       .hugepages = lk->pool.huge,
				       .hugepages_asked = lk->pool.huge_asked,
				       .tx_buffers = lk->pool.tx.n,
				       .tx_hwm = lk->pool.tx.hwm,
				       .frames = lk->pool.frames.n,
				       .frames_hwm = lk->pool.frames.hwm,
				       .fallbacks = lk->pool.tx.fallbacks + lk->pool.frames.fallbacks,
				       .registrations = mr.misses,
				       .registered_now = mr.entries,
				       .steals = lk->steals,
				       .steal_bytes = lk->steal_bytes,
				       .stolen = lk->stolen};
}

void links_flow_stats(struct agent_links *lk, struct flow_gauge out[FLOW_NKINDS])
{
	memcpy(out, lk->flow, sizeof(lk->flow));
}

bool links_idle(struct agent_links *lk)
{
	for (uint32_t r = 0; r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		if (p->up && ((p->open && p->open->agg.items) || p->post_head || p->wait_head))
			return false;
	}
	return true;
}

int links_sleep_prepare(struct agent_links *lk, struct pollfd *fds, int max, int *timeout_ms)
{
	int n = 0, fd = core_cq_arm(lk->ep);

	/* A completion that landed before the arming raised no event: look once more. */
	if (fd < 0 || links_progress(lk) || !links_idle(lk))
		return -EAGAIN;
	core_cq_arm(lk->ep); /* looking may have told the device we drive it: it must watch the wire again */
	fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
	if (n < max)
		fds[n++] = (struct pollfd){.fd = oob_listener_fd(lk->listener), .events = POLLIN};
	for (uint32_t r = 0; r < lk->cfg.nodes && n < max; r++)
		if (lk->peers[r].up)
			fds[n++] = (struct pollfd){.fd = oob_conn_fd(lk->peers[r].oob), .events = POLLIN};
	/* Requests waiting for their channel are tried again, and peers that are down dialled again. */
	if ((lk->pending || lk->stealing || offered_any(lk)) && (*timeout_ms < 0 || *timeout_ms > 1))
		*timeout_ms = 1;
	for (uint32_t r = 0; r < lk->cfg.rank; r++)
		if (!lk->peers[r].up && !same_node(lk, r, lk->cfg.rank) &&
		    (*timeout_ms < 0 || *timeout_ms > (int)(LINK_RETRY_NS / 1000000)))
			*timeout_ms = (int)(LINK_RETRY_NS / 1000000);
	return n;
}

void links_sleep_end(struct agent_links *lk, const struct pollfd *fds, int n)
{
	core_cq_ack_events(lk->ep);
	/* The listener or a peer's connection has news: look at the peers on the next pass. */
	for (int i = 1; i < n; i++)
		if (fds[i].revents)
			lk->next_oob_check_ns = 0;
}
