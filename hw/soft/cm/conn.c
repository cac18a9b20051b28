/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft CM's thread: it accepts connections on listening ids, reads
 * every id's connection, runs the REQ/REP/RTU/REJ/DREQ/DREP exchange
 * (cm.h) and turns what happens into events, including the deadlines of
 * each wait (a peer that never answers, a connection that never sends its
 * REQ).  Ids are named in the epoll set by serial number, so an id the
 * application destroyed meanwhile is simply not found.
 */
#include "hw/soft/cm/id.h"
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#define SOFT_CM_TICK_MS	    20
#define SOFT_CM_REQ_WAIT_NS 2000000000ull /* an accepted connection must send its REQ by then */

static pthread_once_t soft_cm_once = PTHREAD_ONCE_INIT;
static int soft_cm_epoll = -1;

/*
 * A forked child has no CM thread and shares the parent's epoll set and
 * sockets: it starts afresh, with none of the parent's ids (their sockets
 * stay the parent's to use).
 */
static void soft_cm_forget_in_child(void)
{
	pthread_mutex_init(&soft_cm_lock, NULL);
	soft_cm_once = (pthread_once_t)PTHREAD_ONCE_INIT;
	if (soft_cm_epoll >= 0)
		close(soft_cm_epoll);
	soft_cm_epoll = -1;
	soft_cm_forget_ids();
}

static void soft_cm_register_atfork(void)
{
	pthread_atfork(NULL, NULL, soft_cm_forget_in_child);
}

void soft_cm_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, soft_cm_register_atfork);
}

static void *soft_cm_thread(void *arg);

static void soft_cm_start(void)
{
	pthread_t t;
	pthread_attr_t attr;

	soft_cm_epoll = epoll_create1(EPOLL_CLOEXEC);
	if (soft_cm_epoll < 0)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, soft_cm_thread, NULL)) {
		close(soft_cm_epoll);
		soft_cm_epoll = -1;
	}
	pthread_attr_destroy(&attr);
}

int soft_cm_watch(struct soft_cm_id *id, uint32_t events)
{
	struct epoll_event ev = {.events = events};

	pthread_once(&soft_cm_once, soft_cm_start);
	if (soft_cm_epoll < 0)
		return EAGAIN;
	if (!id)
		return 0;
	ev.data.u64 = id->serial;
	if (epoll_ctl(soft_cm_epoll, EPOLL_CTL_MOD, id->fd, &ev) == 0)
		return 0;
	return epoll_ctl(soft_cm_epoll, EPOLL_CTL_ADD, id->fd, &ev) ? errno : 0;
}

void soft_cm_close(struct soft_cm_id *id)
{
	if (id->fd < 0)
		return;
	if (soft_cm_epoll >= 0)
		epoll_ctl(soft_cm_epoll, EPOLL_CTL_DEL, id->fd, NULL);
	close(id->fd);
	id->fd = -1;
	id->in_len = 0;
	id->deadline_ns = 0;
}

/*
 * A peer whose host dies sends no FIN: keepalive probes find it within
 * about 8 s, and the ESTABLISHED id then gets DISCONNECTED like any other
 * lost connection.
 */
static void soft_cm_keepalive(int fd)
{
	int on = 1, idle = 5, intvl = 1, cnt = 3;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

int soft_cm_send(struct soft_cm_id *id, const struct soft_cm_msg *m)
{
	uint8_t buf[SOFT_CM_HDR_LEN + SOFT_CM_MAX_PRIVATE];
	size_t len = soft_cm_msg_encode(m, buf);

	/* A fresh socket's buffer takes a message this small whole. */
	if (id->fd < 0 || send(id->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len)
		return EPIPE;
	return 0;
}

static uint8_t soft_cm_clamp_rd(uint8_t v)
{
	return v > 16 ? 16 : v;
}

int soft_cm_qp_connect(struct soft_cm_id *id)
{
	struct ibv_qp_attr a;
	int mask;

	if (!id->id.qp || id->id.qp_type == IBV_QPT_UD)
		return 0; /* UD: in RTS since rdma_create_qp */
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR};
	if (soft_cm_init_qp_attr(&id->id, &a, &mask) || soft_modify_qp(id->id.qp, &a, mask))
		return errno ? errno : EINVAL;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS};
	if (soft_cm_init_qp_attr(&id->id, &a, &mask))
		return errno;
	return soft_modify_qp(id->id.qp, &a, mask);
}

