/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * agent_rate's "direct" baseline: the same P sender processes send the same
 * messages straight to a receiver process with core sends (each its own
 * core endpoint and connection, no agent), placed as agent_rate places its
 * processes: the senders on one CPU, the receiver on the other, as on two
 * machines (cmd/bench/agent_stream.c).  The receiver times the stream
 * from its first message to its last, so process and endpoint start-up do
 * not count against the baseline.
 */
#include "cmd/bench/direct_rate.h"
#include "cmd/bench/child.h"
#include "cmd/bench/pin.h"

#include "core/oob/oob.h"
#include "core/stats/stats.h"
#include "core/transport/endpoint.h"
#include "core/util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define DIRECT_WINDOW	  64 /* sends in flight per process */
#define DIRECT_RECVS	  256
#define DIRECT_TIMEOUT_NS 30000000000ull

static int open_ep(struct core_ep **ep)
{
	struct core_ep_attr attr;
	char why[256];

	core_ep_attr_defaults(&attr);
	attr.name = "direct";
	attr.threading = CORE_THREAD_SINGLE;
	attr.env.tx_stripes = 1;
	return core_ep_open(&attr, ep, why, sizeof(why));
}

/*
 * The receiver's NIC must outlive the senders' last completions: a message
 * can arrive before its ACK leaves, and a receiver that closed then fails
 * the sender's send (RETRY_EXC_ERR).  It keeps progressing until the parent
 * closes the pipe's other end, once every sender has exited.
 */
static void linger_until_senders_exit(struct core_ep *ep, int senders_done, uint64_t deadline)
{
	struct pollfd p = {.fd = senders_done, .events = POLLIN};
	struct core_cqe e[32];

	while (clock_ns() < deadline) {
		core_cq_read(ep, e, 32);
		if (poll(&p, 1, 1) != 0)
			return; /* end of file (or an error): nobody is left to wait for */
	}
}

/*
 * The receiver: accepts procs connections, takes iters messages; *elapsed_ns
 * from the first to the last (iters - 1 intervals).
 */
static int receive(struct oob_listener *l, int procs, size_t size, long iters, uint64_t *elapsed_ns,
		   int senders_done)
{
	struct core_ep *ep = NULL;
	size_t len = size ? size : 1;
	char *bufs = malloc(len * DIRECT_RECVS);
	uint64_t first = 0, last = 0, deadline = clock_ns() + DIRECT_TIMEOUT_NS;
	long got = 0;
	int rc = bufs ? open_ep(&ep) : -ENOMEM;

	for (int i = 0; i < procs && !rc; i++) {
		struct oob_conn *c;
		uint32_t peer;

		rc = oob_accept(l, 10000, &c);
		if (!rc) {
			rc = core_ep_connect_oob(ep, c, &peer);
			oob_close(c);
		}
	}
	for (int i = 0; i < DIRECT_RECVS && !rc; i++)
		rc = core_recv(ep, bufs + (size_t)i * len, len, bufs + (size_t)i * len);
	while (!rc && got < iters && clock_ns() < deadline) {
		struct core_cqe e[32];
		int n = core_cq_read(ep, e, 32);

		for (int i = 0; i < n && !rc; i++) {
			if (!(e[i].flags & CORE_CQE_RECV))
				continue;
			if (e[i].status || e[i].len != size)
				rc = -EBADMSG;
			last = clock_ns();
			if (!got++)
				first = last;
			if (!rc)
				rc = core_recv(ep, e[i].context, len, e[i].context);
		}
		if (n < 0)
			rc = n;
	}
	if (!rc && got < iters)
		rc = -ETIMEDOUT;
	*elapsed_ns = last - first;
	if (ep)
		linger_until_senders_exit(ep, senders_done, deadline);
	core_ep_close(ep);
	free(bufs);
	return rc;
}

