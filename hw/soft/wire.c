/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The TCP wire between soft NICs.  Every packet is a fixed little-endian
 * header and a payload.  A requester connects to the peer GID's ip:port and
 * sends REQ packets; the peer's engine answers RSP packets on the same
 * socket.  All sockets are non-blocking and belong to whoever runs the
 * engine's round (engine.c), with per-connection buffers, so two NICs
 * writing to each other never deadlock.  Every connection first runs the
 * key handshake of auth.h; until it is done nothing on it is parsed or sent,
 * and the peer it speaks for is the port the handshake proved.  A
 * connection that breaks fails the RC QPs waiting on it with RETRY_EXC_ERR
 * (soft_peer_lost).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "hw/soft/soft.h"
#include "hw/soft/wire.h"
#include "hw/soft/auth.h"
#include "hw/soft/shm.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SOFT_CONNECT_TIMEOUT_MS	    1000
#define SOFT_MAX_CONNS		    4096	 /* connections per NIC; more are refused at accept */
#define SOFT_MAX_UNVERIFIED	    64		 /* incoming ones that have not yet proved the key */
#define SOFT_UNVERIFIED_MAX_PAYLOAD 65536	 /* what a packet may carry before its QP vouches for it */
#define SOFT_ACCEPT_BACKOFF_NS	    100000000ull /* out of fds: stop accepting for this long */
#define SOFT_READ_DIRECT_MAX	    4	  /* up to this many connections, rounds read them without epoll */
#define SOFT_WIRE_COALESCE_MAX	    8192  /* payloads up to this size are queued, then sent in one call */
#define SOFT_CLOSE_DRAIN_MS	    200	  /* at close, how long queued packets may take to leave */
#define SOFT_ACK_HOLD_NS	    20000 /* the longest a SEND's ACK waits for a request to ride with */
#define SOFT_AUTH_TIMEOUT_NS	    2000000000ull  /* an incoming connection must prove the key by then */
#define SOFT_AUTH_DIAL_TIMEOUT_NS   10000000000ull /* a peer we dialed must answer by then */

struct soft_conn {
	struct soft_nic *nic;
	int fd;
	bool outgoing, dead;
	bool verified;		       /* outgoing, or proved the key */
	bool authed;		       /* proved the key (auth.h): packets may flow */
	struct soft_auth_session auth; /* the handshake; auth.peer is then who the peer is */
	uint64_t auth_deadline_ns;     /* an unauthenticated connection is dropped then */
	bool watch_out;		       /* registered for EPOLLOUT */
	bool peer_known;	       /* outgoing, or incoming and learned from its handshake */
	bool blocked;		       /* the socket took less than offered: wait for POLLOUT */
	bool urgent;		       /* out holds more than delayable ACKs */
	uint64_t hold_until_ns;	       /* out holds only delayable ACKs: sent by then at the latest */
	bool connecting;	       /* outgoing, connect() still in progress */
	bool self;		       /* incoming, from one of this NIC's own outgoing connections */
	uint64_t connect_deadline_ns;  /* then it is given up */
	union ibv_gid peer;
	uint64_t id; /* unique for the NIC's lifetime: held requests name their connection by it */
	uint8_t *in, *out;
	size_t in_off, in_len, in_cap, out_off, out_len, out_cap; /* in: [in_off, in_len) unparsed */
	size_t skip;		   /* payload bytes of a dropped packet still to discard as they arrive */
	struct soft_shm_link link; /* the shared-memory rings it moved onto (shm.h), if it did */
	/*
	 * While the move is negotiated (OFFER or ACCEPT sent, this side's ON
	 * not yet), out[hold_at...] waits: it goes into the ring after ON, or
	 * on TCP if the move is refused.  Otherwise a sender that keeps TCP
	 * busy (a stream of 1 MiB WRITEs) would never find the moment to send
	 * ON, and the connection would stay on TCP for good.
	 */
	bool hold;
	size_t hold_at;
	struct soft_conn *next;
};

/* The listener is registered with data NULL, a connection with itself. */
static int soft_epoll_add(struct soft_nic *nic, int fd, struct soft_conn *c)
{
	struct epoll_event ev = {.events = EPOLLIN | (c && c->watch_out ? EPOLLOUT : 0), .data.ptr = c};

	return epoll_ctl(nic->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
}

/* Asks for EPOLLOUT only while a handshake is in progress or the socket took less than offered. */
static void soft_conn_watch(struct soft_conn *c)
{
	bool want = c->connecting || c->blocked;
	struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};

	if (want == c->watch_out || c->dead)
		return;
	c->watch_out = want;
	epoll_ctl(c->nic->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
}

int soft_wire_fd(const struct soft_nic *nic)
{
	return nic->epoll_fd;
}

int soft_wire_listen(struct soft_nic *nic, const char *spec)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int one = 1;

	if (spec && *spec) {
		char host[64];
		const char *colon = strrchr(spec, ':');
		size_t host_len = colon ? (size_t)(colon - spec) : strlen(spec);
		char *end = NULL;
		unsigned long port = 0; /* a bare IP: any free port */

		if (host_len >= sizeof(host)) {
			soft_config_fail(
			    "RDMATOOL_SOFT_ADDR=%s is not ip or ip:port; use e.g. 127.0.0.1:7000 "
			    "(port 0 = any)",
			    spec);
			return EINVAL;
		}
		memcpy(host, spec, host_len);
		host[host_len] = '\0';
		errno = 0;
		if (colon)
			port = strtoul(colon + 1, &end, 10);
		if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || errno ||
		    (colon && (end == colon + 1 || *end || !isdigit((unsigned char)colon[1]))) ||
		    port > 65535) {
			soft_config_fail(
			    "RDMATOOL_SOFT_ADDR=%s is not ip or ip:port; use an IPv4 address and "
			    "a port from 0 to 65535",
			    spec);
			return EINVAL;
		}
		sa.sin_port = htons((uint16_t)port);
	}
	switch (soft_shm_wanted(getenv("RDMATOOL_SOFT_SHM"))) {
	case 0:
		nic->shm_allowed = false;
		break;
	case 1:
		nic->shm_allowed = true;
		break;
	default:
		soft_config_fail(
		    "RDMATOOL_SOFT_SHM=%s is not 0 or 1; use 0 to keep local peers on TCP, 1 (the "
		    "default) to let them share memory",
		    getenv("RDMATOOL_SOFT_SHM"));
		return EINVAL;
	}
	if (getrandom(nic->shm_probe, sizeof(nic->shm_probe), 0) != (ssize_t)sizeof(nic->shm_probe))
		nic->shm_allowed = false; /* without a secret probe no peer can check it reads our memory */
	nic->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (nic->epoll_fd < 0)
		return errno;
	nic->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (nic->listen_fd < 0)
		return errno;
	setsockopt(nic->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(nic->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(nic->listen_fd, 64) ||
	    getsockname(nic->listen_fd, (struct sockaddr *)&sa, &len)) {
		int err = errno;
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
		soft_config_fail(
		    "soft0 cannot listen on %s:%u: %s; set RDMATOOL_SOFT_ADDR to a free local ip:port", ip,
		    ntohs(sa.sin_port), strerror(err));
		close(nic->listen_fd);
		nic->listen_fd = -1;
		return err;
	}
	if (soft_epoll_add(nic, nic->listen_fd, NULL)) {
		int err = errno;

		close(nic->listen_fd);
		nic->listen_fd = -1;
		return err;
	}
	nic->addr = sa;
	memset(&nic->gid, 0, sizeof(nic->gid));
	nic->gid.raw[0] = 0xfe;
	nic->gid.raw[1] = 0x80;
	memcpy(&nic->gid.raw[8], &sa.sin_addr.s_addr, 4);
	memcpy(&nic->gid.raw[12], &sa.sin_port, 2);
	nic->gid.raw[14] = 'S';
	nic->gid.raw[15] = 'W';
	/*
	 * GID index 1 names this port too, but what is sent to it goes out on
	 * the wire and comes back in through the listener, as rxe over lo does:
	 * one process can then drive the wire path (its encoding, its
	 * connections) with QPs of its own.
	 */
	nic->wire_gid = nic->gid;
	nic->wire_gid.raw[15] = 'L';
	return 0;
}

