/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/oob/oob.h"
#include "core/util/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OOB_MAGIC 0x524f4231u /* "ROB1" */

struct oob_listener {
	int fd;
	int port;
};

struct oob_conn {
	int fd;
	/* Frames oob_send_queued took that the socket has not: [out_off, out_len) of out. */
	uint8_t *out;
	size_t out_off, out_len, out_cap;
};

struct frame_header {
	uint32_t magic;
	uint16_t type;
	uint16_t reserved;
	uint32_t length;
};

int oob_parse_address(const char *text, struct sockaddr_storage *addr, socklen_t *len)
{
	char host[256] = "127.0.0.1";
	const char *port = text;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	const char *colon;
	char *end;
	long p;

	if (!text || !*text)
		return -EINVAL;
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = '\0';
		port = close + 2;
	} else if ((colon = strrchr(text, ':'))) {
		if ((size_t)(colon - text) >= sizeof(host) || colon == text)
			return -EINVAL;
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = '\0';
		port = colon + 1;
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (errno || end == port || *end || p < 0 || p > 65535)
		return -EINVAL;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -EHOSTUNREACH;
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

int oob_listen(const char *text, struct oob_listener **out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct oob_listener *l;
	int one = 1, rc;

	rc = oob_parse_address(text ? text : "127.0.0.1:0", &ss, &len);
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		goto fail;
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, (struct sockaddr *)&ss, len) || listen(l->fd, 64))
		goto fail;
	len = sizeof(ss);
	if (getsockname(l->fd, (struct sockaddr *)&ss, &len))
		goto fail;
	l->port = port_of(&ss);
	*out = l;
	return 0;
fail:
	rc = -errno;
	if (l->fd >= 0)
		close(l->fd);
	free(l);
	return rc;
}

int oob_listener_port(const struct oob_listener *l)
{
	return l->port;
}

int oob_listener_fd(const struct oob_listener *l)
{
	return l->fd;
}

void oob_listener_close(struct oob_listener *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l);
}

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int rc;

	do
		rc = poll(&p, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return rc == 0 ? -ETIMEDOUT : 0;
}

static struct oob_conn *conn_new(int fd)
{
	struct oob_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c) {
		close(fd);
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	return c;
}

int oob_accept(struct oob_listener *l, int timeout_ms, struct oob_conn **out)
{
	int rc = wait_fd(l->fd, POLLIN, timeout_ms);
	int fd;

	if (rc)
		return rc;
	fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out = conn_new(fd);
	return *out ? 0 : -ENOMEM;
}

static long long now_ms(void)
{
	return (long long)(clock_ns() / 1000000ull);
}

int oob_connect(const char *text, int timeout_ms, struct oob_conn **out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	long long deadline = now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	int rc = oob_parse_address(text, &ss, &len);

	if (rc)
		return rc;
	for (;;) {
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
			*out = conn_new(fd);
			return *out ? 0 : -ENOMEM;
		}
		rc = -errno;
		close(fd);
		if (rc != -ECONNREFUSED || (timeout_ms >= 0 && now_ms() >= deadline))
			return rc == -ECONNREFUSED ? -ETIMEDOUT : rc;
		/* The peer is not listening yet: back off briefly and retry. */
		wait_fd(-1, 0, 20);
	}
}

/* What is left until deadline, for poll(): -1 when there is none, 0 once it passed. */
static int ms_left(long long deadline)
{
	long long now = now_ms();

	return deadline < 0 ? -1 : (int)(deadline > now ? deadline - now : 0);
}

/* What the socket takes of buf now, without waiting: bytes sent (0 when it is full), or -errno. */
static ssize_t send_now(int fd, const void *buf, size_t len)
{
	for (;;) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n >= 0)
			return n;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno != EINTR)
			return errno == EPIPE ? -ECONNRESET : -errno;
	}
}

