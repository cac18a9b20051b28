/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool agent: the node-level transport agent's daemon and its shell
 * client.  Options are parsed here once for every action; each action lives
 * in daemon.c (foreground, start, stop, status) or client.c (send, recv,
 * poll, chan).
 */
#include "cmd/agent/agent_cmd.h"
#include "core/agent/agent_dir.h"
#include "core/agent/pidfile.h"
#include "cmd/cmd.h"
#include "hw/hw.h"

#include <errno.h>
#include <limits.h>
#include <popt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const AGENT_CMD = "agent";

static const struct {
	const char *name;
	int (*run)(const struct agent_opts *o);
} actions[] = {
    {"foreground", agent_foreground}, {"start", agent_start},	{"stop", agent_stop},
    {"status", agent_status},	      {"send", agent_send_cmd}, {"recv", agent_recv_cmd},
    {"poll", agent_poll_cmd},	      {"chan", agent_chan_cmd},
};

/*
 * The node list and this agent's rank: --hosts or --hostfile, else the
 * launcher's environment (Slurm, Open MPI, PMIx); the rank from --rank, else
 * the environment, else the entry that is this machine.  Alone: one node.
 */
static int resolve_nodes(struct boot_nodes *b, const char *hosts, const char *hostfile, long rank,
			 bool daemon)
{
	char why[512];
	int rc = 0;

	b->rank = -1;
	if (hosts && hostfile)
		return usage_error(AGENT_CMD, "give --hosts or --hostfile, not both");
	if (hosts)
		rc = boot_parse_hosts(hosts, b, why, sizeof(why));
	else if (hostfile)
		rc = boot_read_hostfile(hostfile, b, why, sizeof(why));
	if (!rc && rank >= 0) {
		b->rank = (int32_t)rank;
		snprintf(b->rank_source, sizeof(b->rank_source), "--rank");
	}
	if (!rc)
		rc = boot_from_env(b, why, sizeof(why));
	if (rc)
		return usage_error(AGENT_CMD, "%s", why);
	if (!daemon) {
		/* A client only needs to know which local agent to talk to: the one running here, if one is.
		 */
		char dir[4096];
		uint32_t first = 0;

		if (b->rank < 0)
			b->rank = agent_dir_resolve(dir, sizeof(dir), false, why, sizeof(why)) == 0 &&
					  pidfile_running(dir, &first) == 1
				      ? (int32_t)first
				      : 0;
		return 0;
	}
	if (!b->nodes) {
		b->nodes = 1;
		snprintf(b->hosts[0], sizeof(b->hosts[0]), "localhost");
		snprintf(b->hosts_source, sizeof(b->hosts_source), "this machine alone (no --hosts)");
	}
	if (b->rank < 0 && b->nodes == 1) {
		b->rank = 0;
		snprintf(b->rank_source, sizeof(b->rank_source), "the only node");
	}
	if (b->rank < 0 && boot_rank_from_local(b, why, sizeof(why)))
		return usage_error(AGENT_CMD, "%s", why);
	if ((uint32_t)b->rank >= b->nodes)
		return usage_error(AGENT_CMD, "rank %d (from %s) but %s names %u node(s); ranks count from 0",
				   b->rank, b->rank_source, b->hosts_source, b->nodes);
	return 0;
}

/*
 * --agents-per-node=N (1..AGENT_SIBLINGS_MAX) or auto: one agent per verbs
 * device, each on its own device (sibling k on the k-th), or one on the soft
 * device when there is none.  nodes x N agents at most GW_MAX_NODES.
 */
static int parse_agents_per_node(const char *text, const struct boot_nodes *b, struct agent_opts *o)
{
	static char devices[AGENT_SIBLINGS_MAX][64];
	char *end;
	long n;

	o->siblings = 1;
	if (!text)
		return 0;
	if (!strcmp(text, "auto")) {
		struct hw_device devs[HW_MAX_DEVICES];
		int verbs_errno, found = hw_list_devices(devs, HW_MAX_DEVICES, &verbs_errno);

		n = 0;
		for (int i = 0; i < found && n < AGENT_SIBLINGS_MAX; i++)
			if (devs[i].provider == &hw_verbs_provider)
				snprintf(devices[n++], sizeof(devices[0]), "%.63s", devs[i].name);
		o->devices = n ? devices : NULL;
		o->siblings = n ? (uint32_t)n : 1;
	} else {
		n = strtol(text, &end, 10);
		if (*end || end == text || n < 1 || n > AGENT_SIBLINGS_MAX)
			return usage_error(
			    AGENT_CMD,
			    "--agents-per-node=%s is invalid; give 1..%d agents, or auto (one per "
			    "RDMA device)",
			    text, AGENT_SIBLINGS_MAX);
		o->siblings = (uint32_t)n;
	}
	if (b->nodes * o->siblings > GW_MAX_NODES)
		return usage_error(
		    AGENT_CMD,
		    "--agents-per-node=%s on %u nodes makes %u agents; at most %d in all: give "
		    "fewer agents per node",
		    text, b->nodes, b->nodes * o->siblings, GW_MAX_NODES);
	for (uint32_t i = 0; i < b->nodes; i++)
		if (b->ports[i] + o->siblings - 1 > 65535)
			return usage_error(AGENT_CMD,
					   "--agents-per-node=%s: agent S of a node listens on its port + S, "
					   "and %s:%u leaves no room; give it a lower port",
					   text, b->hosts[i], (unsigned)b->ports[i]);
	return 0;
}

