/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench cma_bw: this process reads a buffer of its peer process with
 * process_vm_readv (cross-memory attach), over and over: the kernel copies
 * each byte once, from the peer's pages into this process's buffer.  It is the
 * single-copy floor for moving bytes between two processes of one host,
 * against which ib_write_bw between two processes on soft0 is measured
 * (tests/perftest_bench.sh); a memcpy within one process is not a floor for
 * two.  The peer fills its buffer, sends its address over a socketpair and
 * waits for this process to close its end.
 *
 * process_vm_readv needs the right to ptrace the peer: a parent may read its
 * child unless a security module forbids it (Yama's ptrace_scope 3, a seccomp
 * filter, a container's policy).  Refused, the test says so and fails.
 */
#include "cmd/bench/bench.h"
#include "cmd/bench/floor.h"
#include "cmd/cmd.h"
#include "core/util/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define CMA_DEFAULT_SIZE  (1u << 20)
#define CMA_DEFAULT_BYTES (1ull << 30) /* a round's bytes, unless -n or -D says otherwise */

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 31 + 7);
}

struct cma_peer_arg {
	size_t size;
};

/* The peer: a filled buffer, its address to the reader, then it waits for the reader's end. */
static int cma_peer(void *arg, int fd)
{
	const struct cma_peer_arg *a = arg;
	unsigned char *buf = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t addr;
	char byte;

	if (buf == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < a->size; i++)
		buf[i] = pattern(i);
	addr = (uint64_t)(uintptr_t)buf;
	if (write(fd, &addr, sizeof(addr)) != sizeof(addr))
		return 1;
	/* The reader closes its end when it is done, or dies (and the kernel closes it). */
	while (read(fd, &byte, 1) < 0 && errno == EINTR)
		;
	return 0;
}

/* The peer's buffer address, within the deadline. */
static int peer_address(const struct floor_peer *p, uint64_t *addr)
{
	struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
	uint64_t end = clock_ns() + FLOOR_PEER_TIMEOUT_MS * 1000000ull;

	for (;;) {
		uint64_t now = clock_ns();

		if (bench_interrupted)
			return -EINTR;
		if (now >= end)
			return -ETIMEDOUT;
		int n = poll(&pfd, 1, (int)((end - now) / 1000000 + 1));

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			break;
	}
	ssize_t got = read(p->fd, addr, sizeof(*addr));

	return got == sizeof(*addr) && *addr ? 0 : -EPROTO;
}

/* n reads of size bytes (or until seconds pass, when n is 0); the time they took. */
static int read_rounds(pid_t pid, uint64_t addr, char *dst, size_t size, long n, double seconds, long *done,
		       uint64_t *ns)
{
	struct iovec local = {.iov_base = dst, .iov_len = size};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = size};
	uint64_t t0 = clock_ns(), end = seconds > 0 ? t0 + (uint64_t)(seconds * 1e9) : UINT64_MAX;
	long i;

	for (i = 0; (n == 0 || i < n) && !bench_interrupted; i++) {
		if (n == 0 && clock_ns() >= end)
			break;
		ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

		if (got < 0)
			return -errno;
		if ((size_t)got != size)
			return -EIO;
	}
	*ns = clock_ns() - t0;
	*done = i;
	return 0;
}

static int refused(int rc)
{
	if (rc == -EPERM)
		return run_error(
		    "bench",
		    "process_vm_readv was refused (EPERM): this system does not let a process read "
		    "another's memory (ptrace restrictions: Yama's kernel.yama.ptrace_scope, a "
		    "seccomp filter or a container's policy); cma_bw cannot measure its floor here: run it "
		    "where a parent may ptrace its child (e.g. kernel.yama.ptrace_scope=1)");
	return run_error("bench", "process_vm_readv failed: %s", strerror(-rc));
}

int bench_cma_bw(size_t size, long iters, double duration, int rounds)
{
	struct cma_peer_arg a = {.size = size ? size : CMA_DEFAULT_SIZE};
	double bw[FLOOR_MAX_ROUNDS];
	struct floor_peer p;
	uint64_t addr, ns;
	long done;
	int rc, n = 0, status = EXIT_OK;
	char what[160], *dst;

	if (iters < 0)
		iters = duration > 0 ? 0 : (long)(CMA_DEFAULT_BYTES / a.size) + 1;
	dst = malloc(a.size);
	if (!dst)
		return run_error("bench", "cannot allocate %zu bytes", a.size);
	memset(dst, 0, a.size); /* faulted in before the clock starts */
	rc = floor_peer_start(&p, cma_peer, &a);
	if (rc) {
		free(dst);
		return run_error("bench", "cannot start the peer process: %s", strerror(-rc));
	}
	if (iters)
		snprintf(what, sizeof(what),
			 "process_vm_readv of %zu bytes from a peer process, %ld reads a round", a.size,
			 iters);
	else
		snprintf(what, sizeof(what),
			 "process_vm_readv of %zu bytes from a peer process for %g s a round", a.size,
			 duration);
	floor_report_begin("cma_bw", what, "BW average[MiB/sec]", a.size, rounds, &p);
	rc = peer_address(&p, &addr);
	/* The first read, untimed, also checks that the bytes are the peer's. */
	if (!rc)
		rc = read_rounds(p.pid, addr, dst, a.size, 1, 0, &done, &ns);
	if (!rc && !bench_interrupted &&
	    (dst[0] != (char)pattern(0) || dst[a.size - 1] != (char)pattern(a.size - 1)))
		rc = -EILSEQ;
	for (int r = 0; !rc && r < rounds && !bench_interrupted; r++) {
		rc = read_rounds(p.pid, addr, dst, a.size, iters, duration, &done, &ns);
		if (!rc && done && !bench_interrupted) {
			bw[n] = (double)done * (double)a.size / ((double)ns / 1e9) / (1024.0 * 1024.0);
			floor_report_round(r + 1, done, "BW_average", " %.2f", bw[n], NULL, NULL, 0);
			n++;
		}
	}
	/* Ctrl-C reaches the peer as well: a read of a peer that has just ended is the interrupt. */
	if (rc && !bench_interrupted)
		status = rc == -ETIMEDOUT
			     ? run_error("bench", "the peer process did not send its address within 10 s")
			 : rc == -EILSEQ
			     ? run_error("bench", "process_vm_readv read other bytes than the peer's")
			 : rc == -EPROTO ? run_error("bench", "the peer process did not start")
					 : refused(rc);
	if (floor_peer_finish(&p, status != EXIT_OK) && status == EXIT_OK && !bench_interrupted)
		status = run_error("bench", "the peer process failed");
	free(dst);
	return floor_report_end(status, "BW_average", "BW average in MiB/s", bw, n);
}
