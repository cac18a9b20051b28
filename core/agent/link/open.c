/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Opening and closing an agent's links: the pool, the receives, the peers; a peer gone (link_impl.h). */
#include "core/agent/link/link_impl.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#define LINK_RX_MAX 128
#define LINK_RX_LARGE_MAX                                                                                    \
	32 /* posted receives for large frames, at most (the ejection cap may allow fewer) */
#define LINK_RMA_SLOTS_MIN 4 /* staging slots of the rma transport: the injection cap's worth */
#define LINK_RMA_SLOTS_MAX 4096
#define LINK_FRAMES_MIN	   4 /* pooled large frames: the GETMSG cap's worth (and p2p's injection cap's) */
#define LINK_FRAMES_MAX	   1024
#define LINK_HEAP_KEEP	   (256 << 20) /* freed heap the agent keeps for the next large messages */
#define LINK_MMAP_FROM	   (32 << 20)  /* allocations that still get a mapping of their own */

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

/* Under the smallest ejection cap (1 MiB) one large receive and one READ of a chunk must fit, or reads stall.
 */
_Static_assert(LINK_LARGE_MAX + PROTO_RMA_MAX <= (1u << 20), "a READ and a large receive exceed 1 MiB");
_Static_assert(STEAL_SLOT_MAX >= PROTO_RMA_MAX, "a stolen READ is a chunk");

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
	uint64_t frames =
	    (lk->cfg.caps.cap[FLOW_GETMSG] + (lk->rma ? 0 : lk->cfg.caps.cap[FLOW_INJECTION])) / GW_INLINE;
	struct pool_layout l = {
	    .rx_bytes = (size_t)lk->nrx * PROTO_EAGER_BUFFER + (size_t)lk->nlarge * LINK_LARGE_MAX,
	    .tx_size = sizeof(struct txbuf),
	    .ntx = lk->cfg.nodes * LINK_TX_BUFS * 2, /* a fresh set per peer while a dead link's drain */
	    .frame_size = sizeof(struct large) + LINK_LARGE_MAX,
	    .nframes = (uint32_t)(frames < LINK_FRAMES_MIN   ? LINK_FRAMES_MIN
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

/* The path the links take, as the endpoint was opened with it (perftest's -d, -i, -x, --sl, --mtu). */
static void log_path(const struct agent_links *lk)
{
	const struct agent_path *p = &lk->cfg.path;
	char mtu[16] = "the port's";

	if (p->mtu)
		snprintf(mtu, sizeof(mtu), "%d", 128 << p->mtu);
	agent_logf(&lk->cfg.log, "links on device %s, port %u, GID index %u, SL %u, MTU %s",
		   core_ep_device_name(lk->ep), p->port ? p->port : 1, p->gid_index, p->sl, mtu);
}

/*
 * Where the link port listens (issue 46 defect 6): the address given
 * (--bind), else our own --hosts entry, which peers dial, so the port is not
 * open on every interface and agents of one machine can share a port on
 * distinct addresses.  A name of ours that resolves to a loopback address
 * here (Debian maps the host name to 127.0.1.1) but is not itself a loopback
 * name could not be reached from other hosts: every address then, and the
 * log says so.
 */
static void listen_address(struct agent_links *lk, char *addr, size_t len)
{
	const struct link_config *cfg = &lk->cfg;
	unsigned port = cfg->ports && cfg->ports[cfg->rank] ? cfg->ports[cfg->rank] : LINK_DEFAULT_PORT;
	const char *host = cfg->bind ? cfg->bind : cfg->hosts[cfg->rank];
	struct sockaddr_storage ss;
	socklen_t sslen;
	char probe[GW_HOST_LEN + 16];
	bool v6 = strchr(host, ':') != NULL;

	snprintf(addr, len, v6 ? "[%s]:%u" : "%s:%u", host, port);
	if (cfg->bind)
		return;
	snprintf(probe, sizeof(probe), "%s:0", host);
	if (oob_parse_address(probe, &ss, &sslen) == 0) {
		bool loop = ss.ss_family == AF_INET
				? (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127
				: IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
		bool named_loop =
		    !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1");

		if (!loop || named_loop)
			return;
	}
	agent_logf(&cfg->log,
		   "listening on every address at port %u: this rank's host %s %s here, which other hosts "
		   "cannot reach (give --bind=ADDRESS to choose)",
		   port, host,
		   oob_parse_address(probe, &ss, &sslen) ? "does not resolve" : "is a loopback address");
	snprintf(addr, len, "0.0.0.0:%u", port);
}

/*
 * A peer went down (link_peer_down set its table entry): what every layer holds for it goes.
 * What waits to go out fails as not sent, held receives go back, it gets fresh eager buffers;
 * requests in flight to it end with outcome unknown; READs, offered READs, messages being put
 * together and requests from it are dropped.
 */
static void peer_gone(struct agent_links *lk, uint32_t rank)
{
	link_drop_waiting(lk, rank, -EHOSTDOWN);
	link_drop_held(lk, rank);
	if (link_peer_tx_init(lk, rank))
		agent_logf(&lk->cfg.log, "out of memory for the eager buffers of rank %u", rank);
	link_origins_down(lk, rank);
	link_drop_reads(lk, rank, false);
	link_drop_offered(lk, rank, false);
	link_drop_reasm(lk, rank, false);
	link_drop_pending(lk, rank);
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
	lk->peer_gone = peer_gone;
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
	listen_address(lk, addr, sizeof(addr));
	rc = oob_listen(addr, &lk->listener);
	if (rc) {
		snprintf(
		    why, whylen,
		    "cannot listen for other agents on %s: %s; give this rank a free port in --hosts (or an "
		    "address of this machine with --bind)%s",
		    addr, strerror(-rc),
		    lk->cfg.siblings > 1 ? " (agent S of a node listens on its port + S: keep those free too)"
					 : "");
		links_close(lk);
		return rc;
	}
	core_ep_attr_defaults(&attr);
	attr.name = "agent";
	attr.device = cfg->path.device;
	attr.port = cfg->path.port;
	attr.gid_index = cfg->path.gid_index;
	attr.sl = cfg->path.sl;
	attr.mtu = cfg->path.mtu;
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
		log_path(lk);
		lk->core_eager_max = core_ep_eager_max(lk->ep);
		rc = open_pool(lk, why, whylen);
	}
	if (rc) {
		links_close(lk);
		return rc;
	}
	lk->rx_pool = lk->pool.region;
	for (uint32_t r = 0; r < cfg->nodes; r++)
		if (link_peer_tx_init(lk, r)) { /* the eager send buffers: blocks of the pool */
			links_close(lk);
			return -ENOMEM;
		}
	link_steal_open(lk);
	for (int i = 0; !rc && i < lk->nrx + lk->nlarge; i++)
		rc = link_rx_post(lk, link_rx_buf(lk, i), i >= lk->nrx);
	if (rc) {
		snprintf(why, whylen, "cannot post the agent's receive buffers: %s", strerror(-rc));
		links_close(lk);
		return rc;
	}
	*out = lk;
	return 0;
}

void links_close(struct agent_links *lk)
{
	if (!lk)
		return;
	for (uint32_t i = 0; i < LINK_ORIGIN_MAX; i++)
		if (lk->origins[i].used)
			link_finish_origin(lk, i, -ESHUTDOWN, NULL, 0);
	for (uint32_t r = 0; lk->peers && r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		if (p->wait_tail)
			link_drop_waiting(lk, r, -ESHUTDOWN);
		if (p->oob)
			oob_close(p->oob);
		while (p->held) {
			struct held *h = p->held;

			p->held = h->next;
			free(h);
		}
	}
	link_drop_reads(lk, 0, true);
	link_drop_offered(lk, 0, true);
	while (lk->pending) {
		struct target_item *t = lk->pending;

		lk->pending = t->next;
		link_target_free(t); /* one a READ may still fill is left to the process's end */
	}
	link_drop_reasm(lk, 0, true);
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
						link_unit_free(lk, u);
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
				free(
				    p->tx[i]); /* one still busy is in flight: leaked rather than freed under
						  the NIC (the endpoint is closed: no registration is left) */
	}
	pool_close(&lk->pool); /* the receive and send buffers too */
	link_handshakes_close(lk);
	if (lk->listener)
		oob_listener_close(lk->listener);
	for (uint32_t r = 0; lk->peers && r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];

		free(p->bind_out);
		free(p->bind_in);
	}
	free(lk->peers);
	free(lk->scratch);
	free(lk->blocked);
	free(lk);
}
