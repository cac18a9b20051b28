/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): retries counted (IBTA 9.7.5.2.8 and 9.7.6.1.3,
 * ibv_modify_qp(3)).  rnr_retry and retry_cnt say how many times a
 * requester tries again, no more and no fewer:
 *
 *  - rnr_retry 0: the first RNR NAK ends the SEND (RNR_RETRY_EXC_ERR).  B's
 *    RNR timer is the longest (655 ms), and if no completion came within
 *    RT_LATE_NS a receive is posted at B: a device that sends again after
 *    the timer would now succeed, which rnr_retry 0 forbids;
 *  - rnr_retry N (1..3): N retries, each after B's RNR timer, so the
 *    SEND cannot fail sooner than N timer periods after it was posted;
 *  - retry_cnt N toward a responder in ERR: N + 1 transport timeouts of
 *    4.096 us * 2^timeout each before RETRY_EXC_ERR, not fewer.
 *
 * Only lower bounds are timed: a loaded machine makes a device late, never early.
 */
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <string.h>

#define RT_LATE_NS (200 * 1000000ull)

/* B's min_rnr_timer (IB encoding) in ns, as IBTA table 45 gives it. */
static uint64_t rnr_ns(uint8_t t)
{
	static const uint32_t us[32] = {655360, 10,    20,    30,     40,     60,     80,     120,
					160,	240,   320,   480,    640,    960,    1280,   1920,
					2560,	3840,  5120,  7680,   10240,  15360,  20480,  30720,
					40960,	61440, 81920, 122880, 163840, 245760, 327680, 491520};

	return (uint64_t)us[t & 31] * 1000;
}

static int set_rnr_timer(struct rcp *p, uint8_t t)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .min_rnr_timer = t};

	return hw_modify_qp(p->b, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER);
}

static int post_send(struct rcp *p, enum ibv_wr_opcode op)
{
	struct ibv_sge sge = {(uintptr_t)(p->buf + RCP_SRC), 32, p->mr->lkey};

	return rcp_post1(p, p->a, op, p->base_id, sge, (uintptr_t)(p->buf + RCP_TGT));
}

/* Polls A's send CQ until wait_ns passed (and, when `insist`, RCP_LATE_POLLS more polls): 1 a completion. */
static int poll_for(struct rcp *p, uint64_t wait_ns, bool insist, struct ibv_wc *wc)
{
	uint64_t end = clock_ns() + wait_ns;
	unsigned idle = 0, late = 0;
	int k;

	while ((k = hw_poll_cq(p->scq, 1, wc)) == 0) {
		if (insist ? rcp_late(end, &late) : clock_ns() >= end)
			return 0;
		rcp_idle(&idle);
	}
	return k > 0;
}

static void rnr_zero(struct rcp *p)
{
	struct ibv_wc wc;
	struct rcp_exp r = rcp_done(p->base_id + 0x40, IBV_WC_SUCCESS, IBV_WC_RECV);

	if (set_rnr_timer(p, 0) || post_send(p, IBV_WR_SEND))
		return;
	if (poll_for(p, RT_LATE_NS, true, &wc)) {
		if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR)
			rcp_fail(p,
				 "a SEND with rnr_retry 0 to B without a receive completed with %s; expected "
				 "RNR_RETRY_EXC_ERR",
				 ibv_wc_status_str(wc.status));
		else
			rcp_expect_state(p, p->a, "A after its RNR retries ran out", IBV_QPS_ERR);
		return;
	}
	/* The first attempt was NAKed long ago (or the device is very late): a receive now must not help. */
	if (rcp_recv1(p->b, r.wr_id, (struct ibv_sge){(uintptr_t)(p->buf + RCP_RECV), 64, p->mr->lkey}))
		return;
	if (!rcp_poll1(p, p->scq, &wc))
		return;
	if (wc.status == IBV_WC_SUCCESS)
		rcp_fail(
		    p,
		    "a SEND with rnr_retry 0 to B without a receive (RNR timer 655 ms) did not complete "
		    "within %llu ms, then succeeded once B posted a receive: it was retried after an RNR NAK",
		    RT_LATE_NS / 1000000);
	else if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR)
		rcp_fail(p,
			 "a SEND with rnr_retry 0 to B without a receive completed with %s; expected "
			 "RNR_RETRY_EXC_ERR",
			 ibv_wc_status_str(wc.status));
}

