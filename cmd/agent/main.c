/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool agent: the node-level transport agent's daemon and its shell
 * client.  Options are parsed here once for every action; each action lives
 * in daemon.c (foreground, start, stop, status) or client.c (send, recv,
 * poll, chan).
 */
#include "cmd/agent/agent_cmd.h"
#include "core/chan/agent_dir.h"
#include "core/chan/pidfile.h"
#include "cmd/cmd.h"
#include "hw/hw.h"

#include <errno.h>
#include <limits.h>
#include <popt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const AGENT_CMD = "agent";

static const struct {
	const char *name;
	int (*run)(const struct agent_opts *o);
} actions[] = {
    {"foreground", agent_foreground}, {"start", agent_start},	{"stop", agent_stop},
    {"status", agent_status},	      {"send", agent_send_cmd}, {"recv", agent_recv_cmd},
    {"poll", agent_poll_cmd},	      {"chan", agent_chan_cmd},
};

/* The options, as bits of what was given (popt returns each one's val). */
enum {
	OPT_RANK = 1,
	OPT_HOSTFILE = 2,
	OPT_HOSTS = 3,
	OPT_PER_NODE = 4,
	OPT_MODE = 5,
	OPT_TIMEOUT = 6,
	OPT_COUNT = 7,
	OPT_OUT = 8,
	OPT_CAPACITY = 9,
	OPT_BYTES = 10,
	OPT_MAX_MSG = 11,
	OPT_BIND = 12,
	OPT_IB_DEV = 13,
	OPT_IB_PORT = 14,
	OPT_GID_INDEX = 15,
	OPT_SL = 16,
	OPT_MTU = 17,
	OPT_LAST = OPT_MTU,
};
#define BIT(o) (1u << (o))
#define DAEMON_OPTS                                                                                          \
	(BIT(OPT_HOSTFILE) | BIT(OPT_HOSTS) | BIT(OPT_PER_NODE) | BIT(OPT_BIND) | BIT(OPT_IB_DEV) |          \
	 BIT(OPT_IB_PORT) | BIT(OPT_GID_INDEX) | BIT(OPT_SL) | BIT(OPT_MTU))
#define DAEMON_TAKES "--rank, --hosts, --hostfile, --agents-per-node, --bind, -d, -i, -x, --sl, --mtu"

static const struct {
	const char *action;
	unsigned allowed; /* --rank goes with every action */
	const char *takes;
} action_opts[] = {
    {"foreground", DAEMON_OPTS, DAEMON_TAKES},
    {"start", DAEMON_OPTS, DAEMON_TAKES},
    {"stop", 0, "--rank"},
    {"status", 0, "--rank"},
    {"send", BIT(OPT_MODE) | BIT(OPT_TIMEOUT), "--rank, --mode, --timeout"},
    {"recv", BIT(OPT_TIMEOUT) | BIT(OPT_COUNT) | BIT(OPT_OUT), "--rank, --timeout, --count, --out"},
    {"poll", BIT(OPT_TIMEOUT), "--rank, --timeout"},
    {"chan", BIT(OPT_CAPACITY) | BIT(OPT_BYTES) | BIT(OPT_MAX_MSG),
     "--rank; chan create also --capacity, --bytes, --max-msg"},
};