static void soft_conn_free(struct soft_conn *c)
{
	if (c->link.state == SOFT_SHM_UP)
		atomic_fetch_sub_explicit(&c->nic->shm_conns, 1, memory_order_relaxed);
	soft_shm_link_close(&c->link);
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

static void soft_conn_flush(struct soft_conn *c);
static void soft_hdr_to_le(struct soft_pkt *h);

/*
 * What is queued when the NIC goes away still leaves: above all the ACKs
 * held back to ride with a later request (SOFT_ACK_HOLD_NS).  A program
 * that saw its last receive complete and closes at once would otherwise
 * take the ACK with it, and its peer's SEND would end in RETRY_EXC_ERR.
 * A peer that does not read gets SOFT_CLOSE_DRAIN_MS, no more.
 */
static void soft_wire_drain(struct soft_nic *nic)
{
	uint64_t deadline = soft_now_ns() + SOFT_CLOSE_DRAIN_MS * 1000000ull;

	for (struct soft_conn *c = nic->conns; c; c = c->next) {
		soft_conn_flush(c);
		while (c->blocked && !c->dead) {
			struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
			uint64_t now = soft_now_ns();

			if (now >= deadline || poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1)) <= 0)
				break;
			soft_conn_flush(c);
		}
	}
}

void soft_wire_close(struct soft_nic *nic)
{
	soft_wire_drain(nic);
	while (nic->conns) {
		struct soft_conn *c = nic->conns;

		nic->conns = c->next;
		soft_conn_free(c);
	}
	if (nic->listen_fd >= 0)
		close(nic->listen_fd);
	nic->listen_fd = -1;
	if (nic->epoll_fd >= 0)
		close(nic->epoll_fd);
	nic->epoll_fd = -1;
}

/* Packets may leave once the handshake is done and, with a secret, the peer proved it. */
static bool soft_conn_ready(const struct soft_conn *c)
{
	return !c->dead && !c->connecting && c->authed;
}

/* Sends a challenge-response message whole, or gives the connection up. */
static void soft_auth_send(struct soft_conn *c, const void *buf, size_t len)
{
	if (send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len)
		c->dead = true;
}

/* A port's GIDs (index 0 'W', index 1 'L') differ only in their last byte: this names the port. */
static bool soft_gid_same_port(const uint8_t *a, const uint8_t *b)
{
	return !memcmp(a, b, 14) && a[14] == 'S' && (a[15] == 'W' || a[15] == 'L') &&
	       (b[15] == 'W' || b[15] == 'L');
}

/* Opens the handshake (auth.h): our HELLO goes out first, on both sides. */
static void soft_auth_begin(struct soft_conn *c)
{
	uint8_t hello[SOFT_AUTH_HELLO_LEN], expect[16];

	/* The port we dialed must answer with its own GID, whichever of its GIDs we dialed. */
	memcpy(expect, c->peer.raw, 16);
	expect[15] = 'W';
	soft_auth_start(&c->auth, c->outgoing, c->nic->gid.raw, c->outgoing ? expect : NULL, hello);
	soft_auth_send(c, hello, sizeof(hello));
}

static struct soft_conn *soft_conn_new(struct soft_nic *nic, int fd, bool outgoing, const union ibv_gid *peer)
{
	struct soft_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c) {
		close(fd);
		return NULL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->nic = nic;
	c->fd = fd;
	c->id = ++nic->next_conn_id;
	c->outgoing = outgoing;
	c->verified = outgoing;
	c->auth_deadline_ns = soft_now_ns() + (outgoing ? SOFT_AUTH_DIAL_TIMEOUT_NS : SOFT_AUTH_TIMEOUT_NS);
	c->connecting = outgoing;
	c->watch_out = outgoing;
	if (peer) {
		c->peer = *peer;
		c->peer_known = true;
	}
	if (soft_epoll_add(nic, fd, c)) {
		close(fd);
		free(c);
		return NULL;
	}
	c->next = nic->conns;
	nic->conns = c;
	atomic_fetch_add_explicit(&nic->n_conns, 1, memory_order_relaxed);
	if (!outgoing)
		soft_auth_begin(c); /* an accepted socket is up: challenge at once */
	return c;
}

static bool soft_is_wire_gid(const struct soft_nic *nic, const union ibv_gid *gid)
{
	return memcmp(gid->raw, nic->wire_gid.raw, 16) == 0;
}

