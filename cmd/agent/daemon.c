/* SPDX-License-Identifier: MIT */
/* rdmatool agent foreground|start|stop|status: the daemon's life cycle. */
#include "cmd/agent/agent_cmd.h"
#include "cmd/cmd.h"
#include "cmd/json.h"
#include "core/agent/agent_dir.h"
#include "core/agent/channel.h"
#include "core/agent/engine.h"
#include "core/agent/pidfile.h"
#include "core/stats/stats.h"
#include "core/util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Runs the engine; ready_fd (or -1) gets one byte once it serves. */
static int serve(const struct agent_opts *o, const char *dir, int ready_fd)
{
	struct agent_engine_config cfg = {.dir = dir,
					  .rank = o->rank,
					  .nodes = o->nodes,
					  .hosts = o->hosts,
					  .ports = o->boot->ports,
					  .log = {log_line, NULL},
					  .debug = o->debug};
	struct sigaction sa = {.sa_handler = on_stop_signal};
	struct agent_engine *e;
	char why[512];
	int rc;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	stats_segment_open("agent");
	rc = agent_engine_open(&cfg, &e, why, sizeof(why));
	if (rc) {
		stats_segment_close();
		return run_error(AGENT_CMD, "%s", why);
	}
	snprintf(why, sizeof(why), "%u node(s) from %s; rank %u from %s", o->nodes, o->boot->hosts_source,
		 o->rank, o->boot->rank_source);
	log_line(NULL, why);
	if (ready_fd >= 0) {
		if (write(ready_fd, "r", 1) != 1)
			log_line(NULL, "could not tell the starting process that the agent is ready");
		close(ready_fd);
	}
	agent_engine_run(e, &stop_requested);
	agent_engine_close(e);
	stats_segment_close();
	return EXIT_OK;
}

int agent_foreground(const struct agent_opts *o)
{
	char dir[PATH_MAX];
	int rc = resolve_dir(dir, sizeof(dir), true);

	if (rc)
		return rc;
	if (o->nargs)
		return usage_error(AGENT_CMD, "foreground takes no arguments");
	return serve(o, dir, -1);
}

static void print_log_tail(const char *path)
{
	char line[512], lines[5][512];
	int n = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		snprintf(lines[n++ % 5], sizeof(lines[0]), "%s", line);
	fclose(f);
	for (int i = n > 5 ? n - 5 : 0; i < n; i++)
		fprintf(stderr, "  %s", lines[i % 5]);
}

int agent_start(const struct agent_opts *o)
{
	char dir[PATH_MAX], log_path[PATH_MAX + 32];
	int rc = resolve_dir(dir, sizeof(dir), true), pipefd[2], log_fd;
	pid_t holder, pid;
	struct pollfd pfd;
	char byte;

	if (rc)
		return rc;
	if (o->nargs)
		return usage_error(AGENT_CMD, "start takes no arguments");
	holder = pidfile_holder(dir, o->rank);
	if (holder)
		return run_error(
		    AGENT_CMD,
		    "an agent already runs for %s rank %u (pid %d); stop it with 'rdmatool agent stop'", dir,
		    o->rank, (int)holder);
	snprintf(log_path, sizeof(log_path), "%s/agent.%u.log", dir, o->rank);
	log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (log_fd < 0)
		return run_error(AGENT_CMD, "cannot open the log %s: %s", log_path, strerror(errno));
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
		_exit(serve(o, dir, pipefd[1]));
	}
	close(pipefd[1]);
	close(log_fd);
	waitpid(pid, NULL, 0);
	pfd = (struct pollfd){.fd = pipefd[0], .events = POLLIN};
	rc = poll(&pfd, 1, START_DEADLINE_MS);
	if (rc == 1 && read(pipefd[0], &byte, 1) == 1) {
		close(pipefd[0]);
		holder = pidfile_holder(dir, o->rank);
		notice(AGENT_CMD, "agent rank %u started (pid %d), serving %s; log %s", o->rank, (int)holder,
		       dir, log_path);
		return EXIT_OK;
	}
	close(pipefd[0]);
	fprintf(stderr, "rdmatool agent: the agent did not start%s; the end of %s:\n",
		rc == 0 ? " within 10 s" : "", log_path);
	print_log_tail(log_path);
	return EXIT_FAILURES;
}