int soft_cm_init_qp_attr(struct rdma_cm_id *cm_id, struct ibv_qp_attr *a, int *mask)
{
	struct soft_cm_id *id = to_soft_cm_id(cm_id);
	enum ibv_qp_state want = a->qp_state;

	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	if (id->id.qp_type == IBV_QPT_UD) {
		/* UD (RDMA_PS_UDP): no peer to face; librdmacm's well-known qkey. */
		*mask = IBV_QP_STATE;
		if (want == IBV_QPS_INIT) {
			a->port_num = 1;
			a->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		} else if (want == IBV_QPS_RTS) {
			a->sq_psn = id->mine.psn;
			*mask |= IBV_QP_SQ_PSN;
		} else if (want != IBV_QPS_RTR) {
			errno = EINVAL;
			return -1;
		}
		return 0;
	}
	switch (want) {
	case IBV_QPS_INIT:
		a->port_num = 1;
		a->qp_access_flags =
		    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		if (!id->peer.type)
			break;
		a->path_mtu = IBV_MTU_4096;
		a->dest_qp_num = id->peer.qpn;
		a->rq_psn = id->peer.psn;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.hop_limit = 1;
		memcpy(a->ah_attr.grh.dgid.raw, id->peer.gid, 16);
		/* Reads the peer may have outstanding toward us: its initiator depth. */
		a->max_dest_rd_atomic = soft_cm_clamp_rd(id->peer.initiator_depth);
		a->min_rnr_timer = 12;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		if (!id->peer.type)
			break;
		a->sq_psn = id->mine.psn;
		/*
		 * The kernel CM's default on RoCE: its path's packet life time (16,
		 * CMA_IBOE_PACKET_LIFETIME) + 1, about 0.5 s a try.  A peer whose
		 * process is starved for a moment (a loaded machine: the soft NIC
		 * answers from there) is not given up on after 0.5 s in all.
		 */
		a->timeout = id->ack_timeout ? id->ack_timeout : 17;
		a->retry_cnt = id->mine.retry_count ? id->mine.retry_count : 7;
		a->rnr_retry = id->mine.rnr_retry_count ? id->mine.rnr_retry_count : 7;
		if (a->retry_cnt > 7)
			a->retry_cnt = 7;
		if (a->rnr_retry > 7)
			a->rnr_retry = 7;
		/* Reads we may have outstanding: our initiator depth, within what the peer serves. */
		a->max_rd_atomic = soft_cm_clamp_rd(id->mine.initiator_depth < id->peer.responder_resources
							? id->mine.initiator_depth
							: id->peer.responder_resources);
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		break;
	}
	errno = EINVAL;
	return -1;
}

/* The connection is gone (closed, broken, or it sent something malformed): what that means depends on the
 * state. */
static void soft_cm_lost(struct soft_cm_id *id)
{
	struct rdma_cm_id *cm = &id->id;

	soft_cm_close(id);
	switch (id->state) {
	case SOFT_CM_REQ_WAIT: /* never reported: it just goes */
		soft_cm_unlink(id);
		free(id);
		return;
	case SOFT_CM_CONNECTING:
	case SOFT_CM_REQ_SENT:
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL);
		break;
	case SOFT_CM_ACCEPTED:
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, NULL);
		break;
	case SOFT_CM_REP_RECEIVED:
	case SOFT_CM_ESTABLISHED:
	case SOFT_CM_DISCONNECTING:
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		break;
	default:
		break;
	}
	id->state = id->state == SOFT_CM_REQ_RECEIVED ? SOFT_CM_REQ_RECEIVED : SOFT_CM_DISCONNECTED;
}

static void soft_cm_got_req(struct soft_cm_id *id, const struct soft_cm_msg *m)
{
	struct soft_cm_id *l = id->listener;
	socklen_t len = sizeof(id->id.route.addr.src_storage);

	if (!l) {
		/* Not reached: a listener takes its unreported connections with it (soft_cm_destroy_id). */
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
		return;
	}
	id->peer = *m;
	id->deadline_ns = 0;
	getsockname(id->fd, &id->id.route.addr.src_addr, &len);
	len = sizeof(id->id.route.addr.dst_storage);
	getpeername(id->fd, &id->id.route.addr.dst_addr, &len);
	/* The listener's port, as librdmacm reports it for the new id. */
	id->id.route.addr.src_sin.sin_port = l->id.route.addr.src_sin.sin_port;
	id->state = SOFT_CM_REQ_RECEIVED;
	soft_cm_post(id->id.channel, &id->id, &l->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m);
}

