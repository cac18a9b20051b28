/* SPDX-License-Identifier: MIT */
/*
 * rdmatool agent: the node-level transport agent's daemon and its shell
 * client.  Options are parsed here once for every action; each action lives
 * in daemon.c (foreground, start, stop, status) or client.c (send, recv,
 * poll, chan).
 */
#include "cmd/agent/agent_cmd.h"
#include "cmd/cmd.h"

#include <errno.h>
#include <limits.h>
#include <popt.h>
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

/* "H1[:PORT],H2,...": the host names, in rank order (ports belong to the links). */
static int parse_hosts(const char *text, struct agent_opts *o)
{
	const char *p = text;

	o->nodes = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t host = strcspn(p, ",:");

		if (host == 0 || host >= GW_HOST_LEN || o->nodes >= GW_MAX_NODES)
			return -EINVAL;
		memcpy(o->hosts[o->nodes], p, host);
		o->hosts[o->nodes][host] = '\0';
		o->nodes++;
		p += n;
		if (*p == ',' && !*++p)
			return -EINVAL;
	}
	return o->nodes ? 0 : -EINVAL;
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
	char *hosts = NULL, *mode = NULL, *out_dir = NULL;
	long rank = 0, timeout = -1, count = 1, capacity = 0, bytes = 0, max_msg = 0;
	struct poptOption opts[] = {
	    {"rank", 0, POPT_ARG_LONG, &rank, 0, "the agent's rank among the nodes (default 0)", "N"},
	    {"hosts", 0, POPT_ARG_STRING, &hosts, 0, "foreground/start: the nodes' host names in rank order",
	     "H1[:PORT],H2,..."},
	    {"mode", 0, POPT_ARG_STRING, &mode, 0,
	     "send: return when the message is queued, copied, in the channel or taken (default buffered)",
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
	    POPT_AUTOHELP POPT_TABLEEND};
	poptContext pc = poptGetContext(argv[0], argc, argv, opts, 0);
	const char *action;
	int rc;

	poptSetOtherOptionHelp(pc,
			       "foreground|start|stop|status | send ADDR [FILE|-] | recv ADDR | poll ADDR | "
			       "chan create|destroy NAME | chan list");
	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1) {
		rc = popt_usage_error(AGENT_CMD, pc, rc);
		goto out;
	}
	rc = read_debug_env(&o);
	if (rc)
		goto out;
	if (rank < 0 || rank >= GW_MAX_NODES) {
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
	if (hosts && parse_hosts(hosts, &o)) {
		rc = usage_error(AGENT_CMD,
				 "--hosts='%s' is invalid; give up to %d host names, e.g. --hosts=n1,n2:7000",
				 hosts, GW_MAX_NODES);
		goto out;
	}
	if (!hosts)
		strcpy(o.hosts[0], "localhost");
	if ((uint32_t)rank >= o.nodes) {
		rc = usage_error(AGENT_CMD, "--rank=%ld but --hosts names %u node(s); ranks count from 0",
				 rank, o.nodes);
		goto out;
	}
	o.rank = (uint32_t)rank;
	o.mode = mode;
	o.timeout_ms = (int)timeout;
	o.count = count;
	o.out_dir = out_dir;
	o.capacity = capacity;
	o.bytes = bytes;
	o.max_msg = max_msg;
	action = poptGetArg(pc);
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
	free(mode);
	free(out_dir);
	return rc;
}
