/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The links' out-of-band handshake: ranks, the key's proof, endpoint addresses (link_impl.h). */
#include "core/agent/link/link_impl.h"

#define LINK_HELLO     0x4148 /* OOB frame types of the handshake */
#define LINK_CHALLENGE 0x4143
#define LINK_PROOF     0x4150

/*
 * Both sides say their node rank and how many agents their node runs: link
 * ranks are virtual (node x agents per node + sibling), so two nodes that
 * disagree on the count disagree on every rank but the node's own.  The
 * count is checked after the key is proven (an outsider cannot mark a node
 * mismatched), and a mismatch is a state of the peer node, not a retry loop.
 */
struct challenge {
	uint32_t rank, node, siblings;
	uint8_t nonce[NONCE_LEN];
	uint8_t mac[32];
};

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

/*
 * Mutual proof of the key before anything else: the dialer sends its rank
 * and a nonce (HELLO); the acceptor answers with its nonce and its proof
 * over the dialer's nonce (CHALLENGE); the dialer checks it and proves
 * itself over the acceptor's nonce (PROOF).
 *
 * None of it blocks the loop that moves data (issue 44 N2, N3): every
 * connection not yet proven is a struct handshake that advances one frame
 * at a time, only when its socket has data, each frame read with a few
 * milliseconds' deadline, and the whole within LINK_HS_NS; a connection
 * that is silent, slow or wrong is closed.  At most LINK_HS_MAX are kept:
 * a new one evicts the oldest accepted one, so strangers cannot queue ahead
 * of a real peer.  Only a proven peer gets the (blocking, short) exchange
 * of endpoint addresses.
 */
#define LINK_HS_NS	 1000000000ull /* an unproven connection's whole handshake */
#define LINK_HS_READ_MS	 5	       /* one handshake frame, once its first bytes are there */
#define LINK_HS_LOG_NS	 1000000000ull /* strangers are logged at most once a second */
#define LINK_HS_MISMATCH 1	       /* hs_step: proven, but the agents per node differ */

/* Checks the acceptor's CHALLENGE and sends our PROOF: the peer's rank, LINK_MISMATCH-style 1, or -errno. */
static int hs_dialer_step(struct agent_links *lk, struct handshake *hs, const void *frame, uint16_t type,
			  uint32_t len)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1;
	uint32_t dialing = (uint32_t)hs->dialing;
	struct challenge ch;
	uint8_t mac[32], expect[32];
	int rc;

	if (type != LINK_CHALLENGE || len != sizeof(ch))
		return -EPROTO;
	memcpy(&ch, frame, sizeof(ch));
	if (ch.node != dialing / n || (ch.siblings == n && ch.rank != dialing))
		return -EPROTO;
	proof(lk, 'A', ch.rank, lk->cfg.rank, ch.siblings, n, hs->hello.nonce, expect);
	if (!secret_equal(ch.mac, expect, sizeof(expect)))
		return -EACCES;
	proof(lk, 'D', lk->cfg.rank, ch.rank, n, ch.siblings, ch.nonce, mac);
	rc = oob_send_timeout(hs->c, LINK_PROOF, mac, sizeof(mac), LINK_HS_READ_MS);
	hs->node = ch.node;
	hs->siblings = ch.siblings;
	return rc ? rc : ch.siblings != n ? LINK_HS_MISMATCH : 0;
}

/* The acceptor: a HELLO gets our CHALLENGE (0: wait for the PROOF), a PROOF is checked (0 or -errno). */
static int hs_acceptor_step(struct agent_links *lk, struct handshake *hs, const void *frame, uint16_t type,
			    uint32_t len)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1, me = lk->cfg.rank / n,
		 nodes = lk->cfg.nodes / n;
	struct hello *hello = &hs->hello;
	struct challenge ch;
	uint8_t expect[32];

	if (hs->state == HS_WAIT_HELLO) {
		if (type != LINK_HELLO || len != sizeof(*hello))
			return -EPROTO;
		memcpy(hello, frame, sizeof(*hello));
		/* Only higher ranks dial us (when the counts agree: else only another node). */
		if (hello->node >= nodes || hello->node == me || hello->siblings == 0 ||
		    hello->siblings > AGENT_SIBLINGS_MAX ||
		    (hello->siblings == n && (hello->rank >= lk->cfg.nodes || hello->rank <= lk->cfg.rank ||
					      hello->rank / n != hello->node)))
			return -EPROTO;
		ch.rank = lk->cfg.rank;
		ch.node = me;
		ch.siblings = n;
		if (getrandom(ch.nonce, NONCE_LEN, 0) != NONCE_LEN)
			return -EIO;
		memcpy(hs->nonce, ch.nonce, NONCE_LEN);
		proof(lk, 'A', lk->cfg.rank, hello->rank, n, hello->siblings, hello->nonce, ch.mac);
		hs->state = HS_WAIT_PROOF;
		return oob_send_timeout(hs->c, LINK_CHALLENGE, &ch, sizeof(ch), LINK_HS_READ_MS);
	}
	proof(lk, 'D', hello->rank, lk->cfg.rank, hello->siblings, n, hs->nonce, expect);
	if (type != LINK_PROOF || len != sizeof(expect) || !secret_equal(frame, expect, sizeof(expect)))
		return -EACCES;
	hs->node = hello->node;
	hs->siblings = hello->siblings;
	hs->dialing = (int32_t)hello->rank;
	return hello->siblings != n ? LINK_HS_MISMATCH : 0;
}

