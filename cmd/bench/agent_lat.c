/* SPDX-License-Identifier: MIT */
/*
 * bench agent_lat: a message sent in mode "deposited" to a channel on
 * another node, through two agents (two processes linked over the core
 * transport, like two nodes), against the core transport's own send_lat on
 * the same device, measured in the same run.  A deposited send is a round
 * trip: request to the far agent, deposit, acknowledgement back.
 */
#include "cmd/bench/bench.h"
#include "cmd/cmd.h"
#include "cmd/print.h"
#include "core/agent/agent.h"
#include "core/agent/engine.h"
#include "core/stats/stats.h"
#include "core/util/clock.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define AGENTS 2

static volatile sig_atomic_t agent_stop;

static void on_term(int sig)
{
	(void)sig;
	agent_stop = 1;
}

/* A free TCP port on loopback, for an agent's links (a small race with other programs, retried by the
 * caller). */
static uint16_t free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static pid_t start_agent(const char *top, uint32_t rank, const uint16_t *ports)
{
	static const char hosts[AGENTS][GW_HOST_LEN] = {"127.0.0.1", "127.0.0.1"};
	pid_t pid;

	fflush(NULL); /* the child must not write what stdio holds for the parent */
	pid = fork();

	if (pid == 0) {
		struct sigaction sa = {.sa_handler = on_term};
		struct agent_engine_config cfg = {
		    .rank = rank, .nodes = AGENTS, .hosts = hosts, .ports = ports};
		struct agent_engine *e;
		char dir[4200], why[512];

		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		snprintf(dir, sizeof(dir), "%s/a%u", top, rank);
		cfg.dir = dir;
		if (agent_engine_open(&cfg, &e, why, sizeof(why))) {
			fprintf(stderr, "rdmatool bench: agent %u: %s\n", rank, why);
			stats_segment_close();
			_exit(1);
		}
		agent_engine_run(e, &agent_stop);
		agent_engine_close(e);
		stats_segment_close(); /* _exit skips the atexit that would */
		_exit(0);
	}
	return pid;
}

