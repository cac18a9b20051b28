/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Soft device over the TCP wire: two processes, each with its own NIC,
 * exchange GID/QPN/rkey over a socketpair and run RC SEND/WRITE/READ/atomics
 * and UD SEND with data checks; then the peer is killed and the survivor
 * gets RETRY_EXC_ERR, not a hang.  GID index 1 takes one process's own
 * QPs over the same wire.
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"
#include "hw/soft/wire.h"

#include <dirent.h>
#include <endian.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct peer_info {
	union ibv_gid gid;
	uint32_t rc_qpn, ud_qpn, rkey;
	uint64_t addr;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *rc, *ud;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct peer_info me, peer;
};

#define BUF  65536
#define QKEY 0x11223344

static int side_open(struct side *s)
{
	s->ctx = hw_open_device("soft0", NULL);
	if (!s->ctx)
		return -1;
	s->pd = hw_alloc_pd(s->ctx);
	s->cq = hw_create_cq(s->ctx, 1024, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, BUF);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	memset(s->buf, 0, BUF);
	s->mr = hw_reg_mr(s->pd, s->buf, BUF,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC);
	s->rc = fx_qp(s->pd, s->cq, IBV_QPT_RC, 1);
	s->ud = fx_qp(s->pd, s->cq, IBV_QPT_UD, 1);
	if (!s->mr || !s->rc || !s->ud)
		return -1;
	hw_query_gid(s->ctx, 1, 0, &s->me.gid);
	s->me.rc_qpn = s->rc->qp_num;
	s->me.ud_qpn = s->ud->qp_num;
	s->me.rkey = s->mr->rkey;
	s->me.addr = (uintptr_t)s->buf;
	return 0;
}

/* Destroys what side_open created, in dependency order. */
static void side_close(struct side *s)
{
	hw_destroy_qp(s->rc);
	hw_destroy_qp(s->ud);
	hw_dereg_mr(s->mr);
	hw_destroy_cq(s->cq);
	hw_dealloc_pd(s->pd);
	hw_close_device(s->ctx);
	free(s->buf);
}

static int xfer(int fd, struct side *s)
{
	if (write(fd, &s->me, sizeof(s->me)) != sizeof(s->me))
		return -1;
	return read(fd, &s->peer, sizeof(s->peer)) == sizeof(s->peer) ? 0 : -1;
}

static int wait_wc_ms(struct ibv_cq *cq, struct ibv_wc *wc, uint64_t ms)
{
	uint64_t end = fx_now_ms() + ms;
	int n;

	while ((n = hw_poll_cq(cq, 1, wc)) == 0 && fx_now_ms() < end)
		;
	return n == 1 ? 0 : -1;
}

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return wait_wc_ms(cq, wc, 5000);
}

/* The child: receives, checks what arrived, reports, then waits to be killed. */
static int child_main(int fd)
{
	struct side s = {0};
	struct ibv_wc wc;
	char go;
	int ok = 1, got_rc = 0, got_ud = 0;

	if (side_open(&s))
		return 10;
	for (int i = 0; i < BUF / 2; i++)
		s.buf[BUF / 2 + i] = (uint8_t)(i * 3);
	*(uint64_t *)(s.buf + 8192) = 5;
	if (xfer(fd, &s))
		return 11;
	fx_rc_to_rts(s.rc, s.peer.rc_qpn, &s.peer.gid, 16, 7, 7, 1);
	fx_ud_to_rts(s.ud, QKEY);
	if (fx_post_recv(s.rc, 1, s.buf, 64, s.mr->lkey) ||
	    fx_post_recv(s.ud, 2, s.buf + 128, 40 + 64, s.mr->lkey))
		return 14;
	if (write(fd, "r", 1) != 1 || read(fd, &go, 1) != 1)
		return 12;
	while (got_rc + got_ud < 2 && wait_wc(s.cq, &wc) == 0) {
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
			ok = 0;
		if (wc.qp_num == s.rc->qp_num) {
			got_rc = 1;
			ok &= wc.byte_len == 11 && strcmp((char *)s.buf, "hello wire") == 0 &&
			      wc.src_qp == s.peer.rc_qpn;
		} else {
			got_ud = 1;
			ok &= wc.byte_len == 40 + 8 && strcmp((char *)s.buf + 128 + 40, "ud wire") == 0 &&
			      wc.src_qp == s.peer.ud_qpn && memcmp(s.buf + 128 + 8, s.peer.gid.raw, 16) == 0;
		}
	}
	ok &= got_rc && got_ud;
	for (int i = 0; i < 4096; i++)
		ok &= s.buf[4096 + i] == (uint8_t)(i ^ 0x5a);
	ok &= *(uint64_t *)(s.buf + 8192) == 107; /* 5 + 2, then CAS 7 -> 107 */
	go = ok ? 'y' : 'n';
	if (write(fd, &go, 1) != 1)
		return 13;
	/* Until killed, or until the parent is gone and the socket closes. */
	while (read(fd, &go, 1) > 0)
		;
	return 0;
}

