/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench across two processes (or hosts).  One control connection (core/oob)
 * carries, per measurement: the client's PARAMS (test, size, lock, stripes,
 * progress); both ends open an endpoint and exchange addresses over the
 * same connection (core_ep_connect_oob); the server sends its buffer's
 * address and rkey (RKEY); the client measures, sends DONE, and the server
 * answers DONE once its endpoint is closed.  For --baseline the client
 * sends TCP (size, echo or sink): the server listens on a second socket on
 * the control connection's address, answers TCP with its port, serves one
 * raw TCP connection (echoes or swallows until the client closes it) and
 * answers DONE, so raw TCP is measured between the same two processes as
 * the transport.  BYE (or a closed connection) ends the client's session;
 * the server exits after the first session that measured something.  Every
 * field travels big-endian; the server checks each one and every read has a
 * deadline, so a bad, hostile or stalled client is dropped, never a crash
 * or a hang, and the next client is served.  Clients are served in the
 * order they identify themselves (send their first whole frame), not the
 * order they connect: up to PENDING_MAX connections wait beside each other
 * for IDENTIFY_TIMEOUT_MS, so silent ones neither hold the server nor queue
 * ahead of a real client.
 */
#include "cmd/bench/bench.h"
#include "cmd/cmd.h"
#include "core/oob/oob.h"
#include "core/util/clock.h"
#include "hw/soft_wire.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MSG_PARAMS = 0x4201, MSG_RKEY, MSG_DONE, MSG_BYE, MSG_TCP };

#define CTRL_TIMEOUT_MS	     30000
#define FIRST_MSG_TIMEOUT_MS 5000
#define IDENTIFY_TIMEOUT_MS  5000 /* a connection that sent no whole first frame by then is dropped */
#define PENDING_MAX	     16	  /* connections not yet identified; the oldest goes for a newer one */

struct wire_params {
	char test[16];
	uint64_t size;
	uint32_t lock, stripes, progress;
	uint32_t connect; /* enum core_connect: the server connects the same way (0: oob) */
};

struct wire_tcp {
	uint64_t size;
	uint32_t echo, port;
};

struct wire_rkey {
	uint64_t addr;
	uint32_t rkey, reserved;
};

/* A soft device's wire counters over one measurement (the server's travel in its DONE). */
struct wire_copies {
	uint64_t payload, copied;
};

static struct oob_conn *client_conn;
static struct wire_copies session_copies; /* both processes' counters, summed over the session */

/* The soft device's wire counters now (zeros on another device). */
static struct wire_copies copies_now(const struct core_ep *ep)
{
	struct hw_soft_wire w;

	if (hw_soft_wire_info(core_ep_context(ep), &w))
		return (struct wire_copies){0, 0};
	return (struct wire_copies){w.payload_bytes, w.copied_bytes};
}

static struct wire_copies copies_since(const struct core_ep *ep, struct wire_copies before)
{
	struct wire_copies now = copies_now(ep);

	return (struct wire_copies){now.payload - before.payload, now.copied - before.copied};
}

double bench_client_copies_per_byte(void)
{
	return session_copies.payload ? (double)session_copies.copied / (double)session_copies.payload : 0;
}

int bench_client_open(const char *addr, char *err, size_t errlen)
{
	int rc = oob_connect(addr, 10000, &client_conn);

	if (rc)
		snprintf(
		    err, errlen,
		    "cannot reach the bench server at %s: %s; start `rdmatool bench --server` there first",
		    addr, strerror(-rc));
	return rc;
}

void bench_client_close(void)
{
	if (!client_conn)
		return;
	oob_send(client_conn, MSG_BYE, NULL, 0);
	oob_close(client_conn);
	client_conn = NULL;
}

static void *alloc_buf(size_t size)
{
	size_t len = ((size < 8 ? 8 : size) + 4095) & ~(size_t)4095;
	char *p = aligned_alloc(4096, len);

	if (p)
		memset(p, 0, len);
	return p;
}