static struct soft_conn *soft_conn_to(struct soft_nic *nic, const union ibv_gid *gid)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct soft_conn *c;
	int fd;

	for (struct soft_conn *c = nic->conns; c; c = c->next)
		if (c->outgoing && !c->dead && memcmp(c->peer.raw, gid->raw, 16) == 0)
			return c;
	/*
	 * The peer's own connection to us carries our requests too: its ACKs
	 * and our requests then share writes, and no second socket is opened.
	 */
	for (struct soft_conn *c = nic->conns; c; c = c->next)
		if (c->peer_known && !c->dead && memcmp(c->peer.raw, gid->raw, 16) == 0)
			return c;
	/* Every GID of a soft port, index 0 or 1, ours or another NIC's, is reached through its listener. */
	if (gid->raw[14] != 'S' || (gid->raw[15] != 'W' && gid->raw[15] != 'L'))
		return NULL; /* not a soft NIC's GID: unreachable */
	memcpy(&sa.sin_addr.s_addr, &gid->raw[8], 4);
	memcpy(&sa.sin_port, &gid->raw[12], 2);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return NULL;
	/*
	 * The engine never waits for the handshake: packets queue on the new
	 * connection and leave once it is up (soft_wire_service); a refused or
	 * timed-out attempt breaks the connection like any other loss.
	 */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		close(fd);
		return NULL;
	}
	c = soft_conn_new(nic, fd, true, gid);
	if (c)
		c->connect_deadline_ns = soft_now_ns() + SOFT_CONNECT_TIMEOUT_MS * 1000000ull;
	return c;
}

/* A connection attempt finished (POLLOUT or an error): up, or dead. */
static void soft_conn_established(struct soft_conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);

	c->connecting = false;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err)
		c->dead = true;
	else
		soft_auth_begin(c);
	soft_conn_watch(c);
}

/* Wakes the peer's engine, asleep on its sockets, for what was just put in the ring (shm.h). */
static void soft_conn_kick(struct soft_conn *c)
{
	char k = 0;

	if (soft_shm_kick_due(c->link.shm) && send(c->fd, &k, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
	    errno != EAGAIN)
		c->dead = true;
}

/*
 * Bytes into the ring to the peer; the count, or -1 with errno EAGAIN (full)
 * or EPROTO (the peer broke the ring: the connection is given up).
 * payload: the bytes are registered memory (read as a NIC would, dma.c).
 */
static ssize_t soft_conn_ring_write(struct soft_conn *c, const void *buf, size_t len, bool payload)
{
	ssize_t n =
	    payload ? soft_dma_shm_write(c->link.shm, buf, len) : soft_shm_write(c->link.shm, buf, len);

	if (n < 0) {
		atomic_fetch_add_explicit(&c->nic->shm_quarantined, 1, memory_order_relaxed);
		errno = EPROTO;
		return -1;
	}
	if (n == 0) {
		errno = EAGAIN;
		return -1;
	}
	soft_count(&c->nic->wire_copied_bytes, (uint64_t)n);
	soft_conn_kick(c);
	return n;
}

/*
 * Sends this side's last TCP packet, ON: what follows goes into the ring.
 * Only with nothing queued before it; a socket that takes part of it gets
 * the rest within a second, or the connection is given up.
 */
static void soft_conn_send_on(struct soft_conn *c)
{
	struct soft_pkt h = {.magic = SOFT_WIRE_MAGIC, .type = SOFT_PKT_CTL, .opcode = SOFT_SHM_ON};
	uint64_t deadline = soft_now_ns() + 1000000000ull;
	size_t sent = 0;

	soft_hdr_to_le(&h);
	while (sent < SOFT_PKT_HDR_LEN) {
		ssize_t n =
		    send(c->fd, (uint8_t *)&h + sent, SOFT_PKT_HDR_LEN - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};

		if (n > 0) {
			sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			c->dead = true;
			return;
		}
		if (!sent)
			return; /* the socket is full: next round */
		if (soft_now_ns() >= deadline || poll(&pfd, 1, 10) < 0) {
			c->dead = true;
			return;
		}
	}
	soft_shm_link_on_sent(&c->link);
	if (c->link.state == SOFT_SHM_UP)
		atomic_fetch_add_explicit(&c->nic->shm_conns, 1, memory_order_relaxed);
}

/* Whether the negotiation of the move to the rings is over: nothing held back any more. */
static void soft_conn_hold_check(struct soft_conn *c)
{
	if (c->hold && (c->link.tx || c->link.state == SOFT_SHM_TCP))
		c->hold = false;
}

/* Holds what is queued after the CTL packet just queued until the negotiation it opened ends. */
static void soft_conn_hold_start(struct soft_conn *c)
{
	if (c->link.state != SOFT_SHM_OFFERED && c->link.state != SOFT_SHM_ACCEPTED)
		return;
	c->hold = true;
	c->hold_at = c->out_len;
}

static void soft_conn_flush(struct soft_conn *c)
{
	size_t end;

	c->blocked = false;
again:
	end = c->hold ? c->hold_at : c->out_len;
	while (soft_conn_ready(c) && c->out_off < end) {
		ssize_t n = c->link.tx ? soft_conn_ring_write(c, c->out + c->out_off, end - c->out_off, false)
				       : send(c->fd, c->out + c->out_off, end - c->out_off, MSG_NOSIGNAL);

		if (n > 0) {
			c->out_off += (size_t)n;
			if (!c->link.tx)
				soft_count(&c->nic->wire_copied_bytes, (uint64_t)n);
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			/* A full ring is tried again each round: no event says it has room. */
			c->blocked = !c->link.tx;
			break;
		} else {
			c->dead = true;
		}
	}
	if (c->out_off == end && c->link.state == SOFT_SHM_WANT_ON && soft_conn_ready(c)) {
		soft_conn_send_on(c); /* ON leaves before what was held, which then takes the ring */
		soft_conn_hold_check(c);
		if (!c->hold && c->out_off < c->out_len && !c->dead)
			goto again;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		c->hold_at = 0;
		c->urgent = false;
	}
	soft_conn_watch(c);
}

static uint8_t *soft_conn_reserve(struct soft_conn *c, size_t n)
{
	if (c->out_len + n > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 65536;
		uint8_t *p;

		if (c->out_off) {
			memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
			c->out_len -= c->out_off;
			c->hold_at -= c->hold_at > c->out_off ? c->out_off : c->hold_at;
			c->out_off = 0;
		}
		while (cap < c->out_len + n)
			cap *= 2;
		if (cap != c->out_cap) {
			p = realloc(c->out, cap);
			if (!p)
				return NULL;
			c->out = p;
			c->out_cap = cap;
		}
	}
	c->out_len += n;
	return c->out + c->out_len - n;
}

static void soft_hdr_to_le(struct soft_pkt *h)
{
	h->magic = htole32(h->magic);
	h->payload = htole32(h->payload);
	h->src_qpn = htole32(h->src_qpn);
	h->dst_qpn = htole32(h->dst_qpn);
	h->psn = htole32(h->psn);
	h->qkey = htole32(h->qkey);
	h->rkey = htole32(h->rkey);
	h->imm_data = htole32(h->imm_data);
	h->invalidate_rkey = htole32(h->invalidate_rkey);
	h->length = htole32(h->length);
	h->raddr = htole64(h->raddr);
	h->compare_add = htole64(h->compare_add);
	h->swap = htole64(h->swap);
}

static void soft_hdr_from_le(struct soft_pkt *h)
{
	/* The conversion is its own inverse. */
	soft_hdr_to_le(h);
}

/*
 * Sends what it can of header + segments straight from their memory (one
 * sendmsg, no staging copy) when nothing is queued before it; returns the
 * bytes sent.
 */
static size_t soft_conn_send_direct(struct soft_conn *c, const struct soft_pkt *h, const struct soft_seg *seg,
				    int nseg)
{
	struct iovec iov[SOFT_MAX_SGE + 1];
	struct msghdr msg = {.msg_iov = iov};
	ssize_t n;

	if (!soft_conn_ready(c) || c->out_len > c->out_off || c->hold)
		return 0;
	if (c->link.tx) {
		/* Into the ring, as far as it takes: header, then each segment. */
		size_t sent = 0;
		ssize_t n = soft_conn_ring_write(c, h, SOFT_PKT_HDR_LEN, false);

		if (n > 0)
			sent = (size_t)n;
		for (int i = 0; n == (ssize_t)SOFT_PKT_HDR_LEN && sent >= SOFT_PKT_HDR_LEN && i < nseg; i++) {
			if (!seg[i].len)
				continue;
			n = soft_conn_ring_write(c, seg[i].ptr, seg[i].len, true);
			if (n > 0)
				sent += (size_t)n;
			if (n != (ssize_t)seg[i].len)
				break;
		}
		if (n < 0 && errno == EPROTO)
			c->dead = true;
		return sent;
	}
	iov[0].iov_base = (void *)h;
	iov[0].iov_len = SOFT_PKT_HDR_LEN;
	for (int i = 0; i < nseg; i++) {
		iov[i + 1].iov_base = (void *)seg[i].ptr;
		iov[i + 1].iov_len = seg[i].len;
	}
	msg.msg_iovlen = (size_t)nseg + 1;
	n = soft_dma_sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n >= 0) {
		soft_count(&c->nic->wire_copied_bytes, (uint64_t)n);
		return (size_t)n;
	}
	if (errno != EAGAIN && errno != EINTR)
		c->dead = true;
	return 0;
}

