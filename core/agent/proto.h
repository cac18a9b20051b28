/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The wire format between agents (DESIGN.md "agent"; HSTA's 12-byte work
 * request header).  Items are packed back to back into 2 KB eager buffers; each item
 * is a header followed by its eager data.  All multi-byte fields are
 * little-endian.
 *
 *   byte 0      bits 0-2  type      (enum proto_type)
 *               bits 3-4  protocol  (enum proto_protocol)
 *               bits 5-7  send return mode (enum agent_send_mode, 0..3)
 *   bytes 1-2   eager data size, the bytes that follow this header
 *   byte 3      timeout, log-encoded (proto_timeout_encode)
 *   bytes 4-11  port: the sender's send handle (SENDMSG) or request (others)
 *
 * The first item on a port is a CONNECT whose eager data binds the port to
 * its target channel: bytes 0-1 target node, byte 2 name length n (1..63),
 * bytes 3..3+n the channel name (no NUL).  Later items name only the port.
 * A response (ACK, DATA, STATE) starts its eager data with the status, a
 * little-endian int32 (0 or a negative errno), then: nothing (ACK), the
 * message (DATA), or the channel's state (STATE, PROTO_STATE_LEN bytes in
 * all): count u32, bytes u64, flags u8 (bit 0 empty, bit 1 full),
 * capacity_msgs u32, capacity_bytes u64, max_msg u32, sent u64, received
 * u64.  A CANCEL (no eager data) names the port of a GETMSG whose client
 * died; the target drops it if it still waits and answers DATA -ECANCELED.
 *
 * Large items (protocol p2p): an item whose eager data would not fit an
 * eager buffer travels as a message of its own (a "large frame"): the
 * 12-byte header with eager size 0, then its body.  A large SENDMSG body
 * opens with the chunk descriptor, 24 bytes: total message size u64, this
 * chunk's offset u64, message id u64 (the sender's); the chunk's bytes
 * follow.  A message bigger than a chunk (RDMATOOL_AGENT_CHUNK_KB) is sent
 * as chunks in order, put together at the target; only its last chunk's
 * header (mode, port) counts.  A large DATA body is the status and message.
 * A GETMSG carries 8 bytes of eager data: the receiver's buffer size (u64),
 * so a larger message stays in the channel (-EMSGSIZE).  A GETMSG answer
 * larger than a gateway slot (512 KiB) comes as large DATA frames in order, mode
 * PROTO_MODE_CHUNKED, each body: status (0), the chunk descriptor, a piece.
 *
 * Large SENDMSGs with RDMATOOL_AGENT_TRANSPORT_TYPE=rma: each chunk is an
 * item in an eager buffer, protocol rma, whose 40 bytes of eager data are
 * the chunk descriptor and the RMA descriptor, 16 bytes: the address u64 of
 * the chunk's bytes in the sender's registered buffer, its rkey u32 and its
 * length u32 (1..PROTO_RMA_MAX, inside the message).  The target RDMA READs
 * the chunk into place, then answers with an ACK of protocol rma: status
 * int32, then the address u64 it read, which the sender may reuse from then
 * on.  Only the last chunk's header (mode, port) counts, as with p2p.
 *
 * Everything a peer sends is checked here before use: proto_next() rejects
 * a malformed item, counts why, and never reads outside the buffer.
 */
#ifndef RDMATOOL_CORE_AGENT_PROTO_H
#define RDMATOOL_CORE_AGENT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_STATE_LEN	   (4 + 4 + 8 + 1 + 4 + 8 + 4 + 8 + 8) /* a STATE answer's eager data */
#define PROTO_HEADER_SIZE  12
#define PROTO_EAGER_BUFFER 2048
#define PROTO_MAX_EAGER	   (PROTO_EAGER_BUFFER - PROTO_HEADER_SIZE)
#define PROTO_NAME_MAX	   63
#define PROTO_TIMEOUT_NONE 0   /* try once */
#define PROTO_TIMEOUT_INF  255 /* wait forever */

enum proto_type {
	PROTO_SENDMSG = 0,
	PROTO_GETMSG = 1,
	PROTO_POLL = 2,
	PROTO_CONNECT = 3,
	PROTO_ACK = 4,	  /* deposited / received */
	PROTO_DATA = 5,	  /* a GETMSG's message */
	PROTO_STATE = 6,  /* a POLL's answer */
	PROTO_CANCEL = 7, /* withdraws the GETMSG on its port (its client died): answered with -ECANCELED */
	PROTO_NTYPES = 8
};

/* ACK, DATA and STATE: the answers, each opening with a status. */
static inline int proto_is_answer(unsigned type)
{
	return type >= PROTO_ACK && type <= PROTO_STATE;
}

enum proto_protocol { PROTO_EAGER = 0, PROTO_P2P = 1, PROTO_RMA = 2 };

