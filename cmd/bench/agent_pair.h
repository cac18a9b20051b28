/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Two agent processes linked over the core transport on this machine, like
 * two nodes, with a private key, directories and ports: the harness of the
 * agent benchmarks (agent_lat, agent_rate, agent_bw).
 */
#ifndef RDMATOOL_CMD_BENCH_AGENT_PAIR_H
#define RDMATOOL_CMD_BENCH_AGENT_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define AGENT_PAIR_NODES 2

struct agent_pair {
	char top[64]; /* private directory: key, a0/, a1/ */
	pid_t pids[AGENT_PAIR_NODES];
	int cpus[AGENT_PAIR_NODES]; /* the CPU agent r runs on, -1: not pinned */
};

/*
 * Starts both agents (inheriting this process's environment) and waits until they are linked;
 * with pin, agent r runs on the r-th of the first two CPUs (p->cpus[r], else -1), as the pair baselines' two processes
 * do (cmd/bench/pin.h).  0 or a negative errno with err filled; on error everything started is
 * stopped.
 */
int agent_pair_start(struct agent_pair *p, bool pin, char *err, size_t errlen);
/* Stops both agents and removes the private directory. */
void agent_pair_stop(struct agent_pair *p);
/* The gateway directory of node rank. */
void agent_pair_dir(const struct agent_pair *p, int rank, char *buf, size_t len);

/* A streaming SENDMSG benchmark through the pair (cmd/bench/agent_stream.c). */
/* --rounds (1..99, as cmd.c checks): the agents and the baselines alternate, ratios are medians. */
#define BENCH_AGENT_MAX_ROUNDS 99
int bench_agent_rate(size_t size, long iters, bool baseline, int rounds);
int bench_agent_bw(size_t size, long iters, bool baseline, int rounds);

#endif
