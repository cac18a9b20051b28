/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Soft device engine batching: the engine drains many WRs per wake-up, in
 * bounded per-QP batches, and busy-polls before it sleeps.  These tests
 * check that this keeps the verbs semantics: order within a QP across
 * batches and ring wrap-around (a non-power-of-two queue), every
 * completion exactly once across many QPs sharing CQs, and an engine that
 * is never blocked by a connection attempt to a peer that does not answer.
 */
#include "tests/unit/soft_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define ORDER_DEPTH 100 /* not a power of two: ring slots != capacity */
#define ORDER_OPS   3000

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = 1,
	    .cap = {.max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1},
	};

	return hw_create_qp(pd, &init);
}

static void post_send_op(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
			 uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	assert_int_equal(fx_post(qp, op, wr_id, addr, len, lkey, raddr, rkey), 0);
}

/*
 * One QP, ORDER_OPS requests through a 100-deep queue kept full: WRITEs
 * of a sequence number to one word interleaved with SENDs carrying it.
 * Send completions come in posting order, receive completions in order
 * with the right payload, and the word ends with the last value written.
 */
static void order_kept_across_batches_and_wrap(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *a = rc_qp(f->pd, f->scq, ORDER_DEPTH), *b = rc_qp(f->pd, f->rcq, ORDER_DEPTH);
	uint64_t *src = (uint64_t *)f->abuf, *word = (uint64_t *)f->bbuf;
	uint64_t *rx = (uint64_t *)(f->bbuf + 4096);
	uint64_t posted = 0, sent_done = 0, recv_done = 0, recv_posted = 0;
	uint64_t end = fx_now_ms() + 20000;
	struct ibv_wc wc[64];

	assert_non_null(a);
	assert_non_null(b);
	fx_rc_to_rts(a, b->qp_num, NULL, 14, 7, 7, 1);
	fx_rc_to_rts(b, a->qp_num, NULL, 14, 7, 7, 1);
	while ((sent_done < ORDER_OPS || recv_done < ORDER_OPS / 2) && fx_now_ms() < end) {
		int n;

		while (recv_posted < ORDER_OPS / 2 && recv_posted - recv_done < ORDER_DEPTH) {
			assert_int_equal(
			    fx_post_recv(b, recv_posted, rx + recv_posted % ORDER_DEPTH, 8, f->bmr->lkey), 0);
			recv_posted++;
		}
		while (posted < ORDER_OPS && posted - sent_done < ORDER_DEPTH) {
			uint64_t *s = src + posted % 512;

			*s = posted;
			/* Even: WRITE to the word; odd: SEND (receive number posted / 2). */
			post_send_op(a, posted % 2 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, posted, s, 8,
				     f->amr->lkey, (uintptr_t)word, f->bmr->rkey);
			posted++;
		}
		n = hw_poll_cq(f->scq, 64, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, sent_done);
			sent_done++;
		}
		n = hw_poll_cq(f->rcq, 64, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].opcode, IBV_WC_RECV);
			assert_int_equal(wc[i].wr_id, recv_done);
			assert_int_equal(rx[recv_done % ORDER_DEPTH], 2 * recv_done + 1);
			recv_done++;
		}
	}
	assert_int_equal(sent_done, ORDER_OPS);
	assert_int_equal(recv_done, ORDER_OPS / 2);
	assert_int_equal(*word, ORDER_OPS - 2);
	assert_int_equal(hw_destroy_qp(a), 0);
	assert_int_equal(hw_destroy_qp(b), 0);
}

#define PAIRS  64
#define PER_QP 250 /* PAIRS * PER_QP words fit in FX_BUF */

/*
 * PAIRS connected pairs share two CQs; one thread keeps every sender's
 * queue busy.  Each (QP, sequence number) completes exactly once, each
 * QP's completions come in its own posting order, and every WRITE landed.
 */
