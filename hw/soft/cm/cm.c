/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The soft CM's operations on ids (cm.h); id.c keeps the ids, conn.c does what follows on the wire. */
#include "hw/soft/cm/id.h"
#include "hw/soft/soft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Private data an IB CM message carries for a TCP port space id (librdmacm's limits). */
#define SOFT_CM_REQ_PRIVATE 56
#define SOFT_CM_REP_PRIVATE 196
#define SOFT_CM_REJ_PRIVATE 148

static int soft_cm_fail(int err)
{
	errno = err;
	return -1;
}

int soft_cm_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		      enum rdma_port_space ps)
{
	struct rdma_event_channel *own = NULL;
	struct soft_cm_id *id;

	if (!out)
		return soft_cm_fail(EINVAL);
	soft_cm_init();
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB && ps != RDMA_PS_UDP)
		return soft_cm_fail(EPROTONOSUPPORT); /* no IPoIB port space */
	if (!channel) {
		own = soft_cm_create_event_channel();
		if (!own)
			return -1;
	}
	pthread_mutex_lock(&soft_cm_lock);
	id = soft_cm_new_id(channel ? channel : own, context, ps);
	if (id)
		id->sync = own != NULL;
	pthread_mutex_unlock(&soft_cm_lock);
	if (!id) {
		soft_cm_destroy_event_channel(own);
		return soft_cm_fail(ENOMEM);
	}
	*out = &id->id;
	return 0;
}

/* A connection request never reported (its event dropped with the listener): refused and gone. */
static void soft_cm_refuse_unreported(struct soft_cm_id *c)
{
	struct rdma_cm_id *grandchild;

	soft_cm_send(c, &(struct soft_cm_msg){.type = SOFT_CM_REJ, .status = SOFT_CM_REJ_NO_LISTENER});
	soft_cm_close(c);
	while (soft_cm_drop_event(c->id.channel, &c->id, &grandchild))
		;
	soft_cm_unlink(c);
	free(c);
}

int soft_cm_destroy_id(struct rdma_cm_id *cm)
{
	struct soft_cm_id *id;
	struct rdma_event_channel *own = NULL;
	struct rdma_cm_id *child;

	if (!soft_cm_lock_live(cm))
		return -1;
	id = to_soft_cm_id(cm);
	soft_cm_close(id);
	soft_cm_unlink(id);
	/* Its events not yet retrieved go with it; so do the connection requests it never reported. */
	while (soft_cm_drop_event(cm->channel, cm, &child))
		if (child && soft_cm_live(child))
			soft_cm_refuse_unreported(to_soft_cm_id(child));
	/* Connections not yet reported are refused with their listener; reported ones forget it. */
	for (struct soft_cm_id *c = soft_cm_ids, *next; c; c = next) {
		next = c->next;
		if (c->listener != id)
			continue;
		c->listener = NULL;
		if (c->state == SOFT_CM_REQ_WAIT)
			soft_cm_refuse_unreported(c);
	}
	if (id->sync)
		own = cm->channel;
	if (id->port_fd >= 0)
		close(id->port_fd);
	id->port_fd = -1;
	soft_cm_retire(id);
	pthread_mutex_unlock(&soft_cm_lock);
	soft_cm_destroy_event_channel(own);
	return 0;
}

static int soft_cm_set_addr(struct sockaddr *to, const struct sockaddr *from)
{
	if (!from || from->sa_family != AF_INET)
		return EAFNOSUPPORT;
	memcpy(to, from, sizeof(struct sockaddr_in));
	return 0;
}

/* Binds the id to the soft device (there is one); lock held. */
static int soft_cm_attach(struct soft_cm_id *id)
{
	id->id.verbs = soft_cm_context();
	if (!id->id.verbs)
		return errno ? errno : ENODEV;
	id->id.port_num = 1;
	/* As librdmacm: the device's default PD, for QPs made without one (pyverbs' cmid.pd). */
	id->id.pd = soft_cm_default_pd(&id->id);
	return 0;
}

/*
 * Binds a socket to the id's source address, as the kernel CM reserves the
 * port at rdma_bind_addr: port 0 becomes an ephemeral port at once (a server
 * reads it with rdma_get_src_port before it listens and tells its client:
 * qperf), and a port in use fails here with EADDRINUSE.  Lock held.
 */