static void post_wr(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	assert_int_equal(hw_post_send(qp, wr, &bad), 0);
}

static void two_processes_over_the_wire(void **state)
{
	int fd;
	pid_t pid;
	struct side s = {0};
	struct ibv_wc wc;
	char c;
	struct ibv_sge sge = {.lkey = 0};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_ah_attr aa = {.port_num = 1, .is_global = 1};
	struct ibv_ah *ah;
	int status, errors = 0;

	(void)state;
	fd = fx_fork_peer(child_main, &pid);
	assert_int_equal(side_open(&s), 0);
	sge.lkey = s.mr->lkey;
	assert_int_equal(xfer(fd, &s), 0);
	assert_memory_not_equal(s.me.gid.raw, s.peer.gid.raw, 16);
	fx_rc_to_rts(s.rc, s.peer.rc_qpn, &s.peer.gid, 16, 7, 7, 1);
	fx_ud_to_rts(s.ud, QKEY);
	assert_int_equal(read(fd, &c, 1), 1);

	/* RC SEND */
	memcpy(s.buf, "hello wire", 11);
	sge.addr = (uintptr_t)s.buf;
	sge.length = 11;
	wr.opcode = IBV_WR_SEND;
	post_wr(s.rc, &wr);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* RC WRITE */
	for (int i = 0; i < 4096; i++)
		s.buf[4096 + i] = (uint8_t)(i ^ 0x5a);
	sge.addr = (uintptr_t)s.buf + 4096;
	sge.length = 4096;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = s.peer.addr + 4096;
	wr.wr.rdma.rkey = s.peer.rkey;
	post_wr(s.rc, &wr);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* RC READ of the child's pattern, 32 KiB */
	sge.addr = (uintptr_t)s.buf + BUF / 2;
	sge.length = BUF / 2;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = s.peer.addr + BUF / 2;
	post_wr(s.rc, &wr);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	for (int i = 0; i < BUF / 2; i++)
		if (s.buf[BUF / 2 + i] != (uint8_t)(i * 3))
			errors++;
	assert_int_equal(errors, 0);
	/* Atomics */
	sge.addr = (uintptr_t)s.buf + 8192;
	sge.length = 8;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = s.peer.addr + 8192;
	wr.wr.atomic.rkey = s.peer.rkey;
	wr.wr.atomic.compare_add = 2;
	post_wr(s.rc, &wr);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(*(uint64_t *)(s.buf + 8192), 5);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 7;
	wr.wr.atomic.swap = 107;
	post_wr(s.rc, &wr);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(*(uint64_t *)(s.buf + 8192), 7);
	/* UD SEND */
	aa.grh.dgid = s.peer.gid;
	ah = hw_create_ah(s.pd, &aa);
	memcpy(s.buf, "ud wire", 8);
	sge.addr = (uintptr_t)s.buf;
	sge.length = 8;
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = s.peer.ud_qpn;
	wr.wr.ud.remote_qkey = QKEY;
	post_wr(s.ud, &wr);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	/* The child checks what it received. */
	assert_int_equal(write(fd, "g", 1), 1);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'y');

	/* Kill the peer in the middle of a stream of writes: an error, never a hang. */
	sge.addr = (uintptr_t)s.buf;
	sge.length = 4096;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = s.peer.addr + 16384; /* a region the child never reads */
	wr.wr.rdma.rkey = s.peer.rkey;
	uint64_t end = fx_now_ms() + 5000;
	int posted = 0, done = 0, failed = 0;
	bool killed = false;

	while (!failed && fx_now_ms() < end) {
		struct ibv_send_wr *bad;

		if (posted - done < 16 && hw_post_send(s.rc, &wr, &bad) == 0)
			posted++;
		while (hw_poll_cq(s.cq, 1, &wc) == 1) {
			done++;
			if (wc.status == IBV_WC_RETRY_EXC_ERR)
				failed = 1;
			else if (failed) /* the QP is in ERR: the rest is flushed */
				assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
			else
				assert_int_equal(wc.status, IBV_WC_SUCCESS);
		}
		if (!killed && done >= 50) {
			kill(pid, SIGKILL);
			killed = true;
		}
	}
	assert_true(killed);
	assert_int_equal(failed, 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	hw_destroy_ah(ah);
	side_close(&s);
	close(fd);
}