static void many_qps_complete_each_request_once(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *cq = hw_create_cq(f->ctx, PAIRS * 32, NULL, NULL, 0);
	struct ibv_qp *snd[PAIRS], *rcv[PAIRS];
	uint32_t posted[PAIRS] = {0}, done[PAIRS] = {0}, total = 0;
	uint64_t end = fx_now_ms() + 20000;
	uint32_t *dst = (uint32_t *)f->bbuf; /* PAIRS x PER_QP words */
	struct ibv_wc wc[64];

	assert_non_null(cq);
	for (int p = 0; p < PAIRS; p++) {
		snd[p] = rc_qp(f->pd, cq, 16);
		rcv[p] = rc_qp(f->pd, f->rcq, 16);
		assert_non_null(snd[p]);
		assert_non_null(rcv[p]);
		fx_rc_to_rts(snd[p], rcv[p]->qp_num, NULL, 14, 7, 7, 1);
		fx_rc_to_rts(rcv[p], snd[p]->qp_num, NULL, 14, 7, 7, 1);
	}
	for (int i = 0; i < PAIRS * PER_QP; i++)
		((uint32_t *)f->abuf)[i] = (uint32_t)i ^ 0xa5a5a5a5u;
	memset(dst, 0, PAIRS * PER_QP * sizeof(*dst));
	while (total < PAIRS * PER_QP && fx_now_ms() < end) {
		int n;

		for (int p = 0; p < PAIRS; p++) {
			while (posted[p] < PER_QP && posted[p] - done[p] < 16) {
				uint32_t idx = (uint32_t)p * PER_QP + posted[p];

				post_send_op(snd[p], IBV_WR_RDMA_WRITE, ((uint64_t)p << 32) | posted[p],
					     (uint32_t *)f->abuf + idx, 4, f->amr->lkey,
					     (uintptr_t)(dst + idx), f->bmr->rkey);
				posted[p]++;
			}
		}
		n = hw_poll_cq(cq, 64, wc);
		for (int i = 0; i < n; i++) {
			uint32_t p = (uint32_t)(wc[i].wr_id >> 32), seq = (uint32_t)wc[i].wr_id;

			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_true(p < PAIRS);
			assert_int_equal(wc[i].qp_num, snd[p]->qp_num);
			assert_int_equal(seq, done[p]);
			done[p]++;
			total++;
		}
	}
	assert_int_equal(total, PAIRS * PER_QP);
	assert_int_equal(hw_poll_cq(cq, 64, wc), 0);
	for (int i = 0; i < PAIRS * PER_QP; i++)
		assert_int_equal(dst[i], (uint32_t)i ^ 0xa5a5a5a5u);
	for (int p = 0; p < PAIRS; p++) {
		assert_int_equal(hw_destroy_qp(snd[p]), 0);
		assert_int_equal(hw_destroy_qp(rcv[p]), 0);
	}
	assert_int_equal(hw_destroy_cq(cq), 0);
}

/*
 * A peer whose listen backlog is full never completes the TCP handshake.
 * While the engine tries to reach it, in-process work still completes, and
 * the request to the silent peer ends in RETRY_EXC_ERR when its own retry
 * budget (3 x 16.7 ms) runs out, not after the engine sat out a one-second
 * blocking connect() (what this test caught before connects were
 * non-blocking: the error came at 1001 ms).
 */
static void silent_peer_does_not_block_the_engine(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fill[8];
	int nfill = 0;
	union ibv_gid silent = {.raw = {0xfe, 0x80}};
	struct ibv_qp *q;
	struct ibv_wc wc;
	uint64_t t0;

	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	/* Fill the accept queue; later SYNs are dropped, so connects hang. */
	for (; nfill < 8; nfill++) {
		fill[nfill] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(fill[nfill], (struct sockaddr *)&sa, sizeof(sa));
	}
	memcpy(&silent.raw[8], &sa.sin_addr.s_addr, 4);
	memcpy(&silent.raw[12], &sa.sin_port, 2);
	silent.raw[14] = 'S';
	silent.raw[15] = 'W';
	q = rc_qp(f->pd, f->scq, 4);
	assert_non_null(q);
	/* Timeout 12 (about 16 ms), two retries. */
	fx_rc_to_rts(q, 1234, &silent, 12, 2, 7, 1);
	t0 = fx_now_ms();
	post_send_op(q, IBV_WR_RDMA_WRITE, 7, f->abuf, 8, f->amr->lkey, 0x1000, 1);
	post_send_op(f->a, IBV_WR_RDMA_WRITE, 8, f->abuf, 8, f->amr->lkey, (uintptr_t)f->bbuf, f->bmr->rkey);
	fx_wait(f->scq, &wc, 5000);
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	fx_wait(f->scq, &wc, 10000);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	assert_true(fx_now_ms() - t0 < 900);
	assert_int_equal(hw_destroy_qp(q), 0);
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	close(lfd);
}

