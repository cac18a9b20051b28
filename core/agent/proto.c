/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The agents' wire format; the byte layout is documented in proto.h. */
#include "core/agent/proto.h"

#include "core/chan/channel.h"

#include <errno.h>
#include <string.h>

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

void proto_header_encode(const struct proto_header *h, uint8_t *out)
{
	out[0] = (uint8_t)((h->type & 7) | (h->protocol & 3) << 3 | (h->mode & 7) << 5);
	put16(out + 1, h->eager_size);
	out[3] = h->timeout;
	for (int i = 0; i < 8; i++)
		out[4 + i] = (uint8_t)(h->port >> (8 * i));
}

static int reject(struct proto_errors *e, enum proto_error why)
{
	if (e)
		e->count[why]++;
	return -EBADMSG;
}

int proto_header_decode(const uint8_t *in, struct proto_header *h, struct proto_errors *e)
{
	h->type = in[0] & 7;
	h->protocol = (in[0] >> 3) & 3;
	h->mode = in[0] >> 5;
	h->eager_size = get16(in + 1);
	h->timeout = in[3];
	h->port = 0;
	for (int i = 0; i < 8; i++)
		h->port |= (uint64_t)in[4 + i] << (8 * i);
	if (h->type >= PROTO_NTYPES)
		return reject(e, PROTO_ERR_TYPE);
	if (h->protocol > PROTO_RMA)
		return reject(e, PROTO_ERR_PROTOCOL);
	if (h->mode > 3)
		return reject(e, PROTO_ERR_MODE);
	if (h->eager_size > PROTO_MAX_EAGER)
		return reject(e, PROTO_ERR_SIZE);
	return 0;
}

/* Code c in 1..254 stands for ceil(2^((c - 1) / 8)) ms: 1 ms .. about 38 days, steps of 9%. */
int64_t proto_timeout_decode(uint8_t code)
{
	static const uint32_t eighth[8] = {1000000, 1090508, 1189207, 1296840,
					   1414214, 1542211, 1681793, 1834008};

	if (code == PROTO_TIMEOUT_NONE)
		return 0;
	if (code == PROTO_TIMEOUT_INF)
		return -1;
	unsigned step = (unsigned)code - 1;
	uint64_t scaled = ((uint64_t)1 << (step / 8)) * eighth[step % 8]; /* ms x 1e6 */

	return (int64_t)((scaled + 999999) / 1000000);
}

uint8_t proto_timeout_encode(int64_t ms)
{
	if (ms < 0)
		return PROTO_TIMEOUT_INF;
	if (ms == 0)
		return PROTO_TIMEOUT_NONE;
	/* The smallest code whose timeout covers ms: decode grows with the code, so a binary search
	 * (every item sent carries a timeout; a linear scan cost a microsecond each). */
	unsigned lo = 1, hi = PROTO_TIMEOUT_INF;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (proto_timeout_decode((uint8_t)mid) >= ms)
			hi = mid;
		else
			lo = mid + 1;
	}
	return (uint8_t)lo;
}

int proto_connect_encode(const struct proto_connect *c, uint8_t *out, size_t cap)
{
	size_t n = strnlen(c->name, PROTO_NAME_MAX + 1);

	if (n == 0 || n > PROTO_NAME_MAX || cap < 3 + n)
		return -EINVAL;
	put16(out, c->node);
	out[2] = (uint8_t)n;
	memcpy(out + 3, c->name, n);
	return (int)(3 + n);
}

void proto_state_encode(const struct chan_state *st, uint8_t *out)
{
	uint32_t count = st->count, cap_msgs = st->capacity_msgs, max_msg = st->max_msg;

	memcpy(out, &count, 4);
	memcpy(out + 4, &st->bytes, 8);
	out[12] = (uint8_t)(st->empty | st->full << 1);
	memcpy(out + 13, &cap_msgs, 4);
	memcpy(out + 17, &st->capacity_bytes, 8);
	memcpy(out + 25, &max_msg, 4);
	memcpy(out + 29, &st->sent, 8);
	memcpy(out + 37, &st->received, 8);
}