#define PINGS 300

/* Sockets this process holds: /proc/self/fd entries that link to "socket:[...]". */
static int count_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], link[64];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len > 0) {
			link[len] = '\0';
			n += strncmp(link, "socket:", 7) == 0;
		}
	}
	closedir(d);
	return n;
}

/*
 * One side of an RC SEND ping-pong: the pinger sends i and waits for i
 * back, the ponger echoes what it receives.  Every message and every send
 * completion must come exactly once, in order.  Returns 0 or a step number.
 */
static int ping_pong(struct side *s, bool pinger)
{
	struct ibv_wc wc;
	uint32_t *out = (uint32_t *)s->buf, *in = (uint32_t *)(s->buf + 64);

	for (uint32_t i = 0; i < PINGS; i++) {
		int sends = 0, recvs = 0;

		/* The ponger posts each receive before it answers the ping before it. */
		if (pinger && fx_post_recv(s->rc, 1000 + i, in, 4, s->mr->lkey))
			return 1;
		if (pinger) {
			*out = i;
			if (fx_post(s->rc, IBV_WR_SEND, i, out, 4, s->mr->lkey, 0, 0))
				return 2;
		}
		while (recvs < 1 || sends < 1) {
			if (wait_wc(s->cq, &wc) || wc.status != IBV_WC_SUCCESS)
				return 3;
			if (wc.opcode == IBV_WC_RECV) {
				if (recvs++ || wc.wr_id != 1000 + i || wc.byte_len != 4 || *in != i)
					return 4;
				if (!pinger) {
					if (i + 1 < PINGS &&
					    fx_post_recv(s->rc, 1000 + i + 1, in, 4, s->mr->lkey))
						return 7;
					*out = *in;
					if (fx_post(s->rc, IBV_WR_SEND, i, out, 4, s->mr->lkey, 0, 0))
						return 5;
				}
			} else if (sends++ || wc.opcode != IBV_WC_SEND || wc.wr_id != i) {
				return 6;
			}
		}
	}
	return 0;
}

static int ponger_main(int fd)
{
	struct side s = {0};
	int before, rc;
	char go;

	if (side_open(&s) || xfer(fd, &s))
		return 10;
	fx_rc_to_rts(s.rc, s.peer.rc_qpn, &s.peer.gid, 16, 7, 7, 1);
	if (fx_post_recv(s.rc, 1000, s.buf + 64, 4, s.mr->lkey))
		return 13;
	/* Counted before the pinger can connect: it waits for "r". */
	before = count_sockets();
	if (write(fd, "r", 1) != 1 || read(fd, &go, 1) != 1)
		return 11;
	rc = ping_pong(&s, false);
	if (rc)
		return 20 + rc;
	/* It answered on the connection the pinger opened: no socket of its own. */
	if (count_sockets() != before + 1)
		return 12;
	side_close(&s);
	return 0;
}