static void ep_attr(struct core_ep_attr *attr, const struct bench_opts *o, enum core_lock_mode lock,
		    int stripes, int progress)
{
	core_ep_attr_defaults(attr);
	attr->env = o->env;
	attr->device = o->device;
	bench_ep_path(attr, o);
	attr->lock = lock;
	attr->env.tx_stripes = stripes;
	attr->env.progress_thread = progress;
}

static int expect(struct oob_conn *c, uint16_t want, void *buf, uint32_t len)
{
	uint16_t type;
	uint32_t got;
	int rc = oob_recv(c, &type, buf, len, &got, CTRL_TIMEOUT_MS);

	if (rc)
		return rc;
	return type == want && got == len ? 0 : -EPROTO;
}

int bench_client(const char *addr, const char *test, const struct bench_opts *o, struct bench_result *r,
		 char *err, size_t errlen)
{
	struct wire_params p = {.size = htobe64(o->size),
				.lock = htobe32(o->lock),
				.stripes = htobe32((uint32_t)o->stripes),
				.progress = htobe32(o->progress_thread),
				.connect = htobe32(o->env.connect)};
	struct bench_link l = {.oob = client_conn};
	struct wire_rkey k;
	struct core_ep_attr attr;
	int rc;

	(void)addr;
	snprintf(p.test, sizeof(p.test), "%s", test);
	ep_attr(&attr, o, o->lock, o->stripes, o->progress_thread);
	attr.name = "a";
	if ((rc = oob_send(client_conn, MSG_PARAMS, &p, sizeof(p)))) {
		snprintf(err, errlen, "the bench server went away: %s", strerror(-rc));
		return rc;
	}
	if ((rc = core_ep_open(&attr, &l.a, err, errlen)))
		return rc;
	bench_announce_device(l.a);
	if ((rc = core_ep_connect_oob(l.a, client_conn, &l.pa)) ||
	    (rc = expect(client_conn, MSG_RKEY, &k, sizeof(k)))) {
		snprintf(err, errlen, "cannot connect to the bench server: %s", strerror(-rc));
		goto out;
	}
	l.raddr = be64toh(k.addr);
	l.rkey = be32toh(k.rkey);
	l.src = alloc_buf(o->size);
	l.dst = alloc_buf(o->size);
	if (!l.src || !l.dst) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory for %zu-byte buffers", o->size);
		goto out;
	}
	memset(l.src, 0x5a, o->size);
	struct wire_copies before = copies_now(l.a), mine, theirs;

	rc = bench_measure(test, o, &l, r, err, errlen);
	mine = copies_since(l.a, before);
	if (!rc && ((rc = oob_send(client_conn, MSG_DONE, NULL, 0)) ||
		    (rc = expect(client_conn, MSG_DONE, &theirs, sizeof(theirs)))))
		snprintf(err, errlen, "the bench server did not finish the run: %s", strerror(-rc));
	if (!rc) {
		session_copies.payload += mine.payload + be64toh(theirs.payload);
		session_copies.copied += mine.copied + be64toh(theirs.copied);
	}
out:
	core_ep_close(l.a);
	free(l.src);
	free(l.dst);
	return rc;
}

/* Asks the server for a raw TCP far end and connects to it: a socket or a negative errno. */
static int client_tcp_open(size_t size, bool echo, char *err, size_t errlen)
{
	struct wire_tcp t = {.size = htobe64(size), .echo = htobe32(echo)};
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int rc, fd;

	if ((rc = oob_send(client_conn, MSG_TCP, &t, sizeof(t))) ||
	    (rc = expect(client_conn, MSG_TCP, &t, sizeof(t)))) {
		snprintf(err, errlen, "the bench server did not offer a TCP baseline: %s", strerror(-rc));
		return rc;
	}
	if (getpeername(oob_conn_fd(client_conn), (struct sockaddr *)&ss, &len)) {
		rc = -errno;
		snprintf(err, errlen, "cannot read the bench server's address: %s", strerror(errno));
		return rc;
	}
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)be32toh(t.port));
	else
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)be32toh(t.port));
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot open the TCP baseline connection: %s", strerror(-rc));
		return rc;
	}
	tcp_set_nodelay(fd);
	return fd;
}