static int soft_cm_reserve_port(struct soft_cm_id *id)
{
	struct rdma_cm_id *cm = &id->id;
	socklen_t len = sizeof(struct sockaddr_in);
	int one = 1, err = 0;

	/*
	 * SO_REUSEADDR (a restarted server rebinds past TIME_WAIT) lets two bound
	 * sockets share a port until one listens: this process's ids are checked here.
	 */
	for (struct soft_cm_id *o = soft_cm_ids; o && cm->route.addr.src_sin.sin_port; o = o->next)
		if (o != id && (o->port_fd >= 0 || o->state == SOFT_CM_LISTENING) &&
		    o->id.route.addr.src_sin.sin_port == cm->route.addr.src_sin.sin_port)
			return EADDRINUSE;

	id->port_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (id->port_fd < 0)
		return errno;
	setsockopt(id->port_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(id->port_fd, &cm->route.addr.src_addr, sizeof(struct sockaddr_in)) ||
	    getsockname(id->port_fd, &cm->route.addr.src_addr, &len)) {
		err = errno;
		close(id->port_fd);
		id->port_fd = -1;
	}
	return err;
}

int soft_cm_bind_addr(struct rdma_cm_id *cm, struct sockaddr *addr)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	int err;

	if (!soft_cm_lock_live(cm))
		return -1;
	err = id->state != SOFT_CM_IDLE ? EINVAL : soft_cm_set_addr(&cm->route.addr.src_addr, addr);
	if (!err)
		err = soft_cm_attach(id);
	if (!err)
		err = soft_cm_reserve_port(id);
	if (!err)
		id->state = SOFT_CM_ADDR_BOUND;
	pthread_mutex_unlock(&soft_cm_lock);
	return err ? soft_cm_fail(err) : 0;
}

