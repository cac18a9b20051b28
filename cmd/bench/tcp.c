/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The raw TCP baselines of --baseline: throughput (one stream, writes of the
 * message size) and ping-pong latency (TCP_NODELAY, half the round trip,
 * both ends busy-polling their socket).
 * A one-process test runs its far end on a thread of this process; a
 * two-process test runs it in the bench server (tcp_serve_*), so each
 * transport figure is read as a ratio to raw TCP between the same places.
 */
#include "cmd/bench/bench.h"
#include "core/util/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct peer_arg {
	int fd;
	size_t size;
	bool echo;
	uint64_t bytes;
};

int tcp_full_io(int fd, char *buf, size_t len, bool rd)
{
	while (len) {
		ssize_t n = rd ? read(fd, buf, len) : write(fd, buf, len);

		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Reads len bytes, busy-polling the socket the way the soft device's
 * pollers drive its wire (a non-blocking read per poll, the CPU yielded
 * every few empty ones): the latency baseline then pays no wake-up of a
 * sleeping reader, and when both ends share a CPU neither spins away the
 * other's time slice.  The ratio compares the transports, not wake-ups.
 */
static int tcp_spin_read(int fd, char *buf, size_t len)
{
	for (unsigned empty = 0; len;) {
		ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n == 0) {
			return -ECONNRESET;
		} else if (errno != EAGAIN && errno != EINTR) {
			return -errno;
		} else if (++empty % 4 == 0) {
			sched_yield();
		}
	}
	return 0;
}

static void *peer_main(void *arg)
{
	struct peer_arg *p = arg;
	char *buf = malloc(p->size);

	while (buf) {
		if (p->echo) {
			if (tcp_spin_read(p->fd, buf, p->size) || tcp_full_io(p->fd, buf, p->size, false))
				break;
		} else {
			ssize_t n = read(p->fd, buf, p->size);

			if (n <= 0)
				break;
			p->bytes += (uint64_t)n;
		}
	}
	free(buf);
	return NULL;
}

/* A connected loopback pair: *cfd ours, the accepted end runs peer_main. */
static int loopback_pair(int *cfd, int *sfd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;

	*cfd = *sfd = -1;
	if (l < 0)
		return -errno;
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &len) ||
	    (*cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(*cfd, (struct sockaddr *)&a, sizeof(a)) || (*sfd = accept(l, NULL, NULL)) < 0)
		rc = -errno;
	close(l);
	if (rc) {
		if (*cfd >= 0)
			close(*cfd);
		return rc;
	}
	tcp_set_nodelay(*cfd);
	tcp_set_nodelay(*sfd);
	return 0;
}

int tcp_baseline_bw(size_t size, double seconds, double *mib_s)
{
	struct peer_arg p = { .size = size < 65536 ? 65536 : size };
	pthread_t tid;
	int cfd, rc = loopback_pair(&cfd, &p.fd);
	char *buf = calloc(1, size);
	uint64_t t0, end;

	if (rc || !buf || pthread_create(&tid, NULL, peer_main, &p)) {
		free(buf);
		if (!rc) {
			close(cfd);
			close(p.fd);
		}
		return rc ? rc : -ENOMEM;
	}
	t0 = clock_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	while (clock_ns() < end && (rc = tcp_full_io(cfd, buf, size, false)) == 0)
		;
	shutdown(cfd, SHUT_WR);
	pthread_join(tid, NULL);
	*mib_s = (double)p.bytes / ((double)(clock_ns() - t0) / 1e9) / (1024.0 * 1024.0);
	close(cfd);
	close(p.fd);
	free(buf);
	return rc;
}

int tcp_ping_pong(int fd, size_t size, long iters, double *half_rtt_us)
{
	char *buf = calloc(1, size);
	double *samples = malloc(sizeof(double) * (size_t)iters);
	long n = 0;
	int rc = buf && samples ? 0 : -ENOMEM;

	for (; n < iters && !rc; n++) {
		uint64_t t0 = clock_ns();

		rc = tcp_full_io(fd, buf, size, false);
		if (!rc)
			rc = tcp_spin_read(fd, buf, size);
		samples[n] = (double)(clock_ns() - t0) / 2000.0;
	}
	if (!rc) {
		struct bench_result r;

		bench_stats_latency(samples, n, &r);
		*half_rtt_us = r.t_typical;
	}
	free(buf);
	free(samples);
	return rc;
}

int tcp_stream(int fd, size_t size, double seconds, double *mib_s)
{
	char *buf = calloc(1, size), drain;
	uint64_t t0 = clock_ns(), end = t0 + (uint64_t)(seconds * 1e9), bytes = 0;
	int rc = buf ? 0 : -ENOMEM;

	while (!rc && clock_ns() < end && (rc = tcp_full_io(fd, buf, size, false)) == 0)
		bytes += size;
	shutdown(fd, SHUT_WR);
	/* The reader closes once it has read everything: only then is the stream over. */
	if (!rc && read(fd, &drain, 1) < 0)
		rc = -errno;
	*mib_s = (double)bytes / ((double)(clock_ns() - t0) / 1e9) / (1024.0 * 1024.0);
	free(buf);
	return rc;
}

int tcp_serve(int fd, size_t size, bool echo)
{
	struct peer_arg p = { .fd = fd, .size = echo ? size : size < 65536 ? 65536 : size, .echo = echo };

	peer_main(&p);
	return 0;
}

void tcp_set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tcp_baseline_lat(size_t size, long iters, double *half_rtt_us)
{
	struct peer_arg p = { .size = size, .echo = true };
	pthread_t tid;
	int cfd, rc = loopback_pair(&cfd, &p.fd);

	if (rc)
		return rc;
	if (pthread_create(&tid, NULL, peer_main, &p)) {
		close(cfd);
		close(p.fd);
		return -EAGAIN;
	}
	rc = tcp_ping_pong(cfd, size, iters, half_rtt_us);
	shutdown(cfd, SHUT_RDWR);
	pthread_join(tid, NULL);
	close(cfd);
	close(p.fd);
	return rc;
}