/* The mode of a DATA frame that is one chunk of a GETMSG answer larger than a gateway slot. */
#define PROTO_MODE_CHUNKED 3

struct proto_header {
	uint8_t type, protocol, mode;
	uint16_t eager_size;
	uint8_t timeout; /* log-encoded */
	uint64_t port;
};

struct proto_connect {
	uint16_t node;
	char name[PROTO_NAME_MAX + 1];
};

/* Why items were rejected, for the agent's counters. */
enum proto_error {
	PROTO_ERR_TRUNCATED, /* header or eager data beyond the buffer */
	PROTO_ERR_TYPE,
	PROTO_ERR_PROTOCOL,
	PROTO_ERR_MODE,
	PROTO_ERR_SIZE, /* eager data larger than an eager buffer allows */
	PROTO_ERR_CONNECT,
	PROTO_ERR_RESPONSE,
	PROTO_NERRORS
};

struct proto_errors {
	uint64_t count[PROTO_NERRORS];
};

#define PROTO_CHUNK_SIZE 24

struct proto_chunk {
	uint64_t total, offset, id;
};

#define PROTO_RMA_SIZE	    16
#define PROTO_RMA_MAX	    (508u << 10)			/* bytes one READ moves: a chunk */
#define PROTO_RMA_ITEM_SIZE (PROTO_CHUNK_SIZE + PROTO_RMA_SIZE) /* a rma SENDMSG's eager data */
#define PROTO_RMA_DONE_SIZE 12					/* a rma ACK's: status, address */

struct proto_rma {
	uint64_t addr;
	uint32_t rkey, len;
};

/* Writes c into out[PROTO_CHUNK_SIZE]. */
void proto_chunk_encode(const struct proto_chunk *c, uint8_t *out);
/* Reads the descriptor opening a large SENDMSG body of len bytes: 0, or -EBADMSG (counted). */
int proto_chunk_decode(const uint8_t *in, size_t len, struct proto_chunk *c, struct proto_errors *e);

/* A rma SENDMSG's eager data: out[PROTO_RMA_ITEM_SIZE]; and back (0, or -EBADMSG counted). */
void proto_rma_encode(const struct proto_chunk *c, const struct proto_rma *r, uint8_t *out);
int proto_rma_decode(const uint8_t *in, size_t len, struct proto_chunk *c, struct proto_rma *r,
		     struct proto_errors *e);

/* Writes h into out[PROTO_HEADER_SIZE]. */
void proto_header_encode(const struct proto_header *h, uint8_t *out);
/* Reads a header; 0, or -EBADMSG with the reason counted in e (if not NULL). */
int proto_header_decode(const uint8_t *in, struct proto_header *h, struct proto_errors *e);

/* Milliseconds (< 0: forever) to the 1-byte code, rounding up; and back (-1: forever). */
uint8_t proto_timeout_encode(int64_t ms);
int64_t proto_timeout_decode(uint8_t code);

/* The CONNECT eager data: returns its length, or -EINVAL for a bad name. */
int proto_connect_encode(const struct proto_connect *c, uint8_t *out, size_t cap);
int proto_connect_decode(const uint8_t *in, size_t len, struct proto_connect *c, struct proto_errors *e);
/* A STATE answer's state after its status: PROTO_STATE_LEN - 4 bytes (little-endian, as the rest). */
struct chan_state;
void proto_state_encode(const struct chan_state *st, uint8_t *out);
void proto_state_decode(const uint8_t *in, struct chan_state *st);

/*
 * Walks an eager buffer: at *off, decodes one item (header and the eager
 * data it announces) and advances *off past it.  Returns 1 with h and
 * data/data_len set, 0 at the end of the buffer, -EBADMSG for a malformed
 * item (counted; the rest of the buffer cannot be trusted).
 */
int proto_next(const uint8_t *buf, size_t len, size_t *off, struct proto_header *h, const uint8_t **data,
	       size_t *data_len, struct proto_errors *e);

/* An item proto_parse() accepted: its header, and its eager data or large body inside the message. */
typedef void (*proto_item_fn)(void *arg, const struct proto_header *h, const uint8_t *data, size_t len);

/*
 * Reads one message from a peer the way the agent does: an eager buffer of
 * items (large false) or one large frame.  Each item must be well formed
 * for its type (a CONNECT's binding, a GETMSG's 0 or 8 bytes, a chunk
 * descriptor inside its message, a response's status...) before fn sees
 * it, in order.  Returns the items passed to fn, or -EBADMSG at the first
 * malformed one (counted once in e; the items before it were passed on, the
 * rest of the message is dropped).
 */
int proto_parse(const uint8_t *buf, size_t len, bool large, proto_item_fn fn, void *arg,
		struct proto_errors *e);

#endif
