/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core: wr_id encoding, env parsing, RX states, and every operation between two endpoints on soft0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/transport/endpoint.h"
#include "core/transport/endpoint_impl.h"
#include "hw/hw.h"
#include "core/transport/rx.h"
#include "core/transport/stripe.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static void test_wr_id_encoding(void **state)
{
	(void)state;
	uint64_t w = wr_id_make(5, 1234);

	assert_int_equal(wr_id_stripe(w), 5);
	assert_int_equal(wr_id_index(w), 1234);
	w = wr_id_make(WR_ID_MAX_STRIPE, 0xffffffffu);
	assert_int_equal(wr_id_stripe(w), WR_ID_MAX_STRIPE);
	assert_int_equal(wr_id_index(w), 0xffffffffu);
	assert_int_not_equal(wr_id_make(1, 0), wr_id_make(0, 1));
}

static void test_env(void **state)
{
	struct core_env env;
	char msg[256] = "";

	(void)state;
	core_env_defaults(&env);
	setenv("RDMATOOL_TX_STRIPES", "4", 1);
	setenv("RDMATOOL_RING_SIZE", "1024", 1);
	setenv("RDMATOOL_PROGRESS_THREAD", "1", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), 0);
	assert_int_equal(env.tx_stripes, 4);
	assert_int_equal(env.ring_size, 1024);
	assert_true(env.progress_thread);
	setenv("RDMATOOL_RING_SIZE", "1000", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "RDMATOOL_RING_SIZE"));
	unsetenv("RDMATOOL_RING_SIZE");
	setenv("RDMATOOL_TX_STRIPES", "abc", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "RDMATOOL_TX_STRIPES"));
	setenv("RDMATOOL_TX_STRIPES", "0", 1);
	setenv("RDMATOOL_PROGRESS_THREAD", "2", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), -EINVAL);
	setenv("RDMATOOL_PROGRESS_THREAD", "0", 1);
	setenv("RDMATOOL_PROGRESS_CPU", "-2", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), -EINVAL);
	unsetenv("RDMATOOL_TX_STRIPES");
	unsetenv("RDMATOOL_PROGRESS_THREAD");
	unsetenv("RDMATOOL_PROGRESS_CPU");
	assert_true(core_auto_stripes() >= 1);
	{
		/* Auto stripes follow the affinity mask (taskset), not the machine's CPU count. */
		cpu_set_t saved, one;

		assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
		CPU_ZERO(&one);
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &saved)) {
				CPU_SET(cpu, &one);
				break;
			}
		assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
		assert_int_equal(core_usable_cpus(), 1);
		assert_int_equal(core_auto_stripes(), 1);
		assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
		assert_int_equal(core_usable_cpus(), CPU_COUNT(&saved));
	}
	/* The eager threshold: 0 (the device's) or 64 B .. 1 MiB. */
	core_env_defaults(&env);
	assert_int_equal(env.eager_max, 0);
	setenv("RDMATOOL_EAGER_MAX", "16384", 1);
	assert_int_equal(core_env_read(&env, msg, sizeof(msg)), 0);
	assert_int_equal(env.eager_max, 16384);
	for (int i = 0; i < 3; i++) {
		static const char *const bad[] = {"63", "1048577", "8k"};

		setenv("RDMATOOL_EAGER_MAX", bad[i], 1);
		assert_int_equal(core_env_read(&env, msg, sizeof(msg)), -EINVAL);
		assert_non_null(strstr(msg, "RDMATOOL_EAGER_MAX"));
	}
	unsetenv("RDMATOOL_EAGER_MAX");
}

static void test_rx_states(void **state)
{
	struct rx_sm sm;

	(void)state;
	rx_sm_init(&sm);
	assert_int_equal(rx_state_get(&sm), RX_DISABLED);
	assert_int_equal(rx_transition(&sm, RX_DISABLED, RX_FLOW_CONTROL), -EINVAL);
	assert_int_equal(rx_transition(&sm, RX_DISABLED, RX_ENABLED), 0);
	assert_int_equal(rx_transition(&sm, RX_DISABLED, RX_ENABLED), -EBUSY);
	assert_int_equal(rx_transition(&sm, RX_ENABLED, RX_FLOW_CONTROL), 0);
	assert_int_equal(atomic_load(&sm.fc_events), 1);
	assert_int_equal(rx_transition(&sm, RX_FLOW_CONTROL, RX_ENABLED), 0);
	assert_int_equal(rx_transition(&sm, RX_ENABLED, RX_DISABLED), 0);
	assert_int_equal(rx_state_get(&sm), RX_DISABLED);
	rx_sm_destroy(&sm);
}

