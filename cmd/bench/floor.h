/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The physical floors of two processes on one host, shm_pingpong (a cache line
 * bouncing between them) and cma_bw (one reading the other's memory with
 * process_vm_readv): what both do the same way (cmd/bench/floor.c), forking
 * the peer onto its own CPU and printing the rounds.
 */
#ifndef RDMATOOL_CMD_BENCH_FLOOR_H
#define RDMATOOL_CMD_BENCH_FLOOR_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* How long either side waits for the other at any step before it gives up. */
#define FLOOR_PEER_TIMEOUT_MS 10000
/* Rounds unless --rounds says otherwise (the result is their median), and at most. */
#define FLOOR_DEFAULT_ROUNDS 9
#define FLOOR_MAX_ROUNDS     99

struct floor_peer {
	pid_t pid;
	int fd;	     /* this side's end of a socketpair with the peer */
	int cpus[2]; /* this process on cpus[0], the peer on cpus[1]; -1: not pinned (one CPU) */
	cpu_set_t saved;
	bool restore;
};

/*
 * Pins this process to the first CPU it may use and forks run(arg, fd) onto the second, with
 * SIGINT/SIGTERM at their defaults and killed if this process dies; run's return is its exit
 * status.  Returns 0 or a negative errno (the peer not started).
 */
int floor_peer_start(struct floor_peer *p, int (*run)(void *arg, int fd), void *arg);
/* Whether the peer has ended (it is not reaped: floor_peer_finish does that). */
bool floor_peer_gone(const struct floor_peer *p);
/*
 * Ends the peer (SIGKILL first when kill is set, else it is expected to end by itself), reaps it
 * and gives this process back its CPUs.  Returns 0 when the peer exited with status 0.
 */
int floor_peer_finish(struct floor_peer *p, bool kill);

/*
 * The report: what (a line of text naming the measurement; the CPUs are added), the rounds (under
 * the heading columns, one row each with key's figure and, unless key2 is NULL, key2's), and the
 * median of the rounds' key figures.
 */
void floor_report_begin(const char *test, const char *what, const char *column, size_t size, int rounds,
			const struct floor_peer *p);
void floor_report_round(int round, long iters, const char *key, const char *fmt, double value,
			const char *key2, const char *fmt2, double value2);
/* Closes the rows; with status 0, prints the median of values[0..n) under key.  Returns status, or
 * 128 + the signal when the run was interrupted (with the notice that the rows are partial). */
int floor_report_end(int status, const char *key, const char *label, double *values, int n);

#endif