int soft_cm_resolve_addr(struct rdma_cm_id *cm, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	int err = 0;

	(void)timeout_ms;
	if (!soft_cm_lock_live(cm))
		return -1;
	if (id->state != SOFT_CM_IDLE && id->state != SOFT_CM_ADDR_BOUND)
		err = EINVAL;
	if (!err && src)
		err = soft_cm_set_addr(&cm->route.addr.src_addr, src);
	if (!err)
		err = soft_cm_set_addr(&cm->route.addr.dst_addr, dst);
	if (!err)
		err = soft_cm_attach(id);
	if (!err) {
		if (!src && id->state == SOFT_CM_IDLE) {
			struct sockaddr_in *s = &cm->route.addr.src_sin;

			*s = soft_nic_of(cm->verbs)->addr;
			s->sin_port = 0;
		}
		id->state = SOFT_CM_ADDR_RESOLVED;
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	}
	pthread_mutex_unlock(&soft_cm_lock);
	if (err)
		return soft_cm_fail(err);
	return id->sync ? soft_cm_wait(cm, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

int soft_cm_resolve_route(struct rdma_cm_id *cm, int timeout_ms)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	int err = 0;

	(void)timeout_ms;
	if (!soft_cm_lock_live(cm))
		return -1;
	if (id->state != SOFT_CM_ADDR_RESOLVED) {
		err = EINVAL;
	} else {
		id->state = SOFT_CM_ROUTE_RESOLVED;
		cm->route.num_paths = 1;
		soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	}
	pthread_mutex_unlock(&soft_cm_lock);
	if (err)
		return soft_cm_fail(err);
	return id->sync ? soft_cm_wait(cm, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

/* Fills the REQ or REP this side sends from the caller's parameters (NULL: librdmacm's defaults). */
static void soft_cm_fill_mine(struct soft_cm_id *id, uint8_t type, const struct rdma_conn_param *p)
{
	struct soft_cm_msg *m = &id->mine;
	uint32_t psn = m->psn;

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->qp_type = id->id.qp ? (uint8_t)id->id.qp->qp_type : (uint8_t)id->id.qp_type;
	m->qpn = id->id.qp ? id->id.qp->qp_num : (p ? p->qp_num & 0xffffff : 0);
	m->psn = psn;
	memcpy(m->gid, soft_nic_of(id->id.verbs)->gid.raw, 16);
	m->retry_count = 7;
	m->rnr_retry_count = 7;
	if (!p)
		return;
	m->responder_resources = p->responder_resources;
	m->initiator_depth = p->initiator_depth;
	m->retry_count = p->retry_count;
	m->rnr_retry_count = p->rnr_retry_count;
	m->private_data_len = p->private_data ? p->private_data_len : 0;
	if (m->private_data_len)
		memcpy(m->private_data, p->private_data, m->private_data_len);
}

int soft_cm_connect(struct rdma_cm_id *cm, struct rdma_conn_param *param)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	int err = 0;

	if (param && param->private_data && param->private_data_len > SOFT_CM_REQ_PRIVATE)
		return soft_cm_fail(EINVAL);
	if (!soft_cm_lock_live(cm))
		return -1;
	if (id->state != SOFT_CM_ROUTE_RESOLVED || !cm->verbs) {
		err = EINVAL;
	} else {
		uint64_t now = soft_now_ns();

		soft_cm_fill_mine(id, SOFT_CM_REQ, param);
		id->state = SOFT_CM_CONNECTING;
		id->deadline_ns = now + SOFT_CM_CONNECT_WAIT_NS;
		id->refused_until_ns = now + SOFT_CM_REFUSED_RETRY_NS;
		err = soft_cm_dial(id);
		if (err)
			id->state = SOFT_CM_ROUTE_RESOLVED;
	}
	pthread_mutex_unlock(&soft_cm_lock);
	if (err)
		return soft_cm_fail(err);
	return id->sync ? soft_cm_wait(cm, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int soft_cm_listen(struct rdma_cm_id *cm, int backlog)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	socklen_t len = sizeof(struct sockaddr_in);
	int err = 0, one = 1;

	if (!soft_cm_lock_live(cm))
		return -1;
	if (id->state == SOFT_CM_IDLE) {
		/* Unbound: any address, any port, as librdmacm does. */
		cm->route.addr.src_sin = (struct sockaddr_in){.sin_family = AF_INET};
		err = soft_cm_attach(id);
		id->state = SOFT_CM_ADDR_BOUND;
	}
	if (err || id->state != SOFT_CM_ADDR_BOUND) {
		err = err ? err : EINVAL;
		goto out;
	}
	/* The socket rdma_bind_addr reserved the port with, else a new one. */
	id->fd = id->port_fd;
	id->port_fd = -1;
	if (id->fd < 0) {
		id->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (id->fd < 0) {
			err = errno;
			goto out;
		}
		setsockopt(id->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(id->fd, &cm->route.addr.src_addr, sizeof(struct sockaddr_in))) {
			err = errno;
			soft_cm_close(id);
			goto out;
		}
	}
	if (listen(id->fd, backlog > 0 ? backlog : 128) ||
	    getsockname(id->fd, &cm->route.addr.src_addr, &len)) {
		err = errno;
		soft_cm_close(id);
		goto out;
	}
	err = soft_cm_watch(id, EPOLLIN);
	if (err)
		soft_cm_close(id);
	else
		id->state = SOFT_CM_LISTENING;
out:
	pthread_mutex_unlock(&soft_cm_lock);
	return err ? soft_cm_fail(err) : 0;
}

int soft_cm_accept(struct rdma_cm_id *cm, struct rdma_conn_param *param)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	int err = 0;

	if (param && param->private_data && param->private_data_len > SOFT_CM_REP_PRIVATE)
		return soft_cm_fail(EINVAL);
	if (!soft_cm_lock_live(cm))
		return -1;
	if (id->state != SOFT_CM_REQ_RECEIVED) {
		err = EINVAL;
		goto out;
	}
	if (id->fd < 0) {
		err = ECONNRESET; /* the peer went away since its request */
		goto out;
	}
	soft_cm_fill_mine(id, SOFT_CM_REP, param);
	/* A responder without parameters serves what the peer asked for. */
	if (!param) {
		id->mine.responder_resources = id->peer.initiator_depth;
		id->mine.initiator_depth = id->peer.responder_resources;
	}
	err = soft_cm_qp_connect(id);
	if (!err)
		err = soft_cm_send(id, &id->mine);
	if (!err && cm->qp_type == IBV_QPT_UD) {
		/* SIDR: the REP ends it; the passive side gets no ESTABLISHED. */
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
		pthread_mutex_unlock(&soft_cm_lock);
		return 0;
	}
	if (!err) {
		id->state = SOFT_CM_ACCEPTED;
		id->deadline_ns = soft_now_ns() + SOFT_CM_RTU_WAIT_NS;
	}
out:
	pthread_mutex_unlock(&soft_cm_lock);
	if (err)
		return soft_cm_fail(err);
	return id->sync ? soft_cm_wait(cm, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int soft_cm_reject(struct rdma_cm_id *cm, const void *private_data, uint8_t private_data_len)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	struct soft_cm_msg rej = {.type = SOFT_CM_REJ, .status = SOFT_CM_REJ_CONSUMER};
	int err = 0;

	if (private_data && private_data_len > SOFT_CM_REJ_PRIVATE)
		return soft_cm_fail(EINVAL);
	if (private_data) {
		rej.private_data_len = private_data_len;
		memcpy(rej.private_data, private_data, private_data_len);
	}
	if (!soft_cm_lock_live(cm))
		return -1;
	if (id->state != SOFT_CM_REQ_RECEIVED) {
		err = EINVAL;
	} else {
		soft_cm_send(id, &rej);
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
	}
	pthread_mutex_unlock(&soft_cm_lock);
	return err ? soft_cm_fail(err) : 0;
}

int soft_cm_disconnect(struct rdma_cm_id *cm)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	int err = 0;

	if (!soft_cm_lock_live(cm))
		return -1;
	switch (id->state) {
	case SOFT_CM_REP_RECEIVED:
	case SOFT_CM_ESTABLISHED:
		if (soft_cm_send(id, &(struct soft_cm_msg){.type = SOFT_CM_DREQ})) {
			soft_cm_close(id);
			id->state = SOFT_CM_DISCONNECTED;
			soft_cm_post(cm->channel, cm, NULL, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
			break;
		}
		id->state = SOFT_CM_DISCONNECTING;
		id->deadline_ns = soft_now_ns() + SOFT_CM_DREP_WAIT_NS;
		break;
	case SOFT_CM_DISCONNECTING:
	case SOFT_CM_DISCONNECTED:
		break; /* the peer's DREQ or a lost connection got here first */
	case SOFT_CM_ACCEPTED:
	case SOFT_CM_REQ_SENT:
	case SOFT_CM_CONNECTING:
		soft_cm_close(id);
		id->state = SOFT_CM_DISCONNECTED;
		break;
	default:
		err = EINVAL;
	}
	if (!err && cm->qp) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

		soft_modify_qp(cm->qp, &a, IBV_QP_STATE);
	}
	pthread_mutex_unlock(&soft_cm_lock);
	return err ? soft_cm_fail(err) : 0;
}

int soft_cm_migrate_id(struct rdma_cm_id *cm, struct rdma_event_channel *channel)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	struct rdma_event_channel *old = NULL, *own = NULL;

	if (!channel) {
		own = soft_cm_create_event_channel();
		if (!own)
			return -1;
	}
	if (!soft_cm_lock_live(cm)) {
		soft_cm_destroy_event_channel(own);
		return -1;
	}
	if (id->sync)
		old = cm->channel;
	cm->channel = channel ? channel : own;
	id->sync = own != NULL;
	pthread_mutex_unlock(&soft_cm_lock);
	soft_cm_destroy_event_channel(old);
	return 0;
}

int soft_cm_establish(struct rdma_cm_id *cm)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	int err = 0;

	if (!soft_cm_lock_live(cm))
		return -1;
	if (id->state != SOFT_CM_REP_RECEIVED)
		err = EINVAL;
	else if (soft_cm_send(id, &(struct soft_cm_msg){.type = SOFT_CM_RTU}))
		err = ECONNRESET;
	else
		id->state = SOFT_CM_ESTABLISHED;
	pthread_mutex_unlock(&soft_cm_lock);
	return err ? soft_cm_fail(err) : 0;
}