/*
 * Sends one packet, header plus the payload gathered from segs.  A small
 * packet is only queued: the engine sends everything queued in one call
 * per connection at the end of its round (soft_wire_flush), so a burst of
 * requests or answers costs one system call, not one each.  A large one
 * goes out at once, after what is queued, straight from its buffers; what
 * the socket does not take is queued.
 */
static int soft_conn_send(struct soft_conn *c, const struct soft_pkt *pkt, bool delayable)
{
	const struct soft_seg *seg = pkt->seg;
	int nseg = pkt->nseg;
	size_t payload = 0, sent = 0, skip;
	struct soft_pkt hdr, *h = &hdr;
	uint64_t ref[2 * SOFT_MAX_SGE];
	struct soft_seg ref_seg;
	uint8_t *p;

	for (int i = 0; i < nseg; i++)
		payload += seg[i].len;
	memcpy(h, pkt, SOFT_PKT_HDR_LEN);
	h->magic = SOFT_WIRE_MAGIC;
	if (c->link.tx && pkt->stable && payload > SOFT_SHM_INLINE_MAX) {
		/*
		 * On the rings a large payload that stays put until its request
		 * completes does not cross: the packet names where it is, and the
		 * peer pulls it straight into its target (one copy per byte).
		 */
		for (int i = 0; i < nseg; i++) {
			ref[2 * i] = htole64((uintptr_t)seg[i].ptr);
			ref[2 * i + 1] = htole64(seg[i].len);
		}
		ref_seg = (struct soft_seg){.ptr = (const uint8_t *)ref, .len = (uint32_t)(nseg * 16)};
		seg = &ref_seg;
		nseg = 1;
		payload = ref_seg.len;
		h->magic = SOFT_WIRE_MAGIC_REF;
	}
	if (!delayable)
		c->urgent = true;
	else if (c->out_len == c->out_off)
		c->hold_until_ns = soft_now_ns() + SOFT_ACK_HOLD_NS;

	h->payload = (uint32_t)payload;
	soft_hdr_to_le(h);
	if (c->dead)
		return EPIPE;
	/*
	 * On the rings every packet goes at once (no system call to save), but
	 * an ACK that may wait: it then rides with the request that answers it,
	 * and a target that stopped polling after its ACK finds that request
	 * in the same read (ib_write_lat's ping-pong of WRITEs).
	 */
	if (payload > SOFT_WIRE_COALESCE_MAX || (c->link.tx && !delayable)) {
		soft_conn_flush(c);
		sent = soft_conn_send_direct(c, h, seg, nseg);
	}
	if (c->dead)
		return EPIPE;
	if (sent == SOFT_PKT_HDR_LEN + payload)
		return 0;
	p = soft_conn_reserve(c, SOFT_PKT_HDR_LEN + payload - sent);
	if (!p)
		return ENOMEM;
	/* Queue the unsent tail: the rest of the header, then of each segment. */
	skip = sent;
	if (skip < SOFT_PKT_HDR_LEN) {
		memcpy(p, (const uint8_t *)h + skip, SOFT_PKT_HDR_LEN - skip);
		p += SOFT_PKT_HDR_LEN - skip;
		skip = 0;
	} else {
		skip -= SOFT_PKT_HDR_LEN;
	}
	for (int i = 0; i < nseg; i++) {
		if (skip >= seg[i].len) {
			skip -= seg[i].len;
			continue;
		}
		soft_dma_copy(p, seg[i].ptr + skip, seg[i].len - skip);
		soft_count(&c->nic->wire_copied_bytes, seg[i].len - skip);
		p += seg[i].len - skip;
		skip = 0;
	}
	return c->dead ? EPIPE : 0;
}

void soft_wire_flush(struct soft_nic *nic, bool all)
{
	uint64_t now = 0;

	for (struct soft_conn *c = nic->conns; c; c = c->next) {
		if (c->link.state == SOFT_SHM_WANT_ON && !c->blocked &&
		    c->out_off >= (c->hold ? c->hold_at : c->out_len)) {
			soft_conn_flush(c); /* ON, which a full socket put off */
			continue;
		}
		if (c->out_len == c->out_off || c->blocked)
			continue;
		if (!all && !c->urgent) {
			if (!now)
				now = soft_now_ns();
			if (now < c->hold_until_ns)
				continue; /* only ACKs: wait a little for a request to ride along */
		}
		soft_conn_flush(c);
	}
}