static void soft_cm_got_rep(struct soft_cm_id *id, const struct soft_cm_msg *m)
{
	struct soft_cm_msg rtu = {.type = SOFT_CM_RTU};
	int err;

	id->peer = *m;
	if (id->id.qp_type == IBV_QPT_UD) {
		/* SIDR: the answer is the whole exchange; no RTU, nothing to disconnect. */
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
		soft_cm_post(id->id.channel, &id->id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, m);
		return;
	}
	err = soft_cm_qp_connect(id);
	if (err) {
		struct soft_cm_msg rej = {.type = SOFT_CM_REJ, .status = SOFT_CM_REJ_CONSUMER};

		soft_cm_send(id, &rej);
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
		soft_cm_post(id->id.channel, &id->id, NULL, RDMA_CM_EVENT_CONNECT_ERROR, -err, NULL);
		return;
	}
	if (!id->id.qp) {
		/* An external QP: its owner moves it (rdma_init_qp_attr), then rdma_establish sends the RTU.
		 */
		id->state = SOFT_CM_REP_RECEIVED;
		id->deadline_ns = 0;
		soft_cm_post(id->id.channel, &id->id, NULL, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, m);
		return;
	}
	if (soft_cm_send(id, &rtu)) {
		soft_cm_lost(id);
		return;
	}
	id->state = SOFT_CM_ESTABLISHED;
	id->deadline_ns = 0;
	soft_cm_post(id->id.channel, &id->id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, m);
}

/* One message from the peer; false when it does not fit the state (the connection then goes). */
static bool soft_cm_handle(struct soft_cm_id *id, const struct soft_cm_msg *m)
{
	struct rdma_cm_id *cm = &id->id;

	switch (m->type) {
	case SOFT_CM_REQ:
		if (id->state != SOFT_CM_REQ_WAIT)
			return false;
		soft_cm_got_req(id, m);
		return true;
	case SOFT_CM_REP:
		if (id->state != SOFT_CM_REQ_SENT)
			return false;
		soft_cm_got_rep(id, m);
		return true;
	case SOFT_CM_REJ:
		if (id->state != SOFT_CM_REQ_SENT)
			return false;
		soft_cm_close(id);
		id->state = SOFT_CM_ROUTE_RESOLVED;
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_REJECTED, m->status, m);
		return true;
	case SOFT_CM_RTU:
		if (id->state != SOFT_CM_ACCEPTED)
			return false;
		id->state = SOFT_CM_ESTABLISHED;
		id->deadline_ns = 0;
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
		return true;
	case SOFT_CM_DREQ:
		if (id->state != SOFT_CM_ESTABLISHED && id->state != SOFT_CM_DISCONNECTING &&
		    id->state != SOFT_CM_REP_RECEIVED)
			return false;
		soft_cm_send(id, &(struct soft_cm_msg){.type = SOFT_CM_DREP});
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		return true;
	case SOFT_CM_DREP:
		if (id->state != SOFT_CM_DISCONNECTING)
			return false;
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		return true;
	default:
		return false;
	}
}

static void soft_cm_read(struct soft_cm_id *id)
{
	ssize_t n = recv(id->fd, id->in + id->in_len, sizeof(id->in) - id->in_len, MSG_DONTWAIT);
	struct soft_cm_msg m;
	long used;

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		soft_cm_lost(id);
		return;
	}
	if (n < 0)
		return;
	id->in_len += (size_t)n;
	while (id->fd >= 0 && (used = soft_cm_msg_decode(id->in, id->in_len, &m)) != 0) {
		if (used < 0 || !soft_cm_handle(id, &m)) {
			soft_cm_count_bad_message();
			soft_cm_lost(id);
			return;
		}
		if (id->fd < 0)
			return;
		memmove(id->in, id->in + used, id->in_len - (size_t)used);
		id->in_len -= (size_t)used;
	}
}

/* Refused: tried again shortly while the retry window lasts, then REJECTED as "no listener". */
static void soft_cm_refused(struct soft_cm_id *id)
{
	uint64_t now = soft_now_ns();

	soft_cm_close(id);
	if (now < id->refused_until_ns) {
		id->redial_ns = now + SOFT_CM_REFUSED_SPACING_NS;
		return;
	}
	id->state = SOFT_CM_ROUTE_RESOLVED;
	soft_cm_post(id->id.channel, &id->id, NULL, RDMA_CM_EVENT_REJECTED, SOFT_CM_REJ_NO_LISTENER, NULL);
}