/* Forks a ponger running peer_main, connects to it and plays the pinger's part; returns the socketpair end.
 */
static int ping_a_forked_ponger(struct side *s, int (*peer_main)(int), pid_t *pid)
{
	int fd = fx_fork_peer(peer_main, pid);
	char c;

	assert_int_equal(side_open(s), 0);
	assert_int_equal(xfer(fd, s), 0);
	fx_rc_to_rts(s->rc, s->peer.rc_qpn, &s->peer.gid, 16, 7, 7, 1);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(write(fd, "g", 1), 1);
	assert_int_equal(ping_pong(s, true), 0);
	return fd;
}

static void ping_pong_answers_on_the_pingers_connection(void **state)
{
	struct side s = {0};
	pid_t pid;
	int fd;

	(void)state;
	fd = ping_a_forked_ponger(&s, ponger_main, &pid);
	fx_expect_clean_exit(pid);
	side_close(&s);
	close(fd);
}

/* Reads what the stranger's socket holds until EOF, or until nothing came for ms; returns the bytes. */
static size_t stranger_drain(int fd, uint8_t *buf, size_t cap, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t got = 0;
	ssize_t n;

	while (got < cap && poll(&p, 1, ms) == 1 && (n = read(fd, buf + got, cap - got)) > 0)
		got += (size_t)n;
	return got;
}

/*
 * N1: a stranger (any local user, no key) connects to the ponger's port
 * before the pinger does and sends a well-formed request whose source GID is
 * the pinger's.  It must not become "the connection to the pinger": the
 * ping-pong runs, and the stranger receives no packet.  Before, the ponger
 * bound the stranger's connection to the pinger's GID and sent its answers
 * there: the pinger waited in vain and the stranger read them.
 */
static void stranger_cannot_take_a_peers_place(void **state)
{
	struct side s = {0};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct soft_pkt h = {.magic = htole32(SOFT_WIRE_MAGIC),
				  .type = SOFT_PKT_REQ,
				  .opcode = IBV_WR_SEND,
				  .qp_type = IBV_QPT_RC};
	uint8_t seen[65536];
	size_t got;
	pid_t pid;
	int fd, stranger;
	char c;

	(void)state;
	fd = fx_fork_peer(ponger_main, &pid); /* it waits for our go */
	assert_int_equal(side_open(&s), 0);
	assert_int_equal(xfer(fd, &s), 0);
	fx_rc_to_rts(s.rc, s.peer.rc_qpn, &s.peer.gid, 16, 7, 7, 1);
	assert_int_equal(read(fd, &c, 1), 1);

	memcpy(&sa.sin_addr.s_addr, &s.peer.gid.raw[8], 4);
	memcpy(&sa.sin_port, &s.peer.gid.raw[12], 2);
	stranger = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(stranger, (struct sockaddr *)&sa, sizeof(sa)), 0);
	h.src_qpn = htole32(s.me.rc_qpn);
	h.dst_qpn = htole32(s.peer.rc_qpn ^ 0x800000); /* no such QP: the packet binds, serves nothing */
	h.psn = htole32(100);
	memcpy(h.sgid.raw, s.me.gid.raw, 16);
	memcpy(h.dgid.raw, s.peer.gid.raw, 16);
	assert_int_equal(write(stranger, &h, SOFT_PKT_HDR_LEN), SOFT_PKT_HDR_LEN);
	/* Until the ponger hangs up on it (or, before, 2 s of nothing). */
	got = stranger_drain(stranger, seen, sizeof(seen), 2000);

	assert_int_equal(write(fd, "g", 1), 1);
	assert_int_equal(ping_pong(&s, true), 0);
	got += stranger_drain(stranger, seen + got, sizeof(seen) - got, 100);
	/* At most the ponger's HELLO: no packet of the ping-pong. */
	assert_true(got <= SOFT_AUTH_HELLO_LEN);
	fx_expect_clean_exit(pid);
	close(stranger);
	side_close(&s);
	close(fd);
}

