/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench chan_rate: message rate through an agent channel (core/chan/channel.h)
 * between two processes, one producer and one consumer, against a pipe
 * carrying the same messages between the same two kinds of processes in the
 * same run (--baseline).  Also reports the channel's futex calls per message:
 * the channel's only system calls, where a pipe makes two per message.
 */
#include "cmd/bench/bench.h"
#include "cmd/bench/child.h"
#include "cmd/bench/pin.h"
#include "cmd/cmd.h"
#include "cmd/print.h"
#include "core/chan/channel.h"
#include "core/util/clock.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHAN_RATE_CAPACITY 1024
#define PEER_TIMEOUT_MS	   10000

struct rate_run {
	double msgs_per_s;
	double futex_per_msg; /* channel only */
};

/*
 * Producer and consumer each on its own CPU, for the channel and for the pipe
 * alike: left alone, the scheduler's wake-affine placement tends to stack
 * them on one CPU, and then every message is a context switch for both.
 */
static int bench_cpus[2] = {-1, -1}; /* the first two CPUs this process may use; -1: only one */

static void pin_to_cpu(int index)
{
	if (bench_cpus[index] >= 0)
		bench_pin_to(bench_cpus[index]);
}

static int full_io(int fd, char *buf, size_t len, bool rd)
{
	while (len) {
		ssize_t n = rd ? read(fd, buf, len) : write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

struct chan_consumer {
	const char *dir;
	size_t size;
	long iters;
	int ready_fd;
};

static int consume_channel(void *arg)
{
	struct chan_consumer *cc = arg;
	char *buf = malloc(cc->size ? cc->size : 1);
	struct chan *c = NULL;
	int rc = 2;
	size_t len;

	if (buf && chan_open(cc->dir, "rate", &c) == 0) {
		pin_to_cpu(1);
		rc = write(cc->ready_fd, "r", 1) == 1 ? 0 : 2;
		for (long i = 0; i < cc->iters && !rc; i++)
			if (chan_recv(c, buf, cc->size, &len, PEER_TIMEOUT_MS) || len != cc->size)
				rc = 1;
	}
	chan_close(c);
	free(buf);
	return rc;
}

static int finish_consumer(pid_t pid, char *err, size_t errlen)
{
	int status;

	if (bench_wait_child(pid, &status) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, "the consumer process failed (status %d)", status);
		return -EIO;
	}
	return 0;
}

static int run_channel(const char *dir, size_t size, long iters, struct rate_run *r, char *err, size_t errlen)
{
	struct chan_attr a = {.capacity_msgs = CHAN_RATE_CAPACITY,
			      .capacity_bytes =
				  CHAN_RATE_CAPACITY * (CHAN_RECORD_HEADER + ((size + 7) & ~(size_t)7)),
			      .max_msg = (uint32_t)size};
	struct chan_consumer cc = {.dir = dir, .size = size, .iters = iters};
	char *buf = calloc(1, size ? size : 1);
	struct chan_state before, after;
	struct chan *c;
	int rc, ready[2];
	uint64_t t0;
	pid_t pid;

	if (!buf)
		return -ENOMEM;
	chan_destroy(dir, "rate");
	rc = chan_create(dir, "rate", &a);
	if (!rc)
		rc = chan_open(dir, "rate", &c);
	if (rc) {
		snprintf(err, errlen, "cannot create a channel in %s: %s", dir, strerror(-rc));
		free(buf);
		return rc;
	}
	if (pipe(ready)) {
		rc = -errno;
		goto out;
	}
	cc.ready_fd = ready[1];
	fflush(NULL); /* the child must not write what stdio holds for the parent */
	pid = fork();
	if (pid == 0) {
		bench_child_default_signals();
		close(ready[0]);
		_exit(consume_channel(&cc));
	}
	close(ready[1]);
	char byte;

	if (pid < 0 || read(ready[0], &byte, 1) != 1) {
		close(ready[0]);
		if (pid > 0)
			bench_wait_child(pid, NULL);
		snprintf(err, errlen, "the consumer process did not start");
		rc = -EIO;
		goto out;
	}
	close(ready[0]);
	chan_poll(c, &before, 0);
	t0 = clock_ns();
	for (long i = 0; i < iters && !rc && !bench_interrupted; i++)
		rc = chan_send(c, buf, size, PEER_TIMEOUT_MS, NULL);
	if (rc) {
		kill(pid, SIGKILL);
		bench_wait_child(pid, NULL);
		snprintf(err, errlen, "sending into the channel failed: %s", strerror(-rc));
		goto out;
	}
	rc = finish_consumer(pid, err, errlen);
	r->msgs_per_s = (double)iters / ((double)(clock_ns() - t0) / 1e9);
	chan_poll(c, &after, 0);
	r->futex_per_msg = (double)(after.futex_calls - before.futex_calls) / (double)iters;
out:
	chan_close(c);
	chan_destroy(dir, "rate");
	free(buf);
	return rc;
}

struct pipe_consumer {
	int fd, ready_fd;
	size_t size;
	long iters;
};

static int consume_pipe(void *arg)
{
	struct pipe_consumer *pc = arg;
	char *buf = malloc(pc->size ? pc->size : 1);
	int rc = 2;

	pin_to_cpu(1);
	if (buf && write(pc->ready_fd, "r", 1) == 1)
		rc = 0;
	for (long i = 0; i < pc->iters && !rc; i++)
		if (full_io(pc->fd, buf, pc->size, true))
			rc = 1;
	free(buf);
	return rc;
}

static int run_pipe(size_t size, long iters, struct rate_run *r, char *err, size_t errlen)
{
	struct pipe_consumer pc = {.size = size, .iters = iters};
	char *buf = calloc(1, size ? size : 1);
	int fds[2], ready[2], rc = 0;
	uint64_t t0;
	pid_t pid;
	char byte;

	if (!buf || pipe(fds)) {
		free(buf);
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -EIO;
	}
	if (pipe(ready)) {
		close(fds[0]);
		close(fds[1]);
		free(buf);
		return -errno;
	}
	pc.fd = fds[0];
	pc.ready_fd = ready[1];
	fflush(NULL); /* the child must not write what stdio holds for the parent */
	pid = fork();
	if (pid == 0) {
		bench_child_default_signals();
		close(fds[1]);
		close(ready[0]);
		_exit(consume_pipe(&pc));
	}
	close(fds[0]);
	close(ready[1]);
	if (pid < 0 || read(ready[0], &byte, 1) != 1)
		rc = -EIO;
	close(ready[0]);
	t0 = clock_ns();
	for (long i = 0; i < iters && !rc && !bench_interrupted; i++)
		rc = full_io(fds[1], buf, size, false);
	close(fds[1]);
	if (pid > 0) {
		int frc = finish_consumer(pid, err, errlen);

		rc = rc ? rc : frc;
	}
	r->msgs_per_s = (double)iters / ((double)(clock_ns() - t0) / 1e9);
	if (rc && !err[0])
		snprintf(err, errlen, "the pipe baseline failed: %s", strerror(-rc));
	free(buf);
	return rc;
}

int bench_chan_rate(size_t size, long iters, bool baseline, int rounds)
{
	char dir[] = "/dev/shm/rdmatool-bench-chan.XXXXXX", err[512] = "";
	double ratios[64];
	int status = EXIT_OK;

	if (iters <= 0)
		iters = 1000000;
	if (rounds > 64)
		rounds = 64;
	if (size > (1u << 20))
		return usage_error("bench", "chan_rate takes --size up to 1 MiB");
	if (!mkdtemp(dir))
		return run_error("bench", "cannot create a private directory under /dev/shm: %s",
				 strerror(errno));
	cpu_set_t saved;
	bool restore = bench_pin_save(&saved);

	if (!bench_two_cpus(bench_cpus))
		bench_cpus[0] = bench_cpus[1] = -1; /* one CPU: nothing to spread */
	pin_to_cpu(0);
	print_begin();
	print_string(PRINT_JSON, "test", NULL, "chan_rate");
	print_string(PRINT_JSON, "mode", NULL, "two_processes");
	print_uint(PRINT_ANY, "MsgSize",
		   "chan_rate: %llu-byte messages, one producer and one consumer process ", size);
	print_int(PRINT_ANY, "n_iterations", "(pinned to two CPUs), %lld messages per run\n", iters);
	print_text(" %-6s %-16s %-16s %-14s %s\n", "round", "channel[Mmsg/s]", baseline ? "pipe[Mmsg/s]" : "",
		   baseline ? "channel/pipe" : "", "futex calls/msg");
	print_open_array("results");
	for (int round = 0; round < rounds && !bench_interrupted; round++) {
		struct rate_run ch = {0}, pp = {0};
		int rc = 0;

		/* ABBA order: neither side always runs first. */
		if (baseline && round % 2)
			rc = run_pipe(size, iters, &pp, err, sizeof(err));
		if (!rc)
			rc = run_channel(dir, size, iters, &ch, err, sizeof(err));
		if (!rc && baseline && round % 2 == 0)
			rc = run_pipe(size, iters, &pp, err, sizeof(err));
		if (rc) {
			/* Ctrl-C: the rounds above stand, and the status below says so (130). */
			if (!bench_interrupted)
				status = run_error("bench", "%s", err);
			break;
		}
		ratios[round] = baseline ? ch.msgs_per_s / pp.msgs_per_s : 0;
		print_open_object(NULL);
		print_text(" %-6d", round + 1);
		print_double(PRINT_JSON, "channel_msgs_per_s", NULL, ch.msgs_per_s);
		print_text(" %-16.3f", ch.msgs_per_s / 1e6);
		if (baseline) {
			print_double(PRINT_JSON, "pipe_msgs_per_s", NULL, pp.msgs_per_s);
			print_text(" %-16.3f", pp.msgs_per_s / 1e6);
			print_double(PRINT_ANY, "channel_over_pipe", " %-14.2f", ratios[round]);
		} else {
			print_text(" %-16s %-14s", "", "");
		}
		print_double(PRINT_ANY, "futex_calls_per_msg", " %.4f\n", ch.futex_per_msg);
		print_close_object();
	}
	rmdir(dir);
	if (restore)
		bench_pin_restore(&saved);
	print_close_array();
	if (bench_interrupted && status == EXIT_OK)
		status = interrupted_status("bench", bench_interrupted);
	if (baseline && status == EXIT_OK) {
		print_text("channel/pipe message rate (median of %d round%s): ", rounds,
			   rounds > 1 ? "s" : "");
		print_double(PRINT_ANY, "channel_over_pipe", "%.2fx\n", bench_median(ratios, rounds));
	}
	print_end();
	return status;
}