#define BIG   (16u << 20)
#define CHUNK (1u << 20)

struct big_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct {
		union ibv_gid gid;
		uint32_t qpn, rkey;
		uint64_t addr;
	} me, peer;
};

static int big_open(struct big_side *s)
{
	s->ctx = hw_open_device("soft0", NULL);
	if (!s->ctx)
		return -1;
	s->pd = hw_alloc_pd(s->ctx);
	s->cq = hw_create_cq(s->ctx, 128, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, BIG);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	s->mr = hw_reg_mr(s->pd, s->buf, BIG,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	s->qp = rc_qp(s->pd, s->cq, 64);
	if (!s->mr || !s->qp)
		return -1;
	hw_query_gid(s->ctx, 1, 0, &s->me.gid);
	s->me.qpn = s->qp->qp_num;
	s->me.rkey = s->mr->rkey;
	s->me.addr = (uintptr_t)s->buf;
	return 0;
}

#define SMALL_SPAN 65536 /* the first 64 KiB are rewritten by 4-byte WRITEs */

static uint8_t big_pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 20) * 13);
}

/* What the child's buffer holds at the end. */
static uint8_t big_expected(size_t i)
{
	return i < SMALL_SPAN ? (uint8_t)~big_pattern(i) : big_pattern(i);
}

/*
 * The child: a target NIC that checks what the parent wrote, once the
 * parent's final SEND arrived (RC order: every WRITE before it landed; its
 * completion is also what orders the NIC's writes before our reads).
 */
static int big_child(int fd)
{
	struct big_side s = {0};
	struct ibv_wc wc;
	uint64_t end;
	char c;
	int ok = 1, n;

	if (big_open(&s))
		return 10;
	memset(s.buf, 0, BIG);
	if (write(fd, &s.me, sizeof(s.me)) != sizeof(s.me) ||
	    read(fd, &s.peer, sizeof(s.peer)) != sizeof(s.peer))
		return 11;
	fx_rc_to_rts(s.qp, s.peer.qpn, &s.peer.gid, 16, 7, 7, 1);
	/* The last byte of the buffer receives the final SEND (no payload). */
	if (fx_post_recv(s.qp, 5, s.buf + BIG - 1, 0, s.mr->lkey) || write(fd, "r", 1) != 1)
		return 12;
	end = fx_now_ms() + 60000;
	while ((n = hw_poll_cq(s.cq, 1, &wc)) == 0 && fx_now_ms() < end)
		;
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 5)
		return 14;
	for (size_t i = 0; i < BIG; i++)
		ok &= s.buf[i] == big_expected(i);
	c = ok ? 'y' : 'n';
	if (write(fd, &c, 1) != 1)
		return 13;
	while (read(fd, &c, 1) > 0)
		;
	return 0;
}

/*
 * Two processes, 1 MiB WRITEs over the wire, 8 in flight: payloads larger
 * than a socket takes at once leave partly straight from the source
 * buffer and partly through the send queue, and arrive split across many
 * reads.  Then 16384 4-byte WRITEs, 64 in flight, which travel coalesced.
 * Every byte lands (the child checks all 16 MiB), completions come in
 * order, and a 1 MiB READ brings the data back.
 */
