/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool agent foreground|start|stop|status: the daemon's life cycle. */
#include "cmd/agent/agent_cmd.h"
#include "cmd/cmd.h"
#include "cmd/json.h"
#include "cmd/print.h"
#include "core/chan/agent_dir.h"
#include "core/chan/channel.h"
#include "core/agent/engine.h"
#include "core/chan/pidfile.h"
#include "core/stats/stats.h"
#include "core/util/clock.h"
#include "core/util/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_DEADLINE_MS 10000
#define STOP_DEADLINE_MS  10000

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void log_line(void *arg, const char *line)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	(void)arg;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(stderr, "%s rdmatool agent[%d]: %s\n", stamp, (int)getpid(), line);
}

static int resolve_dir(char *dir, size_t len, bool create)
{
	char why[512];
	int rc = agent_dir_resolve(dir, len, create, why, sizeof(why));

	if (rc)
		return rc == -EINVAL ? usage_error(AGENT_CMD, "%s", why) : run_error(AGENT_CMD, "%s", why);
	return 0;
}

/*
 * A sibling's soft device listens on its own address: an explicit port in
 * RDMATOOL_SOFT_ADDR moves up by the sibling number (an IP alone, or port 0,
 * takes any free port already).
 */
static void sibling_soft_addr(uint32_t sibling)
{
	const char *v = getenv("RDMATOOL_SOFT_ADDR");
	const char *colon = v ? strrchr(v, ':') : NULL;
	char addr[128], *end;
	unsigned long port;

	if (!sibling || !colon)
		return;
	port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port + sibling > 65535 || (size_t)(colon - v) >= sizeof(addr) - 8)
		return; /* the device names a malformed value itself */
	snprintf(addr, sizeof(addr), "%.*s:%lu", (int)(colon - v), v, port + sibling);
	setenv("RDMATOOL_SOFT_ADDR", addr, 1);
}

/*
 * Separate hosts reach this node's soft device at the address the node's
 * entry names, not at its default 127.0.0.1: listen there unless
 * RDMATOOL_SOFT_ADDR says otherwise (srun and mpirun give every node the
 * same environment, so nobody can set it per node).
 */
static void node_soft_addr(const struct agent_opts *o)
{
	char ip[64], why[256], line[400];

	if (o->nodes < 2 || getenv("RDMATOOL_SOFT_ADDR"))
		return;
	if (!boot_node_addr(o->boot, ip, sizeof(ip), why, sizeof(why))) {
		setenv("RDMATOOL_SOFT_ADDR", ip, 0);
		return;
	}
	snprintf(line, sizeof(line),
		 "%s, so a soft device listens on 127.0.0.1, which other hosts cannot reach: set "
		 "RDMATOOL_SOFT_ADDR to this node's address",
		 why);
	log_line(NULL, line);
}

/* Runs the engine of one of the node's agents; ready_fd (or -1) gets one byte once it serves. */
static int serve(const struct agent_opts *o, const char *dir, uint32_t sibling, int ready_fd)
{
	struct agent_engine_config cfg = {.dir = dir,
					  .rank = o->rank,
					  .nodes = o->nodes,
					  .sibling = sibling,
					  .siblings = o->siblings,
					  .path = o->path,
					  .hosts = o->hosts,
					  .ports = o->boot->ports,
					  .bind = o->bind,
					  .log = {log_line, NULL},
					  .debug = o->debug};
	struct agent_engine *e;
	char why[512];
	int rc;

	if (o->devices)
		cfg.path.device = o->devices[sibling];
	catch_interrupts(on_stop_signal);
	signal(SIGPIPE, SIG_IGN);
	node_soft_addr(o);
	sibling_soft_addr(sibling);
	stats_segment_open("agent");
	rc = agent_engine_open(&cfg, &e, why, sizeof(why));
	if (rc) {
		stats_segment_close();
		/* The starting process says why, even when the log cannot be written (a full disk). */
		if (ready_fd >= 0 && write(ready_fd, why, strnlen(why, sizeof(why))) < 0)
			log_line(NULL, "could not tell the starting process why the agent stopped");
		return run_error(AGENT_CMD, "%s", why);
	}
	snprintf(why, sizeof(why), "%u node(s) from %s; rank %u from %s; agent %u of %u on this node%s%s",
		 o->nodes, o->boot->hosts_source, o->rank, o->boot->rank_source, sibling, o->siblings,
		 cfg.path.device ? ", device " : "", cfg.path.device ? cfg.path.device : "");
	log_line(NULL, why);
	if (ready_fd >= 0) {
		if (write(ready_fd, "\n", 1) != 1)
			log_line(NULL, "could not tell the starting process that the agent is ready");
		close(ready_fd);
	}
	agent_engine_run(e, &stop_requested);
	agent_engine_close(e);
	stats_segment_close();
	return EXIT_OK;
}

