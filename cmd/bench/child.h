/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The processes a bench test forks (agents, senders, drainers, consumers) and
 * Ctrl-C, which the terminal sends to the whole process group (cmd/bench/child.c).
 */
#ifndef RDMATOOL_CMD_BENCH_CHILD_H
#define RDMATOOL_CMD_BENCH_CHILD_H

#include <sys/types.h>

/* In a forked helper: SIGINT and SIGTERM end it at once (it holds nothing the parent does not clean up). */
void bench_child_default_signals(void);
/*
 * waitpid through the parent's own interruptions; once bench_interrupted is set the child is sent
 * SIGTERM.  A child a signal ended could not remove its stats segment: removed here.
 * status may be NULL, as for waitpid.  Returns pid, or -1 with errno.
 */
pid_t bench_wait_child(pid_t pid, int *status);

#endif