static bool linked(const char *top)
{
	char dir[4200];
	struct gateway *g;
	struct gw_info info;
	bool up;

	snprintf(dir, sizeof(dir), "%s/a0", top);
	if (gw_open(dir, 0, &g))
		return false;
	gw_info(g, &info);
	gw_close(g);
	up = info.peer_up[1];
	snprintf(dir, sizeof(dir), "%s/a1", top);
	if (gw_open(dir, 1, &g))
		return false;
	gw_info(g, &info);
	gw_close(g);
	return up && info.peer_up[0];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median deposited latency (usec) of iters sends of size bytes from node 0 to a channel on node 1. */
static int measure(const char *top, size_t size, long iters, double *median_us, char *err, size_t errlen)
{
	char dir0[4200], dir1[4200], why[512];
	struct agent_client *cl = NULL;
	struct agent_chan *h = NULL;
	struct chan *far = NULL;
	double *t = calloc((size_t)iters, sizeof(*t));
	char *buf = calloc(1, size ? size : 1);
	size_t len;
	int rc;

	snprintf(dir0, sizeof(dir0), "%s/a0", top);
	snprintf(dir1, sizeof(dir1), "%s/a1", top);
	rc = !t || !buf ? -ENOMEM : chan_create(dir1, "lat", NULL);
	if (!rc)
		rc = chan_open(dir1, "lat", &far);
	setenv("RDMATOOL_AGENT_DIR", dir0, 1);
	if (!rc)
		rc = agent_attach(0, &cl, why, sizeof(why));
	if (!rc)
		rc = agent_chan_open(cl, "1/lat", &h);
	for (long i = 0; i < iters && !rc; i++) {
		uint64_t t0 = clock_ns();

		rc = agent_send(h, buf, size, AGENT_SEND_DEPOSITED, 5000);
		t[i] = (double)(clock_ns() - t0) / 1e3;
		if (!rc)
			rc = chan_recv(far, buf, size ? size : 1, &len, 1000);
	}
	if (rc) {
		snprintf(err, errlen, "a deposited send through the agents failed: %s", strerror(-rc));
	} else {
		qsort(t, (size_t)iters, sizeof(*t), cmp_double);
		*median_us = t[iters / 2];
	}
	agent_chan_close(h);
	agent_detach(cl);
	chan_close(far);
	free(t);
	free(buf);
	return rc;
}

int bench_agent_lat(size_t size, long iters, bool baseline)
{
	char top[] = "/tmp/rdmatool-bench-agent.XXXXXX", path[4200], err[512] = "";
	uint16_t ports[AGENTS];
	pid_t pids[AGENTS] = {0};
	double agent_us = 0;
	struct bench_result core = {0};
	int rc = 0, status = EXIT_OK;

	if (iters <= 0)
		iters = 2000;
	if (size > GW_INLINE)
		return usage_error(
		    "bench", "agent_lat takes --size up to %u bytes (a message to another node)", GW_INLINE);
	if (!mkdtemp(top))
		return run_error("bench", "cannot create a private directory under /tmp: %s",
				 strerror(errno));
	/* The agents' key, directories and ports are private to this run. */
	snprintf(path, sizeof(path), "%s/key", top);
	setenv("RDMATOOL_AGENT_KEY", path, 1);
	for (uint32_t r = 0; r < AGENTS && !rc; r++) {
		snprintf(path, sizeof(path), "%s/a%u", top, r);
		ports[r] = free_port();
		rc = mkdir(path, 0700) || !ports[r] ? -EIO : 0;
	}
	for (uint32_t r = 0; r < AGENTS && !rc; r++)
		rc = (pids[r] = start_agent(top, r, ports)) < 0 ? -errno : 0;
	uint64_t deadline = clock_ns() + 15000000000ull;

	while (!rc && !linked(top)) {
		if (clock_ns() > deadline) {
			snprintf(err, sizeof(err), "the two agents did not link within 15 s");
			rc = -ETIMEDOUT;
		}
		usleep(10000);
	}
	if (!rc)
		rc = measure(top, size, iters, &agent_us, err, sizeof(err));
	for (int r = 0; r < AGENTS; r++)
		if (pids[r] > 0) {
			kill(pids[r], SIGTERM);
			waitpid(pids[r], NULL, 0);
		}
	snprintf(path, sizeof(path), "rm -rf '%s'", top);
	if (system(path))
		notice("bench", "could not remove %s", top);
	if (rc)
		return run_error("bench", "%s", err[0] ? err : strerror(-rc));
	if (baseline) {
		struct bench_opts o = {.size = size ? size : 8, .iters = iters, .threads = 1, .stripes = 1};

		core_env_defaults(&o.env);
		if (bench_transport("send_lat", &o, &core, err, sizeof(err)))
			return run_error("bench", "the core send_lat baseline failed: %s", err);
	}
	print_begin();
	print_string(PRINT_JSON, "test", NULL, "agent_lat");
	print_uint(PRINT_ANY, "MsgSize",
		   "agent_lat: %llu-byte deposited sends from node 0 to a channel on node 1 ", size);
	print_int(PRINT_ANY, "iters", "(two agent processes), %lld iterations\n", iters);
	print_double(PRINT_ANY, "deposited_median_us",
		     "  through the agents: %.2f usec median (request, deposit, acknowledgement)\n",
		     agent_us);
	if (baseline) {
		print_double(PRINT_ANY, "core_send_lat_typical_us",
			     "  core send_lat:      %.2f usec typical (half a round trip)\n", core.t_typical);
		print_double(PRINT_ANY, "ratio_to_core_send_lat", "  ratio: %.2fx\n",
			     agent_us / core.t_typical);
	}
	print_end();
	return status;
}
