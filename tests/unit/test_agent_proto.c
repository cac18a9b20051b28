/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/agent/proto: header and CONNECT round trips, every invalid field
 * rejected and counted, timeouts rounded up, and a fuzz run: random and
 * mutated buffers walked item by item never read outside the buffer (run it
 * under ASan: make asan) and never accept an item that breaks the rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/agent/proto.h"
#include "core/chan/channel.h"
#include "core/util/rng.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void test_header_round_trip(void **state)
{
	struct proto_header h = {.type = PROTO_GETMSG,
				 .protocol = PROTO_RMA,
				 .mode = 3,
				 .eager_size = 2036,
				 .timeout = 200,
				 .port = 0x0123456789abcdefull};
	struct proto_header d;
	uint8_t b[PROTO_HEADER_SIZE];

	(void)state;
	proto_header_encode(&h, b);
	/* The documented layout, byte by byte. */
	assert_int_equal(b[0], PROTO_GETMSG | PROTO_RMA << 3 | 3 << 5);
	assert_int_equal(b[1], 2036 & 0xff);
	assert_int_equal(b[2], 2036 >> 8);
	assert_int_equal(b[3], 200);
	assert_int_equal(b[4], 0xef);
	assert_int_equal(b[11], 0x01);
	assert_int_equal(proto_header_decode(b, &d, NULL), 0);
	assert_int_equal(d.type, h.type);
	assert_int_equal(d.protocol, h.protocol);
	assert_int_equal(d.mode, h.mode);
	assert_int_equal(d.eager_size, h.eager_size);
	assert_int_equal(d.timeout, h.timeout);
	assert_int_equal(d.port, h.port);
}

static void test_header_rejects(void **state)
{
	struct proto_errors e = {0};
	struct proto_header h = {0}, d;
	uint8_t b[PROTO_HEADER_SIZE];

	(void)state;
	proto_header_encode(&h, b);
	b[0] = 7; /* type 7: a CANCEL, the last of the eight the three bits hold */
	assert_int_equal(proto_header_decode(b, &d, &e), 0);
	assert_int_equal(d.type, PROTO_CANCEL);
	b[0] = 3 << 3; /* protocol 3 */
	assert_int_equal(proto_header_decode(b, &d, &e), -EBADMSG);
	b[0] = 4 << 5; /* mode 4 */
	assert_int_equal(proto_header_decode(b, &d, &e), -EBADMSG);
	b[0] = 0;
	b[1] = 0xff, b[2] = 0x07; /* 2047 > 2036 */
	assert_int_equal(proto_header_decode(b, &d, &e), -EBADMSG);
	assert_int_equal(e.count[PROTO_ERR_TYPE], 0);
	assert_int_equal(e.count[PROTO_ERR_PROTOCOL], 1);
	assert_int_equal(e.count[PROTO_ERR_MODE], 1);
	assert_int_equal(e.count[PROTO_ERR_SIZE], 1);
}

static void test_timeouts(void **state)
{
	(void)state;
	assert_int_equal(proto_timeout_encode(0), PROTO_TIMEOUT_NONE);
	assert_int_equal(proto_timeout_encode(-1), PROTO_TIMEOUT_INF);
	assert_int_equal(proto_timeout_decode(PROTO_TIMEOUT_INF), -1);
	assert_int_equal(proto_timeout_decode(1), 1);
	/* Never shorter than asked, and at most one step (9%, or 1 ms) longer. */
	for (int64_t ms = 1; ms <= proto_timeout_decode(254); ms = ms * 3 / 2 + 1) {
		int64_t got = proto_timeout_decode(proto_timeout_encode(ms));

		assert_true(got >= ms);
		assert_true(got <= ms + ms / 10 + 1);
	}
	/* Beyond the largest code: forever, never shorter. */
	assert_int_equal(proto_timeout_encode(proto_timeout_decode(254) + 1), PROTO_TIMEOUT_INF);
	for (int c = 2; c < 255; c++)
		assert_true(proto_timeout_decode((uint8_t)c) >= proto_timeout_decode((uint8_t)(c - 1)));
	/* Every code's own timeout, and one ms either side, encodes to the smallest code that covers it. */
	for (int c = 1; c < 255; c++)
		for (int64_t ms = proto_timeout_decode((uint8_t)c) - 1;
		     ms <= proto_timeout_decode((uint8_t)c) + 1; ms++) {
			int smallest = 1;

			while (smallest < 255 && proto_timeout_decode((uint8_t)smallest) < ms)
				smallest++;
			if (ms > 0)
				assert_int_equal(proto_timeout_encode(ms), smallest);
		}
}