/* Closes the baseline socket and waits for the server to be back on the control connection. */
static int client_tcp_close(int fd, int rc, char *err, size_t errlen)
{
	int done;

	close(fd);
	done = expect(client_conn, MSG_DONE, NULL, 0);
	if (rc)
		snprintf(err, errlen, "the TCP baseline failed: %s", strerror(-rc));
	else if (done)
		snprintf(err, errlen, "the bench server did not finish the TCP baseline: %s",
			 strerror(-done));
	return rc ? rc : done;
}

int bench_client_tcp_lat(size_t size, long iters, double *half_rtt_us, char *err, size_t errlen)
{
	int fd = client_tcp_open(size, true, err, errlen);

	if (fd < 0)
		return fd;
	return client_tcp_close(fd, tcp_ping_pong(fd, size, iters, half_rtt_us), err, errlen);
}

int bench_client_tcp_bw(size_t size, double seconds, double *mib_s, char *err, size_t errlen)
{
	int fd = client_tcp_open(size, false, err, errlen);

	if (fd < 0)
		return fd;
	return client_tcp_close(fd, tcp_stream(fd, size, seconds, mib_s), err, errlen);
}

/* The far end of a TCP baseline, on the control connection's own address. */
static int serve_tcp(struct oob_conn *c, const struct wire_tcp *t, char *err, size_t errlen)
{
	uint64_t size = be64toh(t->size);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct wire_tcp reply = {0};
	struct pollfd p;
	int rc = 0, l = -1, fd = -1;

	if (size < 1 || size > (8u << 20) || be32toh(t->echo) > 1) {
		snprintf(err, errlen, "the client sent invalid TCP baseline parameters (size %llu)",
			 (unsigned long long)size);
		return -EPROTO;
	}
	if (getsockname(oob_conn_fd(c), (struct sockaddr *)&ss, &len) ||
	    (l = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		goto fail;
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)&ss)->sin_port = 0;
	if (bind(l, (struct sockaddr *)&ss, len) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&ss, &len))
		goto fail;
	reply.port = htobe32(ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							    : ((struct sockaddr_in *)&ss)->sin_port));
	if ((rc = oob_send(c, MSG_TCP, &reply, sizeof(reply))))
		goto out;
	p = (struct pollfd){.fd = l, .events = POLLIN};
	if (poll(&p, 1, CTRL_TIMEOUT_MS) != 1) {
		rc = -ETIMEDOUT;
		snprintf(err, errlen, "the client did not open the TCP baseline connection");
		goto out;
	}
	if ((fd = accept(l, NULL, NULL)) < 0)
		goto fail;
	tcp_set_nodelay(fd);
	tcp_serve(fd, size, be32toh(t->echo));
	close(fd);
	rc = oob_send(c, MSG_DONE, NULL, 0);
	goto out;
fail:
	rc = -errno;
	snprintf(err, errlen, "cannot serve the TCP baseline: %s", strerror(errno));
out:
	if (l >= 0)
		close(l);
	return rc;
}