/* Writes exactly len bytes; the deadline (-1: none) applies to the whole write. */
static int write_all(int fd, const void *buf, size_t len, long long deadline)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send_now(fd, p, len);

		if (n < 0)
			return (int)n;
		if (n == 0) {
			/* The peer is not reading: wait for room, not past the deadline. */
			int rc = wait_fd(fd, POLLOUT, ms_left(deadline));

			if (rc)
				return rc;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static struct frame_header frame_header_of(uint16_t type, uint32_t len)
{
	return (struct frame_header){.magic = htonl(OOB_MAGIC), .type = htons(type), .length = htonl(len)};
}

/* Reads exactly len bytes; the deadline applies to the whole read. */
static int read_all(int fd, void *buf, size_t len, long long deadline)
{
	char *p = buf;

	while (len) {
		int rc = wait_fd(fd, POLLIN, ms_left(deadline));
		ssize_t n;

		if (rc)
			return rc;
		n = recv(fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int oob_send(struct oob_conn *c, uint16_t type, const void *buf, uint32_t len)
{
	return oob_send_timeout(c, type, buf, len, OOB_SEND_TIMEOUT_MS);
}

size_t oob_pending(const struct oob_conn *c)
{
	return c->out_len - c->out_off;
}

/* Everything queued, waiting for room up to deadline: frames leave in the order they were given. */
static int drain(struct oob_conn *c, long long deadline)
{
	int rc = oob_pending(c) ? write_all(c->fd, c->out + c->out_off, oob_pending(c), deadline) : 0;

	if (!rc)
		c->out_off = c->out_len = 0;
	return rc;
}

int oob_send_timeout(struct oob_conn *c, uint16_t type, const void *buf, uint32_t len, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct frame_header h = frame_header_of(type, len);
	int rc;

	if (len > OOB_MAX_MESSAGE)
		return -EMSGSIZE;
	rc = drain(c, deadline);
	if (!rc)
		rc = write_all(c->fd, &h, sizeof(h), deadline);
	return rc ? rc : write_all(c->fd, buf, len, deadline);
}

int oob_flush(struct oob_conn *c)
{
	while (oob_pending(c)) {
		ssize_t n = send_now(c->fd, c->out + c->out_off, oob_pending(c));

		if (n <= 0)
			return (int)n; /* 0: the socket is full; the rest waits for POLLOUT */
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

int oob_send_queued(struct oob_conn *c, uint16_t type, const void *buf, uint32_t len, size_t max_pending)
{
	struct frame_header h = frame_header_of(type, len);
	size_t need = sizeof(h) + len, waiting = oob_pending(c);

	if (len > OOB_MAX_MESSAGE)
		return -EMSGSIZE;
	if (waiting + need > max_pending)
		return -ENOBUFS;
	if (c->out_len + need > c->out_cap && c->out_off) { /* room at the front first */
		memmove(c->out, c->out + c->out_off, waiting);
		c->out_off = 0;
		c->out_len = waiting;
	}
	if (c->out_len + need > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 65536;
		uint8_t *out;

		while (cap < c->out_len + need)
			cap *= 2;
		out = realloc(c->out, cap);
		if (!out)
			return -ENOMEM;
		c->out = out;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, &h, sizeof(h));
	if (len)
		memcpy(c->out + c->out_len + sizeof(h), buf, len);
	c->out_len += need;
	/* Frames already waited: the socket was full, and poll's POLLOUT says when it is not. */
	return waiting ? 0 : oob_flush(c);
}

int oob_recv(struct oob_conn *c, uint16_t *type, void *buf, uint32_t cap, uint32_t *len, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct frame_header h;
	uint32_t length;
	int rc = read_all(c->fd, &h, sizeof(h), deadline);

	if (rc)
		return rc;
	length = ntohl(h.length);
	if (ntohl(h.magic) != OOB_MAGIC || length > OOB_MAX_MESSAGE)
		return -EPROTO;
	if (type)
		*type = ntohs(h.type);
	if (len)
		*len = length;
	if (length <= cap)
		return read_all(c->fd, buf, length, deadline);
	/* Too big for the caller: consume it so the stream stays in frame. */
	char scratch[4096];

	while (length) {
		uint32_t chunk = length < sizeof(scratch) ? length : sizeof(scratch);

		rc = read_all(c->fd, scratch, chunk, deadline);
		if (rc)
			return rc;
		length -= chunk;
	}
	return -EMSGSIZE;
}

int oob_frame_ready(const struct oob_conn *c, uint32_t max_len)
{
	uint8_t buf[sizeof(struct frame_header) + 256];
	struct frame_header h;
	ssize_t n;

	n = recv(c->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if ((size_t)n < sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	if (ntohl(h.magic) != OOB_MAGIC || ntohl(h.length) > max_len ||
	    ntohl(h.length) > sizeof(buf) - sizeof(h))
		return -EPROTO;
	return (size_t)n >= sizeof(h) + ntohl(h.length);
}

int oob_conn_fd(const struct oob_conn *c)
{
	return c->fd;
}

void oob_close(struct oob_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->out);
	free(c);
}