/*
 * Several agents in the foreground: siblings 1..N-1 are child processes
 * (ended with the parent: PR_SET_PDEATHSIG), sibling 0 runs here; stopping
 * it stops them.
 */
static int serve_siblings(const struct agent_opts *o, const char *dir)
{
	pid_t kids[AGENT_SIBLINGS_MAX] = {0};
	pid_t parent = getpid();
	int rc;

	fflush(NULL);
	for (uint32_t k = 1; k < o->siblings; k++) {
		kids[k] = fork();
		if (kids[k] < 0) {
			rc = run_error(AGENT_CMD, "fork: %s", strerror(errno));
			goto stop;
		}
		if (kids[k] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() != parent)
				_exit(EXIT_FAILURES);
			_exit(serve(o, dir, k, -1));
		}
	}
	rc = serve(o, dir, 0, -1);
stop:
	for (uint32_t k = 1; k < o->siblings; k++)
		if (kids[k] > 0)
			kill(kids[k], SIGTERM);
	for (uint32_t k = 1; k < o->siblings; k++) {
		int st;

		if (kids[k] > 0 && waitpid(kids[k], &st, 0) == kids[k] && rc == EXIT_OK &&
		    (!WIFEXITED(st) || WEXITSTATUS(st) != EXIT_OK))
			rc = EXIT_FAILURES;
	}
	return rc;
}

int agent_foreground(const struct agent_opts *o)
{
	char dir[PATH_MAX];
	int rc = resolve_dir(dir, sizeof(dir), true);

	if (rc)
		return rc;
	if (o->nargs)
		return usage_error(AGENT_CMD, "foreground takes no arguments");
	return o->siblings > 1 ? serve_siblings(o, dir) : serve(o, dir, 0, -1);
}

/* Prints the last lines of the log; how many. */
static int print_log_tail(const char *path)
{
	char line[512], lines[5][512];
	int n = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		snprintf(lines[n++ % 5], sizeof(lines[0]), "%s", line);
	fclose(f);
	for (int i = n > 5 ? n - 5 : 0; i < n; i++)
		fprintf(stderr, "  %s", lines[i % 5]);
	return n;
}

/* Starts one of the node's agents in the background; EXIT_OK once it serves. */
static int start_one(const struct agent_opts *o, const char *dir, uint32_t sibling)
{
	char log_path[PATH_MAX + 64], name[32], said[512];
	uint32_t id = agent_id(o->rank, sibling);
	int rc, pipefd[2], log_fd;
	pid_t holder, pid;
	struct pollfd pfd;
	struct stat st;
	ssize_t n = 0;

	agent_id_text(id, name, sizeof(name));
	holder = pidfile_holder(dir, id);
	if (holder)
		return run_error(
		    AGENT_CMD,
		    "an agent already runs for %s rank %s (pid %d); stop it with 'rdmatool agent stop'", dir,
		    name, (int)holder);
	snprintf(log_path, sizeof(log_path), "%s/agent.%s.log", dir, name);
	/* O_NONBLOCK: a FIFO planted as the log fails at once (ENXIO) instead of waiting for a reader. */
	log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	if (log_fd < 0)
		return run_error(AGENT_CMD, "cannot open the log %s: %s%s", log_path, strerror(errno),
				 errno == ENXIO ? " (it is a FIFO: remove it)" : "");
	if (fstat(log_fd, &st) || !S_ISREG(st.st_mode)) {
		close(log_fd);
		return run_error(AGENT_CMD, "the log %s is not a regular file; remove it", log_path);
	}
	if (pipe2(pipefd, O_CLOEXEC)) {
		close(log_fd);
		return run_error(AGENT_CMD, "pipe: %s", strerror(errno));
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(log_fd);
		return run_error(AGENT_CMD, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		close(pipefd[0]);
		setsid();
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO), dup2(devnull, STDOUT_FILENO);
		dup2(log_fd, STDERR_FILENO);
		if (chdir("/"))
			_exit(EXIT_FAILURES);
		/* A second fork: the agent is no session leader, so it never gets a controlling terminal. */
		pid = fork();
		if (pid != 0)
			_exit(pid < 0 ? EXIT_FAILURES : EXIT_OK);
		_exit(serve(o, dir, sibling, pipefd[1]));
	}
	close(pipefd[1]);
	close(log_fd);
	waitpid(pid, NULL, 0);
	pfd = (struct pollfd){.fd = pipefd[0], .events = POLLIN};
	rc = poll(&pfd, 1, START_DEADLINE_MS);
	if (rc == 1)
		n = read(pipefd[0], said, sizeof(said) - 1);
	if (n == 1 && said[0] == '\n') {
		close(pipefd[0]);
		holder = pidfile_holder(dir, id);
		notice(AGENT_CMD, "agent rank %s started (pid %d), serving %s; log %s", name, (int)holder,
		       dir, log_path);
		return EXIT_OK;
	}
	close(pipefd[0]);
	if (n > 0) {
		said[n] = '\0';
		fprintf(stderr, "rdmatool agent: the agent did not start: %s\n", said);
		return EXIT_FAILURES;
	}
	fprintf(stderr, "rdmatool agent: the agent did not start%s; the end of %s:\n",
		rc == 0 ? " within 10 s" : "", log_path);
	if (!print_log_tail(log_path))
		fprintf(stderr, "  (nothing: the agent could not write its log; is %s full?)\n", dir);
	return EXIT_FAILURES;
}