static int serve_one(struct oob_conn *c, const struct wire_params *p, const struct bench_opts *defaults,
		     char *err, size_t errlen)
{
	uint64_t size = be64toh(p->size);
	uint32_t lock = be32toh(p->lock), stripes = be32toh(p->stripes), progress = be32toh(p->progress);
	uint32_t connect = be32toh(p->connect);
	struct core_ep_attr attr;
	struct core_ep *ep = NULL;
	struct core_mr mr;
	struct wire_copies before = {0, 0}, during = {0, 0};
	uint32_t peer;
	char *buf = NULL;
	int rc;

	if (size < 1 || size > (8u << 20) || lock > CORE_LOCK_GLOBAL || stripes > CORE_MAX_STRIPES ||
	    progress > 1 || connect > CORE_CONNECT_OOB || !memchr(p->test, 0, sizeof(p->test))) {
		snprintf(err, errlen, "the client sent invalid parameters (size %llu, lock %u, stripes %u)",
			 (unsigned long long)size, lock, stripes);
		return -EPROTO;
	}
	ep_attr(&attr, defaults, (enum core_lock_mode)lock, (int)stripes, (int)progress);
	attr.env.connect = connect == CORE_CONNECT_CM ? CORE_CONNECT_CM : CORE_CONNECT_OOB;
	attr.name = "b";
	if ((rc = core_ep_open(&attr, &ep, err, errlen)))
		return rc;
	bench_announce_device(ep);
	if ((rc = core_ep_connect_oob(ep, c, &peer))) {
		snprintf(err, errlen, "cannot connect to the client: %s", strerror(-rc));
		goto out;
	}
	if (!(buf = alloc_buf(size)) || (rc = core_mr_reg(ep, buf, size, &mr))) {
		rc = rc ? rc : -ENOMEM;
		snprintf(err, errlen, "cannot set up a %llu-byte buffer: %s", (unsigned long long)size,
			 strerror(-rc));
		goto out;
	}
	struct wire_rkey k = {.addr = htobe64((uintptr_t)buf), .rkey = htobe32(mr.rkey)};

	before = copies_now(ep);
	if ((rc = oob_send(c, MSG_RKEY, &k, sizeof(k))))
		goto out;
	if (!strcmp(p->test, "send_lat"))
		rc = bench_serve_pong(ep, peer, buf, size);
	else if (!bench_two_sided(p->test))
		rc = bench_serve_passive(c);
	else
		rc = bench_serve_receives(ep, buf, size, NULL, c);
	if (rc) {
		snprintf(err, errlen, "%s with the client failed: %s", p->test, strerror(-rc));
		goto out;
	}
	if ((rc = expect(c, MSG_DONE, NULL, 0)))
		snprintf(err, errlen, "the client did not finish the run: %s", strerror(-rc));
	during = copies_since(ep, before);
out:
	core_ep_close(ep);
	free(buf);
	if (!rc) {
		struct wire_copies reply = {htobe64(during.payload), htobe64(during.copied)};

		rc = oob_send(c, MSG_DONE, &reply, sizeof(reply));
	}
	return rc;
}

/* One client's whole session: 1 if it ran at least one measurement and said BYE, 0 if it did not, or a
 * negative errno with err set. */
static int serve_client(struct oob_conn *c, const struct bench_opts *defaults, char *err, size_t errlen)
{
	int served = 0;

	for (;;) {
		union {
			struct wire_params p;
			struct wire_tcp t;
		} m;
		uint16_t type;
		uint32_t len;
		/* A real client speaks at once; a silent or half-sent frame must not hold the server. */
		int rc =
		    oob_recv(c, &type, &m, sizeof(m), &len, served ? CTRL_TIMEOUT_MS : FIRST_MSG_TIMEOUT_MS);

		if (rc == -ECONNRESET || (!rc && type == MSG_BYE))
			return served;
		if (!rc && !(type == MSG_PARAMS && len == sizeof(m.p)) &&
		    !(type == MSG_TCP && len == sizeof(m.t)))
			rc = -EPROTO;
		if (rc) {
			snprintf(err, errlen, "bad control message from the client: %s", strerror(-rc));
			return rc;
		}
		if ((rc = type == MSG_TCP ? serve_tcp(c, &m.t, err, errlen)
					  : serve_one(c, &m.p, defaults, err, errlen)))
			return rc;
		served = 1;
	}
}