int soft_cm_set_option(struct rdma_cm_id *cm, int level, int optname, void *optval, size_t optlen)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);

	if (!optval || !optlen)
		return soft_cm_fail(EINVAL);
	/* The ACK timeout goes into the QP at RTS; the rest tune paths the soft wire does not have. */
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
		uint8_t v = *(const uint8_t *)optval;

		if (v > 31)
			return soft_cm_fail(EINVAL);
		if (!soft_cm_lock_live(cm))
			return -1;
		id->ack_timeout = v;
		pthread_mutex_unlock(&soft_cm_lock);
	}
	return 0;
}

static int soft_cm_make_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel **ch, struct ibv_cq **cq)
{
	*ch = soft_create_comp_channel(ctx);
	if (!*ch)
		return errno ? errno : ENOMEM;
	*cq = soft_create_cq(ctx, cqe > 0 ? cqe : 1, NULL, *ch, 0);
	if (!*cq) {
		int err = errno ? errno : ENOMEM;

		soft_destroy_comp_channel(*ch);
		*ch = NULL;
		return err;
	}
	return 0;
}

static void soft_cm_free_cqs(struct rdma_cm_id *cm)
{
	if (cm->recv_cq && cm->recv_cq != cm->send_cq)
		soft_destroy_cq(cm->recv_cq);
	if (cm->send_cq)
		soft_destroy_cq(cm->send_cq);
	if (cm->recv_cq_channel && cm->recv_cq_channel != cm->send_cq_channel)
		soft_destroy_comp_channel(cm->recv_cq_channel);
	if (cm->send_cq_channel)
		soft_destroy_comp_channel(cm->send_cq_channel);
	cm->send_cq = cm->recv_cq = NULL;
	cm->send_cq_channel = cm->recv_cq_channel = NULL;
}