/*
 * The ponger drives its NIC's rounds while it polls (soft_app_round), then
 * stops polling for good and blocks on the socketpair: its engine thread
 * must take the wire over and serve the pinger's WRITEs and READs.
 */
static int quiet_target_main(int fd)
{
	struct side s = {0};
	char go;
	int rc;

	if (side_open(&s) || xfer(fd, &s))
		return 10;
	fx_rc_to_rts(s.rc, s.peer.rc_qpn, &s.peer.gid, 16, 7, 7, 1);
	if (fx_post_recv(s.rc, 1000, s.buf + 64, 4, s.mr->lkey))
		return 13;
	if (write(fd, "r", 1) != 1 || read(fd, &go, 1) != 1)
		return 11;
	rc = ping_pong(&s, false);
	if (rc)
		return 20 + rc;
	if (write(fd, "p", 1) != 1)
		return 12;
	while (read(fd, &go, 1) > 0)
		;
	return 0;
}

/* Forks a quiet target, plays one ping-pong with it and waits until it has stopped polling. */
static int start_quiet_target(struct side *s, pid_t *pid)
{
	int fd = ping_a_forked_ponger(s, quiet_target_main, pid);
	char c;

	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'p');
	return fd;
}

static void engine_serves_a_target_that_stopped_polling(void **state)
{
	struct side s = {0};
	struct ibv_wc wc;
	pid_t pid;
	int fd;

	(void)state;
	fd = start_quiet_target(&s, &pid);
	for (uint32_t i = 0; i < 200; i++) {
		uint8_t *src = s.buf + 1024;

		memset(src, (int)i, 256);
		assert_int_equal(fx_post(s.rc, IBV_WR_RDMA_WRITE, i, src, 256, s.mr->lkey, s.peer.addr + 4096,
					 s.peer.rkey),
				 0);
		assert_int_equal(wait_wc(s.cq, &wc), 0);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		memset(s.buf + 2048, 0xee, 256);
		assert_int_equal(fx_post(s.rc, IBV_WR_RDMA_READ, i, s.buf + 2048, 256, s.mr->lkey,
					 s.peer.addr + 4096, s.peer.rkey),
				 0);
		assert_int_equal(wait_wc(s.cq, &wc), 0);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_memory_equal(s.buf + 2048, src, 256);
	}
	close(fd);
	fx_expect_clean_exit(pid);
	side_close(&s);
}

/*
 * A peer that leaves while our SEND is in flight: the SEND ends in
 * RETRY_EXC_ERR when the QP's retry budget is spent, retry_cnt + 1 local ACK
 * timeouts, as on a NIC whose peer went silent, not the moment the peer's
 * connection closes nor at the first timeout.  (Either made
 * ibv_srq_pingpong's server see RETRY_EXC for a last send its client,
 * already done, would never answer, while it still had completions to reap:
 * under TSan, one timeout of 67 ms was not enough.)  Timeout 16 is 268 ms,
 * retry_cnt 7: 8 x 268 ms.  Only a lower bound is asserted, which a loaded
 * machine cannot break; the wait for the completion is 3 s past it.
 */
static void a_peer_that_left_fails_at_the_timeout(void **state)
{
	struct side s = {0};
	struct ibv_wc wc;
	uint64_t posted;
	pid_t pid;
	int fd;

	(void)state;
	fd = start_quiet_target(&s, &pid);
	/* Its QP came up with timeout 16 (ping_a_forked_ponger).  Stopped, nobody will ACK. */
	assert_int_equal(kill(pid, SIGSTOP), 0);
	posted = fx_now_ms();
	assert_int_equal(fx_post(s.rc, IBV_WR_SEND, 77, s.buf, 8, s.mr->lkey, 0, 0), 0);
	usleep(20000);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(wait_wc_ms(s.cq, &wc, 8 * 268 + 3000), 0);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	assert_true(fx_now_ms() - posted >= 8 * 268);
	close(fd);
	side_close(&s);
}