static void test_connect(void **state)
{
	struct proto_connect c = {.node = 513, .name = "jobs-1.x"}, d;
	struct proto_errors e = {0};
	uint8_t b[80];
	int n;

	(void)state;
	n = proto_connect_encode(&c, b, sizeof(b));
	assert_int_equal(n, 3 + 8);
	assert_int_equal(proto_connect_decode(b, (size_t)n, &d, &e), 0);
	assert_int_equal(d.node, 513);
	assert_string_equal(d.name, "jobs-1.x");
	assert_int_equal(proto_connect_decode(b, (size_t)n - 1, &d, &e), -EBADMSG);
	b[3] = '/';
	assert_int_equal(proto_connect_decode(b, (size_t)n, &d, &e), -EBADMSG);
	b[3] = '.';
	assert_int_equal(proto_connect_decode(b, (size_t)n, &d, &e), -EBADMSG);
	assert_int_equal(e.count[PROTO_ERR_CONNECT], 3);
	strcpy(c.name, "");
	assert_int_equal(proto_connect_encode(&c, b, sizeof(b)), -EINVAL);
}

/* Builds a valid aggregated buffer of random items; returns its length. */
static size_t valid_buffer(struct rng *r, uint8_t *buf, int *items)
{
	size_t off = 0;

	*items = 0;
	for (;;) {
		struct proto_header h = {.type = (uint8_t)rng_range(r, 0, PROTO_SENDMSG + 2),
					 .protocol = (uint8_t)rng_range(r, 0, 2),
					 .mode = (uint8_t)rng_range(r, 0, 3),
					 .eager_size = (uint16_t)rng_range(r, 0, 200),
					 .timeout = (uint8_t)rng_range(r, 0, 255),
					 .port = rng_next(r)};

		if (off + PROTO_HEADER_SIZE + h.eager_size > PROTO_EAGER_BUFFER || *items == 128)
			return off;
		proto_header_encode(&h, buf + off);
		for (size_t i = 0; i < h.eager_size; i++)
			buf[off + PROTO_HEADER_SIZE + i] = (uint8_t)rng_next(r);
		off += PROTO_HEADER_SIZE + h.eager_size;
		(*items)++;
	}
}

/* Walks buf the way the agent does; checks every accepted item keeps the rules. */
static int walk(const uint8_t *buf, size_t len, struct proto_errors *e)
{
	struct proto_header h;
	const uint8_t *data;
	size_t off = 0, data_len;
	int n = 0, rc;

	while ((rc = proto_next(buf, len, &off, &h, &data, &data_len, e)) == 1) {
		assert_true(data >= buf + PROTO_HEADER_SIZE && data + data_len <= buf + len);
		assert_true(h.type < PROTO_NTYPES && h.protocol <= PROTO_RMA && h.mode <= 3);
		assert_true(data_len <= PROTO_MAX_EAGER);
		if (h.type == PROTO_CONNECT) {
			struct proto_connect c;

			proto_connect_decode(data, data_len, &c, e);
		}
		n++;
	}
	assert_true(off <= len);
	return rc < 0 ? -1 : n;
}