/* An option another action takes is a usage error, not silently ignored. */
static int check_action_options(const char *action, const char *what, unsigned given)
{
	static const char *const names[] = {[OPT_HOSTFILE] = "--hostfile",
					    [OPT_HOSTS] = "--hosts",
					    [OPT_PER_NODE] = "--agents-per-node",
					    [OPT_MODE] = "--mode",
					    [OPT_TIMEOUT] = "--timeout",
					    [OPT_COUNT] = "--count",
					    [OPT_OUT] = "--out",
					    [OPT_CAPACITY] = "--capacity",
					    [OPT_BYTES] = "--bytes",
					    [OPT_MAX_MSG] = "--max-msg",
					    [OPT_BIND] = "--bind",
					    [OPT_IB_DEV] = "--ib-dev",
					    [OPT_IB_PORT] = "--ib-port",
					    [OPT_GID_INDEX] = "--gid-index",
					    [OPT_SL] = "--sl",
					    [OPT_MTU] = "--mtu"};

	for (size_t i = 0; action && i < sizeof(action_opts) / sizeof(action_opts[0]); i++) {
		unsigned allowed = action_opts[i].allowed | BIT(OPT_RANK);

		if (strcmp(action, action_opts[i].action))
			continue;
		/* Only chan create makes a channel. */
		if (!strcmp(action, "chan") && (!what || strcmp(what, "create")))
			allowed &= ~(BIT(OPT_CAPACITY) | BIT(OPT_BYTES) | BIT(OPT_MAX_MSG));
		for (unsigned o = OPT_HOSTFILE; o <= OPT_LAST; o++)
			if ((given & BIT(o)) && !(allowed & BIT(o)))
				return usage_error(AGENT_CMD, "%s is not an option of '%s%s%s'; it takes %s",
						   names[o], action, what ? " " : "", what ? what : "",
						   action_opts[i].takes);
	}
	return 0;
}

/* chan create's sizes, checked here so an error names the option at fault, not the channel name. */
static int check_chan_sizes(unsigned given, long capacity, long bytes, long max_msg)
{
	uint64_t msg = (given & BIT(OPT_MAX_MSG)) ? (uint64_t)max_msg : CHAN_DEFAULT_MAX_MSG;
	uint64_t record = CHAN_RECORD_HEADER + ((msg + 7) & ~7ull);

	if ((given & BIT(OPT_CAPACITY)) && capacity == 0)
		return usage_error(AGENT_CMD,
				   "--capacity=0 holds no message; give 1 or more (omit it for %u)",
				   CHAN_DEFAULT_CAPACITY);
	if ((given & BIT(OPT_BYTES)) && bytes == 0)
		return usage_error(AGENT_CMD,
				   "--bytes=0 holds no message; give at least %llu (omit it for 16 MiB)",
				   (unsigned long long)record);
	if ((given & BIT(OPT_MAX_MSG)) && max_msg == 0)
		return usage_error(AGENT_CMD,
				   "--max-msg=0: give the largest message in bytes, 1 or more (omit it "
				   "for 4 MiB)");
	if (msg > CHAN_MAX_BYTES - CHAN_RECORD_HEADER)
		return usage_error(AGENT_CMD, "--max-msg=%llu is too large; at most %llu bytes",
				   (unsigned long long)msg,
				   (unsigned long long)(CHAN_MAX_BYTES - CHAN_RECORD_HEADER));
	if ((given & BIT(OPT_BYTES)) && (uint64_t)bytes > CHAN_MAX_BYTES)
		return usage_error(AGENT_CMD, "--bytes=%ld is too large; a channel holds at most %llu bytes",
				   bytes, (unsigned long long)CHAN_MAX_BYTES);
	if ((given & BIT(OPT_BYTES)) && (uint64_t)bytes < record)
		return usage_error(
		    AGENT_CMD,
		    "--bytes=%ld cannot hold one largest message (%llu bytes and a %u-byte header); give "
		    "--bytes=%llu or more, or a smaller --max-msg",
		    bytes, (unsigned long long)msg, CHAN_RECORD_HEADER, (unsigned long long)record);
	return 0;
}

/* The same node twice would link an agent to itself: every host:port once. */
static int check_duplicate_hosts(const struct boot_nodes *b)
{
	for (uint32_t i = 0; i < b->nodes; i++)
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(b->hosts[i], b->hosts[j]) && b->ports[i] == b->ports[j])
				return usage_error(
				    AGENT_CMD,
				    "%s names %s%s%.0u twice (ranks %u and %u); give each node once, "
				    "or distinct ports for agents on one machine",
				    b->hosts_source, b->hosts[i], b->ports[i] ? ":" : "", b->ports[i], j, i);
	return 0;
}

/* A host file must be a regular file: /dev/zero or a FIFO would be read forever. */
static int check_hostfile(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return usage_error(AGENT_CMD, "--hostfile=%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return usage_error(
		    AGENT_CMD, "--hostfile=%s is not a regular file; give a file of host[:PORT] lines", path);
	return 0;
}

