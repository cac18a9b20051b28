/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* OOB framing over real loopback TCP: order, sizes, timeouts, garbage from a peer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/oob/oob.h"

struct pair {
	struct oob_listener *l;
	struct oob_conn *server, *client;
};

static void make_pair(struct pair *p)
{
	char addr[64];

	assert_int_equal(oob_listen(NULL, &p->l), 0);
	assert_true(oob_listener_port(p->l) > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", oob_listener_port(p->l));
	assert_int_equal(oob_connect(addr, 1000, &p->client), 0);
	assert_int_equal(oob_accept(p->l, 1000, &p->server), 0);
}

static void free_pair(struct pair *p)
{
	oob_close(p->client);
	oob_close(p->server);
	oob_listener_close(p->l);
}

static void parse_addresses(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	socklen_t len;

	assert_int_equal(oob_parse_address("127.0.0.1:4791", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(oob_parse_address("[::1]:80", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(oob_parse_address("1234", &ss, &len), 0);
	assert_int_equal(oob_parse_address("127.0.0.1:99999", &ss, &len), -EINVAL);
	assert_int_equal(oob_parse_address("127.0.0.1:x", &ss, &len), -EINVAL);
	assert_int_equal(oob_parse_address("", &ss, &len), -EINVAL);
	assert_int_equal(oob_parse_address("[::1", &ss, &len), -EINVAL);
}

static void messages_arrive_in_order(void **state)
{
	(void)state;
	struct pair p;
	char buf[64];
	uint32_t len;
	uint16_t type;

	make_pair(&p);
	for (int i = 0; i < 100; i++) {
		snprintf(buf, sizeof(buf), "message %d", i);
		assert_int_equal(oob_send(p.client, (uint16_t)i, buf, (uint32_t)strlen(buf) + 1), 0);
	}
	for (int i = 0; i < 100; i++) {
		char want[64];

		assert_int_equal(oob_recv(p.server, &type, buf, sizeof(buf), &len, 1000), 0);
		snprintf(want, sizeof(want), "message %d", i);
		assert_int_equal(type, i);
		assert_int_equal(len, strlen(want) + 1);
		assert_string_equal(buf, want);
	}
	free_pair(&p);
}

static void oversize_is_consumed_and_timeout_reported(void **state)
{
	(void)state;
	struct pair p;
	static char big[100000];
	char small[16];
	uint32_t len;
	uint16_t type;

	make_pair(&p);
	memset(big, 'x', sizeof(big));
	assert_int_equal(oob_send(p.client, 1, big, sizeof(big)), 0);
	assert_int_equal(oob_send(p.client, 2, "ok", 3), 0);
	assert_int_equal(oob_recv(p.server, &type, small, sizeof(small), &len, 1000), -EMSGSIZE);
	assert_int_equal(len, sizeof(big));
	assert_int_equal(oob_recv(p.server, &type, small, sizeof(small), &len, 1000), 0);
	assert_int_equal(type, 2);
	assert_string_equal(small, "ok");
	assert_int_equal(oob_recv(p.server, &type, small, sizeof(small), &len, 50), -ETIMEDOUT);
	assert_int_equal(oob_send(p.client, 1, big, OOB_MAX_MESSAGE + 1), -EMSGSIZE);
	free_pair(&p);
}

static void garbage_and_close_are_errors(void **state)
{
	(void)state;
	struct pair p;
	char buf[16];
	uint32_t len;

	make_pair(&p);
	assert_int_equal(write(oob_conn_fd(p.client), "GARBAGE-GARBAGE!", 16), 16);
	assert_int_equal(oob_recv(p.server, NULL, buf, sizeof(buf), &len, 1000), -EPROTO);
	oob_close(p.client);
	p.client = NULL;
	assert_int_equal(oob_recv(p.server, NULL, buf, sizeof(buf), &len, 1000), -ECONNRESET);
	free_pair(&p);
}

/* Waits until the socket has something to read, so a peek sees what was written. */
static void readable(struct oob_conn *c)
{
	struct pollfd pfd = {.fd = oob_conn_fd(c), .events = POLLIN};

	assert_int_equal(poll(&pfd, 1, 1000), 1);
}

/*
 * oob_frame_ready (issue 44 N8, N9): a server juggling connections that have
 * not identified themselves asks whether a whole first frame waits, without
 * consuming or waiting: not yet for nothing or a part, yes for a whole one
 * (which oob_recv then reads at once), an error for garbage, an oversize
 * frame or a closed peer.
 */
static void frame_ready_peeks_without_waiting(void **state)
{
	(void)state;
	struct pair p;
	char buf[16];
	uint16_t type;
	uint32_t len;
	uint8_t frame[12 + 4];
	int fd;

	make_pair(&p);
	fd = oob_conn_fd(p.client);
	assert_int_equal(oob_frame_ready(p.server, 64), 0);
	/* A whole frame, written in two halves. */
	assert_int_equal(oob_send(p.client, 7, "ping", 4), 0);
	readable(p.server);
	assert_int_equal(oob_frame_ready(p.server, 64), 1);
	assert_int_equal(oob_frame_ready(p.server, 3), -EPROTO); /* longer than the caller takes */
	assert_int_equal(oob_recv(p.server, &type, buf, sizeof(buf), &len, 0), 0);
	assert_int_equal(type, 7);
	assert_int_equal(len, 4);
	/* Build a frame by hand and send half of it: not ready, and nothing consumed. */
	frame[0] = 'R', frame[1] = 'O', frame[2] = 'B', frame[3] = '1';
	frame[4] = 0, frame[5] = 9, frame[6] = 0, frame[7] = 0;
	frame[8] = 0, frame[9] = 0, frame[10] = 0, frame[11] = 4;
	memcpy(frame + 12, "pong", 4);
	assert_int_equal(write(fd, frame, 6), 6);
	readable(p.server);
	assert_int_equal(oob_frame_ready(p.server, 64), 0);
	assert_int_equal(write(fd, frame + 6, 8), 8);
	assert_int_equal(oob_frame_ready(p.server, 64), 0); /* 2 bytes of payload still missing */
	assert_int_equal(write(fd, frame + 14, 2), 2);
	for (int i = 0; i < 100 && oob_frame_ready(p.server, 64) == 0; i++)
		usleep(1000);
	assert_int_equal(oob_frame_ready(p.server, 64), 1);
	assert_int_equal(oob_recv(p.server, &type, buf, sizeof(buf), &len, 0), 0);
	assert_int_equal(type, 9);
	assert_memory_equal(buf, "pong", 4);
	/* Garbage, then a closed peer. */
	assert_int_equal(write(fd, "GARBAGE-GARBAGE!", 16), 16);
	readable(p.server);
	assert_int_equal(oob_frame_ready(p.server, 64), -EPROTO);
	assert_int_equal(oob_recv(p.server, NULL, buf, sizeof(buf), &len, 0), -EPROTO);
	assert_int_equal(read(oob_conn_fd(p.server), buf, 4), 4); /* the rest of the garbage */
	oob_close(p.client);
	p.client = NULL;
	readable(p.server);
	assert_int_equal(oob_frame_ready(p.server, 64), -ECONNRESET);
	free_pair(&p);
}

/*
 * A peer that never reads cannot hold the sender: once the socket buffers
 * are full, a send gives -ETIMEDOUT after its timeout instead of blocking.
 */
static void send_to_a_peer_that_never_reads_times_out(void **state)
{
	(void)state;
	struct pair p;
	static char chunk[OOB_MAX_MESSAGE];
	struct timespec t0, t1;
	int rc = 0, frames = 0;

	make_pair(&p);
	while (rc == 0 && frames < 100000) {
		rc = oob_send_timeout(p.client, 1, chunk, sizeof(chunk), 100);
		frames++;
	}
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(frames > 1); /* the first frames fit in the buffers */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(oob_send_timeout(p.client, 1, chunk, sizeof(chunk), 200), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;

	assert_true(ms >= 150); /* it waited for room ... */
	assert_true(ms < 5000); /* ... and gave up */
	free_pair(&p);
}

/* Reads frames until the one of type 2, checking each type-1 frame is the next number. */
struct reader {
	struct oob_conn *c;
	int frames, bad;
};

static void *read_numbered(void *arg)
{
	struct reader *r = arg;
	static char buf[65536];
	uint16_t type;
	uint32_t len;

	while (oob_recv(r->c, &type, buf, sizeof(buf), &len, 10000) == 0 && type == 1) {
		int n;

		memcpy(&n, buf, sizeof(n));
		if (n != r->frames || len != sizeof(buf))
			r->bad++;
		r->frames++;
	}
	if (type != 2)
		r->bad++;
	return NULL;
}

/*
 * Queued sends never wait for a peer that does not read: frames queue up to
 * max_pending (then -ENOBUFS, nothing queued), and once it reads, oob_flush
 * on POLLOUT delivers them all, in order, before a frame sent the blocking way.
 */
static void queued_sends_wait_for_nobody(void **state)
{
	(void)state;
	struct pair p;
	static char chunk[65536];
	int sent = 0;

	make_pair(&p);
	/* The socket buffers fill; the rest queues: 32 MiB in all, with a peer that reads nothing yet. */
	for (; sent < 512; sent++) {
		memcpy(chunk, &sent, sizeof(sent));
		assert_int_equal(oob_send_queued(p.client, 1, chunk, sizeof(chunk), 64u << 20), 0);
	}
	assert_true(oob_pending(p.client) > 0);
	size_t before = oob_pending(p.client);

	assert_int_equal(oob_send_queued(p.client, 1, chunk, sizeof(chunk), before), -ENOBUFS);
	assert_int_equal(oob_pending(p.client), before);

	struct reader r = {.c = p.server};
	pthread_t t;

	pthread_create(&t, NULL, read_numbered, &r);
	while (oob_pending(p.client)) {
		struct pollfd pfd = {.fd = oob_conn_fd(p.client), .events = POLLOUT};

		assert_true(poll(&pfd, 1, 10000) == 1);
		assert_int_equal(oob_flush(p.client), 0);
	}
	memcpy(chunk, &sent, sizeof(sent));
	assert_int_equal(oob_send_queued(p.client, 1, chunk, sizeof(chunk), 64u << 20), 0);
	sent++;
	assert_int_equal(oob_send_timeout(p.client, 2, NULL, 0, 10000), 0);
	pthread_join(t, NULL);
	assert_int_equal(r.bad, 0);
	assert_int_equal(r.frames, sent);
	free_pair(&p);
}

struct late {
	char addr[64];
	struct oob_listener *l;
};

/* Starts listening only after the client has begun retrying. */
static void *late_listener(void *arg)
{
	struct late *late = arg;

	usleep(100 * 1000);
	oob_listen(late->addr, &late->l);
	return NULL;
}

static void connect_refused_times_out(void **state)
{
	(void)state;
	struct oob_listener *l;
	struct oob_conn *c;
	char addr[64];
	int port;

	/* Find a port nobody listens on: bind one, note it, close it. */
	assert_int_equal(oob_listen(NULL, &l), 0);
	port = oob_listener_port(l);
	oob_listener_close(l);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	assert_int_equal(oob_connect(addr, 100, &c), -ETIMEDOUT);

	/* A peer that starts listening late is reached by the retry loop. */
	struct late late = {.l = NULL};
	struct oob_conn *server;
	pthread_t t;

	snprintf(late.addr, sizeof(late.addr), "%s", addr);
	pthread_create(&t, NULL, late_listener, &late);
	assert_int_equal(oob_connect(addr, 5000, &c), 0);
	pthread_join(t, NULL);
	assert_non_null(late.l);
	assert_int_equal(oob_accept(late.l, 1000, &server), 0);
	oob_close(server);
	oob_close(c);
	oob_listener_close(late.l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_addresses),
	    cmocka_unit_test(messages_arrive_in_order),
	    cmocka_unit_test(oversize_is_consumed_and_timeout_reported),
	    cmocka_unit_test(garbage_and_close_are_errors),
	    cmocka_unit_test(frame_ready_peeks_without_waiting),
	    cmocka_unit_test(send_to_a_peer_that_never_reads_times_out),
	    cmocka_unit_test(queued_sends_wait_for_nobody),
	    cmocka_unit_test(connect_refused_times_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