static void test_fuzz(void **state)
{
	struct rng r;
	uint8_t *buf = malloc(PROTO_EAGER_BUFFER);
	struct proto_errors e = {0};
	uint64_t rejected = 0;

	(void)state;
	rng_seed(&r, 12345, 1);
	for (int iter = 0; iter < 20000; iter++) {
		int items;
		size_t len = valid_buffer(&r, buf, &items);

		/* Valid buffers are read back whole. */
		assert_int_equal(walk(buf, len, &e), items);
		/* Mutations: flipped bytes, truncation, or pure noise; each exactly as long as it is. */
		switch (iter % 3) {
		case 0:
			for (int k = 0; k < 4; k++)
				buf[rng_range(&r, 0, len ? len - 1 : 0)] ^=
				    (uint8_t)(1 + rng_range(&r, 0, 254));
			break;
		case 1:
			len = (size_t)rng_range(&r, 0, len);
			break;
		default:
			len = (size_t)rng_range(&r, 0, PROTO_EAGER_BUFFER);
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rng_next(&r);
		}
		/* An exact-size copy, so that ASan catches a read one byte too far. */
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, buf, len);
		rejected += walk(copy, len, &e) < 0;
		free(copy);
	}
	uint64_t counted = 0;

	for (int i = 0; i < PROTO_NERRORS; i++)
		counted += e.count[i];
	/* Most mutated buffers are rejected, and every rejection was counted under a reason. */
	assert_true(rejected > 5000);
	assert_true(counted >= rejected);
	free(buf);
}

/* One item of the agent's own making, valid for proto_parse: returns its eager data length. */
static size_t valid_item(struct rng *r, struct proto_header *h, uint8_t *data, size_t room)
{
	static const char names[] = "abcdefghijklmnopqrstuvwxyz0123456789._-";
	size_t len = 0;

	*h = (struct proto_header){.type = (uint8_t)rng_range(r, 0, PROTO_NTYPES - 1),
				   .mode = (uint8_t)rng_range(r, 0, 3),
				   .timeout = (uint8_t)rng_range(r, 0, 255),
				   .port = rng_next(r)};
	switch (h->type) {
	case PROTO_CONNECT: {
		struct proto_connect c = {.node = (uint16_t)rng_next(r)};
		size_t n = (size_t)rng_range(r, 1, PROTO_NAME_MAX);

		for (size_t i = 0; i < n; i++)
			c.name[i] = names[rng_range(r, 0, 25)];
		len = (size_t)proto_connect_encode(&c, data, room);
		break;
	}
	case PROTO_GETMSG:
		len = rng_range(r, 0, 1) ? 8 : 0;
		break;
	case PROTO_POLL:
	case PROTO_CANCEL:
		break;
	case PROTO_STATE:
		len = PROTO_STATE_LEN;
		break;
	default:
		len = (size_t)rng_range(r, h->type == PROTO_SENDMSG ? 0 : 4, 200);
	}
	/* rma items: a chunk to read (SENDMSG) and its "read" ACK. */
	if ((h->type == PROTO_SENDMSG || h->type == PROTO_ACK) && rng_range(r, 0, 3) == 0) {
		h->protocol = PROTO_RMA;
		if (PROTO_RMA_ITEM_SIZE > room)
			return SIZE_MAX;
		if (h->type == PROTO_ACK) {
			len = PROTO_RMA_DONE_SIZE;
		} else {
			struct proto_rma rma = {.addr = rng_next(r),
						.rkey = (uint32_t)rng_next(r),
						.len = (uint32_t)rng_range(r, 1, PROTO_RMA_MAX)};
			struct proto_chunk c = {.offset = rng_range(r, 0, 1u << 20), .id = rng_next(r)};

			c.total = c.offset + rma.len + rng_range(r, 0, 1u << 20);
			proto_rma_encode(&c, &rma, data);
			h->eager_size = PROTO_RMA_ITEM_SIZE;
			return PROTO_RMA_ITEM_SIZE;
		}
	}
	if (len > room)
		return SIZE_MAX;
	if (h->type != PROTO_CONNECT)
		for (size_t i = 0; i < len; i++)
			data[i] = (uint8_t)rng_next(r);
	if (proto_is_answer(h->type))
		memset(data, 0, 4); /* status 0 */
	h->eager_size = (uint16_t)len;
	return len;
}

