/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The agent's engine: what `rdmatool agent foreground` runs.  It owns the pid
 * file (one agent per directory and rank), the gateway, the links to the
 * other agents (core/agent/link/link.h) and the agent's stats entry, and serves
 * gateway requests until asked to stop.
 *
 * A request for another node goes over the link to it: a send in mode
 * immediately or buffered completes once its data is on the way (the
 * gateway slot is free again), deposited and received when the target
 * answers; a GETMSG or POLL with the target's answer.  A node with no link
 * up fails the request with -EHOSTDOWN at once; nothing waits forever.
 * Requests for this node never reach the engine: clients use local channels
 * directly.
 */
#ifndef RDMATOOL_CORE_AGENT_ENGINE_H
#define RDMATOOL_CORE_AGENT_ENGINE_H

#include "core/agent/agent_log.h"
#include "core/agent/path.h"
#include "core/chan/gateway.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_engine_config {
	const char *dir;
	uint32_t rank, nodes; /* nodes = 1 and rank = 0 for a single node */
	uint32_t sibling,
	    siblings;		/* this agent among the node's agents (core/chan/sibling.h); 0 and 1 alone */
	struct agent_path path; /* the links' device, port, GID index, SL, MTU (0: core's default) */
	const char (*hosts)[GW_HOST_LEN];
	const uint16_t *ports; /* each agent's port for the links (0: the default) */
	const char *bind;      /* the links' listening address (link.h); NULL: this rank's host entry */
	struct agent_log log;  /* debug: also one line per request */
	bool debug;
};

struct agent_engine;

/*
 * Takes the pid file and creates the gateway.  -EEXIST with why naming the
 * running agent's pid when one already serves this directory, rank and sibling.
 */
int agent_engine_open(const struct agent_engine_config *cfg, struct agent_engine **out, char *why,
		      size_t whylen);
/* Serves until *stop becomes nonzero; returns 0. */
int agent_engine_run(struct agent_engine *e, volatile sig_atomic_t *stop);
/* Fails whatever still waits (-ESHUTDOWN), removes the gateway and the pid file. */
void agent_engine_close(struct agent_engine *e);

#endif