/*
 * A node whose agents per node differ from ours: every link rank of it is
 * marked (requests to it fail at once with -EBADE, agent status says
 * "mismatch" and its count), and the log names both nodes and counts once.
 */
void link_peer_mismatch(struct agent_links *lk, uint32_t node, uint32_t theirs)
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
		agent_logf(
		    &lk->cfg.log,
		    "node %u (%s) runs %u agent(s) per node but this node (%u) runs %u: no link to it; "
		    "start every node with the same --agents-per-node",
		    node, lk->cfg.hosts[node * n], theirs, lk->cfg.rank / n, n);
}

/* A proven peer: the node's count checked, then endpoint addresses exchanged, and the link is up. */
static void peer_join(struct agent_links *lk, struct oob_conn *c, uint32_t theirs, uint32_t node,
		      uint32_t siblings, bool mismatch)
{
	char name[32];
	int rc;

	if (mismatch) {
		link_peer_mismatch(lk, node, siblings);
		oob_close(c);
		return;
	}
	lk->peers[theirs].stats.agents_per_node = siblings;
	if (lk->peers[theirs].up)
		link_peer_down(lk, theirs, "it connected again");
	rc = core_ep_connect_oob(lk->ep, c, &lk->peers[theirs].core_peer);
	if (rc) {
		agent_logf(&lk->cfg.log, "a peer agent failed to join: %s", strerror(-rc));
		oob_close(c);
		return;
	}
	lk->peers[theirs].oob = c;
	lk->peers[theirs].up = true;
	agent_logf(&lk->cfg.log, "link to rank %s (%s) up", link_peer_name(lk, theirs, name, sizeof(name)),
		   lk->cfg.hosts[theirs]);
}

/* Ends a handshake: closes its connection unless it became a link; why: a failure to log (rate-limited). */
static void hs_end(struct agent_links *lk, struct handshake *hs, int why)
{
	uint64_t *next = &lk->hs_log_ns[why == -EACCES]; /* key failures have their own budget */

	if (why && clock_ns() >= *next) {
		*next = clock_ns() + LINK_HS_LOG_NS;
		agent_logf(&lk->cfg.log, "a connection %s failed its handshake: %s; closed",
			   hs->dialing >= 0 && hs->state == HS_WAIT_CHALLENGE ? "we dialled" : "to our port",
			   why == -EACCES      ? "it does not hold this user's agent key"
			   : why == -ETIMEDOUT ? "it did not finish within 1 s"
					       : strerror(-why));
	}
	if (hs->c)
		oob_close(hs->c);
	*hs = (struct handshake){0};
}

/* A new connection to prove: dialled (dialing >= 0, our HELLO sent) or accepted. */
static void hs_add(struct agent_links *lk, struct oob_conn *c, int32_t dialing, const struct hello *hello)
{
	struct handshake *slot = NULL, *oldest = NULL;

	for (int i = 0; i < LINK_HS_MAX && !slot; i++) {
		struct handshake *hs = &lk->hs[i];

		if (!hs->c)
			slot = hs;
		else if (hs->state != HS_WAIT_CHALLENGE && (!oldest || hs->deadline_ns < oldest->deadline_ns))
			oldest = hs;
	}
	if (!slot && !oldest) {
		oob_close(c);
		return;
	}
	if (!slot) {
		hs_end(lk, oldest, -EBUSY); /* strangers do not hold the table against a real peer */
		slot = oldest;
	}
	*slot = (struct handshake){.c = c,
				   .dialing = dialing,
				   .state = dialing >= 0 ? HS_WAIT_CHALLENGE : HS_WAIT_HELLO,
				   .deadline_ns = clock_ns() + LINK_HS_NS};
	if (hello)
		slot->hello = *hello;
}