static int stop_agents(const char *dir, uint32_t rank);

/* Starts the node's agents, sibling 0 first; when one fails, the ones started are stopped again. */
int agent_start(const struct agent_opts *o)
{
	char dir[PATH_MAX];
	int rc = resolve_dir(dir, sizeof(dir), true);

	if (rc)
		return rc;
	if (o->nargs)
		return usage_error(AGENT_CMD, "start takes no arguments");
	for (uint32_t k = 0; k < o->siblings; k++) {
		rc = start_one(o, dir, k);
		if (rc != EXIT_OK) {
			if (k)
				stop_agents(dir, o->rank);
			return rc;
		}
	}
	return EXIT_OK;
}

/* Stops every agent of rank in dir (each sibling); EXIT_OK when they stopped, -1 when none ran. */
static int stop_agents(const char *dir, uint32_t rank)
{
	pid_t pids[AGENT_SIBLINGS_MAX] = {0};
	char name[AGENT_SIBLINGS_MAX][32];
	uint64_t deadline = clock_ns() + STOP_DEADLINE_MS * 1000000ull;
	int running = 0, rc = EXIT_OK;

	for (uint32_t k = 0; k < AGENT_SIBLINGS_MAX; k++) {
		agent_id_text(agent_id(rank, k), name[k], sizeof(name[k]));
		pids[k] = pidfile_holder(dir, agent_id(rank, k));
		if (!pids[k])
			continue;
		if (kill(pids[k], SIGTERM)) {
			rc = run_error(AGENT_CMD, "cannot signal the agent (pid %d): %s", (int)pids[k],
				       strerror(errno));
			pids[k] = 0;
			continue;
		}
		running++;
	}
	if (!running && rc == EXIT_OK) {
		notice(AGENT_CMD, "no agent runs for %s rank %u", dir, rank);
		return -1;
	}
	for (uint32_t k = 0; k < AGENT_SIBLINGS_MAX; k++) {
		if (!pids[k])
			continue;
		while (pidfile_holder(dir, agent_id(rank, k)) == pids[k] || !process_gone(pids[k])) {
			if (clock_ns() > deadline)
				return run_error(
				    AGENT_CMD,
				    "the agent (pid %d) did not stop within %d s; 'kill -9 %d' ends it",
				    (int)pids[k], STOP_DEADLINE_MS / 1000, (int)pids[k]);
			usleep(10000);
		}
		notice(AGENT_CMD, "agent rank %s (pid %d) stopped", name[k], (int)pids[k]);
	}
	return rc;
}

