/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The links' out-of-band handshake: ranks, the key's proof, endpoint addresses (link_impl.h). */
#include "core/agent/link_impl.h"

#define LINK_HELLO     0x4148 /* OOB frame types of the handshake */
#define LINK_CHALLENGE 0x4143
#define LINK_PROOF     0x4150
#define NONCE_LEN      16

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

#define LINK_MISMATCH                                                                                        \
	(-0x10000) /* link_handshake(): the key is proven, the agents per node differ (no errno) */

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
int link_handshake(struct agent_links *lk, struct oob_conn *c, int32_t dialing, uint32_t *node,
		   uint32_t *siblings)
{
	uint32_t n = lk->cfg.siblings ? lk->cfg.siblings : 1, me = lk->cfg.rank / n,
		 nodes = lk->cfg.nodes / n;
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
	    (hello.siblings == n &&
	     (hello.rank >= lk->cfg.nodes || hello.rank <= lk->cfg.rank || hello.rank / n != hello.node)))
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

/* The OOB connection is up: prove the key both ways, then exchange endpoint addresses. */
static void peer_join(struct agent_links *lk, struct oob_conn *c, int32_t dialing)
{
	uint32_t node = 0, siblings = 0;
	int theirs = link_handshake(lk, c, dialing, &node, &siblings), rc = theirs < 0 ? theirs : 0;
	char name[32];

	if (theirs == LINK_MISMATCH) {
		link_peer_mismatch(lk, node, siblings);
		oob_close(c);
		return;
	}
	if (!rc)
		lk->peers[theirs].stats.agents_per_node = siblings;
	if (!rc && lk->peers[theirs].up)
		link_peer_down(lk, (uint32_t)theirs, "it connected again");
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
		   link_peer_name(lk, (uint32_t)theirs, name, sizeof(name)), lk->cfg.hosts[theirs]);
}

/* Peers: accept and dial, and notice a peer's OOB connection closing (how its death shows). */
int link_connect_peers(struct agent_links *lk)
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
		link_peer_addr(lk, r, addr, sizeof(addr));
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
			link_peer_down(lk, r, "its connection closed");
			n++;
		}
	}
	return n;
}