/* From the parsed address, so that names (localhost) and every 127/8 address count. */
static bool is_loopback(const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (oob_parse_address(addr, &ss, &len))
		return false;
	if (ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&ss)->sin6_addr);
	return (ntohl(((const struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
}

/* Connections that have not identified themselves yet, oldest first. */
struct pending {
	struct oob_conn *c[PENDING_MAX];
	uint64_t deadline_ms[PENDING_MAX];
	int n;
};

static uint64_t now_ms(void)
{
	return clock_ns() / 1000000ull;
}

/* Takes connection i out of the list. */
static struct oob_conn *pending_take(struct pending *p, int i)
{
	struct oob_conn *c = p->c[i];

	p->n--;
	memmove(&p->c[i], &p->c[i + 1], (size_t)(p->n - i) * sizeof(p->c[0]));
	memmove(&p->deadline_ms[i], &p->deadline_ms[i + 1], (size_t)(p->n - i) * sizeof(p->deadline_ms[0]));
	return c;
}

static void pending_drop(struct pending *p, int i, const char *why)
{
	notice("bench", "dropped a client: %s; serving the others", why);
	oob_close(pending_take(p, i));
}

/*
 * Waits for the next client that identifies itself, accepting new
 * connections meanwhile: 0 and *out, or -EINTR once bench_interrupted.
 */
static int next_client(struct oob_listener *lis, struct pending *p, struct oob_conn **out)
{
	uint32_t first_max = sizeof(struct wire_params) > sizeof(struct wire_tcp) ? sizeof(struct wire_params)
										  : sizeof(struct wire_tcp);

	for (;;) {
		struct pollfd fds[1 + PENDING_MAX] = {{.fd = oob_listener_fd(lis), .events = POLLIN}};
		uint64_t now = now_ms();
		int timeout = 250; /* slices, so that SIGINT/SIGTERM end a server nobody is using */

		for (int i = 0; i < p->n; i++) {
			fds[1 + i] = (struct pollfd){.fd = oob_conn_fd(p->c[i]), .events = POLLIN};
			if (p->deadline_ms[i] <= now)
				timeout = 0;
			else if (p->deadline_ms[i] - now < (uint64_t)timeout)
				timeout = (int)(p->deadline_ms[i] - now);
		}
		if (bench_interrupted)
			return -EINTR;
		if (poll(fds, (nfds_t)(1 + p->n), timeout) < 0 && errno != EINTR)
			return -errno;
		now = now_ms();
		int ready[PENDING_MAX];

		/* The oldest that identified itself is served first; the others stay or go. */
		for (int i = 0; i < p->n; i++)
			ready[i] = fds[1 + i].revents ? oob_frame_ready(p->c[i], first_max) : 0;
		for (int i = 0; i < p->n; i++)
			if (ready[i] == 1) {
				*out = pending_take(p, i);
				return 0;
			}
		for (int i = p->n - 1; i >= 0; i--) {
			if (ready[i] == -EPROTO)
				pending_drop(p, i, "its first message is not a bench request");
			else if (ready[i] < 0)
				pending_drop(p, i, "it closed the connection before identifying itself");
			else if (now >= p->deadline_ms[i])
				pending_drop(p, i, "it did not identify itself within 5 s");
		}
		if (fds[0].revents & POLLIN) {
			struct oob_conn *c;

			if (oob_accept(lis, 0, &c))
				continue;
			if (p->n == PENDING_MAX)
				pending_drop(p, 0, "too many connections waiting to identify themselves");
			p->c[p->n] = c;
			p->deadline_ms[p->n++] = now + IDENTIFY_TIMEOUT_MS;
		}
	}
}

int bench_server(const char *addr, const struct bench_opts *defaults, char *err, size_t errlen)
{
	struct oob_listener *lis;
	struct pending pending = {.n = 0};
	int rc = oob_listen(addr, &lis);

	if (rc) {
		snprintf(err, errlen, "cannot listen on %s: %s; pick a free [ADDR:]PORT", addr,
			 strerror(-rc));
		return rc;
	}
	if (is_loopback(addr))
		notice("bench", "listening on %s only; --server=0.0.0.0:PORT serves other hosts", addr);
	/* Scripts wait for this line before starting the client. */
	fprintf(stderr, "bench server listening on port %d\n", oob_listener_port(lis));
	fflush(stderr);
	/* Serves clients one at a time until one completes a run: a client that fails is reported and the
	 * next one is served. */
	for (;;) {
		struct oob_conn *c = NULL;

		rc = next_client(lis, &pending, &c);
		if (rc == -EINTR) {
			rc = 0;
			break;
		}
		if (rc) {
			snprintf(err, errlen, "no client connected: %s", strerror(-rc));
			break;
		}
		rc = serve_client(c, defaults, err, errlen);
		oob_close(c);
		if (rc > 0) {
			rc = 0;
			break;
		}
		if (rc < 0)
			notice("bench", "dropped a client: %s; waiting for the next one", err);
	}
	while (pending.n)
		pending_drop(&pending, pending.n - 1, "it had not identified itself when the server ended");
	oob_listener_close(lis);
	return rc;
}
