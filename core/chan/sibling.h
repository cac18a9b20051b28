/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Several agents per node (`agent start --agents-per-node=N`): siblings that
 * act as one node.  Each is a process of its own with its own gateway, pid
 * file, log, link port and core endpoint; they share the node's rank.
 *
 * An agent id names one agent of a machine's agent directory: the node's
 * rank in the low 16 bits, the sibling number above.  Its files are named
 * after agent_id_text(): "R" for sibling 0 (as with one agent per node), "R.S"
 * for the others (gateway.0.1, agent.0.1.pid, agent.0.1.log).
 *
 * Between nodes, every agent links to every agent of the other nodes (not to
 * its siblings): sibling S of a node with base port P (its --hosts entry)
 * listens on P + S, and link ranks are virtual, rank x N + S.  A port's
 * traffic to node B always goes from sibling S to sibling S of B (its rail),
 * so per-port order holds on one link; the links across rails carry the
 * large-message READs siblings steal from each other (core/chan/steal.h).
 * Every node runs the same N: the link handshake carries each side's N, and
 * a node whose N differs is marked "mismatch" (no link; requests to it fail
 * at once with -EBADE; both logs name the nodes and counts).  A sibling the
 * other node never dials (it has no such rail) learns it from sibling 0's
 * gateway (core/agent/engine.c, first_sibling_news).
 *
 * A client maps each remote channel handle (a port) to one sibling when it
 * opens the handle: the node's first agent deals them round robin to all
 * its clients (a counter in its gateway, gw_deal_sibling), so the ports of
 * the node's processes spread evenly over its agents.  A port moves to
 * another sibling only when its agent died or lost its link to the target
 * node (core/agent/client.c, handle_gateway, says how order is kept).
 */
#ifndef RDMATOOL_CORE_CHAN_SIBLING_H
#define RDMATOOL_CORE_CHAN_SIBLING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AGENT_SIBLINGS_MAX  16
#define AGENT_SIBLING_SHIFT 16
#define AGENT_RANK_MASK	    0xffffu

static inline uint32_t agent_id(uint32_t rank, uint32_t sibling)
{
	return (rank & AGENT_RANK_MASK) | sibling << AGENT_SIBLING_SHIFT;
}

static inline uint32_t agent_id_rank(uint32_t id)
{
	return id & AGENT_RANK_MASK;
}

static inline uint32_t agent_id_sibling(uint32_t id)
{
	return id >> AGENT_SIBLING_SHIFT;
}

/* "R" or "R.S": how the agent's files are named. */
static inline void agent_id_text(uint32_t id, char *out, size_t len)
{
	if (agent_id_sibling(id))
		snprintf(out, len, "%u.%u", agent_id_rank(id), agent_id_sibling(id));
	else
		snprintf(out, len, "%u", agent_id_rank(id));
}

#endif
