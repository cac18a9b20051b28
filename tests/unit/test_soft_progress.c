/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Progress like a NIC's (issue 43 item 3): an incoming RDMA WRITE is served
 * by the target's soft NIC whatever the target's program does meanwhile.
 * Two processes play "the MPI way" (qperf rc_rdma_write_poll_lat): post a
 * WRITE, poll the CQ once, then spin on memory with no library call until
 * the peer's WRITE lands.  And the engine's rule for when it leaves the wire
 * to the application: only while a thread polls it in a loop, never because
 * a thread looked once after a post.  No speed is asserted; every wait has a
 * deadline.
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"

#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS	    200
#define DEADLINE_MS 10000
#define BUF	    4096

struct info {
	union ibv_gid gid;
	uint32_t qpn, rkey;
	uint64_t addr;
};

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *idle_cq; /* idle_cq: no QP, always empty */
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct info me, peer;
};

/* Opens a NIC and an RC QP, swaps addresses with the peer over fd and connects. */
static int end_open(struct end *e, int fd)
{
	struct info me;

	e->ctx = hw_open_device("soft0", NULL);
	if (!e->ctx)
		return -1;
	e->pd = hw_alloc_pd(e->ctx);
	e->cq = hw_create_cq(e->ctx, 2 * ROUNDS + 16, NULL, NULL, 0);
	e->idle_cq = hw_create_cq(e->ctx, 4, NULL, NULL, 0);
	e->buf = aligned_alloc(4096, BUF);
	if (!e->pd || !e->cq || !e->idle_cq || !e->buf)
		return -1;
	memset(e->buf, 0, BUF);
	e->mr = hw_reg_mr(e->pd, e->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	e->qp = fx_qp(e->pd, e->cq, IBV_QPT_RC, 1);
	if (!e->mr || !e->qp)
		return -1;
	hw_query_gid(e->ctx, 1, 0, &e->me.gid);
	e->me.qpn = e->qp->qp_num;
	e->me.rkey = e->mr->rkey;
	e->me.addr = (uintptr_t)e->buf;
	me = e->me;
	if (write(fd, &me, sizeof(me)) != sizeof(me) ||
	    read(fd, &e->peer, sizeof(e->peer)) != sizeof(e->peer))
		return -1;
	fx_rc_to_rts(e->qp, e->peer.qpn, &e->peer.gid, 16, 7, 7, 1);
	return 0;
}

static void end_close(struct end *e)
{
	hw_destroy_qp(e->qp);
	hw_dereg_mr(e->mr);
	hw_destroy_cq(e->cq);
	hw_destroy_cq(e->idle_cq);
	hw_dealloc_pd(e->pd);
	hw_close_device(e->ctx);
	free(e->buf);
}

/* Both sides wait for each other: nobody posts to a QP that is not yet RTS. */
static int sync_peer(int fd)
{
	char c = 's';

	return write(fd, &c, 1) == 1 && read(fd, &c, 1) == 1 ? 0 : -1;
}

/*
 * One side of the ping-pong.  The message is the round number in the last
 * byte of an 8-byte WRITE into the peer's buffer; the first sender starts.
 * Between its post and the peer's answer the side makes one poll_cq call, as
 * qperf does, then spins on memory.  Returns 0 or a step number.
 */
static int write_poll_pingpong(struct end *e, bool first)
{
	volatile uint8_t *in = e->buf + 64;
	uint8_t *out = e->buf + 128;
	struct ibv_wc wc[4];
	int done = 0;
	uint64_t end;

	/* Each wait has DEADLINE_MS, not the whole run: 200 rounds under TSan at load 25 took longer. */
	for (uint32_t i = 1; i <= ROUNDS; i++) {
		uint8_t want = (uint8_t)(i & 0xff) ? (uint8_t)i : 0xa5;
		int n;

		end = fx_now_ms() + DEADLINE_MS;
		if (!first) {
			/* A tight spin: no library call until the peer's WRITE is in memory. */
			while (*in != want)
				if ((i & 7) == 0 && fx_now_ms() > end)
					return 1;
		}
		memset(out, want, 8);
		if (fx_post(e->qp, IBV_WR_RDMA_WRITE, i, out, 8, e->mr->lkey, e->peer.addr + 64,
			    e->peer.rkey))
			return 2;
		n = hw_poll_cq(e->cq, 4, wc);
		for (int k = 0; k < n; k++)
			if (wc[k].status != IBV_WC_SUCCESS)
				return 3;
		done += n > 0 ? n : 0;
		if (first) {
			while (*in != want)
				if (fx_now_ms() > end)
					return 4;
		}
	}
	/* Every WRITE completes, in order, once. */
	end = fx_now_ms() + DEADLINE_MS;
	while (done < ROUNDS && fx_now_ms() < end) {
		int n = hw_poll_cq(e->cq, 4, wc);

		for (int k = 0; k < n; k++)
			if (wc[k].status != IBV_WC_SUCCESS || wc[k].wr_id != (uint64_t)done + 1 + k)
				return 5;
		if (n > 0)
			end = fx_now_ms() + DEADLINE_MS;
		done += n > 0 ? n : 0;
	}
	return done == ROUNDS ? 0 : 6;
}

static int spinner_main(int fd)
{
	struct end e = {0};
	int rc;

	if (end_open(&e, fd) || sync_peer(fd))
		return 10;
	rc = write_poll_pingpong(&e, false);
	/* The peer's last WRITE's ACK may still be on its way: stay until it is done. */
	if (sync_peer(fd))
		return 11;
	end_close(&e);
	return rc ? 20 + rc : 0;
}

static void spinning_targets_get_every_write(void **state)
{
	struct end e = {0};
	pid_t pid;
	int fd;

	(void)state;
	fd = fx_fork_peer(spinner_main, &pid);
	assert_int_equal(end_open(&e, fd), 0);
	assert_int_equal(sync_peer(fd), 0);
	assert_int_equal(write_poll_pingpong(&e, true), 0);
	assert_int_equal(sync_peer(fd), 0);
	fx_expect_clean_exit(pid);
	end_close(&e);
	close(fd);
}

/* The peer of the rule test: connects, then waits for the end. */
static int bystander_main(int fd)
{
	struct end e = {0};
	char c;

	if (end_open(&e, fd) || sync_peer(fd))
		return 10;
	while (read(fd, &c, 1) > 0)
		;
	end_close(&e);
	return 0;
}

/* Posts an 8-byte WRITE to the peer and waits for its completion. */
static void write_once(struct end *e)
{
	struct ibv_wc wc;

	assert_int_equal(
	    fx_post(e->qp, IBV_WR_RDMA_WRITE, 1, e->buf, 8, e->mr->lkey, e->peer.addr, e->peer.rkey), 0);
	fx_wait(e->cq, &wc, DEADLINE_MS);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/*
 * qperf's loop looks at the CQ once after each post and then spins on
 * memory: the engine must keep watching the wire, or the answer waits out
 * its nap (1.4 ms to 69 ms a message before).  A thread that polls in a loop
 * takes the packets itself and the engine stays off its CPU; its next post
 * ends the loop.
 */
static void one_look_is_not_a_polling_loop(void **state)
{
	struct end e = {0};
	struct soft_nic *nic;
	struct ibv_wc wc;
	bool looping = false;
	pid_t pid;
	int fd;

	(void)state;
	fd = fx_fork_peer(bystander_main, &pid);
	assert_int_equal(end_open(&e, fd), 0);
	assert_int_equal(sync_peer(fd), 0);
	nic = soft_nic_of(e.ctx);
	write_once(&e); /* the connection exists from here on */

	assert_int_equal(fx_post(e.qp, IBV_WR_RDMA_WRITE, 2, e.buf, 8, e.mr->lkey, e.peer.addr, e.peer.rkey),
			 0);
	assert_int_equal(hw_poll_cq(e.idle_cq, 1, &wc), 0);
	assert_true(soft_engine_watches_wire(nic));
	/* A loop: consecutive polls, some two of them close together even on a busy machine. */
	for (int i = 0; i < 100000 && !looping; i++) {
		assert_int_equal(hw_poll_cq(e.idle_cq, 1, &wc), 0);
		looping = !soft_engine_watches_wire(nic);
	}
	assert_true(looping);
	fx_wait(e.cq, &wc, DEADLINE_MS);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* A post ends the loop. */
	assert_int_equal(fx_post(e.qp, IBV_WR_RDMA_WRITE, 3, e.buf, 8, e.mr->lkey, e.peer.addr, e.peer.rkey),
			 0);
	assert_true(soft_engine_watches_wire(nic));
	fx_wait(e.cq, &wc, DEADLINE_MS);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	close(fd);
	fx_expect_clean_exit(pid);
	end_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(spinning_targets_get_every_write),
	    cmocka_unit_test(one_look_is_not_a_polling_loop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