int agent_stop(const struct agent_opts *o)
{
	char dir[PATH_MAX], why[512];
	int rc = agent_dir_resolve(dir, sizeof(dir), false, why, sizeof(why));

	if (o->nargs)
		return usage_error(AGENT_CMD, "stop takes no arguments");
	if (rc && rc != -ENOENT)
		return rc == -EINVAL ? usage_error(AGENT_CMD, "%s", why) : run_error(AGENT_CMD, "%s", why);
	if (rc) {
		notice(AGENT_CMD, "no agent runs for %s rank %u", dir, o->rank);
		return AGENT_EXIT_NOT_RUNNING;
	}
	rc = stop_agents(dir, o->rank);
	return rc == -1 ? AGENT_EXIT_NOT_RUNNING : rc;
}

struct chan_row_ctx {
	const char *dir;
	int n;
};

static int status_channel(const char *name, void *arg)
{
	struct chan_row_ctx *ctx = arg;
	struct chan_state st;
	struct chan *c;

	if (chan_open(ctx->dir, name, &c))
		return 0; /* destroyed meanwhile, or not ours */
	/* A lock a stopped process holds: a moment (chan_poll), then the row says so. */
	int rc = chan_poll(c, &st, 0);

	chan_close(c);
	if (rc && rc != -EAGAIN && rc != -ETIMEDOUT && rc != -EBADMSG)
		return 0;
	if (!ctx->n)
		print_text("  %-24s %8s %12s %10s %12s %12s\n", "channel", "count", "bytes", "capacity",
			   "sent", "received");
	print_open_object(NULL);
	print_string(PRINT_ANY, "name", "  %-24s", name);
	if (rc) {
		print_string(PRINT_ANY, "state", " %s\n",
			     rc == -EBADMSG ? "corrupt: quarantined (destroy it and create it again)"
					    : "locked by a process that does not let go (stopped?)");
		print_close_object();
		ctx->n++;
		return 0;
	}
	print_uint(PRINT_ANY, "count", " %8llu", st.count);
	print_uint(PRINT_ANY, "bytes", " %12llu", st.bytes);
	print_bool(PRINT_JSON, "empty", NULL, st.empty);
	print_bool(PRINT_JSON, "full", NULL, st.full);
	print_uint(PRINT_ANY, "capacity", " %10llu", st.capacity_msgs);
	print_uint(PRINT_JSON, "capacity_bytes", NULL, st.capacity_bytes);
	print_uint(PRINT_JSON, "max_msg", NULL, st.max_msg);
	print_uint(PRINT_ANY, "sent", " %12llu", st.sent);
	print_uint(PRINT_ANY, "received", " %12llu\n", st.received);
	print_close_object();
	ctx->n++;
	return 0;
}

/* One remote agent's traffic as its link counted it; the line ends here in text. */
static void status_peer(const struct gw_peer_stats *st)
{
	print_uint(PRINT_ANY, "msgs_sent", "; sent %llu messages", st->msgs_sent);
	print_uint(PRINT_ANY, "bytes_sent", " (%llu bytes)", st->bytes_sent);
	print_uint(PRINT_ANY, "msgs_received", ", received %llu", st->msgs_recv);
	print_uint(PRINT_ANY, "bytes_received", " (%llu bytes)", st->bytes_recv);
	print_uint(PRINT_ANY, "eager_buffers_sent", ", %llu eager buffers sent", st->buffers_sent);
	print_double(PRINT_ANY, "aggregation", " (%.1f items per buffer)",
		     st->buffers_sent ? (double)st->buffer_items_sent / (double)st->buffers_sent : 0.0);
	print_uint(PRINT_JSON, "eager_items_sent", NULL, st->buffer_items_sent);
	print_uint(PRINT_JSON, "eager_buffers_received", NULL, st->buffers_recv);
	print_uint(PRINT_ANY, "large_sent", ", %llu large", st->large_sent);
	print_uint(PRINT_ANY, "eager_buffers_in_use", ", %llu of 4 eager buffers in use", st->eager_in_use);
	print_uint(PRINT_JSON, "waiting", NULL, st->waiting);
	print_uint(PRINT_JSON, "waiting_hwm", NULL, st->waiting_hwm);
	print_uint(PRINT_ANY, "retries", ", %llu retries", st->retries);
	print_int(PRINT_JSON, "last_error", NULL, st->last_error);
	print_string(PRINT_ANY, "last_error_text", ", last error: %s\n",
		     st->last_error ? strerror(-st->last_error) : "none");
}