int soft_cm_dial(struct soft_cm_id *id)
{
	struct rdma_cm_id *cm = &id->id;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err;

	id->redial_ns = 0;
	if (fd < 0)
		return errno;
	soft_cm_keepalive(fd);
	id->fd = fd;
	if (connect(fd, &cm->route.addr.dst_addr, sizeof(struct sockaddr_in)) && errno != EINPROGRESS) {
		err = errno;
		if (err != ECONNREFUSED) {
			soft_cm_close(id);
			return err;
		}
		soft_cm_refused(id); /* at once, on loopback */
		err = 0;
	} else {
		err = soft_cm_watch(id, EPOLLOUT | EPOLLIN);
		if (err)
			soft_cm_close(id);
		else if (!id->deadline_ns)
			id->deadline_ns = soft_now_ns() + SOFT_CM_CONNECT_WAIT_NS;
	}
	/* A retry needs the CM thread even when no socket is being watched. */
	if (!err && id->redial_ns)
		err = soft_cm_watch(NULL, 0);
	return err;
}

/* The active side's TCP connect finished: send the REQ, or report why not. */
static void soft_cm_connected(struct soft_cm_id *id)
{
	struct rdma_cm_id *cm = &id->id;
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
		len = sizeof(cm->route.addr.src_storage);
		getsockname(id->fd, &cm->route.addr.src_addr, &len);
		if (soft_cm_send(id, &id->mine) == 0 && soft_cm_watch(id, EPOLLIN) == 0) {
			id->state = SOFT_CM_REQ_SENT;
			return;
		}
		err = EPIPE;
	}
	if (err == ECONNREFUSED) {
		soft_cm_refused(id);
		return;
	}
	soft_cm_close(id);
	id->state = SOFT_CM_ROUTE_RESOLVED;
	soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_UNREACHABLE, -err, NULL);
}

static void soft_cm_accept_conns(struct soft_cm_id *l)
{
	int fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct soft_cm_id *c = soft_cm_new_id(l->id.channel, l->id.context, l->id.ps);

		if (!c) {
			close(fd);
			continue;
		}
		soft_cm_keepalive(fd);
		c->fd = fd;
		c->listener = l;
		c->state = SOFT_CM_REQ_WAIT;
		c->id.verbs = l->id.verbs;
		c->id.pd = l->id.pd;
		c->id.port_num = 1;
		c->id.qp_type = l->id.qp_type;
		c->deadline_ns = soft_now_ns() + SOFT_CM_REQ_WAIT_NS;
		if (soft_cm_watch(c, EPOLLIN)) {
			soft_cm_lost(c);
			continue;
		}
	}
}

static void soft_cm_deadlines(void)
{
	uint64_t now = soft_now_ns();

	for (struct soft_cm_id *id = soft_cm_ids, *next; id; id = next) {
		next = id->next;
		if (id->state == SOFT_CM_CONNECTING && id->redial_ns && now >= id->redial_ns) {
			int err = soft_cm_dial(id);

			if (err) {
				id->state = SOFT_CM_ROUTE_RESOLVED;
				id->deadline_ns = 0;
				soft_cm_post(id->id.channel, &id->id, NULL, RDMA_CM_EVENT_UNREACHABLE, -err,
					     NULL);
			}
			continue;
		}
		if (!id->deadline_ns || now < id->deadline_ns)
			continue;
		id->deadline_ns = 0;
		if (id->state == SOFT_CM_CONNECTING || id->state == SOFT_CM_REQ_SENT) {
			soft_cm_close(id);
			id->state = SOFT_CM_ROUTE_RESOLVED;
			soft_cm_post(id->id.channel, &id->id, NULL, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT,
				     NULL);
		} else {
			soft_cm_lost(id);
		}
	}
}

static void *soft_cm_thread(void *arg)
{
	struct epoll_event ev[32];

	(void)arg;
	for (;;) {
		int n = epoll_wait(soft_cm_epoll, ev, 32, SOFT_CM_TICK_MS);

		pthread_mutex_lock(&soft_cm_lock);
		for (int i = 0; i < n; i++) {
			struct soft_cm_id *id = soft_cm_find(ev[i].data.u64);

			if (!id || id->fd < 0)
				continue;
			if (id->state == SOFT_CM_LISTENING)
				soft_cm_accept_conns(id);
			else if (id->state == SOFT_CM_CONNECTING)
				soft_cm_connected(id);
			else
				soft_cm_read(id);
		}
		soft_cm_deadlines();
		pthread_mutex_unlock(&soft_cm_lock);
	}
	return NULL;
}