/* A sender: n messages to the receiver at port, at most DIRECT_WINDOW in flight. */
static int send_stream(int port, size_t size, long n)
{
	struct core_ep *ep = NULL;
	struct oob_conn *c = NULL;
	char addr[32], *buf = calloc(1, size ? size : 1);
	uint64_t deadline = clock_ns() + DIRECT_TIMEOUT_NS;
	uint32_t peer;
	long sent = 0, done = 0;
	int rc = buf ? open_ep(&ep) : -ENOMEM;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if (!rc)
		rc = oob_connect(addr, 10000, &c);
	if (!rc)
		rc = core_ep_connect_oob(ep, c, &peer);
	while (!rc && done < n && clock_ns() < deadline) {
		struct core_cqe e[32];
		int k;

		while (!rc && sent < n && sent - done < DIRECT_WINDOW) {
			rc = core_send(ep, peer, buf, size, NULL);
			if (rc == -EAGAIN) {
				rc = 0;
				break;
			}
			sent += !rc;
		}
		k = core_cq_read(ep, e, 32);
		for (int i = 0; i < k; i++)
			if (e[i].flags & CORE_CQE_SEND) {
				done++;
				if (e[i].status && !rc) {
					fprintf(stderr, "rdmatool bench: direct sender %d: send %ld completed with %s\n",
						(int)getpid(), done, ibv_wc_status_str(e[i].status));
					rc = -EIO;
				}
			}
		if (k < 0)
			rc = k;
	}
	if (!rc && done < n)
		rc = -ETIMEDOUT;
	oob_close(c);
	core_ep_close(ep);
	free(buf);
	return rc;
}

/*
 * A forked sender or receiver ends: _exit skips the atexit that removes its
 * stats segment.  The exit status is its error number, for the message.
 */
static _Noreturn void child_exit(int rc)
{
	stats_segment_close();
	_exit(-rc & 0xff);
}

int direct_rate(size_t size, long iters, int procs, const int cpus[2], double *msgs_per_s, char *err,
		size_t errlen)
{
	struct oob_listener *l = NULL;
	uint64_t *elapsed =
	    mmap(NULL, sizeof(*elapsed), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t recv_pid, senders[DIRECT_MAX_PROCS];
	int status, rc = elapsed == MAP_FAILED ? -ENOMEM : oob_listen("127.0.0.1:0", &l), started = 0;
	int senders_done[2] = {-1, -1}; /* the parent closes [1] when every sender has exited */

	if (!rc && procs > DIRECT_MAX_PROCS)
		rc = -EINVAL;
	if (!rc && pipe2(senders_done, O_CLOEXEC))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "direct sends: %s", strerror(-rc));
		goto out;
	}
	fflush(NULL);
	recv_pid = fork();
	if (recv_pid == 0) {
		bench_child_default_signals();
		if (cpus[1] >= 0)
			bench_pin_to(cpus[1]);
		close(senders_done[1]);
		child_exit(receive(l, procs, size, iters, elapsed, senders_done[0]));
	}
	close(senders_done[0]);
	for (int i = 0; i < procs && recv_pid > 0; i++) {
		long n = iters / procs + (i < iters % procs);
		pid_t pid = fork();

		if (pid == 0) {
			bench_child_default_signals();
			if (cpus[0] >= 0)
				bench_pin_to(cpus[0]);
			close(senders_done[1]);
			child_exit(send_stream(oob_listener_port(l), size, n));
		}
		if (pid > 0)
			senders[started++] = pid;
	}
	/* Each child exits with its error number: the message says who failed and why. */
	const char *who = NULL;

	for (int i = 0; i < started; i++) {
		bench_wait_child(senders[i], &status);
		if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			rc = WIFEXITED(status) ? -WEXITSTATUS(status) : -EINTR;
			who = "a sender";
		}
	}
	close(senders_done[1]);
	if (recv_pid > 0) {
		bench_wait_child(recv_pid, &status);
		if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			rc = WIFEXITED(status) ? -WEXITSTATUS(status) : -EINTR;
			who = "the receiver";
		}
	}
	if (recv_pid < 0 || started < procs) {
		rc = -errno;
		who = "fork";
	}
	if (rc)
		snprintf(err, errlen, "direct core sends failed: %s: %s", who, strerror(-rc));
	else
		*msgs_per_s = *elapsed ? (double)(iters - 1) / ((double)*elapsed / 1e9) : 0;
out:
	if (l)
		oob_listener_close(l);
	if (elapsed != MAP_FAILED)
		munmap(elapsed, sizeof(*elapsed));
	return rc;
}
