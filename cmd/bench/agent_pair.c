/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Two linked agent processes with private key, directories and ports (see agent_pair.h). */
#include "cmd/bench/agent_pair.h"
#include "cmd/bench/bench.h"
#include "cmd/bench/child.h"
#include "cmd/bench/pin.h"
#include "cmd/cmd.h"
#include "core/chan/agent_key.h"
#include "core/agent/engine.h"
#include "core/chan/gateway.h"
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

#define LINK_DEADLINE_NS 15000000000ull

static volatile sig_atomic_t agent_stop;

static void on_term(int sig)
{
	(void)sig;
	agent_stop = 1;
}

/* A free TCP port on loopback, for an agent's links (a small race with other programs). */
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

void agent_pair_dir(const struct agent_pair *p, int rank, char *buf, size_t len)
{
	snprintf(buf, len, "%s/a%d", p->top, rank);
}

/* cpu >= 0: the agent (all its threads) runs there only. */
static pid_t start_agent(const struct agent_pair *p, uint32_t rank, const uint16_t *ports, int cpu)
{
	static const char hosts[AGENT_PAIR_NODES][GW_HOST_LEN] = {"127.0.0.1", "127.0.0.1"};
	pid_t pid;

	fflush(NULL); /* the child must not write what stdio holds for the parent */
	pid = fork();
	if (pid == 0) {
		struct sigaction sa = {.sa_handler = on_term};
		struct agent_engine_config cfg = {
		    .rank = rank, .nodes = AGENT_PAIR_NODES, .hosts = hosts, .ports = ports};
		struct agent_engine *e;
		char dir[128], why[512];

		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL); /* Ctrl-C reaches the whole process group */
		if (cpu >= 0)
			bench_pin_to(cpu);
		agent_pair_dir(p, (int)rank, dir, sizeof(dir));
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

static bool peer_up(const struct agent_pair *p, int rank)
{
	char dir[128];
	struct gateway *g;
	struct gw_info info;

	agent_pair_dir(p, rank, dir, sizeof(dir));
	if (gw_open(dir, (uint32_t)rank, &g))
		return false;
	gw_info(g, &info);
	gw_close(g);
	return info.peer_up[1 - rank];
}

int agent_pair_start(struct agent_pair *p, bool pin, char *err, size_t errlen)
{
	int cpu[2];
	char path[128];
	uint16_t ports[AGENT_PAIR_NODES];
	uint64_t deadline;
	int rc = 0;

	memset(p, 0, sizeof(*p));
	snprintf(p->top, sizeof(p->top), "/tmp/rdmatool-bench-agent.XXXXXX");
	if (!mkdtemp(p->top)) {
		rc = -errno;
		snprintf(err, errlen, "cannot create a private directory under /tmp: %s", strerror(errno));
		p->top[0] = '\0';
		return rc;
	}
	snprintf(path, sizeof(path), "%s/key", p->top);
	setenv(AGENT_KEY_ENV, path, 1);
	/* Created here, before the agents start (they would agree anyway: the file is made atomically). */
	unsigned char key[AGENT_KEY_LEN];

	rc = agent_key_load(key, err, errlen);
	if (rc) {
		agent_pair_stop(p);
		return rc;
	}
	for (int r = 0; r < AGENT_PAIR_NODES && !rc; r++) {
		agent_pair_dir(p, r, path, sizeof(path));
		ports[r] = free_port();
		rc = mkdir(path, 0700) || !ports[r] ? -EIO : 0;
	}
	if (rc)
		snprintf(err, errlen, "cannot prepare the agents' directories and ports under %s", p->top);
	pin = pin && bench_two_cpus(cpu);
	for (int r = 0; r < AGENT_PAIR_NODES; r++)
		p->cpus[r] = pin ? cpu[r] : -1;
	for (uint32_t r = 0; r < AGENT_PAIR_NODES && !rc; r++)
		if ((p->pids[r] = start_agent(p, r, ports, pin ? cpu[r] : -1)) < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot start agent %u: %s", r, strerror(errno));
		}
	deadline = clock_ns() + LINK_DEADLINE_NS;
	while (!rc && !(peer_up(p, 0) && peer_up(p, 1))) {
		if (bench_interrupted) {
			snprintf(err, errlen, "interrupted");
			rc = -EINTR;
		} else if (clock_ns() > deadline) {
			snprintf(err, errlen, "the two agents did not link within 15 s");
			rc = -ETIMEDOUT;
		}
		usleep(10000);
	}
	if (rc)
		agent_pair_stop(p);
	return rc;
}

void agent_pair_stop(struct agent_pair *p)
{
	char cmd[160];

	for (int r = 0; r < AGENT_PAIR_NODES; r++)
		if (p->pids[r] > 0) {
			kill(p->pids[r], SIGTERM);
			bench_wait_child(p->pids[r], NULL);
			p->pids[r] = 0;
		}
	if (!p->top[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->top);
	if (system(cmd))
		notice("bench", "could not remove %s", p->top);
	p->top[0] = '\0';
}