/* One frame of a handshake whose socket is readable. */
static void hs_step(struct agent_links *lk, struct handshake *hs)
{
	uint8_t frame[sizeof(struct challenge)];
	uint16_t type;
	uint32_t len;
	int rc = oob_recv(hs->c, &type, frame, sizeof(frame), &len, LINK_HS_READ_MS);

	if (!rc)
		rc = hs->state == HS_WAIT_CHALLENGE ? hs_dialer_step(lk, hs, frame, type, len)
						    : hs_acceptor_step(lk, hs, frame, type, len);
	if (rc < 0) {
		hs_end(lk, hs, rc == -ECONNRESET ? 0 : rc); /* a peer that hung up has nothing to log */
		return;
	}
	if (hs->state == HS_WAIT_PROOF && type != LINK_PROOF)
		return; /* our CHALLENGE went out: the PROOF comes next */
	/* Proven: the connection becomes the peer's link. */
	struct oob_conn *c = hs->c;

	hs->c = NULL;
	peer_join(lk, c, (uint32_t)hs->dialing, hs->node, hs->siblings, rc == LINK_HS_MISMATCH);
	*hs = (struct handshake){0};
}

static bool dial_pending(const struct agent_links *lk, uint32_t r)
{
	for (int i = 0; i < LINK_HS_MAX; i++)
		if (lk->hs[i].c && lk->hs[i].state == HS_WAIT_CHALLENGE && lk->hs[i].dialing == (int32_t)r)
			return true;
	return false;
}

/* Dials rank r and sends our HELLO; the answer is awaited as a handshake. */
static void dial(struct agent_links *lk, uint32_t r)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1;
	char addr[GW_HOST_LEN + 16];
	struct hello hello = {.rank = lk->cfg.rank, .node = lk->cfg.rank / n, .siblings = n};
	struct oob_conn *c;

	link_peer_addr(lk, r, addr, sizeof(addr));
	if (oob_connect(addr, 20, &c))
		return;
	if (getrandom(hello.nonce, NONCE_LEN, 0) != NONCE_LEN ||
	    oob_send_timeout(c, LINK_HELLO, &hello, sizeof(hello), LINK_HS_READ_MS)) {
		oob_close(c);
		return;
	}
	hs_add(lk, c, (int32_t)r, &hello);
}

bool link_handshakes_pending(const struct agent_links *lk)
{
	for (int i = 0; i < LINK_HS_MAX; i++)
		if (lk->hs[i].c)
			return true;
	return false;
}

int link_handshake_fds(const struct agent_links *lk, struct pollfd *fds, int max)
{
	int n = 0;

	for (int i = 0; i < LINK_HS_MAX && n < max; i++)
		if (lk->hs[i].c)
			fds[n++] = (struct pollfd){.fd = oob_conn_fd(lk->hs[i].c), .events = POLLIN};
	return n;
}

void link_handshakes_close(struct agent_links *lk)
{
	for (int i = 0; i < LINK_HS_MAX; i++)
		if (lk->hs[i].c)
			hs_end(lk, &lk->hs[i], 0);
}

/* Peers: accept and dial, advance the handshakes, and notice a peer's OOB connection closing (its death). */
int link_connect_peers(struct agent_links *lk)
{
	uint64_t now = clock_ns();
	struct oob_conn *c;
	int n = 0;

	while (oob_accept(lk->listener, 0, &c) == 0) {
		hs_add(lk, c, -1, NULL);
		n++;
	}
	for (uint32_t r = 0; r < lk->cfg.rank; r++) {
		struct link_peer *p = &lk->peers[r];

		if (p->up || now < p->next_try_ns || same_node(lk, r, lk->cfg.rank) || dial_pending(lk, r))
			continue;
		p->next_try_ns = now + LINK_RETRY_NS;
		dial(lk, r);
		n++;
	}
	for (int i = 0; i < LINK_HS_MAX; i++) {
		struct handshake *hs = &lk->hs[i];
		struct pollfd pfd;

		if (!hs->c)
			continue;
		pfd = (struct pollfd){.fd = oob_conn_fd(hs->c), .events = POLLIN};
		if (poll(&pfd, 1, 0) == 1) {
			hs_step(lk, hs);
			n++;
		} else if (now >= hs->deadline_ns) {
			hs_end(lk, hs, -ETIMEDOUT);
		}
	}
	for (uint32_t r = 0; r < lk->cfg.nodes; r++) {
		struct link_peer *p = &lk->peers[r];
		struct pollfd pfd;

		if (!p->up)
			continue;
		pfd = (struct pollfd){.fd = oob_conn_fd(p->oob), .events = POLLIN};
		if (poll(&pfd, 1, 0) == 1) {
			link_peer_down(lk, r, "its connection closed");
			n++;
		}
	}
	return n;
}