/* Gone, or a zombie waiting for an init that may be slow to reap it. */
static bool process_gone(pid_t pid)
{
	char path[64], stat[512];
	const char *close_paren;
	FILE *f;
	size_t n;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	close_paren = strrchr(stat, ')');
	return close_paren && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

int agent_stop(const struct agent_opts *o)
{
	char dir[PATH_MAX], why[512];
	int rc = agent_dir_resolve(dir, sizeof(dir), false, why, sizeof(why));
	uint64_t deadline;
	pid_t pid;

	if (o->nargs)
		return usage_error(AGENT_CMD, "stop takes no arguments");
	if (rc && rc != -ENOENT)
		return rc == -EINVAL ? usage_error(AGENT_CMD, "%s", why) : run_error(AGENT_CMD, "%s", why);
	pid = rc ? 0 : pidfile_holder(dir, o->rank);
	if (!pid) {
		notice(AGENT_CMD, "no agent runs for %s rank %u", dir, o->rank);
		return EXIT_OK;
	}
	if (kill(pid, SIGTERM))
		return run_error(AGENT_CMD, "cannot signal the agent (pid %d): %s", (int)pid,
				 strerror(errno));
	deadline = clock_ns() + STOP_DEADLINE_MS * 1000000ull;
	while (pidfile_holder(dir, o->rank) == pid || !process_gone(pid)) {
		if (clock_ns() > deadline)
			return run_error(AGENT_CMD,
					 "the agent (pid %d) did not stop within %d s; 'kill -9 %d' ends it",
					 (int)pid, STOP_DEADLINE_MS / 1000, (int)pid);
		usleep(10000);
	}
	notice(AGENT_CMD, "agent rank %u (pid %d) stopped", o->rank, (int)pid);
	return EXIT_OK;
}

struct chan_row_ctx {
	const char *dir;
	struct json *j;
	int n;
};

static int status_channel(const char *name, void *arg)
{
	struct chan_row_ctx *ctx = arg;
	struct chan_state st;
	struct chan *c;

	if (chan_open(ctx->dir, name, &c))
		return 0; /* destroyed meanwhile, or not ours */
	int rc = chan_poll(c, &st, 0);

	chan_close(c);
	if (rc)
		return 0;
	if (ctx->j) {
		json_begin_object(ctx->j, NULL);
		json_string(ctx->j, "name", name);
		agent_json_chan_state(ctx->j, &st);
		json_end_object(ctx->j);
	} else {
		if (!ctx->n)
			printf("  %-24s %8s %12s %10s %12s %12s\n", "channel", "count", "bytes", "capacity",
			       "sent", "received");
		printf("  %-24s %8u %12llu %10u %12llu %12llu\n", name, st.count,
		       (unsigned long long)st.bytes, st.capacity_msgs, (unsigned long long)st.sent,
		       (unsigned long long)st.received);
	}
	ctx->n++;
	return 0;
}

static void status_peer_json(struct json *j, const struct gw_peer_stats *st)
{
	json_uint(j, "msgs_sent", st->msgs_sent);
	json_uint(j, "bytes_sent", st->bytes_sent);
	json_uint(j, "msgs_received", st->msgs_recv);
	json_uint(j, "bytes_received", st->bytes_recv);
	json_uint(j, "retries", st->retries);
	json_int(j, "last_error", st->last_error);
	json_string(j, "last_error_text", st->last_error ? strerror(-st->last_error) : "");
}

static void status_peer_text(uint32_t rank, const char *host, bool up, const struct gw_peer_stats *st)
{
	printf("  peer %u %s: %s; sent %llu messages (%llu bytes), received %llu (%llu bytes), %llu retries, "
	       "last error: %s\n",
	       rank, host, up ? "up" : "down", (unsigned long long)st->msgs_sent,
	       (unsigned long long)st->bytes_sent, (unsigned long long)st->msgs_recv,
	       (unsigned long long)st->bytes_recv, (unsigned long long)st->retries,
	       st->last_error ? strerror(-st->last_error) : "none");
}

int agent_status(const struct agent_opts *o)
{
	char dir[PATH_MAX], why[512];
	struct gateway *gw = NULL;
	struct gw_info info;
	struct json j;
	int rc = agent_dir_resolve(dir, sizeof(dir), false, why, sizeof(why));

	if (o->nargs)
		return usage_error(AGENT_CMD, "status takes no arguments");
	if (rc == -EINVAL)
		return usage_error(AGENT_CMD, "%s", why);
	if (!rc)
		rc = gw_open(dir, o->rank, &gw);
	if (rc) {
		if (global_opts.json) {
			json_init(&j, stdout, global_opts.pretty);
			json_begin_object(&j, NULL);
			json_bool(&j, "running", false);
			json_string(&j, "dir", dir);
			json_uint(&j, "rank", o->rank);
			json_end_object(&j);
			json_finish(&j);
		} else {
			printf("no agent runs for %s rank %u\n", dir, o->rank);
		}
		return AGENT_EXIT_NOT_RUNNING;
	}
	gw_info(gw, &info);
	gw_close(gw);
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	double uptime =
	    ((double)now.tv_sec * 1e9 + (double)now.tv_nsec - (double)info.start_realtime_ns) / 1e9;
	struct chan_row_ctx ctx = {.dir = dir};

	if (global_opts.json) {
		json_init(&j, stdout, global_opts.pretty);
		json_begin_object(&j, NULL);
		json_bool(&j, "running", true);
		json_string(&j, "dir", dir);
		json_int(&j, "pid", info.pid);
		json_double(&j, "uptime_s", uptime);
		json_uint(&j, "rank", info.rank);
		json_uint(&j, "nodes", info.nodes);
		json_begin_array(&j, "peers");
		for (uint32_t i = 0; i < info.nodes; i++) {
			if (i == info.rank)
				continue;
			json_begin_object(&j, NULL);
			json_uint(&j, "rank", i);
			json_string(&j, "host", info.hosts[i]);
			json_string(&j, "state", info.peer_up[i] ? "up" : "down");
			status_peer_json(&j, &info.peer_stats[i]);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_begin_object(&j, "gateway");
		json_uint(&j, "depth", info.depth);
		json_uint(&j, "slots", GW_SLOTS);
		json_uint(&j, "requests", info.requests);
		json_uint(&j, "completed", info.completed);
		json_uint(&j, "failed", info.failed);
		json_uint(&j, "eagain", info.eagain);
		json_uint(&j, "reaped", info.reaped);
		json_end_object(&j);
		json_begin_array(&j, "channels");
		ctx.j = &j;
		chan_list(dir, status_channel, &ctx);
		json_end_array(&j);
		json_end_object(&j);
		json_finish(&j);
		return EXIT_OK;
	}
	printf("agent rank %u of %u, pid %d, up %.1f s, directory %s\n", info.rank, info.nodes, info.pid,
	       uptime, dir);
	for (uint32_t i = 0; i < info.nodes; i++)
		if (i != info.rank)
			status_peer_text(i, info.hosts[i], info.peer_up[i], &info.peer_stats[i]);
	printf("gateway: %u of %d slots in use; %llu requests, %llu completed, %llu failed, %llu refused "
	       "(full), "
	       "%llu reclaimed from dead clients\n",
	       info.depth, GW_SLOTS, (unsigned long long)info.requests, (unsigned long long)info.completed,
	       (unsigned long long)info.failed, (unsigned long long)info.eagain,
	       (unsigned long long)info.reaped);
	chan_list(dir, status_channel, &ctx);
	if (!ctx.n)
		printf("no channels\n");
	return EXIT_OK;
}
