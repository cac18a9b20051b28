/* SPDX-License-Identifier: MIT */
/*
 * The agent's engine: what `rdmatool agent foreground` runs.  It owns the pid
 * file (one agent per directory and rank), the gateway, and the agent's stats
 * entry, and serves gateway requests until asked to stop.
 *
 * Requests for other nodes go to a remote transport (struct
 * agent_remote_ops), the seam where the inter-node protocol plugs in.  With
 * none, or for a node it has no link to, a request completes with -EHOSTDOWN;
 * nothing waits forever.  Requests for this node never reach the engine:
 * clients use local channels directly.
 */
#ifndef RDMATOOL_CORE_AGENT_ENGINE_H
#define RDMATOOL_CORE_AGENT_ENGINE_H

#include "core/agent/gateway.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_remote_ops {
	/*
	 * Carries one request to req->node and fills the reply (out, *outlen <=
	 * GW_INLINE) for RECV and POLL.  Called from the engine's loop: it must
	 * not block longer than the request's own timeout.  Returns 0 or a
	 * negative errno (-EHOSTDOWN when there is no link to the node).
	 */
	int (*request)(void *arg, const struct gw_request *req, const void *in, size_t inlen, void *out,
		       size_t *outlen);
	/* Makes progress on links; called once per engine pass. */
	void (*progress)(void *arg);
	/* Whether node has a working link now, for status. */
	bool (*link_up)(void *arg, uint32_t node);
};

struct agent_engine_config {
	const char *dir;
	uint32_t rank, nodes; /* nodes = 1 and rank = 0 for a single node */
	const char (*hosts)[GW_HOST_LEN];
	const struct agent_remote_ops *remote; /* NULL: no links yet */
	void *remote_arg;
	/* Where the engine's log lines go (core never prints); debug: also one line per request. */
	void (*log)(void *arg, const char *line);
	void *log_arg;
	bool debug;
};

struct agent_engine;

/*
 * Takes the pid file and creates the gateway.  -EEXIST with why naming the
 * running agent's pid when one already serves this directory and rank.
 */
int agent_engine_open(const struct agent_engine_config *cfg, struct agent_engine **out, char *why,
		      size_t whylen);
/* Serves until *stop becomes nonzero; returns 0. */
int agent_engine_run(struct agent_engine *e, volatile sig_atomic_t *stop);
/* Fails whatever still waits (-ESHUTDOWN), removes the gateway and the pid file. */
void agent_engine_close(struct agent_engine *e);

#endif