static void unreachable_peer_is_retry_exceeded(void **state)
{
	struct side s = {0};
	union ibv_gid nobody;
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(side_open(&s), 0);
	/* Our own GID with port 1: nothing listens there. */
	nobody = s.me.gid;
	nobody.raw[12] = 0;
	nobody.raw[13] = 1;
	fx_rc_to_rts(s.rc, 1234, &nobody, 10, 2, 7, 1);
	assert_int_equal(fx_post(s.rc, IBV_WR_RDMA_WRITE, 1, s.buf, 8, s.mr->lkey, 0x1000, 1), 0);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	side_close(&s);
}

static void bad_configuration_is_einval_with_message(void **state)
{
	(void)state;
	setenv("RDMATOOL_SOFT_FAULTS", "drop=2", 1);
	errno = 0;
	assert_null(hw_open_device("soft0", NULL));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(hw_open_error(), "drop=2"));
	setenv("RDMATOOL_SOFT_FAULTS", "bogus=1", 1);
	assert_null(hw_open_device("soft0", NULL));
	assert_non_null(strstr(hw_open_error(), "bogus"));
	unsetenv("RDMATOOL_SOFT_FAULTS");
	setenv("RDMATOOL_SOFT_ADDR", "localhost", 1);
	errno = 0;
	assert_null(hw_open_device("soft0", NULL));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(hw_open_error(), "RDMATOOL_SOFT_ADDR"));
	setenv("RDMATOOL_SOFT_ADDR", "127.0.0.1:0", 1);
	struct ibv_context *ctx = hw_open_device("soft0", NULL);

	assert_non_null(ctx);
	hw_close_device(ctx);
	unsetenv("RDMATOOL_SOFT_ADDR");
}

/*
 * Opens a side under RDMATOOL_SOFT_FAULTS=spec, its RC QP connected to
 * itself over the wire with the given timeout, retry and RNR retry counts.
 */
static void side_open_faulty(struct side *s, const char *spec, int timeout, int retry_cnt, int rnr_retry)
{
	setenv("RDMATOOL_SOFT_FAULTS", spec, 1);
	assert_int_equal(side_open(s), 0);
	unsetenv("RDMATOOL_SOFT_FAULTS");
	fx_rc_to_rts(s->rc, s->rc->qp_num, NULL, (uint8_t)timeout, (uint8_t)retry_cnt, (uint8_t)rnr_retry, 1);
}

/* One RDMA WRITE under the fault spec completes with exactly the given status. */
static void expect_write_status(const char *spec, enum ibv_wc_status want)
{
	struct side s = {0};
	struct ibv_wc wc;

	side_open_faulty(&s, spec, 8, 2, 7);
	assert_int_equal(
	    fx_post(s.rc, IBV_WR_RDMA_WRITE, 1, s.buf, 8, s.mr->lkey, (uintptr_t)s.buf + 64, s.mr->rkey), 0);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, want);
	side_close(&s);
}

/* drop=1: every request is lost, so RC retries and gives up with RETRY_EXC_ERR. */
static void fault_drop_all_is_retry_exceeded(void **state)
{
	(void)state;
	expect_write_status("drop=1,seed=7", IBV_WC_RETRY_EXC_ERR);
}