bool soft_wire_has_deadlines(const struct soft_nic *nic)
{
	if (nic->accept_resume_ns)
		return true;
	for (const struct soft_conn *c = nic->conns; c; c = c->next)
		if (c->connecting || !c->authed || c->link.state == SOFT_SHM_WANT_ON)
			return true;
	return false;
}

bool soft_wire_sleep(struct soft_nic *nic, bool sleeping)
{
	bool quiet = true;

	for (struct soft_conn *c = nic->conns; c; c = c->next)
		if ((c->link.rx || c->link.tx) && !c->dead && !soft_shm_sleep(c->link.shm, sleeping) &&
		    c->link.rx)
			quiet = false;
	return quiet;
}

bool soft_wire_holding(const struct soft_nic *nic)
{
	for (const struct soft_conn *c = nic->conns; c; c = c->next)
		if (c->out_len > c->out_off && !c->blocked)
			return true;
	return false;
}

bool soft_wire_in_flight(struct soft_nic *nic, const union ibv_gid *peer)
{
	for (struct soft_conn *c = nic->conns; c; c = c->next) {
		int unacked = 0;

		/* A handshake the peer has not answered is no sign of life: its timeouts count. */
		if (c->dead || c->connecting || !c->authed || !c->peer_known ||
		    memcmp(c->peer.raw, peer->raw, 16) != 0)
			continue;
		if (c->link.tx && soft_shm_unread(c->link.shm))
			return true;
		if (c->out_len > c->out_off || (ioctl(c->fd, SIOCOUTQ, &unacked) == 0 && unacked > 0))
			return true;
	}
	return false;
}

/*
 * The ACK of a SEND may wait a moment (like TCP's delayed ACK): the
 * application often answers it, and the answer then carries it.  So may a
 * WRITE's, when the target QP posts sends of its own lately (a ping-pong of
 * WRITEs, ib_write_lat: it then runs on the two polling application threads
 * alone); the ACK of a one-sided WRITE to a passive target leaves at once.
 */
static bool soft_pkt_delayable(const struct soft_pkt *pkt)
{
	bool is_send = pkt->opcode == IBV_WR_SEND || pkt->opcode == IBV_WR_SEND_WITH_IMM;
	bool is_write = pkt->opcode == IBV_WR_RDMA_WRITE || pkt->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
			pkt->opcode == IBV_WR_ATOMIC_WRITE;

	return pkt->type == SOFT_PKT_RSP && pkt->kind == SOFT_RESP_ACK &&
	       (is_send || (is_write && pkt->talks_back));
}

int soft_wire_send(struct soft_nic *nic, const struct soft_pkt *pkt)
{
	struct soft_conn *c;

	if (pkt->conn_id) {
		/* An answer: back on the connection its request came in on, if it is still up. */
		for (c = nic->conns; c && c->id != pkt->conn_id; c = c->next)
			;
		if (!c || c->dead)
			return EPIPE;
	} else if (!(c = soft_conn_to(nic, &pkt->dgid))) {
		return ECONNREFUSED;
	}
	return soft_conn_send(c, pkt, soft_pkt_delayable(pkt));
}

/*
 * A packet that came in on c, header in h (host order), payload following:
 * it enters the NIC through the one receive entry (recv.c), which checks it.
 */
static void soft_conn_ctl(struct soft_nic *nic, struct soft_conn *c, const struct soft_pkt *h,
			  const uint8_t *payload);

static void soft_conn_reject(struct soft_nic *nic, struct soft_conn *c);

static void soft_conn_take(struct soft_nic *nic, struct soft_conn *c, struct soft_pkt *h,
			   const uint8_t *payload)
{
	if (h->type == SOFT_PKT_CTL) {
		soft_conn_ctl(nic, c, h, payload);
		return;
	}
	/*
	 * A request speaks for the port that proved itself in the handshake:
	 * its source GID must be one of that port's.  Our own GIDs arrive only
	 * on a connection we made to ourselves (a QP addressing GID index 1).
	 */
	if (h->type == SOFT_PKT_REQ && (c->self ? !soft_gid_same_port(h->sgid.raw, nic->gid.raw)
						: !soft_gid_same_port(h->sgid.raw, c->auth.peer))) {
		atomic_fetch_add_explicit(&nic->foreign_drops, 1, memory_order_relaxed);
		return;
	}
	h->conn_id = c->id;
	h->stable = false;
	h->seg[0].ptr = payload;
	h->seg[0].len = h->payload;
	h->seg[0].pid = 0;
	h->nseg = h->payload ? 1 : 0;
	if (h->magic == SOFT_WIRE_MAGIC_REF) {
		/* The payload is in the peer's memory: (address, length) pairs, checked by the receive entry.
		 */
		uint64_t ref[2 * SOFT_MAX_SGE];

		h->nseg = (int)(h->payload / 16);
		memcpy(ref, payload, h->payload);
		for (int i = 0; i < h->nseg; i++) {
			uint64_t len = le64toh(ref[2 * i + 1]);

			if (len > SOFT_MAX_MSG) {
				soft_conn_reject(nic, c);
				return;
			}
			h->seg[i].ptr = (const uint8_t *)(uintptr_t)le64toh(ref[2 * i]);
			h->seg[i].len = (uint32_t)len;
			h->seg[i].pid = c->link.peer_pid;
		}
	}
	soft_recv(nic, NULL, h);
}

/* The QP a large payload is for must exist and be connected to this connection's peer. */
static bool soft_qp_vouches(struct soft_nic *nic, const struct soft_conn *c, uint32_t qpn,
			    const uint8_t *sgid)
{
	struct soft_qp *qp = soft_lookup_qp(nic, qpn);
	bool ok;

	if (!qp || (qp->ibv.qp_type != IBV_QPT_RC && qp->ibv.qp_type != IBV_QPT_UC))
		return false;
	soft_lock(&qp->lock);
	ok = !memcmp(qp->attr.ah_attr.grh.dgid.raw, sgid ? sgid : c->peer.raw, 16) && (sgid || c->peer_known);
	soft_unlock(&qp->lock);
	return ok;
}

enum soft_hdr_verdict { SOFT_HDR_TAKE, SOFT_HDR_DROP, SOFT_HDR_REJECT };

/*
 * Checks a header as soon as it is in, before its payload is: a packet
 * this NIC would not serve must not make it buffer anything.  A payload
 * beyond SOFT_UNVERIFIED_MAX_PAYLOAD needs a QP connected to the sender.
 * Without one, a stranger is hung up on; a verified connection (ours, or
 * one that proved the key) only loses that packet, its payload discarded
 * as it arrives, as a NIC drops a packet for a QP that
 * was destroyed or reset meanwhile and keeps its link up.
 */