void proto_state_decode(const uint8_t *in, struct chan_state *st)
{
	*st = (struct chan_state){0};
	memcpy(&st->count, in, 4);
	memcpy(&st->bytes, in + 4, 8);
	st->empty = in[12] & 1;
	st->full = (in[12] >> 1) & 1;
	memcpy(&st->capacity_msgs, in + 13, 4);
	memcpy(&st->capacity_bytes, in + 17, 8);
	memcpy(&st->max_msg, in + 25, 4);
	memcpy(&st->sent, in + 29, 8);
	memcpy(&st->received, in + 37, 8);
}

int proto_connect_decode(const uint8_t *in, size_t len, struct proto_connect *c, struct proto_errors *e)
{
	if (len < 4 || in[2] == 0 || in[2] > PROTO_NAME_MAX || len != 3u + in[2])
		return reject(e, PROTO_ERR_CONNECT);
	for (size_t i = 0; i < in[2]; i++) {
		uint8_t ch = in[3 + i];

		/* The characters of a channel name (core/chan/channel.h), nothing else. */
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '_' || ch == '-') ||
		    (i == 0 && ch == '.'))
			return reject(e, PROTO_ERR_CONNECT);
	}
	c->node = get16(in);
	memcpy(c->name, in + 3, in[2]);
	c->name[in[2]] = '\0';
	return 0;
}