/* One agent's peers, gateway, flow gauges, registered pool and stealing counters. */
static void status_agent(const struct gw_info *info)
{
	const struct gw_agent_stats *a = &info->agent;

	print_open_array("peers");
	for (uint32_t i = 0; i < info->nodes; i++) {
		if (i == info->rank)
			continue;
		print_open_object(NULL);
		print_uint(PRINT_ANY, "rank", "  peer %llu", i);
		print_string(PRINT_ANY, "host", " %s", info->hosts[i]);
		const struct gw_peer_stats *ps = &info->peer_stats[i];
		bool mismatch =
		    ps->agents_per_node && ps->agents_per_node != (info->siblings ? info->siblings : 1);

		print_string(PRINT_ANY, "state", ": %s",
			     mismatch		? "mismatch"
			     : info->peer_up[i] ? "up"
						: "down");
		print_uint(PRINT_JSON, "agents_per_node", NULL, ps->agents_per_node);
		if (mismatch)
			print_uint(PRINT_TEXT, NULL,
				   " (it runs %llu agents per node, this node another count)",
				   ps->agents_per_node);
		status_peer(ps);
		print_close_object();
	}
	print_close_array();
	print_open_object("gateway");
	print_uint(PRINT_ANY, "depth", "gateway: %llu", info->depth);
	print_uint(PRINT_ANY, "slots", " of %llu slots in use", GW_SLOTS);
	print_uint(PRINT_ANY, "requests", "; %llu requests", info->requests);
	print_uint(PRINT_ANY, "completed", ", %llu completed", info->completed);
	print_uint(PRINT_ANY, "failed", ", %llu failed", info->failed);
	print_uint(PRINT_ANY, "eagain", ", %llu refused (full)", info->eagain);
	print_uint(PRINT_ANY, "reaped", ", %llu reclaimed from dead clients\n", info->reaped);
	print_close_object();
	print_open_object("flow");
	print_string(PRINT_TEXT, NULL, "%s", "flow control, bytes held now / high-water mark / cap:");
	for (int k = 0; k < FLOW_NKINDS; k++) {
		print_open_object(flow_kind_name((enum flow_kind)k));
		print_string(PRINT_TEXT, NULL, k ? ", %s" : " %s", flow_kind_name((enum flow_kind)k));
		print_uint(PRINT_ANY, "pending_bytes", " %llu", info->flow[k].now);
		print_uint(PRINT_ANY, "hwm_bytes", " / %llu", info->flow[k].hwm);
		print_uint(PRINT_ANY, "cap_bytes", " / %llu", info->flow[k].cap);
		print_close_object();
	}
	print_string(PRINT_TEXT, NULL, "%s", "\n");
	print_close_object();
	print_open_object("pool");
	/* An agent alone has no links, so no pool: say so rather than show zeros as if it were empty. */
	print_bool(PRINT_JSON, "links", NULL, info->nodes > 1);
	if (info->nodes <= 1) {
		print_string(PRINT_TEXT, NULL, "%s",
			     "registered pool: none (the only node: no links to other nodes, nothing "
			     "registered)\n");
		print_close_object();
		goto steal;
	}
	print_uint(PRINT_ANY, "registered_bytes", "registered pool: %llu bytes", a->pool_bytes);
	print_uint(PRINT_ANY, "slots_in_use", ", rma staging slots %llu", a->slots_in_use);
	print_uint(PRINT_ANY, "slots", " of %llu in use", a->pool_slots);
	print_uint(PRINT_ANY, "slots_hwm", " (at most %llu)", a->slots_hwm);
	print_string(PRINT_ANY, "pages", ", on %s", a->hugepages ? "hugepages" : "ordinary pages");
	print_bool(PRINT_JSON, "hugepages_asked", NULL, a->hugepages_asked);
	if (a->hugepages_asked && !a->hugepages)
		print_string(PRINT_TEXT, NULL, "%s", " (hugepages asked for, none reserved)");
	print_uint(PRINT_ANY, "eager_send_buffers", "; eager send buffers %llu", a->tx_buffers);
	print_uint(PRINT_ANY, "eager_send_hwm", " (at most %llu taken)", a->tx_hwm);
	print_uint(PRINT_ANY, "frames", ", large frames %llu", a->frames);
	print_uint(PRINT_ANY, "frames_hwm", " (at most %llu taken)", a->frames_hwm);
	print_uint(PRINT_ANY, "fallbacks", ", %llu from the heap", a->fallbacks);
	print_uint(PRINT_ANY, "registrations", "; %llu registrations made", a->registrations);
	print_uint(PRINT_ANY, "registered_now", ", %llu held\n", a->registered_now);
	print_close_object();
steal:
	print_uint(PRINT_ANY, "copied_bytes", "bytes the agent copied with the CPU: %llu", a->copied);
	print_uint(PRINT_ANY, "nic_bytes", "; its NIC sent or read: %llu\n", a->nic_bytes);
	print_open_object("steal");
	print_uint(PRINT_ANY, "steals", "stealing: %llu large-message reads done for siblings", a->steals);
	print_uint(PRINT_ANY, "steal_bytes", " (%llu bytes)", a->steal_bytes);
	print_uint(PRINT_ANY, "stolen", ", %llu of ours done by siblings\n", a->stolen);
	print_close_object();
}