/*
 * Which local agent a client (send, recv, poll, chan, stop, status) talks to,
 * without --rank: the one running in the agent directory.  The launcher's
 * environment describes the client's own job, not the agents': a step on
 * other nodes (srun -N1 -w n2: SLURM_NODEID=0 on the node whose agent is
 * rank 1) or a world rank that counts tasks would name another node's agent,
 * and an address for that rank would then be taken for this node.  It only
 * chooses among several agents of one directory (ranks sharing a machine), and
 * names the rank when none runs (for the error that says so).
 */
static int client_rank(struct boot_nodes *b)
{
	char dir[4096], why[512];
	uint32_t first = 0;
	int running = 0;

	if (b->rank >= 0)
		return 0; /* --rank */
	if (agent_dir_resolve(dir, sizeof(dir), false, why, sizeof(why)) == 0)
		running = pidfile_running(dir, &first);
	if (running == 1) {
		b->rank = (int32_t)first;
		return 0;
	}
	if (boot_from_env(b, why, sizeof(why)))
		return usage_error(AGENT_CMD, "%s", why);
	if (running > 1 && (b->rank < 0 || !pidfile_holder(dir, (uint32_t)b->rank)))
		b->rank = (int32_t)first; /* the environment names none of them */
	if (b->rank < 0)
		b->rank = 0;
	return 0;
}

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
	if (hostfile && (rc = check_hostfile(hostfile)))
		return rc;
	if (hosts)
		rc = boot_parse_hosts(hosts, b, why, sizeof(why));
	else if (hostfile)
		rc = boot_read_hostfile(hostfile, b, why, sizeof(why));
	if (!rc && rank >= 0) {
		b->rank = (int32_t)rank;
		snprintf(b->rank_source, sizeof(b->rank_source), "--rank");
	}
	if (rc)
		return usage_error(AGENT_CMD, "%s", why);
	if (!daemon)
		return client_rank(b);
	if ((rc = boot_from_env(b, why, sizeof(why))))
		return usage_error(AGENT_CMD, "%s", why);
	if ((rc = check_duplicate_hosts(b)))
		return rc;
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
	char *hosts = NULL, *hostfile = NULL, *mode = NULL, *out_dir = NULL, *per_node = NULL, *bind = NULL;
	long rank = -1, timeout = -1, count = 1, capacity = 0, bytes = 0, max_msg = 0;
	char *ib_dev = NULL;
	struct agent_path_args path = {0};
	struct poptOption opts[] = {
	    {"rank", 0, POPT_ARG_LONG, &rank, OPT_RANK,
	     "the agent's rank among the nodes (default: from the launcher, else the entry that is this "
	     "machine; for a client: the agent running in the agent directory)",
	     "N"},
	    {"hostfile", 0, POPT_ARG_STRING, &hostfile, OPT_HOSTFILE,
	     "foreground/start: the nodes, one host[:PORT] per line", "FILE"},
	    {"hosts", 0, POPT_ARG_STRING, &hosts, OPT_HOSTS,
	     "foreground/start: the nodes' host names in rank order", "H1[:PORT],..."},
	    {"agents-per-node", 0, POPT_ARG_STRING, &per_node, OPT_PER_NODE,
	     "foreground/start: agents on this node, acting as one (default 1; auto: one per RDMA device)",
	     "N|auto"},
	    {"bind", 0, POPT_ARG_STRING, &bind, OPT_BIND,
	     "foreground/start: the address the link port listens on (default: this node's --hosts entry; "
	     "0.0.0.0: every address)",
	     "ADDRESS"},
	    {"ib-dev", 'd', POPT_ARG_STRING, &ib_dev, OPT_IB_DEV,
	     "foreground/start: the RDMA device the links use, as perftest's -d (default: the first active, "
	     "else soft0)",
	     "NAME"},
	    {"ib-port", 'i', POPT_ARG_INT, &path.port, OPT_IB_PORT,
	     "foreground/start: the device's port, as perftest's -i (default 1)", "PORT"},
	    {"gid-index", 'x', POPT_ARG_INT, &path.gid_index, OPT_GID_INDEX,
	     "foreground/start: the source GID's index, as perftest's -x, e.g. a RoCEv2 GID (default 0)",
	     "INDEX"},
	    {"sl", 0, POPT_ARG_INT, &path.sl, OPT_SL,
	     "foreground/start: the links' service level (default 0)", "SL"},
	    {"mtu", 0, POPT_ARG_INT, &path.mtu, OPT_MTU,
	     "foreground/start: the links' path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's)",
	     "BYTES"},
	    {"mode", 0, POPT_ARG_STRING, &mode, OPT_MODE,
	     "send: return when the message is queued (immediately), copied (buffered, the default), in the "
	     "channel (deposited) or taken (received)",
	     "immediately|buffered|deposited|received"},
	    {"timeout", 0, POPT_ARG_LONG, &timeout, OPT_TIMEOUT,
	     "send/recv/poll: give up after MS milliseconds (default: wait)", "MS"},
	    {"count", 'n', POPT_ARG_LONG, &count, OPT_COUNT,
	     "recv: messages to take (default 1; 0 = until the timeout)", "N"},
	    {"out", 0, POPT_ARG_STRING, &out_dir, OPT_OUT,
	     "recv: write each message to DIR/000000, DIR/000001, ...", "DIR"},
	    {"capacity", 0, POPT_ARG_LONG, &capacity, OPT_CAPACITY,
	     "chan create: messages the channel holds (default 1024)", "N"},
	    {"bytes", 0, POPT_ARG_LONG, &bytes, OPT_BYTES,
	     "chan create: bytes the channel holds (default 16 MiB)", "BYTES"},
	    {"max-msg", 0, POPT_ARG_LONG, &max_msg, OPT_MAX_MSG,
	     "chan create: largest message (default 4 MiB)", "BYTES"},
	    CMD_HELP(opts),
	    POPT_TABLEEND};
	poptContext pc = poptGetContext(argv[0], argc, argv, opts, 0);
	const char *action;
	unsigned given = 0;
	bool daemon;
	int rc;

	poptSetOtherOptionHelp(pc,
			       "foreground|start|stop|status | send ADDR [FILE|-] | recv ADDR | poll ADDR | "
			       "chan create|destroy NAME | chan list");
	while ((rc = poptGetNextOpt(pc)) > 0)
		given |= BIT(rc);
	if (rc < -1) {
		rc = popt_usage_error(AGENT_CMD, pc, rc, argv);
		goto out;
	}
	rc = read_debug_env(&o);
	if (rc)
		goto out;
	if ((given & BIT(OPT_RANK)) && (rank < 0 || rank >= GW_MAX_NODES)) {
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
	{
		const char *const *rest = poptGetArgs(pc);

		rc = check_action_options(action, rest ? rest[0] : NULL, given);
		if (!rc && action && !strcmp(action, "chan"))
			rc = check_chan_sizes(given, capacity, bytes, max_msg);
		if (rc)
			goto out;
	}
	daemon = action && (!strcmp(action, "foreground") || !strcmp(action, "start"));
	if (action && (hosts || hostfile || per_node) && !daemon) {
		rc =
		    usage_error(AGENT_CMD, "--hosts, --hostfile and --agents-per-node are for foreground and "
					   "start");
		goto out;
	}
	rc = resolve_nodes(&boot, hosts, hostfile, rank, daemon);
	if (!rc)
		rc = parse_agents_per_node(per_node, &boot, &o);
	path.device = ib_dev;
	path.port_given = given & BIT(OPT_IB_PORT);
	if (!rc)
		rc = agent_path_parse(&path, &o.path);
	if (!rc && daemon)
		rc = agent_path_check(&o);
	if (rc)
		goto out;
	o.boot = &boot;
	o.nodes = boot.nodes;
	o.hosts = boot.hosts;
	o.rank = (uint32_t)boot.rank;
	o.mode = mode;
	o.bind = bind;
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
	free(bind);
	free(ib_dev);
	return rc;
}