static enum soft_hdr_verdict soft_header_verdict(struct soft_nic *nic, const struct soft_conn *c,
						 const struct soft_pkt *h)
{
	bool vouched;

	if (h->type == SOFT_PKT_CTL)
		return h->magic == SOFT_WIRE_MAGIC &&
			       (!h->payload || h->payload == sizeof(struct soft_shm_ctl))
			   ? SOFT_HDR_TAKE
			   : SOFT_HDR_REJECT;
	/* A payload by reference only on the rings, and only a list of 1 to SOFT_MAX_SGE pairs. */
	if (h->magic == SOFT_WIRE_MAGIC_REF) {
		if (!c->link.rx || (h->type != SOFT_PKT_REQ && h->type != SOFT_PKT_RSP) || !h->payload ||
		    h->payload % 16 || h->payload > 16 * SOFT_MAX_SGE)
			return SOFT_HDR_REJECT;
		/* As a large payload: pulled only for a QP connected to the sender. */
		vouched = soft_qp_vouches(nic, c, h->dst_qpn, h->type == SOFT_PKT_REQ ? h->sgid.raw : NULL);
		return vouched ? SOFT_HDR_TAKE : SOFT_HDR_DROP;
	}
	if (h->magic != SOFT_WIRE_MAGIC || h->payload > SOFT_MAX_MSG ||
	    (h->type != SOFT_PKT_REQ && h->type != SOFT_PKT_RSP))
		return SOFT_HDR_REJECT;
	if (h->payload <= SOFT_UNVERIFIED_MAX_PAYLOAD)
		return SOFT_HDR_TAKE;
	if (h->type == SOFT_PKT_REQ &&
	    ((h->qp_type != IBV_QPT_RC && h->qp_type != IBV_QPT_UC) || h->payload != h->length))
		return SOFT_HDR_REJECT;
	/* A response rides any connection to its peer. */
	vouched = soft_qp_vouches(nic, c, h->dst_qpn, h->type == SOFT_PKT_REQ ? h->sgid.raw : NULL);
	return vouched ? SOFT_HDR_TAKE : c->verified ? SOFT_HDR_DROP : SOFT_HDR_REJECT;
}

/* Closes a connection that broke the protocol or a limit. */
static void soft_conn_reject(struct soft_nic *nic, struct soft_conn *c)
{
	c->dead = true;
	atomic_fetch_add_explicit(&nic->wire_rejects, 1, memory_order_relaxed);
}

/* Sends a CTL packet of the shared-memory negotiation (body NULL: none). */
static void soft_conn_ctl_send(struct soft_conn *c, int op, const struct soft_shm_ctl *body)
{
	struct soft_pkt pkt = {.type = SOFT_PKT_CTL, .opcode = (uint8_t)op};

	if (body) {
		pkt.nseg = 1;
		pkt.seg[0].ptr = (const uint8_t *)body;
		pkt.seg[0].len = sizeof(*body);
	}
	soft_conn_send(c, &pkt, false);
}

/* A CTL packet came: a step of the shared-memory negotiation (shm_link.c). */
static void soft_conn_ctl(struct soft_nic *nic, struct soft_conn *c, const struct soft_pkt *h,
			  const uint8_t *payload)
{
	struct soft_shm_ctl body, out;
	bool had = c->link.shm != NULL;
	int op;

	if (h->payload == sizeof(body))
		memcpy(&body, payload, sizeof(body)); /* a private copy: the body is read more than once */
	op = soft_shm_link_take(&c->link, c->outgoing, nic->shm_allowed, nic->shm_probe, h->opcode,
				h->payload ? &body : NULL, &out);
	if (op < 0) {
		soft_conn_reject(nic, c); /* a step out of order: not our protocol */
		return;
	}
	if (had && !c->link.shm)
		atomic_fetch_add_explicit(&nic->shm_refused, 1, memory_order_relaxed);
	if (op == SOFT_SHM_NO && !had && h->opcode == SOFT_SHM_OFFER)
		atomic_fetch_add_explicit(&nic->shm_refused, 1, memory_order_relaxed);
	soft_conn_hold_check(c); /* refused: what was held goes on TCP */
	if (op != SOFT_SHM_NONE)
		soft_conn_ctl_send(c, op, op == SOFT_SHM_NO ? NULL : &out);
	if (op == SOFT_SHM_ACCEPT)
		soft_conn_hold_start(c);
	if (c->link.state == SOFT_SHM_UP && h->opcode == SOFT_SHM_ON && c->outgoing)
		atomic_fetch_add_explicit(&nic->shm_conns, 1, memory_order_relaxed);
	if (c->link.state == SOFT_SHM_WANT_ON)
		soft_conn_flush(c); /* ON leaves now if nothing waits for TCP before it */
}

/*
 * Says once per process why a handshake failed where a user should know:
 * a port we dialed, or a peer that spoke the handshake with another key.
 * Strangers that do not speak it at all are only counted (auth_failures).
 */
static void soft_auth_report(struct soft_conn *c)
{
	static atomic_bool said;
	struct sockaddr_in sa = {0};
	socklen_t len = sizeof(sa);
	char ip[INET_ADDRSTRLEN] = "?";

	if (c->auth.state != SOFT_AUTH_FAILED || (!c->outgoing && c->auth.failure == SOFT_AUTH_NOT_HELLO) ||
	    atomic_exchange(&said, true))
		return;
	if (c->outgoing) {
		memcpy(&sa.sin_addr.s_addr, &c->peer.raw[8], 4);
		memcpy(&sa.sin_port, &c->peer.raw[12], 2);
	} else {
		getpeername(c->fd, (struct sockaddr *)&sa, &len);
	}
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	fprintf(stderr,
		"rdmatool soft wire: %s %s:%u refused: %s; both sides need the same key (this side's is %s; "
		"across users or hosts, point RDMATOOL_SOFT_SECRET_FILE at a copy of one key file)\n",
		c->outgoing ? "the soft NIC at" : "a connection from", ip, ntohs(sa.sin_port),
		soft_auth_failure_str(c->auth.failure), c->nic->auth.source);
}

/*
 * An incoming connection speaks for the port its handshake proved: our own
 * requests to that port may ride on it, unless another connection to it
 * exists (a QP's requests must keep to one connection, or they could
 * overtake each other).  A peer claiming one of our own GIDs on a
 * connection we did not make is refused.
 */