/* The node's other agents (siblings 1..N-1), each a row of its own. */
static void status_siblings(const char *dir, const struct gw_info *first)
{
	static struct gw_info info; /* hundreds of KiB: not on the stack */

	print_open_array("agents");
	for (uint32_t k = 0; k < first->siblings && k < AGENT_SIBLINGS_MAX; k++) {
		struct gateway *gw = NULL;
		char name[32];

		agent_id_text(agent_id(first->rank, k), name, sizeof(name));
		if (k == 0) {
			info = *first;
		} else if (gw_open(dir, agent_id(first->rank, k), &gw) == 0) {
			gw_info(gw, &info);
			gw_close(gw);
		} else {
			print_open_object(NULL);
			print_uint(PRINT_ANY, "sibling", "agent %llu", k);
			print_string(PRINT_ANY, "name", " (%s)", name);
			print_bool(PRINT_ANY, "running", ": not running\n", false);
			print_close_object();
			continue;
		}
		print_open_object(NULL);
		print_uint(PRINT_ANY, "sibling", "agent %llu", k);
		print_string(PRINT_ANY, "name", " (%s)", name);
		print_bool(PRINT_JSON, "running", NULL, true);
		print_int(PRINT_ANY, "pid", ", pid %lld\n", info.pid);
		status_agent(&info);
		print_close_object();
	}
	print_close_array();
}

int agent_status(const struct agent_opts *o)
{
	char dir[PATH_MAX], why[512];
	struct gateway *gw = NULL;
	static struct gw_info info;
	int rc = agent_dir_resolve(dir, sizeof(dir), false, why, sizeof(why));

	if (o->nargs)
		return usage_error(AGENT_CMD, "status takes no arguments");
	if (rc == -EINVAL)
		return usage_error(AGENT_CMD, "%s", why);
	if (!rc)
		rc = gw_open(dir, o->rank, &gw);
	if (rc) {
		print_begin();
		print_bool(PRINT_JSON, "running", NULL, false);
		print_string(PRINT_ANY, "dir", "no agent runs for %s", dir);
		print_uint(PRINT_ANY, "rank", " rank %llu\n", o->rank);
		print_end();
		return AGENT_EXIT_NOT_RUNNING;
	}
	gw_info(gw, &info);
	gw_close(gw);
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	double uptime =
	    ((double)now.tv_sec * 1e9 + (double)now.tv_nsec - (double)info.start_realtime_ns) / 1e9;
	struct chan_row_ctx ctx = {.dir = dir};

	print_begin();
	print_bool(PRINT_JSON, "running", NULL, true);
	print_uint(PRINT_ANY, "rank", "agent rank %llu", info.rank);
	print_uint(PRINT_ANY, "nodes", " of %llu", info.nodes);
	print_int(PRINT_ANY, "pid", ", pid %lld", info.pid);
	print_double(PRINT_ANY, "uptime_s", ", up %.1f s", uptime);
	print_uint(PRINT_ANY, "agents_per_node", ", %llu agent(s) on this node", info.siblings);
	print_string(PRINT_ANY, "dir", ", directory %s\n", dir);
	/*
	 * JSON: the node's first agent at the top (what one agent per node
	 * shows), then a row per agent.  Text: the rows alone when there are several.
	 */
	if (print_is_json() || info.siblings <= 1)
		status_agent(&info);
	if (print_is_json() || info.siblings > 1)
		status_siblings(dir, &info);
	print_open_array("channels");
	chan_list(dir, status_channel, &ctx);
	print_close_array();
	if (!ctx.n)
		print_text("no channels\n");
	print_end();
	return EXIT_OK;
}