struct pair {
	struct core_ep *a, *b;
	uint32_t pa, pb;
};

static int wait_one(struct core_ep *ep, struct core_cqe *e)
{
	return core_cq_sread(ep, e, 1, 5000);
}

static void open_pair(struct pair *p, enum core_lock_mode lock, int stripes)
{
	struct core_ep_attr attr;
	char err[256];

	core_ep_attr_defaults(&attr);
	/* RDMATOOL_CONNECT picks the connect path (tests/integration/core_connect.sh runs both). */
	assert_int_equal(core_env_read(&attr.env, err, sizeof(err)), 0);
	attr.device = "soft0";
	attr.lock = lock;
	attr.env.tx_stripes = stripes;
	attr.eager_max = 256;
	assert_int_equal(core_ep_open(&attr, &p->a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_open(&attr, &p->b, err, sizeof(err)), 0);
	assert_int_equal(core_ep_connect_pair(p->a, p->b, &p->pa, &p->pb), 0);
}

/*
 * Every connection gets the transport's timers whichever path connected it:
 * the connection manager's own default ACK timeout (RDMATOOL_CONNECT=cm) is
 * not the transport's.
 */
static void test_transport_timers(void **state)
{
	struct pair p;

	(void)state;
	open_pair(&p, CORE_LOCK_STRIPED, 2);
	for (int side = 0; side < 2; side++) {
		struct core_ep *ep = side ? p.b : p.a;
		struct peer *peer = ep->peers[side ? p.pb : p.pa];

		for (uint32_t k = 0; k < peer->nconn; k++) {
			struct ibv_qp_attr a;
			struct ibv_qp_init_attr init;

			assert_int_equal(
			    hw_query_qp(peer->conns[k].qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &init), 0);
			assert_int_equal(a.timeout, CORE_QP_TIMEOUT);
			assert_int_equal(a.retry_cnt, CORE_QP_RETRY_CNT);
		}
	}
	core_ep_close(p.a);
	core_ep_close(p.b);
}

static void run_ops(enum core_lock_mode lock)
{
	struct pair p;
	struct core_cqe e;
	char small[64] = "hello", rbuf[64];
	size_t big_len = 100000;
	char *big = malloc(big_len), *rbig = calloc(1, big_len);
	uint64_t *word = aligned_alloc(64, 64), result = 0;
	struct core_mr mr;

	open_pair(&p, lock, 2);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (char)(i * 7);

	/* untagged eager */
	assert_int_equal(core_recv(p.b, rbuf, sizeof(rbuf), (void *)1), 0);
	assert_int_equal(core_send(p.a, p.pa, small, 6, (void *)2), 0);
	assert_int_equal(wait_one(p.a, &e), 1);
	assert_ptr_equal(e.context, (void *)2);
	assert_int_equal(e.status, 0);
	assert_true(e.flags & CORE_CQE_SEND);
	assert_int_equal(wait_one(p.b, &e), 1);
	assert_ptr_equal(e.context, (void *)1);
	assert_int_equal(e.len, 6);
	assert_string_equal(rbuf, "hello");

	/* tagged: sent before the receive is posted (unexpected), matched by tag with an ignore mask */
	assert_int_equal(core_tsend(p.a, p.pa, "tag7", 5, 0x1007, (void *)3), 0);
	assert_int_equal(wait_one(p.a, &e), 1);
	for (int i = 0; i < 50; i++)
		core_cq_read(p.b, &e, 0);
	assert_int_equal(core_trecv(p.b, rbuf, sizeof(rbuf), 0x7, 0xff00, (void *)4), 0);
	assert_int_equal(wait_one(p.b, &e), 1);
	assert_ptr_equal(e.context, (void *)4);
	assert_int_equal(e.tag, 0x1007);
	assert_true(e.flags & CORE_CQE_TAGGED);
	assert_string_equal(rbuf, "tag7");

	/* rendezvous (larger than eager_max) */
	assert_int_equal(core_trecv(p.b, rbig, big_len, 9, 0, (void *)5), 0);
	assert_int_equal(core_tsend(p.a, p.pa, big, big_len, 9, (void *)6), 0);
	assert_int_equal(wait_one(p.b, &e), 1);
	assert_ptr_equal(e.context, (void *)5);
	assert_int_equal(e.status, 0);
	assert_int_equal(e.len, big_len);
	assert_memory_equal(rbig, big, big_len);
	assert_int_equal(wait_one(p.a, &e), 1);
	assert_ptr_equal(e.context, (void *)6);
	assert_true(e.flags & CORE_CQE_RNDV);

	/* write / read */
	memset(rbig, 0, big_len);
	assert_int_equal(core_mr_reg(p.b, rbig, big_len, &mr), 0);
	assert_int_equal(core_write(p.a, p.pa, big, 4096, (uintptr_t)rbig, mr.rkey, (void *)7), 0);
	assert_int_equal(wait_one(p.a, &e), 1);
	assert_int_equal(e.status, 0);
	assert_true(e.flags & CORE_CQE_WRITE);
	assert_memory_equal(rbig, big, 4096);
	memset(small, 0, sizeof(small));
	assert_int_equal(core_read(p.a, p.pa, small, 32, (uintptr_t)rbig + 100, mr.rkey, (void *)8), 0);
	assert_int_equal(wait_one(p.a, &e), 1);
	assert_true(e.flags & CORE_CQE_READ);
	assert_memory_equal(small, big + 100, 32);

	/* atomics */
	*word = 40;
	assert_int_equal(core_mr_reg(p.b, word, 8, &mr), 0);
	assert_int_equal(core_fetch_add(p.a, p.pa, (uintptr_t)word, mr.rkey, 2, &result, (void *)9), 0);
	assert_int_equal(wait_one(p.a, &e), 1);
	assert_int_equal(e.status, 0);
	assert_int_equal(result, 40);
	assert_int_equal(*word, 42);
	assert_int_equal(core_cmp_swp(p.a, p.pa, (uintptr_t)word, mr.rkey, 42, 7, &result, (void *)10), 0);
	assert_int_equal(wait_one(p.a, &e), 1);
	assert_int_equal(result, 42);
	assert_int_equal(*word, 7);
	assert_int_equal(core_fetch_add(p.a, p.pa, (uintptr_t)word + 1, mr.rkey, 1, &result, NULL), -EINVAL);

	/* a bad rkey comes back as an error completion */
	assert_int_equal(core_write(p.a, p.pa, big, 64, (uintptr_t)rbig, mr.rkey ^ 0x5500, (void *)11), 0);
	assert_int_equal(wait_one(p.a, &e), 1);
	assert_int_not_equal(e.status, 0);

	core_ep_close(p.a);
	core_ep_close(p.b);
	free(big);
	free(rbig);
	free(word);
}

/*
 * The default eager threshold is the device's: 64 KiB on the soft device,
 * where a 64 KiB send then goes eager and the next byte by rendezvous;
 * one the caller sets is kept.
 */
static void test_eager_max_of_device(void **state)
{
	struct core_ep_attr attr;
	struct core_ep *a, *b;
	struct core_cqe e;
	uint32_t pa, pb;
	size_t len = (64 << 10) + 1;
	char *src = malloc(len), *dst = calloc(1, len), err[256];

	(void)state;
	core_ep_attr_defaults(&attr);
	attr.device = "soft0";
	assert_int_equal(core_ep_open(&attr, &a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_open(&attr, &b, err, sizeof(err)), 0);
	assert_int_equal(core_ep_eager_max(a), 64 << 10);
	assert_int_equal(core_ep_connect_pair(a, b, &pa, &pb), 0);
	for (size_t i = 0; i < len; i++)
		src[i] = (char)(i * 13);
	for (int over = 0; over <= 1; over++) {
		size_t n = (64 << 10) + (size_t)over;

		memset(dst, 0, len);
		assert_int_equal(core_recv(b, dst, len, (void *)1), 0);
		assert_int_equal(core_send(a, pa, src, n, (void *)2), 0);
		assert_int_equal(wait_one(b, &e), 1);
		assert_int_equal(e.status, 0);
		assert_int_equal(e.len, n);
		assert_memory_equal(dst, src, n);
		assert_int_equal(wait_one(a, &e), 1);
		assert_int_equal(e.status, 0);
		assert_int_equal(!!(e.flags & CORE_CQE_RNDV), over);
	}
	core_ep_close(a);
	core_ep_close(b);
	attr.env.eager_max = 4096; /* RDMATOOL_EAGER_MAX's value: it yields to the caller's */
	attr.eager_max = 256;
	assert_int_equal(core_ep_open(&attr, &a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_eager_max(a), 256);
	core_ep_close(a);
	attr.eager_max = 0;
	assert_int_equal(core_ep_open(&attr, &a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_eager_max(a), 4096);
	core_ep_close(a);
	free(src);
	free(dst);
}

/*
 * A connect that fails after its slot was prepared (a peer that closed
 * mid-exchange, a bad address blob) gives the slot back: slots connect in
 * the order they were prepared, and one left behind made every later
 * connect of the endpoint fail with EINVAL, so an agent whose peer dropped
 * during a rejoin could never link to anyone again.
 */
static void test_failed_connect_gives_slot_back(void **state)
{
	struct core_ep_attr attr;
	struct core_ep *a, *b;
	struct core_cqe e;
	uint32_t slot, len, pa, pb;
	char blob[1024], err[256], msg[] = "after a failed connect", got[sizeof(msg)] = {0};

	(void)state;
	core_ep_attr_defaults(&attr);
	attr.device = "soft0";
	assert_int_equal(core_ep_open(&attr, &a, err, sizeof(err)), 0);
	assert_int_equal(core_ep_open(&attr, &b, err, sizeof(err)), 0);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(core_ep_prepare(a, blob, &len, &slot), 0);
		assert_true(len <= sizeof(blob));
		assert_int_equal(core_ep_connect(a, slot, blob, 4, &pa), -EPROTO); /* a truncated blob */
	}
	assert_int_equal(core_ep_connect_pair(a, b, &pa, &pb), 0);
	assert_int_equal(core_recv(b, got, sizeof(got), (void *)1), 0);
	assert_int_equal(core_send(a, pa, msg, sizeof(msg), (void *)2), 0);
	assert_int_equal(wait_one(b, &e), 1);
	assert_int_equal(e.status, 0);
	assert_memory_equal(got, msg, sizeof(msg));
	assert_int_equal(wait_one(a, &e), 1);
	assert_int_equal(e.status, 0);
	core_ep_close(a);
	core_ep_close(b);
}

static void test_ops_striped(void **state)
{
	(void)state;
	run_ops(CORE_LOCK_STRIPED);
}

static void test_ops_global(void **state)
{
	(void)state;
	run_ops(CORE_LOCK_GLOBAL);
}

/* Many more messages than credits and receive buffers: flow control, never RNR. */
static void test_credits_stream(void **state)
{
	struct pair p;
	struct core_cqe e[16];
	const int total = 2000;
	int sent = 0, sendc = 0, recvc = 0, posted = 0;
	char buf[16];

	(void)state;
	open_pair(&p, CORE_LOCK_STRIPED, 1);
	while (recvc < total || sendc < total) {
		if (posted < total && core_recv(p.b, buf, sizeof(buf), NULL) == 0)
			posted++;
		if (sent < total && core_send(p.a, p.pa, "x", 1, NULL) == 0)
			sent++;
		int n = core_cq_read(p.a, e, 16);

		for (int i = 0; i < n; i++) {
			assert_int_equal(e[i].status, 0);
			sendc++;
		}
		n = core_cq_read(p.b, e, 16);
		for (int i = 0; i < n; i++) {
			assert_int_equal(e[i].status, 0);
			recvc++;
		}
	}
	assert_int_equal(sendc, total);
	assert_int_equal(recvc, total);
	core_ep_close(p.a);
	core_ep_close(p.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wr_id_encoding),	cmocka_unit_test(test_env),
	    cmocka_unit_test(test_rx_states),		cmocka_unit_test(test_ops_striped),
	    cmocka_unit_test(test_ops_global),		cmocka_unit_test(test_credits_stream),
	    cmocka_unit_test(test_eager_max_of_device), cmocka_unit_test(test_failed_connect_gives_slot_back),
	    cmocka_unit_test(test_transport_timers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