static void large_writes_between_processes(void **state)
{
	struct big_side s = {0};
	int fd, status;
	pid_t pid;
	char c;
	uint32_t posted = 0, done = 0, total = 4 * (BIG / CHUNK);
	uint8_t *back;
	struct ibv_wc wc[8];
	uint64_t end;

	(void)state;
	fd = fx_fork_peer(big_child, &pid);
	assert_int_equal(big_open(&s), 0);
	for (size_t i = 0; i < BIG; i++)
		s.buf[i] = big_pattern(i);
	assert_int_equal(read(fd, &s.peer, sizeof(s.peer)), sizeof(s.peer));
	assert_int_equal(write(fd, &s.me, sizeof(s.me)), sizeof(s.me));
	/*
	 * ACK timeout 4.3 s (20): under a sanitizer on a loaded machine the child
	 * takes longer than 268 ms (16) to land 8 MiB, and seven retransmissions
	 * of 1 MiB each would then end in RETRY_EXC_ERR.
	 */
	fx_rc_to_rts(s.qp, s.peer.qpn, &s.peer.gid, 20, 7, 7, 1);
	assert_int_equal(read(fd, &c, 1), 1);
	end = fx_now_ms() + 60000;
	while (done < total && fx_now_ms() < end) {
		int n;

		while (posted < total && posted - done < 8) {
			size_t off = (size_t)(posted % (BIG / CHUNK)) * CHUNK;

			post_send_op(s.qp, IBV_WR_RDMA_WRITE, posted, s.buf + off, CHUNK, s.mr->lkey,
				     s.peer.addr + off, s.peer.rkey);
			posted++;
		}
		n = hw_poll_cq(s.cq, 8, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, done);
			done++;
		}
	}
	assert_int_equal(done, total);
	/* Read the third MiB back over the first one (already written, so it may be reused). */
	back = s.buf;
	memset(back, 0, CHUNK);
	post_send_op(s.qp, IBV_WR_RDMA_READ, 99, back, CHUNK, s.mr->lkey, s.peer.addr + 2 * CHUNK,
		     s.peer.rkey);
	end = fx_now_ms() + 60000;
	while (hw_poll_cq(s.cq, 1, wc) == 0 && fx_now_ms() < end)
		;
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 99);
	for (size_t i = 0; i < CHUNK; i++)
		assert_int_equal(back[i], big_pattern(2 * CHUNK + i));
	/* Then many small WRITEs, 64 in flight: coalesced into few socket calls on both sides. */
	for (size_t i = 0; i < SMALL_SPAN; i++)
		s.buf[i] = (uint8_t)~big_pattern(i);
	posted = done = 0;
	total = SMALL_SPAN / 4;
	end = fx_now_ms() + 60000;
	while (done < total && fx_now_ms() < end) {
		int n;

		while (posted < total && posted - done < 64) {
			post_send_op(s.qp, IBV_WR_RDMA_WRITE, posted, s.buf + 4 * posted, 4, s.mr->lkey,
				     s.peer.addr + 4 * posted, s.peer.rkey);
			posted++;
		}
		n = hw_poll_cq(s.cq, 8, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, done);
			done++;
		}
	}
	assert_int_equal(done, total);
	post_send_op(s.qp, IBV_WR_SEND, 100, s.buf, 0, s.mr->lkey, 0, 0);
	end = fx_now_ms() + 30000;
	while (hw_poll_cq(s.cq, 1, wc) == 0 && fx_now_ms() < end)
		;
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 100);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'y');
	kill(pid, SIGTERM);
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	hw_destroy_qp(s.qp);
	hw_dereg_mr(s.mr);
	hw_destroy_cq(s.cq);
	hw_dealloc_pd(s.pd);
	hw_close_device(s.ctx);
	free(s.buf);
}

#define DELAY_QPS 8
#define DELAY_MS  100

/*
 * delay_us holds each request on its own: eight WRITEs on eight QPs,
 * posted together, all complete one delay later, not one after another
 * (an engine that slept delay_us per request needed 8 x 50 ms).
 */