int proto_next(const uint8_t *buf, size_t len, size_t *off, struct proto_header *h, const uint8_t **data,
	       size_t *data_len, struct proto_errors *e)
{
	if (*off >= len)
		return 0;
	if (len - *off < PROTO_HEADER_SIZE)
		return reject(e, PROTO_ERR_TRUNCATED);
	if (proto_header_decode(buf + *off, h, e))
		return -EBADMSG;
	if (len - *off - PROTO_HEADER_SIZE < h->eager_size)
		return reject(e, PROTO_ERR_TRUNCATED);
	/* Responses open with a status; a bare CONNECT must carry its binding. */
	if (proto_is_answer(h->type) && h->eager_size < 4)
		return reject(e, PROTO_ERR_RESPONSE);
	if (h->type == PROTO_STATE && h->eager_size != PROTO_STATE_LEN)
		return reject(e, PROTO_ERR_RESPONSE);
	if (h->type == PROTO_CONNECT && h->eager_size < 4)
		return reject(e, PROTO_ERR_CONNECT);
	*data = buf + *off + PROTO_HEADER_SIZE;
	*data_len = h->eager_size;
	*off += PROTO_HEADER_SIZE + h->eager_size;
	return 1;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void proto_chunk_encode(const struct proto_chunk *c, uint8_t *out)
{
	put64(out, c->total);
	put64(out + 8, c->offset);
	put64(out + 16, c->id);
}

int proto_chunk_decode(const uint8_t *in, size_t len, struct proto_chunk *c, struct proto_errors *e)
{
	if (len < PROTO_CHUNK_SIZE)
		return reject(e, PROTO_ERR_SIZE);
	c->total = get64(in);
	c->offset = get64(in + 8);
	c->id = get64(in + 16);
	/* The chunk lies inside its message. */
	if (c->offset > c->total || c->total - c->offset < len - PROTO_CHUNK_SIZE)
		return reject(e, PROTO_ERR_SIZE);
	return 0;
}

void proto_rma_encode(const struct proto_chunk *c, const struct proto_rma *r, uint8_t *out)
{
	proto_chunk_encode(c, out);
	put64(out + PROTO_CHUNK_SIZE, r->addr);
	put64(out + PROTO_CHUNK_SIZE + 8, (uint64_t)r->rkey | (uint64_t)r->len << 32);
}

int proto_rma_decode(const uint8_t *in, size_t len, struct proto_chunk *c, struct proto_rma *r,
		     struct proto_errors *e)
{
	uint64_t key_len;

	if (len != PROTO_RMA_ITEM_SIZE)
		return reject(e, PROTO_ERR_SIZE);
	c->total = get64(in);
	c->offset = get64(in + 8);
	c->id = get64(in + 16);
	r->addr = get64(in + PROTO_CHUNK_SIZE);
	key_len = get64(in + PROTO_CHUNK_SIZE + 8);
	r->rkey = (uint32_t)key_len;
	r->len = (uint32_t)(key_len >> 32);
	/* A READ of 1..PROTO_RMA_MAX bytes that lies inside its message. */
	if (r->len == 0 || r->len > PROTO_RMA_MAX || c->offset > c->total || c->total - c->offset < r->len)
		return reject(e, PROTO_ERR_SIZE);
	return 0;
}

/* What an item of its type must carry beyond a well-formed header (proto.h). */
static int item_check(const struct proto_header *h, const uint8_t *data, size_t len, struct proto_errors *e)
{
	struct proto_connect conn;
	struct proto_chunk c;
	struct proto_rma r;

	switch (h->type) {
	case PROTO_CONNECT:
		return proto_connect_decode(data, len, &conn, e);
	case PROTO_GETMSG:
		return len == 0 || len == 8 ? 0 : reject(e, PROTO_ERR_SIZE);
	case PROTO_POLL:
	case PROTO_CANCEL:
		return len == 0 ? 0 : reject(e, PROTO_ERR_SIZE);
	case PROTO_SENDMSG:
		if (h->protocol == PROTO_RMA)
			return proto_rma_decode(data, len, &c, &r, e);
		return h->protocol == PROTO_P2P ? proto_chunk_decode(data, len, &c, e) : 0;
	case PROTO_STATE:
		return len == PROTO_STATE_LEN ? 0 : reject(e, PROTO_ERR_RESPONSE);
	default: /* ACK, DATA: a status first; a chunk of a GETMSG answer then its descriptor */
		if (len < 4 || (h->protocol == PROTO_RMA && len != PROTO_RMA_DONE_SIZE))
			return reject(e, PROTO_ERR_RESPONSE);
		if (h->type == PROTO_DATA && h->protocol == PROTO_P2P && h->mode == PROTO_MODE_CHUNKED)
			return proto_chunk_decode(data + 4, len - 4, &c, e);
		return 0;
	}
}

int proto_parse(const uint8_t *buf, size_t len, bool large, proto_item_fn fn, void *arg,
		struct proto_errors *e)
{
	struct proto_header h;
	const uint8_t *data;
	size_t off = 0, dlen;
	int n = 0, rc;

	if (large) {
		if (len < PROTO_HEADER_SIZE)
			return reject(e, PROTO_ERR_TRUNCATED);
		if (proto_header_decode(buf, &h, e))
			return -EBADMSG;
		if (h.eager_size || h.protocol != PROTO_P2P || h.type == PROTO_CONNECT)
			return reject(e, PROTO_ERR_SIZE);
		if (item_check(&h, buf + PROTO_HEADER_SIZE, len - PROTO_HEADER_SIZE, e))
			return -EBADMSG;
		fn(arg, &h, buf + PROTO_HEADER_SIZE, len - PROTO_HEADER_SIZE);
		return 1;
	}
	while ((rc = proto_next(buf, len, &off, &h, &data, &dlen, e)) == 1) {
		/* p2p items travel as large frames only; rma ones are chunks to read and their ACKs */
		if (h.protocol == PROTO_P2P ||
		    (h.protocol == PROTO_RMA && h.type != PROTO_SENDMSG && h.type != PROTO_ACK))
			return reject(e, PROTO_ERR_PROTOCOL);
		if (item_check(&h, data, dlen, e))
			return -EBADMSG;
		fn(arg, &h, data, dlen);
		n++;
	}
	return rc < 0 ? rc : n;
}