static int read_debug_env(struct agent_opts *o)
{
	const char *v = getenv("RDMATOOL_AGENT_DEBUG");

	if (!v)
		return 0;
	if (strcmp(v, "0") && strcmp(v, "1"))
		return usage_error(
		    AGENT_CMD,
		    "RDMATOOL_AGENT_DEBUG='%s' is invalid; use 0 (off) or 1 (log every gateway request)", v);
	o->debug = v[0] == '1';
	return 0;
}

int cmd_agent(int argc, const char **argv)
{
	struct agent_opts o = {.nodes = 1, .timeout_ms = -1, .count = 1};
	static struct boot_nodes boot; /* 16 KiB: not on the stack */
	char *hosts = NULL, *hostfile = NULL, *mode = NULL, *out_dir = NULL, *per_node = NULL;
	long rank = -1, timeout = -1, count = 1, capacity = 0, bytes = 0, max_msg = 0;
	struct poptOption opts[] = {
	    {"rank", 0, POPT_ARG_LONG, &rank, 0,
	     "the agent's rank among the nodes (default: from the launcher, else the entry that is this "
	     "machine)",
	     "N"},
	    {"hostfile", 0, POPT_ARG_STRING, &hostfile, 0,
	     "foreground/start: the nodes, one host[:PORT] per line", "FILE"},
	    {"hosts", 0, POPT_ARG_STRING, &hosts, 0, "foreground/start: the nodes' host names in rank order",
	     "H1[:PORT],..."},
	    {"agents-per-node", 0, POPT_ARG_STRING, &per_node, 0,
	     "foreground/start: agents on this node, acting as one (default 1; auto: one per RDMA device)",
	     "N|auto"},
	    {"mode", 0, POPT_ARG_STRING, &mode, 0,
	     "send: return when the message is queued (immediately), copied (buffered, the default), in the "
	     "channel (deposited) or taken (received)",
	     "immediately|buffered|deposited|received"},
	    {"timeout", 0, POPT_ARG_LONG, &timeout, 0,
	     "send/recv/poll: give up after MS milliseconds (default: wait)", "MS"},
	    {"count", 'n', POPT_ARG_LONG, &count, 0,
	     "recv: messages to take (default 1; 0 = until the timeout)", "N"},
	    {"out", 0, POPT_ARG_STRING, &out_dir, 0,
	     "recv: write each message to DIR/000000, DIR/000001, ...", "DIR"},
	    {"capacity", 0, POPT_ARG_LONG, &capacity, 0,
	     "chan create: messages the channel holds (default 1024)", "N"},
	    {"bytes", 0, POPT_ARG_LONG, &bytes, 0, "chan create: bytes the channel holds (default 16 MiB)",
	     "BYTES"},
	    {"max-msg", 0, POPT_ARG_LONG, &max_msg, 0, "chan create: largest message (default 4 MiB)",
	     "BYTES"},
	    CMD_HELP(opts), POPT_TABLEEND};
	poptContext pc = poptGetContext(argv[0], argc, argv, opts, 0);
	const char *action;
	int rc;

	poptSetOtherOptionHelp(pc,
			       "foreground|start|stop|status | send ADDR [FILE|-] | recv ADDR | poll ADDR | "
			       "chan create|destroy NAME | chan list");
	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1) {
		rc = popt_usage_error(AGENT_CMD, pc, rc, argv);
		goto out;
	}
	rc = read_debug_env(&o);
	if (rc)
		goto out;
	if (rank < -1 || rank >= GW_MAX_NODES) {
		rc = usage_error(AGENT_CMD, "--rank=%ld is out of range; use 0..%d", rank, GW_MAX_NODES - 1);
		goto out;
	}
	if (timeout < -1 || timeout > INT_MAX) {
		rc = usage_error(AGENT_CMD,
				 "--timeout=%ld is invalid; give milliseconds >= 0, or -1 to wait forever",
				 timeout);
		goto out;
	}
	if (count < 0 || capacity < 0 || capacity > UINT32_MAX || bytes < 0 || max_msg < 0 ||
	    max_msg > UINT32_MAX) {
		rc = usage_error(AGENT_CMD, "--count, --capacity, --bytes and --max-msg take numbers >= 0");
		goto out;
	}
	action = poptGetArg(pc);
	if (action && (hosts || hostfile || per_node) && strcmp(action, "foreground") &&
	    strcmp(action, "start")) {
		rc =
		    usage_error(AGENT_CMD, "--hosts, --hostfile and --agents-per-node are for foreground and "
					   "start");
		goto out;
	}
	rc = resolve_nodes(&boot, hosts, hostfile, rank,
			   action && (!strcmp(action, "foreground") || !strcmp(action, "start")));
	if (!rc)
		rc = parse_agents_per_node(per_node, &boot, &o);
	if (rc)
		goto out;
	o.boot = &boot;
	o.nodes = boot.nodes;
	o.hosts = boot.hosts;
	o.rank = (uint32_t)boot.rank;
	o.mode = mode;
	o.timeout_ms = (int)timeout;
	o.count = count;
	o.out_dir = out_dir;
	o.capacity = capacity;
	o.bytes = bytes;
	o.max_msg = max_msg;
	o.args = poptGetArgs(pc);
	for (o.nargs = 0; o.args && o.args[o.nargs]; o.nargs++)
		;
	rc = -1;
	for (size_t i = 0; action && i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(action, actions[i].name))
			rc = actions[i].run(&o);
	if (rc == -1)
		rc = usage_error(AGENT_CMD,
				 "%s%s; use foreground, start, stop, status, send, recv, poll or chan",
				 action ? "unknown action " : "missing action", action ? action : "");
out:
	poptFreeContext(pc);
	free(hosts);
	free(hostfile);
	free(mode);
	free(out_dir);
	free(per_node);
	return rc;
}
