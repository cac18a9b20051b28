/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The parent catches the first Ctrl-C (bench_interrupted) so that it can stop
 * its agents and remove their private directory; the helpers it forked
 * inherit that handler, which would let them run on to the end of their
 * stream instead.  They take the default back, and the parent reaps them,
 * stopping them itself when the signal was for it alone.
 */
#include "cmd/bench/child.h"
#include "cmd/bench/bench.h"
#include "core/stats/stats_reader.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

void bench_child_default_signals(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

pid_t bench_wait_child(pid_t pid, int *status)
{
	int mine;
	pid_t got;
	/* A signal for the parent alone (timeout(1), kill) ends the child too. */
	bool told = bench_interrupted && kill(pid, SIGTERM) == 0;

	if (!status)
		status = &mine;
	while ((got = waitpid(pid, status, 0)) < 0 && errno == EINTR)
		if (bench_interrupted && !told)
			told = kill(pid, SIGTERM) == 0;
	if (got == pid && WIFSIGNALED(*status))
		stats_segment_remove(pid);
	return got;
}
