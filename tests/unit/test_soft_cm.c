/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft device's connection manager (hw_cm_soft): messages encode and
 * decode and reject what is malformed; an active and a passive id in one
 * process connect (private data both ways, QPs in RTS facing each other,
 * a SEND crosses), disconnect, reject, find no listener; a raw TCP peer
 * stands in for a CM that dies after ESTABLISHED or sends garbage.  Every
 * wait is a poll() on the channel fd with a deadline.
 */
#include "tests/unit/soft_fixture.h"
#include "hw/cm.h"
#include "hw/soft/cm/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <stdio.h>

#define WAIT_MS 3000

static const struct hw_cm_ops *cm = &hw_cm_soft;

/* The next event on ch, which must be `type` (and arrive within ms); the caller acks it. */
static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
					  unsigned ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev = NULL;

	assert_int_equal(poll(&pfd, 1, (int)ms), 1);
	assert_int_equal(cm->get_cm_event(ch, &ev), 0);
	if (ev->event != type)
		fail_msg("expected %d, got event %d status %d", type, ev->event, ev->status);
	return ev;
}

static void expect_quiet(struct rdma_event_channel *ch, unsigned ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	assert_int_equal(poll(&pfd, 1, (int)ms), 0);
}

static struct sockaddr_in loopback(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

/* A listening id on 127.0.0.1, any port; returns the port. */
static uint16_t start_listener(struct rdma_event_channel *ch, struct rdma_cm_id **listen)
{
	struct sockaddr_in sa = loopback(0);

	assert_int_equal(cm->create_id(ch, listen, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(cm->bind_addr(*listen, (struct sockaddr *)&sa), 0);
	assert_int_equal(cm->listen(*listen, 8), 0);
	assert_int_not_equal((*listen)->route.addr.src_sin.sin_port, 0);
	return ntohs((*listen)->route.addr.src_sin.sin_port);
}

static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC};

	a.cap.max_send_wr = a.cap.max_recv_wr = 8;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	return a;
}

/* An active id through address and route resolution, with a QP (its CQs made by the CM). */
static struct rdma_cm_id *resolved_client(struct rdma_event_channel *ch, uint16_t port)
{
	struct sockaddr_in dst = loopback(port);
	struct ibv_qp_init_attr a = qp_attr();
	struct rdma_cm_id *id;

	assert_int_equal(cm->create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(cm->resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	cm->ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, WAIT_MS));
	assert_non_null(id->verbs);
	assert_int_equal(cm->resolve_route(id, 1000), 0);
	cm->ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, WAIT_MS));
	assert_int_equal(cm->create_qp(id, NULL, &a), 0);
	assert_non_null(id->qp);
	assert_non_null(id->send_cq);
	assert_ptr_equal(a.send_cq, id->send_cq);
	return id;
}

static void msg_round_trip_and_malformed(void **state)
{
	struct soft_cm_msg m = {.type = SOFT_CM_REQ, .qp_type = IBV_QPT_RC, .qpn = 0x123456, .psn = 0xabcdef};
	struct soft_cm_msg back;
	uint8_t buf[SOFT_CM_HDR_LEN + SOFT_CM_MAX_PRIVATE], bad[sizeof(buf)];
	size_t len;

	(void)state;
	m.initiator_depth = 4;
	m.private_data_len = 5;
	memcpy(m.private_data, "hello", 5);
	m.gid[15] = 0x57;
	len = soft_cm_msg_encode(&m, buf);
	assert_int_equal(len, SOFT_CM_HDR_LEN + 5);
	assert_int_equal(soft_cm_msg_decode(buf, len, &back), (long)len);
	assert_int_equal(back.qpn, 0x123456);
	assert_int_equal(back.psn, 0xabcdef);
	assert_int_equal(back.initiator_depth, 4);
	assert_int_equal(back.gid[15], 0x57);
	assert_memory_equal(back.private_data, "hello", 5);
	/* Not all in yet: wait for more. */
	assert_int_equal(soft_cm_msg_decode(buf, len - 1, &back), 0);
	assert_int_equal(soft_cm_msg_decode(buf, 3, &back), 0);
	/* Malformed: magic, type, private data length, a 25-bit QPN, a REQ for an unknown QP type, reserved
	 * bytes. */
	memcpy(bad, buf, len);
	bad[0] ^= 1;
	assert_int_equal(soft_cm_msg_decode(bad, len, &back), -1);
	memcpy(bad, buf, len);
	bad[4] = 7;
	assert_int_equal(soft_cm_msg_decode(bad, len, &back), -1);
	memcpy(bad, buf, len);
	bad[36] = SOFT_CM_MAX_PRIVATE + 1;
	assert_int_equal(soft_cm_msg_decode(bad, sizeof(bad), &back), -1);
	memcpy(bad, buf, len);
	bad[15] = 1;
	assert_int_equal(soft_cm_msg_decode(bad, len, &back), -1);
	memcpy(bad, buf, len);
	bad[5] = 99;
	assert_int_equal(soft_cm_msg_decode(bad, len, &back), -1);
	memcpy(bad, buf, len);
	bad[38] = 1;
	assert_int_equal(soft_cm_msg_decode(bad, len, &back), -1);
}