static void rnr_n(struct rcp *p, uint8_t n)
{
	uint8_t t = (uint8_t)rng_range(p->rng, 11, 13);
	bool wimm = rng_bernoulli(p->rng, 0.3);
	struct ibv_wc wc;
	uint64_t t0, dt;

	if (set_rnr_timer(p, t))
		return;
	t0 = clock_ns();
	if (post_send(p, wimm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND) || !rcp_poll1(p, p->scq, &wc))
		return;
	dt = clock_ns() - t0;
	if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR)
		rcp_fail(p,
			 "a %s with rnr_retry %u to B without a receive completed with %s; expected "
			 "RNR_RETRY_EXC_ERR",
			 wimm ? "WRITE_WITH_IMM" : "SEND", n, ibv_wc_status_str(wc.status));
	else if (dt < n * rnr_ns(t))
		rcp_fail(
		    p,
		    "a %s with rnr_retry %u to B without a receive (B's RNR timer %u: %llu us) failed after "
		    "%llu us; %u retries take at least %llu us",
		    wimm ? "WRITE_WITH_IMM" : "SEND", n, t, (unsigned long long)rnr_ns(t) / 1000,
		    (unsigned long long)dt / 1000, n, (unsigned long long)(n * rnr_ns(t)) / 1000);
}

static void transport(struct rcp *p)
{
	struct ibv_wc wc;
	uint64_t t0, dt, min;

	if (rcp_to_err(p->b))
		return;
	t0 = clock_ns();
	if (post_send(p, rng_bernoulli(p->rng, 0.5) ? IBV_WR_SEND : IBV_WR_RDMA_WRITE) ||
	    !rcp_poll1(p, p->scq, &wc))
		return;
	dt = clock_ns() - t0;
	min = (uint64_t)(p->shape.retry_cnt + 1) * (4096ull << p->shape.timeout);
	if (wc.status != IBV_WC_RETRY_EXC_ERR)
		rcp_fail(p,
			 "a request to B in ERR (retry_cnt %u, timeout %u) completed with %s; expected "
			 "RETRY_EXC_ERR",
			 p->shape.retry_cnt, p->shape.timeout, ibv_wc_status_str(wc.status));
	else if (dt < min)
		rcp_fail(
		    p,
		    "a request to B in ERR with retry_cnt %u and timeout %u (%llu us) failed after %llu us; "
		    "%u transport timeouts take at least %llu us",
		    p->shape.retry_cnt, p->shape.timeout,
		    (unsigned long long)(4096ull << p->shape.timeout) / 1000, (unsigned long long)dt / 1000,
		    p->shape.retry_cnt + 1, (unsigned long long)min / 1000);
}

void rcp_case_retry(struct rcp *p)
{
	int kind = rcp_variant(p, 4); /* rnr_retry 0 twice as often: its check is the sharpest */
	uint8_t n = kind == 2 ? (uint8_t)rng_range(p->rng, 1, 3) : 0;

	p->name = kind < 2    ? "retry: rnr_retry 0 allows no retry"
		  : kind == 2 ? "retry: rnr_retry N counted"
			      : "retry: retry_cnt counted";
	p->shape = (struct rcp_shape){
	    .scqe = RCP_CQE, .a_send_wr = 2, .a_recv_wr = 1, .b_recv_wr = 2, .a_rnr_retry = n};
	if (kind == 3) {
		p->shape.timeout = (uint8_t)rng_range(p->rng, 8, 10);
		p->shape.retry_cnt = (uint8_t)rng_range(p->rng, 0, 2);
	}
	if (rcp_setup(p))
		return;
	if (kind < 2)
		rnr_zero(p);
	else if (kind == 2)
		rnr_n(p, n);
	else
		transport(p);
	rcp_check_memory(p);
}
