/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Out-of-band exchange: framed messages over TCP between processes and
 * hosts, for the metadata RDMA itself cannot carry before a connection
 * exists (GIDs, QP numbers, rkeys).  TCP gives per-connection ordering.
 *
 * Frame: 4-byte magic "ROB1", 2-byte type, 2-byte reserved, 4-byte length,
 * all big-endian, then the payload.  A frame with a bad magic or a length
 * over OOB_MAX_MESSAGE is a protocol error (EPROTO), never a crash.
 * Every call returns 0 or a negative errno.
 */
#ifndef RDMATOOL_CORE_OOB_H
#define RDMATOOL_CORE_OOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define OOB_MAX_MESSAGE (1u << 20)

struct oob_listener;
struct oob_conn;

/* "ip:port", "host:port", "[v6]:port" or "port"; port 0 picks a free one. */
int oob_parse_address(const char *text, struct sockaddr_storage *addr, socklen_t *len);

/* Listens on addr (NULL: 127.0.0.1, a free port). */
int oob_listen(const char *addr, struct oob_listener **out);
/* The port actually bound (useful with port 0). */
int oob_listener_port(const struct oob_listener *l);
int oob_listener_fd(const struct oob_listener *l);
/* Waits up to timeout_ms (-1: forever) for one peer. */
int oob_accept(struct oob_listener *l, int timeout_ms, struct oob_conn **out);
void oob_listener_close(struct oob_listener *l);

/* Connects, retrying while the peer is not listening yet, for up to timeout_ms. */
int oob_connect(const char *addr, int timeout_ms, struct oob_conn **out);

/*
 * Sends one frame.  A peer that stops reading cannot hold the sender: after
 * timeout_ms (-1: forever; oob_send: OOB_SEND_TIMEOUT_MS) it gives
 * -ETIMEDOUT, and the frame may be half sent: close the connection then.
 */
#define OOB_SEND_TIMEOUT_MS 30000
int oob_send(struct oob_conn *c, uint16_t type, const void *buf, uint32_t len);
int oob_send_timeout(struct oob_conn *c, uint16_t type, const void *buf, uint32_t len, int timeout_ms);
/*
 * Queued sends, for one loop that serves many peers (walk's hub): the frame
 * joins the connection's own queue and what the socket takes now is written,
 * so a peer that reads slowly delays only its own frames.  When
 * oob_pending() is not 0, poll for POLLOUT and call oob_flush(), which writes
 * what the socket takes without waiting.  oob_send_timeout() first writes
 * everything queued (frames keep their order).  -ENOBUFS: the frame would put more than max_pending bytes in
 * the queue (nothing was queued); -ENOMEM; a broken connection: its -errno.
 */
int oob_send_queued(struct oob_conn *c, uint16_t type, const void *buf, uint32_t len, size_t max_pending);
int oob_flush(struct oob_conn *c);
size_t oob_pending(const struct oob_conn *c);
/*
 * Receives one frame into buf (capacity cap); *len gets its length.
 * -EMSGSIZE if it does not fit (the frame is consumed), -ETIMEDOUT after
 * timeout_ms (-1: forever), -ECONNRESET when the peer closed.
 */
int oob_recv(struct oob_conn *c, uint16_t *type, void *buf, uint32_t cap, uint32_t *len, int timeout_ms);
/*
 * Whether a whole frame of at most max_len payload bytes waits in the socket,
 * without consuming or waiting for anything (a server that juggles
 * connections which have not identified themselves yet): 1 yes, 0 not yet,
 * -EPROTO for a bad header or a longer frame, -ECONNRESET when the peer
 * closed first.
 */
int oob_frame_ready(const struct oob_conn *c, uint32_t max_len);
int oob_conn_fd(const struct oob_conn *c);
void oob_close(struct oob_conn *c);

#endif