int soft_cm_create_qp_ex(struct rdma_cm_id *cm, struct ibv_qp_init_attr_ex *attr)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT};
	struct ibv_qp *qp;
	int err = 0, mask;

	if (!attr)
		return soft_cm_fail(EINVAL);
	if (!soft_cm_lock_live(cm))
		return -1;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = soft_cm_default_pd(cm);
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (!attr->pd || cm->qp || (cm->verbs && attr->pd->context->device != cm->verbs->device)) {
		err = EINVAL;
		goto out;
	}
	if (!cm->verbs)
		cm->verbs = attr->pd->context;
	/* As librdmacm: a QP made after rdma_create_srq takes its receives from the id's SRQ. */
	if (!attr->srq)
		attr->srq = cm->srq;
	/* rdma_create_ep's callers (rdma_client) leave the type to the id's, from rdma_getaddrinfo. */
	if (!attr->qp_type)
		attr->qp_type = cm->qp_type;
	if (!attr->send_cq || !attr->recv_cq) {
		id->own_cqs = true;
		if (!attr->send_cq)
			err = soft_cm_make_cq(attr->pd->context, (int)attr->cap.max_send_wr,
					      &cm->send_cq_channel, &cm->send_cq);
		if (!err && !attr->recv_cq)
			err = soft_cm_make_cq(attr->pd->context, (int)attr->cap.max_recv_wr,
					      &cm->recv_cq_channel, &cm->recv_cq);
		if (err)
			goto out_cqs;
		if (!attr->send_cq)
			attr->send_cq = cm->send_cq;
		if (!attr->recv_cq)
			attr->recv_cq = cm->recv_cq;
	}
	qp = soft_create_qp_ex(attr->pd->context, attr);
	if (!qp) {
		err = errno ? errno : EINVAL;
		goto out_cqs;
	}
	if (soft_cm_init_qp_attr(cm, &a, &mask) || soft_modify_qp(qp, &a, mask)) {
		err = errno ? errno : EINVAL;
		soft_destroy_qp(qp);
		goto out_cqs;
	}
	/* UD is usable at once, as librdmacm leaves it. */
	for (enum ibv_qp_state s = IBV_QPS_RTR; qp->qp_type == IBV_QPT_UD && s <= IBV_QPS_RTS; s++) {
		a = (struct ibv_qp_attr){.qp_state = s};
		if (soft_cm_init_qp_attr(cm, &a, &mask) || soft_modify_qp(qp, &a, mask)) {
			err = errno ? errno : EINVAL;
			soft_destroy_qp(qp);
			goto out_cqs;
		}
	}
	cm->qp = qp;
	cm->pd = attr->pd;
	goto out;