/* A valid eager buffer for proto_parse, or (large) a valid large frame; returns its length. */
static size_t valid_message(struct rng *r, uint8_t *buf, size_t cap, bool large, int *items)
{
	struct proto_header h;
	size_t off = 0, len;

	*items = 0;
	if (large) {
		struct proto_chunk c;
		size_t body = (size_t)rng_range(r, 0, 3000);

		h = (struct proto_header){.type = rng_range(r, 0, 1) ? PROTO_SENDMSG : PROTO_DATA,
					  .protocol = PROTO_P2P,
					  .mode = (uint8_t)rng_range(r, 0, 3),
					  .port = rng_next(r)};
		c = (struct proto_chunk){.offset = rng_range(r, 0, 1000), .id = rng_next(r)};
		c.total = c.offset + body + rng_range(r, 0, 1000);
		proto_header_encode(&h, buf);
		len = PROTO_HEADER_SIZE;
		if (h.type == PROTO_DATA) {
			memset(buf + len, 0, 4);
			len += 4;
			if (h.mode != PROTO_MODE_CHUNKED) {
				len += body;
				*items = 1;
				return len;
			}
		}
		proto_chunk_encode(&c, buf + len);
		len += PROTO_CHUNK_SIZE + body;
		assert_true(len <= cap);
		*items = 1;
		return len;
	}
	for (;;) {
		uint8_t data[PROTO_EAGER_BUFFER];
		size_t room = PROTO_EAGER_BUFFER - off < PROTO_HEADER_SIZE
				  ? 0
				  : PROTO_EAGER_BUFFER - off - PROTO_HEADER_SIZE;

		len = valid_item(r, &h, data, room);
		if (len == SIZE_MAX || *items == 128 || room == 0)
			return off;
		proto_header_encode(&h, buf + off);
		memcpy(buf + off + PROTO_HEADER_SIZE, data, len);
		off += PROTO_HEADER_SIZE + len;
		(*items)++;
	}
}

struct parsed {
	const uint8_t *buf;
	size_t len;
	int items;
};

/* Every item proto_parse passes on lies inside the message and keeps its type's rules. */
static void check_item(void *arg, const struct proto_header *h, const uint8_t *data, size_t len)
{
	struct parsed *p = arg;

	assert_true(data >= p->buf + PROTO_HEADER_SIZE && data + len <= p->buf + p->len);
	assert_true(h->type < PROTO_NTYPES && h->protocol <= PROTO_RMA && h->mode <= 3);
	if (proto_is_answer(h->type))
		assert_true(len >= 4);
	if (h->type == PROTO_CANCEL)
		assert_int_equal(len, 0);
	if (h->type == PROTO_STATE)
		assert_int_equal(len, PROTO_STATE_LEN);
	if (h->type == PROTO_POLL)
		assert_int_equal(len, 0);
	p->items++;
}

static uint64_t error_total(const struct proto_errors *e)
{
	uint64_t n = 0;

	for (int i = 0; i < PROTO_NERRORS; i++)
		n += e->count[i];
	return n;
}

/*
 * The agent's whole receive-side parser (proto_parse, what core/agent/link/rx.c runs on
 * every message) over valid, mutated and random messages, each in a buffer
 * of exactly its length so ASan sees a read one byte too far: valid ones are
 * read whole without an error, and every rejected one is counted exactly
 * once.
 */
/*
 * One thread parsing: nothing for TSan to find, and a TSan build runs it 10x
 * slower (past the test's time limit on a loaded machine): a fifth of it.
 */
#if defined(__SANITIZE_THREAD__)
#define FUZZ_PARSE_ITERS 12000
#else
#define FUZZ_PARSE_ITERS 60000
#endif

