/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What shm_pingpong and cma_bw share (cmd/bench/floor.h): the peer process,
 * forked onto the second CPU with this process on the first (two processes
 * that share one CPU measure the scheduler, not the hardware), and the
 * report of their rounds.
 */
#include "cmd/bench/floor.h"
#include "cmd/bench/bench.h"
#include "cmd/bench/child.h"
#include "cmd/bench/pin.h"
#include "cmd/cmd.h"
#include "cmd/print.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int floor_peer_start(struct floor_peer *p, int (*run)(void *arg, int fd), void *arg)
{
	pid_t parent = getpid();
	int sv[2];

	p->pid = -1;
	p->fd = -1;
	p->restore = bench_pin_save(&p->saved);
	if (!bench_two_cpus(p->cpus))
		p->cpus[0] = p->cpus[1] = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	if (p->cpus[0] >= 0)
		bench_pin_to(p->cpus[0]);
	fflush(NULL); /* the child must not write what stdio holds for the parent */
	p->pid = fork();
	if (p->pid == 0) {
		bench_child_default_signals();
		/* Dies with the bench: nothing else would stop a peer left spinning. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		close(sv[0]);
		if (p->cpus[1] >= 0)
			bench_pin_to(p->cpus[1]);
		_exit(run(arg, sv[1]));
	}
	int err = errno;

	close(sv[1]);
	if (p->pid < 0) {
		close(sv[0]);
		if (p->restore)
			bench_pin_restore(&p->saved);
		return -err;
	}
	p->fd = sv[0];
	return 0;
}

bool floor_peer_gone(const struct floor_peer *p)
{
	siginfo_t info = {0};

	return waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != 0;
}

int floor_peer_finish(struct floor_peer *p, bool kill_it)
{
	int status = 0;

	if (p->fd >= 0)
		close(p->fd); /* a peer waiting on its end sees the end of the file */
	p->fd = -1;
	if (p->pid > 0) {
		if (kill_it)
			kill(p->pid, SIGKILL);
		if (bench_wait_child(p->pid, &status) != p->pid)
			status = -1;
	}
	p->pid = -1;
	if (p->restore)
		bench_pin_restore(&p->saved);
	p->restore = false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void floor_report_begin(const char *test, const char *what, const char *column, size_t size, int rounds,
			const struct floor_peer *p)
{
	print_begin();
	print_string(PRINT_JSON, "test", NULL, test);
	print_string(PRINT_JSON, "mode", NULL, "two_processes");
	print_uint(PRINT_JSON, "MsgSize", NULL, size);
	print_int(PRINT_JSON, "rounds", NULL, rounds);
	print_text("%s: %s", test, what);
	print_int(PRINT_JSON, "cpu", NULL, p->cpus[0]);
	print_int(PRINT_JSON, "peer_cpu", NULL, p->cpus[1]);
	if (p->cpus[0] >= 0)
		print_text(" (CPUs %d and %d)", p->cpus[0], p->cpus[1]);
	else
		print_text(" (one CPU: both processes share it)");
	print_text("\n %-6s %-12s %s\n", "round", "#iterations", column);
	print_open_array("results");
}

void floor_report_round(int round, long iters, const char *key, const char *fmt, double value,
			const char *key2, const char *fmt2, double value2)
{
	print_open_object(NULL);
	print_int(PRINT_ANY, "round", " %-6lld", round);
	print_int(PRINT_ANY, "n_iterations", " %-12lld", iters);
	print_double(PRINT_ANY, key, fmt, value);
	if (key2)
		print_double(PRINT_ANY, key2, fmt2, value2);
	print_text("\n");
	print_close_object();
}

int floor_report_end(int status, const char *key, const char *label, double *values, int n)
{
	print_close_array();
	if (bench_interrupted && status == EXIT_OK)
		status = interrupted_status("bench", bench_interrupted);
	if (n > 0 && status == EXIT_OK) {
		print_text("%s (median of %d round%s): ", label, n, n > 1 ? "s" : "");
		print_double(PRINT_ANY, key, "%.3f\n", bench_median(values, n));
	}
	print_bool(PRINT_JSON, "interrupted", NULL, bench_interrupted);
	print_end();
	return status;
}