out_cqs:
	if (id->own_cqs)
		soft_cm_free_cqs(cm);
	id->own_cqs = false;
out:
	pthread_mutex_unlock(&soft_cm_lock);
	return err ? soft_cm_fail(err) : 0;
}

int soft_cm_create_qp(struct rdma_cm_id *cm, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!attr)
		return soft_cm_fail(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = pd ? IBV_QP_INIT_ATTR_PD : 0;
	ex.pd = pd;
	ret = soft_cm_create_qp_ex(cm, &ex);
	if (ret)
		return ret;
	/* As librdmacm: the caller's attributes show the CQs and capabilities the QP got. */
	attr->send_cq = ex.send_cq;
	attr->recv_cq = ex.recv_cq;
	attr->cap = ex.cap;
	return 0;
}

void soft_cm_destroy_qp(struct rdma_cm_id *cm)
{
	struct soft_cm_id *id = to_soft_cm_id(cm);

	if (!soft_cm_lock_live(cm))
		return;
	if (cm->qp)
		soft_destroy_qp(cm->qp);
	cm->qp = NULL;
	if (id->own_cqs)
		soft_cm_free_cqs(cm);
	id->own_cqs = false;
	pthread_mutex_unlock(&soft_cm_lock);
}

int soft_cm_create_srq_ex(struct rdma_cm_id *cm, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;
	int err = 0;

	if (!attr)
		return soft_cm_fail(EINVAL);
	if (!soft_cm_lock_live(cm))
		return -1;
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cm->pd ? cm->pd : soft_cm_default_pd(cm);
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (!attr->pd || cm->srq || (cm->verbs && attr->pd->context->device != cm->verbs->device)) {
		err = EINVAL;
	} else {
		srq = soft_create_srq_ex(attr->pd->context, attr);
		if (srq)
			cm->srq = srq;
		else
			err = errno ? errno : EINVAL;
	}
	pthread_mutex_unlock(&soft_cm_lock);
	return err ? soft_cm_fail(err) : 0;
}

int soft_cm_create_srq(struct rdma_cm_id *cm, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex = {0};
	int ret;

	if (!attr)
		return soft_cm_fail(EINVAL);
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = pd ? IBV_SRQ_INIT_ATTR_PD : 0;
	ex.pd = pd;
	ret = soft_cm_create_srq_ex(cm, &ex);
	if (!ret)
		attr->attr = ex.attr;
	return ret;
}

void soft_cm_destroy_srq(struct rdma_cm_id *cm)
{
	if (!soft_cm_lock_live(cm))
		return;
	if (cm->srq && !soft_destroy_srq(cm->srq))
		cm->srq = NULL;
	pthread_mutex_unlock(&soft_cm_lock);
}

struct ibv_context **soft_cm_get_devices(int *num_devices)
{
	struct ibv_context **list = calloc(2, sizeof(*list));

	if (!list)
		return NULL;
	pthread_mutex_lock(&soft_cm_lock);
	list[0] = soft_cm_context();
	pthread_mutex_unlock(&soft_cm_lock);
	if (num_devices)
		*num_devices = list[0] ? 1 : 0;
	return list;
}

void soft_cm_free_devices(struct ibv_context **list)
{
	free(list);
}

const struct hw_cm_ops hw_cm_soft = {
    .create_event_channel = soft_cm_create_event_channel,
    .destroy_event_channel = soft_cm_destroy_event_channel,
    .create_id = soft_cm_create_id,
    .destroy_id = soft_cm_destroy_id,
    .bind_addr = soft_cm_bind_addr,
    .resolve_addr = soft_cm_resolve_addr,
    .resolve_route = soft_cm_resolve_route,
    .create_qp = soft_cm_create_qp,
    .destroy_qp = soft_cm_destroy_qp,
    .connect = soft_cm_connect,
    .listen = soft_cm_listen,
    .accept = soft_cm_accept,
    .reject = soft_cm_reject,
    .disconnect = soft_cm_disconnect,
    .get_cm_event = soft_cm_get_cm_event,
    .ack_cm_event = soft_cm_ack_cm_event,
    .migrate_id = soft_cm_migrate_id,
    .set_option = soft_cm_set_option,
};