static void test_fuzz_parse(void **state)
{
	enum { CAP = PROTO_HEADER_SIZE + 4 + PROTO_CHUNK_SIZE + 3000 + PROTO_EAGER_BUFFER };
	struct rng r;
	uint8_t *buf = malloc(CAP);
	struct proto_errors e = {0};
	uint64_t rejected = 0, accepted = 0;

	(void)state;
	rng_seed(&r, 4242, 1);
	for (int iter = 0; iter < FUZZ_PARSE_ITERS; iter++) {
		bool large = iter % 4 == 3;
		int items;
		size_t len = valid_message(&r, buf, CAP, large, &items);
		struct parsed p = {.buf = buf, .len = len};
		uint64_t before = error_total(&e);
		int rc = proto_parse(buf, len, large, check_item, &p, &e);

		assert_int_equal(rc, items);
		assert_int_equal(p.items, items);
		assert_true(error_total(&e) == before);
		switch (iter % 5) {
		case 0:
		case 1:
			for (int k = 0, n = (int)rng_range(&r, 1, 6); k < n && len; k++)
				buf[rng_range(&r, 0, len - 1)] ^= (uint8_t)(1 + rng_range(&r, 0, 254));
			break;
		case 2:
			len = (size_t)rng_range(&r, 0, len);
			break;
		case 3: /* a header byte or a length field set to an extreme */
			if (len > 3)
				buf[rng_range(&r, 0, 3)] = rng_range(&r, 0, 1) ? 0xff : 0;
			break;
		default:
			len = (size_t)rng_range(&r, 0, large ? CAP : PROTO_EAGER_BUFFER);
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rng_next(&r);
		}
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, buf, len);
		p = (struct parsed){.buf = copy, .len = len};
		before = error_total(&e);
		rc = proto_parse(copy, len, large, check_item, &p, &e);
		if (rc < 0) {
			assert_int_equal(rc, -EBADMSG);
			assert_true(error_total(&e) == before + 1);
			rejected++;
		} else {
			assert_int_equal(rc, p.items);
			assert_true(error_total(&e) == before);
			accepted++;
		}
		free(copy);
	}
	assert_true(rejected > FUZZ_PARSE_ITERS / 4 && accepted > FUZZ_PARSE_ITERS / 12);
	free(buf);
}

/* The chunk descriptor of large SENDMSGs: round trip, and a chunk outside its message is refused. */
static void test_chunk(void **state)
{
	struct proto_chunk c = {.total = 1000000, .offset = 65536, .id = 0x1234567890abcdefull}, d;
	struct proto_errors e = {0};
	uint8_t b[PROTO_CHUNK_SIZE];

	(void)state;
	proto_chunk_encode(&c, b);
	assert_int_equal(proto_chunk_decode(b, PROTO_CHUNK_SIZE + 65536, &d, &e), 0);
	assert_true(d.total == c.total && d.offset == c.offset && d.id == c.id);
	assert_int_equal(proto_chunk_decode(b, PROTO_CHUNK_SIZE - 1, &d, &e), -EBADMSG);
	c.offset = c.total - 10;
	proto_chunk_encode(&c, b);
	assert_int_equal(proto_chunk_decode(b, PROTO_CHUNK_SIZE + 10, &d, &e), 0);
	assert_int_equal(proto_chunk_decode(b, PROTO_CHUNK_SIZE + 11, &d, &e), -EBADMSG);
	c.offset = c.total + 1;
	proto_chunk_encode(&c, b);
	assert_int_equal(proto_chunk_decode(b, PROTO_CHUNK_SIZE, &d, &e), -EBADMSG);
	assert_int_equal(e.count[PROTO_ERR_SIZE], 3);
}

/* The rma chunk item: round trip; a READ of 0 bytes, over PROTO_RMA_MAX, outside its message or of
 * the wrong size is refused; rma items other than SENDMSG and its ACK, or in a large frame, too. */