static bool soft_conn_bind_peer(struct soft_nic *nic, struct soft_conn *c)
{
	union ibv_gid who;

	memcpy(who.raw, c->auth.peer, 16);
	if (c->outgoing)
		return true; /* c->peer is what we dialed, and the handshake checked the port */
	if (c->self)
		return soft_gid_same_port(who.raw, nic->gid.raw);
	if (who.raw[14] != 'S' || who.raw[15] != 'W' || soft_gid_same_port(who.raw, nic->gid.raw))
		return false;
	for (struct soft_conn *o = nic->conns; o; o = o->next)
		if (o->peer_known && !o->dead && memcmp(o->peer.raw, who.raw, 16) == 0)
			return true;
	c->peer = who;
	c->peer_known = true;
	return true;
}

/*
 * Runs the handshake (auth.h) on what came in; true once the peer proved the
 * key.  Nothing after it is parsed before that.
 */
static bool soft_conn_authenticate(struct soft_nic *nic, struct soft_conn *c, size_t *off)
{
	uint8_t proof[SOFT_AUTH_PROOF_LEN];
	bool send;

	*off += soft_auth_step(&c->auth, &nic->auth, c->in + *off, c->in_len - *off, proof, &send);
	if (send)
		soft_auth_send(c, proof, sizeof(proof));
	if (c->auth.state == SOFT_AUTH_FAILED) {
		atomic_fetch_add_explicit(&nic->auth_failures, 1, memory_order_relaxed);
		soft_auth_report(c);
		soft_conn_reject(nic, c);
		return false;
	}
	if (c->auth.state != SOFT_AUTH_DONE)
		return false;
	if (!soft_conn_bind_peer(nic, c)) {
		atomic_fetch_add_explicit(&nic->auth_failures, 1, memory_order_relaxed);
		soft_conn_reject(nic, c);
		return false;
	}
	c->authed = true;
	c->verified = true;
	c->urgent = c->out_len > c->out_off; /* what waited for the proof leaves this round */
	if (c->outgoing && nic->shm_allowed) {
		/* Another process of this user on this host may share memory with us (shm.h). */
		struct soft_shm_ctl offer;

		if (soft_shm_link_offer(&c->link, nic->shm_probe, &offer) == SOFT_SHM_OFFER) {
			soft_conn_ctl_send(c, SOFT_SHM_OFFER, &offer);
			soft_conn_hold_start(c);
		} else
			atomic_fetch_add_explicit(&nic->shm_refused, 1, memory_order_relaxed);
	}
	return true;
}