static void connect_accept_send_disconnect(void **state)
{
	struct rdma_event_channel *sch = cm->create_event_channel(), *cch = cm->create_event_channel();
	struct rdma_cm_id *listen, *server, *client;
	struct rdma_conn_param cp = {.private_data = "hello",
				     .private_data_len = 5,
				     .initiator_depth = 2,
				     .responder_resources = 2,
				     .retry_count = 7,
				     .rnr_retry_count = 7};
	struct rdma_conn_param ap = {
	    .private_data = "world!", .private_data_len = 6, .initiator_depth = 2, .responder_resources = 2};
	struct ibv_qp_init_attr a = qp_attr();
	struct rdma_cm_event *ev;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	uint16_t port;

	(void)state;
	assert_non_null(sch);
	assert_non_null(cch);
	port = start_listener(sch, &listen);
	client = resolved_client(cch, port);
	assert_int_equal(cm->connect(client, &cp), 0);

	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST, WAIT_MS);
	assert_ptr_equal(ev->listen_id, listen);
	server = ev->id;
	assert_non_null(server->verbs);
	assert_int_equal(ev->param.conn.private_data_len, 5);
	assert_memory_equal(ev->param.conn.private_data, "hello", 5);
	assert_int_equal(ev->param.conn.initiator_depth, 2);
	assert_int_equal(ev->param.conn.qp_num, client->qp->qp_num);
	cm->ack_cm_event(ev);
	assert_int_equal(cm->create_qp(server, NULL, &a), 0);
	assert_int_equal(cm->accept(server, &ap), 0);

	ev = expect_event(cch, RDMA_CM_EVENT_ESTABLISHED, WAIT_MS);
	assert_ptr_equal(ev->id, client);
	assert_int_equal(ev->param.conn.private_data_len, 6);
	assert_memory_equal(ev->param.conn.private_data, "world!", 6);
	cm->ack_cm_event(ev);
	cm->ack_cm_event(expect_event(sch, RDMA_CM_EVENT_ESTABLISHED, WAIT_MS));

	/* Both QPs in RTS, each facing the other. */
	assert_int_equal(hw_query_qp(client->qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	assert_int_equal(qa.dest_qp_num, server->qp->qp_num);
	assert_int_equal(hw_query_qp(server->qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	assert_int_equal(qa.dest_qp_num, client->qp->qp_num);

	/* A SEND crosses on the QPs the CM connected. */
	{
		char out[32] = "over the cm", in[32] = {0};
		struct ibv_mr *omr = hw_reg_mr(client->pd, out, sizeof(out), IBV_ACCESS_LOCAL_WRITE);
		struct ibv_mr *imr = hw_reg_mr(server->pd, in, sizeof(in), IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge osge = {.addr = (uintptr_t)out, .length = sizeof(out), .lkey = omr->lkey};
		struct ibv_sge isge = {.addr = (uintptr_t)in, .length = sizeof(in), .lkey = imr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &isge, .num_sge = 1}, *bad_r;
		struct ibv_send_wr swr = {.wr_id = 2,
					  .sg_list = &osge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED},
				   *bad_s;
		struct ibv_wc wc;

		assert_int_equal(hw_post_recv(server->qp, &rwr, &bad_r), 0);
		assert_int_equal(hw_post_send(client->qp, &swr, &bad_s), 0);
		fx_wait(server->recv_cq, &wc, WAIT_MS);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_string_equal(in, "over the cm");
		fx_wait(client->send_cq, &wc, WAIT_MS);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		hw_dereg_mr(omr);
		hw_dereg_mr(imr);
	}

	assert_int_equal(cm->disconnect(client), 0);
	cm->ack_cm_event(expect_event(sch, RDMA_CM_EVENT_DISCONNECTED, WAIT_MS));
	cm->ack_cm_event(expect_event(cch, RDMA_CM_EVENT_DISCONNECTED, WAIT_MS));
	assert_int_equal(hw_query_qp(client->qp, &qa, IBV_QP_STATE, &qi), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_ERR);
	assert_int_equal(cm->disconnect(server), 0); /* after the peer's: no error, no event */
	expect_quiet(sch, 100);

	cm->destroy_qp(client);
	cm->destroy_qp(server);
	assert_int_equal(cm->destroy_id(client), 0);
	assert_int_equal(cm->destroy_id(server), 0);
	assert_int_equal(cm->destroy_id(listen), 0);
	cm->destroy_event_channel(sch);
	cm->destroy_event_channel(cch);
}

static void no_listener_is_rejected(void **state)
{
	struct rdma_event_channel *ch = cm->create_event_channel();
	struct rdma_cm_id *listen, *client;
	struct rdma_cm_event *ev;
	uint16_t port;

	(void)state;
	/* A port that was just free: listen, note it, close. */
	port = start_listener(ch, &listen);
	cm->destroy_id(listen);
	client = resolved_client(ch, port);
	assert_int_equal(cm->connect(client, NULL), 0);
	/* The channel fd in an epoll set: readable once the answer is in. */
	{
		int ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event e = {.events = EPOLLIN}, got;

		assert_true(ep >= 0);
		assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &e), 0);
		assert_int_equal(epoll_wait(ep, &got, 1, WAIT_MS), 1);
		close(ep);
	}
	ev = expect_event(ch, RDMA_CM_EVENT_REJECTED, WAIT_MS);
	assert_int_equal(ev->status, SOFT_CM_REJ_NO_LISTENER);
	cm->ack_cm_event(ev);
	cm->destroy_qp(client);
	cm->destroy_id(client);
	cm->destroy_event_channel(ch);
}

static void reject_carries_private_data(void **state)
{
	struct rdma_event_channel *ch = cm->create_event_channel();
	struct rdma_cm_id *listen, *client;
	struct rdma_cm_event *ev;

	(void)state;
	client = resolved_client(ch, start_listener(ch, &listen));
	assert_int_equal(cm->connect(client, NULL), 0);
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, WAIT_MS);
	assert_int_equal(cm->reject(ev->id, "busy", 4), 0);
	cm->destroy_id(ev->id);
	cm->ack_cm_event(ev);
	ev = expect_event(ch, RDMA_CM_EVENT_REJECTED, WAIT_MS);
	assert_ptr_equal(ev->id, client);
	assert_int_equal(ev->status, SOFT_CM_REJ_CONSUMER);
	assert_int_equal(ev->param.conn.private_data_len, 4);
	assert_memory_equal(ev->param.conn.private_data, "busy", 4);
	cm->ack_cm_event(ev);
	cm->destroy_qp(client);
	cm->destroy_id(client);
	cm->destroy_id(listen);
	cm->destroy_event_channel(ch);
}

/* A raw TCP peer speaking the CM protocol by hand: connects and sends a REQ for qp. */
static int raw_peer(uint16_t port, const struct ibv_qp *qp)
{
	struct sockaddr_in sa = loopback(port);
	struct soft_cm_msg req = {.type = SOFT_CM_REQ, .qp_type = IBV_QPT_RC, .psn = 1, .initiator_depth = 1};
	uint8_t buf[SOFT_CM_HDR_LEN + SOFT_CM_MAX_PRIVATE];
	union ibv_gid gid;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(hw_query_gid(qp->context, 1, 0, &gid), 0);
	memcpy(req.gid, gid.raw, 16);
	req.qpn = qp->qp_num;
	assert_int_equal(write(fd, buf, soft_cm_msg_encode(&req, buf)), SOFT_CM_HDR_LEN);
	return fd;
}

/* An RC QP in INIT on ctx, for the raw peer to name. */
static struct ibv_qp *init_qp(struct ibv_context *ctx, struct ibv_pd **pd, struct ibv_cq **cq)
{
	struct ibv_qp_init_attr a = qp_attr();
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_qp *qp;

	*pd = hw_alloc_pd(ctx);
	*cq = hw_create_cq(ctx, 16, NULL, NULL, 0);
	a.send_cq = a.recv_cq = *cq;
	qp = hw_create_qp(*pd, &a);
	assert_non_null(qp);
	assert_int_equal(
	    hw_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	return qp;
}

static void peer_death_and_garbage(void **state)
{
	struct rdma_event_channel *ch = cm->create_event_channel();
	struct ibv_qp_init_attr a = qp_attr();
	struct rdma_cm_id *listen, *server;
	struct rdma_cm_event *ev;
	struct soft_cm_msg rep;
	uint8_t buf[SOFT_CM_HDR_LEN + SOFT_CM_MAX_PRIVATE];
	struct ibv_context *ctx = hw_open_device("soft0", NULL);
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *peer_qp;
	unsigned long bad = soft_cm_bad_messages();
	uint16_t port = start_listener(ch, &listen);
	ssize_t n;
	int fd;

	(void)state;
	assert_non_null(ctx);
	peer_qp = init_qp(ctx, &pd, &cq);

	/* Garbage in place of a REQ: counted, the connection closed, nothing reported. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	{
		struct sockaddr_in sa = loopback(port);
		char junk[64];

		memset(junk, 0xa5, sizeof(junk));
		assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(write(fd, junk, sizeof(junk)), sizeof(junk));
	}
	for (uint64_t end = fx_now_ms() + WAIT_MS; soft_cm_bad_messages() == bad && fx_now_ms() < end;)
		usleep(1000);
	assert_int_equal(soft_cm_bad_messages(), bad + 1);
	expect_quiet(ch, 100);
	close(fd);

	/* A well-formed peer: REQ, our REP, its RTU, ESTABLISHED; then it dies: DISCONNECTED. */
	fd = raw_peer(port, peer_qp);
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, WAIT_MS);
	server = ev->id;
	cm->ack_cm_event(ev);
	assert_int_equal(cm->create_qp(server, NULL, &a), 0);
	assert_int_equal(cm->accept(server, NULL), 0);
	n = read(fd, buf, sizeof(buf));
	assert_int_equal(soft_cm_msg_decode(buf, (size_t)n, &rep), SOFT_CM_HDR_LEN);
	assert_int_equal(rep.type, SOFT_CM_REP);
	assert_int_equal(rep.qpn, server->qp->qp_num);
	assert_int_equal(write(fd, buf, soft_cm_msg_encode(&(struct soft_cm_msg){.type = SOFT_CM_RTU}, buf)),
			 SOFT_CM_HDR_LEN);
	cm->ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, WAIT_MS));
	close(fd);
	cm->ack_cm_event(expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, WAIT_MS));
	cm->destroy_qp(server);
	cm->destroy_id(server);

	/* An ESTABLISHED peer that then sends garbage: counted and DISCONNECTED, not a crash. */
	bad = soft_cm_bad_messages();
	fd = raw_peer(port, peer_qp);
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, WAIT_MS);
	server = ev->id;
	cm->ack_cm_event(ev);
	assert_int_equal(cm->accept(server, NULL), 0); /* no QP: the REP names none */
	assert_true(read(fd, buf, sizeof(buf)) > 0);
	assert_int_equal(write(fd, buf, soft_cm_msg_encode(&(struct soft_cm_msg){.type = SOFT_CM_RTU}, buf)),
			 SOFT_CM_HDR_LEN);
	cm->ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, WAIT_MS));
	/* A second RTU is well formed but out of place. */
	assert_int_equal(write(fd, buf, soft_cm_msg_encode(&(struct soft_cm_msg){.type = SOFT_CM_RTU}, buf)),
			 SOFT_CM_HDR_LEN);
	cm->ack_cm_event(expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, WAIT_MS));
	assert_int_equal(soft_cm_bad_messages(), bad + 1);
	close(fd);
	cm->destroy_id(server);

	cm->destroy_id(listen);
	cm->destroy_event_channel(ch);
	hw_destroy_qp(peer_qp);
	hw_destroy_cq(cq);
	hw_dealloc_pd(pd);
	hw_close_device(ctx);
}

/* A non-blocking channel fd: rdma_get_cm_event says EAGAIN, as librdmacm's does. */
static void nonblocking_channel_is_eagain(void **state)
{
	struct rdma_event_channel *ch = cm->create_event_channel();
	struct rdma_cm_event *ev;

	(void)state;
	assert_int_equal(fcntl(ch->fd, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(cm->get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	cm->destroy_event_channel(ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(msg_round_trip_and_malformed), cmocka_unit_test(connect_accept_send_disconnect),
	    cmocka_unit_test(no_listener_is_rejected),	    cmocka_unit_test(reject_carries_private_data),
	    cmocka_unit_test(peer_death_and_garbage),	    cmocka_unit_test(nonblocking_channel_is_eagain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