static void test_rma(void **state)
{
	struct proto_chunk c = {.total = 1 << 20, .offset = 65536, .id = 42}, dc;
	struct proto_rma r = {.addr = 0x7f0012345000ull, .rkey = 0xdeadbeef, .len = 65536}, dr;
	struct proto_header h = {
	    .type = PROTO_SENDMSG, .protocol = PROTO_RMA, .eager_size = PROTO_RMA_ITEM_SIZE};
	struct proto_errors e = {0};
	uint8_t b[PROTO_HEADER_SIZE + PROTO_RMA_ITEM_SIZE];
	struct parsed p = {.buf = b, .len = sizeof(b)};

	(void)state;
	proto_rma_encode(&c, &r, b);
	assert_int_equal(proto_rma_decode(b, PROTO_RMA_ITEM_SIZE, &dc, &dr, &e), 0);
	assert_true(dc.total == c.total && dc.offset == c.offset && dc.id == c.id);
	assert_true(dr.addr == r.addr && dr.rkey == r.rkey && dr.len == r.len);
	assert_int_equal(proto_rma_decode(b, PROTO_RMA_ITEM_SIZE - 1, &dc, &dr, &e), -EBADMSG);
	r.len = 0;
	proto_rma_encode(&c, &r, b);
	assert_int_equal(proto_rma_decode(b, PROTO_RMA_ITEM_SIZE, &dc, &dr, &e), -EBADMSG);
	r.len = PROTO_RMA_MAX + 1;
	proto_rma_encode(&c, &r, b);
	assert_int_equal(proto_rma_decode(b, PROTO_RMA_ITEM_SIZE, &dc, &dr, &e), -EBADMSG);
	r.len = 100;
	c.offset = c.total - 99;
	proto_rma_encode(&c, &r, b);
	assert_int_equal(proto_rma_decode(b, PROTO_RMA_ITEM_SIZE, &dc, &dr, &e), -EBADMSG);
	assert_int_equal(e.count[PROTO_ERR_SIZE], 4);

	/* In an eager buffer: accepted as a SENDMSG, refused as a GETMSG or in a large frame. */
	c.offset = 0;
	proto_header_encode(&h, b);
	proto_rma_encode(&c, &r, b + PROTO_HEADER_SIZE);
	assert_int_equal(proto_parse(b, sizeof(b), false, check_item, &p, &e), 1);
	h.type = PROTO_GETMSG;
	proto_header_encode(&h, b);
	assert_int_equal(proto_parse(b, sizeof(b), false, check_item, &p, &e), -EBADMSG);
	assert_int_equal(e.count[PROTO_ERR_PROTOCOL], 1);
	h = (struct proto_header){.type = PROTO_SENDMSG, .protocol = PROTO_RMA};
	proto_header_encode(&h, b);
	assert_int_equal(proto_parse(b, sizeof(b), true, check_item, &p, &e), -EBADMSG);
	/* The ACK of a read: status and address, nothing else. */
	h = (struct proto_header){
	    .type = PROTO_ACK, .protocol = PROTO_RMA, .eager_size = PROTO_RMA_DONE_SIZE};
	proto_header_encode(&h, b);
	memset(b + PROTO_HEADER_SIZE, 0, PROTO_RMA_DONE_SIZE);
	assert_int_equal(proto_parse(b, PROTO_HEADER_SIZE + PROTO_RMA_DONE_SIZE, false, check_item, &p, &e),
			 1);
	h.eager_size = 4;
	proto_header_encode(&h, b);
	assert_int_equal(proto_parse(b, PROTO_HEADER_SIZE + 4, false, check_item, &p, &e), -EBADMSG);
	assert_int_equal(p.items, 2);
}

/* A POLL's answer carries the whole state: a remote poll shows capacity and totals, not zeros. */
static void test_state(void **state)
{
	(void)state;
	struct chan_state st = {.count = 3,
				.bytes = 1ull << 33,
				.capacity_msgs = 1024,
				.capacity_bytes = 16ull << 20,
				.max_msg = 4u << 20,
				.full = true,
				.sent = 1ull << 40,
				.received = 12345},
			  got;
	uint8_t b[PROTO_STATE_LEN];

	proto_state_encode(&st, b + 4);
	proto_state_decode(b + 4, &got);
	assert_int_equal(got.count, 3);
	assert_true(got.bytes == st.bytes && got.capacity_bytes == st.capacity_bytes);
	assert_int_equal(got.capacity_msgs, 1024);
	assert_int_equal(got.max_msg, 4u << 20);
	assert_true(got.sent == st.sent && got.received == 12345);
	assert_true(got.full && !got.empty);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header_round_trip),
	    cmocka_unit_test(test_header_rejects),
	    cmocka_unit_test(test_timeouts),
	    cmocka_unit_test(test_connect),
	    cmocka_unit_test(test_fuzz),
	    cmocka_unit_test(test_fuzz_parse),
	    cmocka_unit_test(test_chunk),
	    cmocka_unit_test(test_rma),
	    cmocka_unit_test(test_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