/* Room for 64 KiB more in c->in; false when out of memory (the connection is then lost). */
static bool soft_conn_in_room(struct soft_conn *c)
{
	if (c->in_cap - c->in_len < 65536 && c->in_off) {
		/* Move the unparsed rest (part of one packet) to the front once room runs out. */
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	if (c->in_cap - c->in_len < 65536) {
		size_t cap = c->in_cap ? c->in_cap * 2 : 262144;
		uint8_t *p = realloc(c->in, cap);

		if (!p) {
			c->dead = true;
			return false;
		}
		c->in = p;
		c->in_cap = cap;
	}
	return true;
}

/* Reads what the socket has into c->in; returns whether anything came. */
static bool soft_conn_recv(struct soft_conn *c)
{
	bool got = false;

	while (soft_conn_in_room(c)) {
		size_t room = c->in_cap - c->in_len;
		ssize_t n = recv(c->fd, c->in + c->in_len, room, 0);

		if (n > 0) {
			got = true;
			c->in_len += (size_t)n;
			soft_count(&c->nic->wire_copied_bytes, (uint64_t)n);
			/*
			 * A short read drained the socket: stop here rather than pay
			 * a second recv for its EAGAIN (poll is level-triggered, so
			 * what arrives next, or the peer's close, is seen next round).
			 */
			if ((size_t)n < room)
				break;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			c->dead = true;
		break;
	}
	return got;
}

/*
 * On the rings the socket carries only kicks (and the peer's close, which
 * is soft_peer_lost as on TCP): they are read and thrown away.
 */
static void soft_conn_drain_kicks(struct soft_conn *c)
{
	char junk[256];
	ssize_t n;

	while ((n = recv(c->fd, junk, sizeof(junk), 0)) == (ssize_t)sizeof(junk))
		;
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		c->dead = true;
}

/* Copies what the ring from the peer holds into c->in, the private copy that is parsed; whether any came. */
static bool soft_conn_ring_read(struct soft_nic *nic, struct soft_conn *c)
{
	bool got = false;

	while (soft_shm_readable(c->link.shm) && soft_conn_in_room(c)) {
		ssize_t n = soft_shm_read(c->link.shm, c->in + c->in_len, c->in_cap - c->in_len);

		if (n < 0) {
			/* The peer broke its ring: quarantined, as a NIC takes a link down. */
			atomic_fetch_add_explicit(&nic->shm_quarantined, 1, memory_order_relaxed);
			soft_conn_reject(nic, c);
			return true;
		}
		if (!n)
			break;
		got = true;
		c->in_len += (size_t)n;
		soft_count(&nic->wire_copied_bytes, (uint64_t)n);
	}
	if (got)
		soft_conn_kick(c); /* a writer that waits for room */
	return got;
}

/* Serves every whole packet in c->in. */
static void soft_conn_parse(struct soft_nic *nic, struct soft_conn *c)
{
	bool ring = c->link.rx;
	size_t off = c->in_off;

	if (!c->authed && !soft_conn_authenticate(nic, c, &off))
		goto done;
	for (;;) {
		struct soft_pkt h;
		size_t drop = c->skip < c->in_len - off ? c->skip : c->in_len - off;

		off += drop;
		c->skip -= drop;
		if (c->skip || c->in_len - off < SOFT_PKT_HDR_LEN)
			break;
		memcpy(&h, c->in + off, SOFT_PKT_HDR_LEN);
		soft_hdr_from_le(&h);
		switch (soft_header_verdict(nic, c, &h)) {
		case SOFT_HDR_REJECT:
			soft_conn_reject(nic, c); /* not our protocol, or more than it may send: hang up */
			return;
		case SOFT_HDR_DROP:
			atomic_fetch_add_explicit(&nic->stale_drops, 1, memory_order_relaxed);
			off += SOFT_PKT_HDR_LEN;
			c->skip = h.payload;
			continue;
		case SOFT_HDR_TAKE:
			break;
		}
		if (c->in_len - off - SOFT_PKT_HDR_LEN < h.payload)
			break;
		soft_conn_take(nic, c, &h, c->in + off + SOFT_PKT_HDR_LEN);
		off += SOFT_PKT_HDR_LEN + h.payload;
		if (c->link.rx && !ring) {
			/* The peer's ON: its last TCP packet; what came after it on the socket is kicks. */
			off = c->in_len;
			break;
		}
	}
done:
	if (off == c->in_len)
		c->in_off = c->in_len = 0;
	else
		c->in_off = off;
}

/*
 * Reads what came (the socket when sock, the ring once the peer moved onto
 * it) and serves every whole packet; returns whether anything came.
 */
static bool soft_conn_read(struct soft_nic *nic, struct soft_conn *c, bool sock)
{
	bool got = false, ring = c->link.rx;

	if (ring) {
		if (sock)
			soft_conn_drain_kicks(c);
		got = soft_conn_ring_read(nic, c);
	} else {
		got = soft_conn_recv(c);
	}
	soft_conn_parse(nic, c);
	if (!ring && c->link.rx && !c->dead) {
		got |= soft_conn_ring_read(nic, c); /* the peer moved onto the ring in what came */
		soft_conn_parse(nic, c);
	}
	return got || c->dead;
}

/* Frees the connections that broke, failing the RC QPs waiting on them; obj_lock held. */
static void soft_wire_reap(struct soft_nic *nic)
{
	uint64_t now = soft_now_ns();
	bool check_deadlines = now >= nic->next_deadline_check;

	if (check_deadlines)
		nic->next_deadline_check = now + 10000000ull;
	for (struct soft_conn **pp = &nic->conns; *pp;) {
		struct soft_conn *c = *pp;

		/* A handshake past its deadline is given up like any other lost connection. */
		if (check_deadlines && c->connecting && now >= c->connect_deadline_ns)
			c->dead = true;
		if (check_deadlines && !c->authed && now >= c->auth_deadline_ns) {
			atomic_fetch_add_explicit(&nic->auth_failures, 1, memory_order_relaxed);
			c->dead = true;
		}
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		atomic_fetch_sub_explicit(&nic->n_conns, 1, memory_order_relaxed);
		if (c->peer_known)
			soft_peer_lost(nic, &c->peer);
		soft_conn_free(c);
	}
}

/* Makes room for one more incoming connection: the oldest one that never sent a valid packet goes. */
static bool soft_make_room(struct soft_nic *nic)
{
	struct soft_conn *oldest = NULL;
	int total = 0, unverified = 0;

	for (struct soft_conn *c = nic->conns; c; c = c->next) {
		if (c->dead)
			continue;
		total++;
		if (!c->verified) {
			unverified++;
			if (!oldest || c->id < oldest->id)
				oldest = c;
		}
	}
	if (unverified >= SOFT_MAX_UNVERIFIED || (total >= SOFT_MAX_CONNS && oldest)) {
		soft_conn_reject(nic, oldest);
		return true;
	}
	return total < SOFT_MAX_CONNS;
}

/* from is the local address of one of our own connections to GID index 1. */
static bool soft_dialed_by_us(const struct soft_nic *nic, const struct sockaddr_in *from)
{
	for (const struct soft_conn *o = nic->conns; o; o = o->next) {
		struct sockaddr_in mine;
		socklen_t len = sizeof(mine);

		if (o->outgoing && soft_is_wire_gid(nic, &o->peer) &&
		    !getsockname(o->fd, (struct sockaddr *)&mine, &len) && len == sizeof(mine) &&
		    mine.sin_addr.s_addr == from->sin_addr.s_addr && mine.sin_port == from->sin_port)
			return true;
	}
	return false;
}

static void soft_wire_accept(struct soft_nic *nic)
{
	int fd;

	struct sockaddr_in from;
	socklen_t len = sizeof(from);
	struct soft_conn *c;

	while ((fd = accept4(nic->listen_fd, (struct sockaddr *)&from, &len, SOCK_CLOEXEC | SOCK_NONBLOCK)) >=
	       0) {
		if (!soft_make_room(nic)) {
			close(fd);
			atomic_fetch_add_explicit(&nic->wire_rejects, 1, memory_order_relaxed);
			len = sizeof(from);
			continue;
		}
		if ((c = soft_conn_new(nic, fd, false, NULL)))
			c->self = len == sizeof(from) && soft_dialed_by_us(nic, &from);
		len = sizeof(from);
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
		/* Out of fds: the listener stays readable, so stop listening a while instead of spinning. */
		epoll_ctl(nic->epoll_fd, EPOLL_CTL_DEL, nic->listen_fd, NULL);
		nic->accept_resume_ns = soft_now_ns() + SOFT_ACCEPT_BACKOFF_NS;
	}
}

/* Handles ready sockets; obj_lock held for reading. */
static bool soft_wire_events(struct soft_nic *nic)
{
	struct epoll_event ev[64];
	int n = epoll_wait(nic->epoll_fd, ev, 64, 0);

	for (int i = 0; i < n; i++) {
		struct soft_conn *c = ev[i].data.ptr;

		if (!c) {
			soft_wire_accept(nic);
			continue;
		}
		if (c->dead)
			continue;
		if (c->connecting)
			soft_conn_established(c);
		if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			soft_conn_read(nic, c, true);
		if ((ev[i].events & EPOLLOUT) && !c->dead)
			soft_conn_flush(c);
	}
	/* The rings raise no event while their reader is awake: they are looked at every time. */
	for (struct soft_conn *c = nic->conns; c; c = c->next)
		if (c->link.rx && !c->dead && soft_shm_readable(c->link.shm))
			n += soft_conn_read(nic, c, false);
	if (nic->accept_resume_ns && soft_now_ns() >= nic->accept_resume_ns &&
	    soft_epoll_add(nic, nic->listen_fd, NULL) == 0)
		nic->accept_resume_ns = 0;
	return n > 0;
}

bool soft_wire_service(struct soft_nic *nic)
{
	bool got;

	pthread_rwlock_rdlock(&nic->obj_lock);
	got = soft_wire_events(nic);
	soft_wire_reap(nic);
	pthread_rwlock_unlock(&nic->obj_lock);
	return got;
}

bool soft_wire_read_now(struct soft_nic *nic)
{
	bool got = false;

	if (atomic_load_explicit(&nic->n_conns, memory_order_relaxed) > SOFT_READ_DIRECT_MAX)
		return soft_wire_service(nic);
	pthread_rwlock_rdlock(&nic->obj_lock);
	for (struct soft_conn *c = nic->conns; c; c = c->next) {
		if (c->connecting || c->dead)
			continue;
		if (c->blocked)
			soft_conn_flush(c);
		/* On the rings the socket holds only kicks, which the engine's epoll reads. */
		got |= soft_conn_read(nic, c, !c->link.rx);
	}
	soft_wire_reap(nic);
	pthread_rwlock_unlock(&nic->obj_lock);
	return got;
}
