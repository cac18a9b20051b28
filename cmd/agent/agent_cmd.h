/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool agent: the options its actions share, and the actions. */
#ifndef RDMATOOL_CMD_AGENT_H
#define RDMATOOL_CMD_AGENT_H

#include "core/agent/bootstrap.h"
#include "core/agent/path.h"
#include "core/chan/sibling.h"

#include <stdbool.h>
#include <stdint.h>

extern const char *const AGENT_CMD;

struct agent_opts {
	uint32_t rank;
	uint32_t nodes;
	const char (*hosts)[GW_HOST_LEN];
	const struct boot_nodes *boot; /* where the node list and the rank came from */
	uint32_t siblings;	       /* --agents-per-node (core/chan/sibling.h); 1 by default */
	const char (*devices)[64]; /* with --agents-per-node=auto on verbs devices: sibling k's; else NULL */
	const char *mode;
	const char *bind;	/* --bind: the links' listening address, or NULL */
	struct agent_path path; /* -d, -i, -x, --sl, --mtu: the links' endpoint */
	int timeout_ms;		/* -1: forever */
	long count;		/* recv: messages to take; 0 = until none arrives within the timeout */
	const char *out_dir;
	long capacity, bytes, max_msg;
	int debug;	   /* RDMATOOL_AGENT_DEBUG */
	const char **args; /* what follows the action */
	int nargs;
};

/* -d, -i, -x, --sl, --mtu as given (0 and NULL: not given). */
struct agent_path_args {
	const char *device;
	int port, gid_index, sl, mtu;
	bool port_given;
};
/* The numbers checked (a usage error names the option) into p. */
int agent_path_parse(const struct agent_path_args *a, struct agent_path *p);
/* The device(s) the node's agents use have the port, GID index and MTU of o->path; else a usage error. */
int agent_path_check(const struct agent_opts *o);

int agent_foreground(const struct agent_opts *o);
int agent_start(const struct agent_opts *o);
int agent_stop(const struct agent_opts *o);
int agent_status(const struct agent_opts *o);
int agent_send_cmd(const struct agent_opts *o);
int agent_recv_cmd(const struct agent_opts *o);
int agent_poll_cmd(const struct agent_opts *o);
int agent_chan_cmd(const struct agent_opts *o);

/* The exit status of `agent status` when no agent runs (as LSB init scripts use). */
#define AGENT_EXIT_NOT_RUNNING 3

#endif