/* drop=0.3: RC still delivers every write exactly once, in order, by retransmission. */
static void fault_drop_some_is_recovered(void **state)
{
	struct side s = {0};
	struct ibv_wc wc;

	(void)state;
	side_open_faulty(&s, "drop=0.3,seed=3", 4, 7, 7);
	*(uint64_t *)(s.buf + 64) = 0;
	for (int i = 0; i < 20; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)s.buf, .length = 8, .lkey = s.mr->lkey};
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD},
				   *bad;

		wr.wr.atomic.remote_addr = (uintptr_t)s.buf + 64;
		wr.wr.atomic.rkey = s.mr->rkey;
		wr.wr.atomic.compare_add = 1;
		assert_int_equal(hw_post_send(s.rc, &wr, &bad), 0);
		assert_int_equal(wait_wc(s.cq, &wc), 0);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(*(uint64_t *)s.buf, (uint64_t)i);
	}
	assert_int_equal(*(uint64_t *)(s.buf + 64), 20);
	side_close(&s);
}

/* error=1: the responder refuses every request with REM_OP_ERR. */
static void fault_error_all_is_rem_op_err(void **state)
{
	(void)state;
	expect_write_status("error=1", IBV_WC_REM_OP_ERR);
}

static void fault_corrupt_flips_payload(void **state)
{
	struct side s = {0};
	struct ibv_wc wc;

	(void)state;
	side_open_faulty(&s, "corrupt=1,delay_us=100", 8, 2, 7);
	memset(s.buf, 'a', 64);
	assert_int_equal(
	    fx_post(s.rc, IBV_WR_RDMA_WRITE, 1, s.buf, 64, s.mr->lkey, (uintptr_t)s.buf + 1024, s.mr->rkey),
	    0);
	assert_int_equal(wait_wc(s.cq, &wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_not_equal(s.buf, s.buf + 1024, 64);
	side_close(&s);
}

/* RESET, then RTS toward QP dest_qpn through GID index gid_index (as source and destination). */
static void connect_through_gid(struct ibv_qp *qp, uint32_t dest_qpn, int gid_index, uint8_t retry_cnt)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	assert_int_equal(hw_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC};
	assert_int_equal(
	    hw_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	a = (struct ibv_qp_attr){
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = IBV_MTU_1024,
	    .dest_qp_num = dest_qpn,
	    .rq_psn = 7,
	    .max_dest_rd_atomic = 4,
	    .min_rnr_timer = 1,
	    .ah_attr = {.port_num = 1, .is_global = 1, .grh = {.sgid_index = (uint8_t)gid_index}}};
	assert_int_equal(hw_query_gid(qp->context, 1, gid_index, &a.ah_attr.grh.dgid), 0);
	assert_int_equal(hw_modify_qp(qp, &a,
				      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
			 0);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
				 .timeout = 10,
				 .retry_cnt = retry_cnt,
				 .rnr_retry = 7,
				 .sq_psn = 7,
				 .max_rd_atomic = 4};
	assert_int_equal(hw_modify_qp(qp, &a,
				      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
			 0);
}

/*
 * GID index 1 is the port again, reached through its own wire: a pair
 * addressed by it moves its traffic over two TCP connections of the NIC
 * to itself (a WRITE larger than an unverified connection may carry, a
 * SEND, a READ), with the same results as inside the NIC.  A large packet
 * for a QP that is not there is dropped, not the connection.
 */
static void gid_index_1_loops_through_the_wire(void **state)
{
	struct fx *f = *state;
	struct soft_nic *nic = soft_nic_of(f->ctx);
	enum { BIG = 3 * FX_BUF / 2 };
	unsigned char *src = malloc(BIG), *dst = calloc(1, BIG);
	struct ibv_mr *smr, *dmr;
	struct ibv_port_attr port;
	union ibv_gid g0, g1, none;
	unsigned long drops = atomic_load(&nic->foreign_drops), stale = atomic_load(&nic->stale_drops),
		      rejects = atomic_load(&nic->wire_rejects);
	int conns = atomic_load(&nic->n_conns);
	struct ibv_wc wc;

	assert_non_null(src);
	assert_non_null(dst);
	assert_int_equal(hw_query_port(f->ctx, 1, &port), 0);
	assert_int_equal(port.gid_tbl_len, 2);
	assert_int_equal(hw_query_gid(f->ctx, 1, 0, &g0), 0);
	assert_int_equal(hw_query_gid(f->ctx, 1, 1, &g1), 0);
	assert_memory_not_equal(g0.raw, g1.raw, 16);
	assert_int_equal(hw_query_gid(f->ctx, 1, 2, &none), EINVAL);
	for (int i = 0; i < BIG; i++)
		src[i] = (unsigned char)(i * 7 + 1);
	smr = hw_reg_mr(f->pd, src, BIG, IBV_ACCESS_LOCAL_WRITE);
	dmr = hw_reg_mr(f->pd, dst, BIG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(smr);
	assert_non_null(dmr);
	connect_through_gid(f->a, f->b->qp_num, 1, 7);
	connect_through_gid(f->b, f->a->qp_num, 1, 7);

	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 1, src, BIG, smr->lkey, (uintptr_t)dst, dmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(dst, src, BIG);
	assert_int_equal(fx_post_recv(f->b, 2, f->bbuf, 64, f->bmr->lkey), 0);
	memcpy(f->abuf, "over the wire", 14);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 3, f->abuf, 14, f->amr->lkey, 0, 0), 0);
	fx_wait(f->rcq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 14);
	assert_int_equal(wc.src_qp, f->a->qp_num);
	assert_string_equal((char *)f->bbuf, "over the wire");
	fx_wait(f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	memcpy(f->bbuf + 128, "read me", 8);
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_READ, 4, f->abuf + 256, 8, f->amr->lkey,
				 (uintptr_t)f->bbuf + 128, f->bmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)f->abuf + 256, "read me");
	/* Two connections more: the NIC dialled itself, and accepted that call. */
	assert_int_equal(atomic_load(&nic->n_conns), conns + 2);
	assert_int_equal(atomic_load(&nic->foreign_drops), drops);

	/*
	 * A large WRITE toward a QP number nobody has (as toward a QP destroyed meanwhile): the
	 * packet is dropped on arrival and A runs out of retries, but the connection stays up
	 * for everyone else's traffic.
	 */
	connect_through_gid(f->a, f->b->qp_num ^ 0x800000, 1, 1);
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 5, src, BIG, smr->lkey, (uintptr_t)dst, dmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	assert_true(atomic_load(&nic->stale_drops) >= stale + 2);
	assert_int_equal(atomic_load(&nic->wire_rejects), rejects);
	connect_through_gid(f->a, f->b->qp_num, 1, 7);
	connect_through_gid(f->b, f->a->qp_num, 1, 7);
	assert_int_equal(fx_post_recv(f->b, 6, f->bbuf, 64, f->bmr->lkey), 0);
	assert_int_equal(fx_post(f->a, IBV_WR_SEND, 7, f->abuf, 14, f->amr->lkey, 0, 0), 0);
	fx_wait(f->rcq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 6);
	fx_wait(f->scq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(atomic_load(&nic->n_conns), conns + 2);
	hw_dereg_mr(smr);
	hw_dereg_mr(dmr);
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(two_processes_over_the_wire),
	    cmocka_unit_test_setup_teardown(gid_index_1_loops_through_the_wire, fx_setup, fx_teardown),
	    cmocka_unit_test(ping_pong_answers_on_the_pingers_connection),
	    cmocka_unit_test(stranger_cannot_take_a_peers_place),
	    cmocka_unit_test(engine_serves_a_target_that_stopped_polling),
	    cmocka_unit_test(unreachable_peer_is_retry_exceeded),
	    cmocka_unit_test(a_peer_that_left_fails_at_the_timeout),
	    cmocka_unit_test(bad_configuration_is_einval_with_message),
	    cmocka_unit_test(fault_drop_all_is_retry_exceeded),
	    cmocka_unit_test(fault_drop_some_is_recovered),
	    cmocka_unit_test(fault_error_all_is_rem_op_err),
	    cmocka_unit_test(fault_corrupt_flips_payload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