static void delay_fault_holds_each_request_alone(void **state)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp[DELAY_QPS];
	uint8_t *buf = aligned_alloc(64, 4096);
	struct ibv_wc wc;
	uint64_t t0, took;
	char spec[64];

	(void)state;
	assert_non_null(buf);
	snprintf(spec, sizeof(spec), "delay_us=%d", DELAY_MS * 1000);
	setenv("RDMATOOL_SOFT_FAULTS", spec, 1);
	ctx = hw_open_device("soft0", NULL);
	unsetenv("RDMATOOL_SOFT_FAULTS");
	assert_non_null(ctx);
	pd = hw_alloc_pd(ctx);
	cq = hw_create_cq(ctx, 64, NULL, NULL, 0);
	assert_non_null(pd);
	assert_non_null(cq);
	mr = hw_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	memset(buf, 0, 4096);
	for (int i = 0; i < DELAY_QPS; i++) {
		qp[i] = rc_qp(pd, cq, 4);
		assert_non_null(qp[i]);
		/* Each QP writes to itself; timeout 0: no retransmission while held. */
		fx_rc_to_rts(qp[i], qp[i]->qp_num, NULL, 0, 7, 7, 1);
	}
	for (int i = 0; i < DELAY_QPS; i++)
		buf[2048 + i] = (uint8_t)(i + 1);
	t0 = fx_now_ms();
	for (int i = 0; i < DELAY_QPS; i++)
		post_send_op(qp[i], IBV_WR_RDMA_WRITE, (uint64_t)i, buf + 2048 + i, 1, mr->lkey,
			     (uintptr_t)(buf + i), mr->rkey);
	for (int i = 0; i < DELAY_QPS; i++) {
		fx_wait(cq, &wc, 10000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	took = fx_now_ms() - t0;
	assert_true(took >= DELAY_MS);
	/* Sequential holding would take DELAY_QPS * DELAY_MS = 800 ms. */
	assert_true(took < (DELAY_QPS / 2) * DELAY_MS);
	for (int i = 0; i < DELAY_QPS; i++)
		assert_int_equal(buf[i], i + 1);
	for (int i = 0; i < DELAY_QPS; i++)
		assert_int_equal(hw_destroy_qp(qp[i]), 0);
	assert_int_equal(hw_dereg_mr(mr), 0);
	assert_int_equal(hw_destroy_cq(cq), 0);
	assert_int_equal(hw_dealloc_pd(pd), 0);
	assert_int_equal(hw_close_device(ctx), 0);
	free(buf);
}

/* A malformed RDMATOOL_SOFT_SPIN_US is refused with a message naming it. */
static void bad_spin_setting_is_einval_with_message(void **state)
{
	(void)state;
	setenv("RDMATOOL_SOFT_SPIN_US", "5ms", 1);
	errno = 0;
	assert_null(hw_open_device("soft0", NULL));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(hw_open_error(), "RDMATOOL_SOFT_SPIN_US"));
	unsetenv("RDMATOOL_SOFT_SPIN_US");
}

/*
 * With no busy-polling the engine sleeps whenever it runs dry, so nearly
 * every doorbell meets the sleeping edge: none may be lost (one lost
 * wake-up leaves a request, and this test, stuck).
 */
static void no_spin_loses_no_wakeup(void **state)
{
	struct fx *f;
	struct ibv_wc wc[32];
	int done = 0, posted = 0;
	uint64_t end;

	(void)state;
	setenv("RDMATOOL_SOFT_SPIN_US", "0", 1);
	assert_int_equal(fx_setup((void **)&f), 0);
	unsetenv("RDMATOOL_SOFT_SPIN_US");
	for (int i = 0; i < 2000; i++) {
		post_send_op(f->a, IBV_WR_RDMA_WRITE, (uint64_t)i, f->abuf, 8, f->amr->lkey,
			     (uintptr_t)f->bbuf, f->bmr->rkey);
		fx_wait(f->scq, wc, 5000);
		assert_int_equal(wc[0].wr_id, i);
	}
	end = fx_now_ms() + 20000;
	while (done < 4000 && fx_now_ms() < end) {
		int n;

		while (posted < 4000 && posted - done < 32)
			post_send_op(f->a, IBV_WR_RDMA_WRITE, (uint64_t)posted++, f->abuf, 64, f->amr->lkey,
				     (uintptr_t)f->bbuf, f->bmr->rkey);
		n = hw_poll_cq(f->scq, 32, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, done++);
		}
	}
	assert_int_equal(done, 4000);
	fx_teardown((void **)&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(order_kept_across_batches_and_wrap, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(many_qps_complete_each_request_once, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(silent_peer_does_not_block_the_engine, fx_setup, fx_teardown),
	    cmocka_unit_test(large_writes_between_processes),
	    cmocka_unit_test(delay_fault_holds_each_request_alone),
	    cmocka_unit_test(bad_spin_setting_is_einval_with_message),
	    cmocka_unit_test(no_spin_loses_no_wakeup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
