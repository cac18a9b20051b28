/* SPDX-License-Identifier: MIT */
/*
 * Connecting through the device's connection manager (hw/cm.h): one CM
 * connection per QP of the peer, so the CM exchanges QPN, PSN and GID and
 * moves the QPs to RTS exactly as librdmacm does for any program.  The
 * data path is the same as with the address blob (endpoint.c).
 *
 * Private data carries what the blob did besides QPs: the connection's
 * index, the receive depth and the largest eager payload.  Over an
 * out-of-band connection the two sides first trade the port of a CM
 * listener (and a nonce: the higher one listens, the other connects); a
 * side whose CM cannot listen sends port 0 and both fall back to the blob.
 */
#include "core/transport/endpoint_impl.h"
#include "core/oob/oob.h"
#include "core/util/clock.h"
#include "hw/cm.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#define CM_MAGIC	    0x52434d31u /* "RCM1" */
#define CM_WAIT_MS	    10000
#define CM_RESOLVE_MS	    2000
#define OOB_TYPE_EP_CM_PORT 0x4543

struct cm_pdata {
	uint32_t magic, index, rx_depth, eager_max;
};

struct cm_hello {
	uint64_t nonce;
	uint32_t port; /* 0: this side cannot use the CM */
	uint32_t nconn;
};

static const struct hw_cm_ops *ep_cm(const struct core_ep *ep)
{
	return ep->device.provider->cm;
}

bool ep_uses_cm(const struct core_ep *ep)
{
	return ep->attr.env.connect != CORE_CONNECT_OOB && ep_cm(ep);
}

void ep_cm_close(struct core_ep *ep)
{
	if (ep->cm_channel)
		ep_cm(ep)->destroy_event_channel(ep->cm_channel);
	ep->cm_channel = NULL;
}

static int cm_channel(struct core_ep *ep)
{
	if (!ep->cm_channel)
		ep->cm_channel = ep_cm(ep)->create_event_channel();
	return ep->cm_channel ? 0 : (errno ? -errno : -ENOMEM);
}

/* The next event on ep's channel, within the deadline; the caller acks it. */
static int cm_next(struct core_ep *ep, uint64_t deadline_ms, struct rdma_cm_event **ev)
{
	struct pollfd pfd = {.fd = ep->cm_channel->fd, .events = POLLIN};

	for (;;) {
		uint64_t now = clock_ns() / 1000000;
		int n;

		if (now >= deadline_ms)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(deadline_ms - now));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			return ep_cm(ep)->get_cm_event(ep->cm_channel, ev) ? -errno : 0;
	}
}

/* Waits for an event of `type` on id; anything else there is a failure. */
static int cm_expect(struct core_ep *ep, struct rdma_cm_id *id, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	int rc = cm_next(ep, clock_ns() / 1000000 + CM_WAIT_MS, &ev);

	if (rc)
		return rc;
	if (ev->id != id || ev->event != type || ev->status)
		rc = ev->event == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED : -EPROTO;
	ep_cm(ep)->ack_cm_event(ev);
	return rc;
}

static void pdata_fill(const struct core_ep *ep, uint32_t index, struct cm_pdata *d)
{
	d->magic = htobe32(CM_MAGIC);
	d->index = htobe32(index);
	d->rx_depth = htobe32(ep->attr.rx_depth);
	d->eager_max = htobe32(ep->attr.eager_max);
}

/* The peer's private data, checked on a private copy. */
static int pdata_take(const struct rdma_conn_param *p, uint32_t nconn, struct cm_pdata *d)
{
	if (!p->private_data || p->private_data_len < sizeof(*d))
		return -EPROTO;
	memcpy(d, p->private_data, sizeof(*d));
	d->magic = be32toh(d->magic);
	d->index = be32toh(d->index);
	d->rx_depth = be32toh(d->rx_depth);
	d->eager_max = be32toh(d->eager_max);
	if (d->magic != CM_MAGIC || d->index >= nconn || d->rx_depth < 4 || d->eager_max == 0)
		return -EPROTO;
	return 0;
}

static void cm_param(struct rdma_conn_param *cp, const struct cm_pdata *d)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = d;
	cp->private_data_len = sizeof(*d);
	cp->responder_resources = 16;
	cp->initiator_depth = 16;
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
}

/* Active side, first half: every connection of p resolved, its QP made and its REQ sent. */
static int cm_active_start(struct core_ep *ep, struct peer *p, const struct sockaddr_in *dst)
{
	const struct hw_cm_ops *cm = ep_cm(ep);
	int rc;

	for (uint32_t k = 0; k < p->nconn; k++) {
		struct rdma_cm_id *id;
		struct rdma_conn_param cp;
		struct cm_pdata d;

		if (cm->create_id(ep->cm_channel, &id, NULL, RDMA_PS_TCP))
			return -errno;
		if (cm->resolve_addr(id, NULL, (struct sockaddr *)dst, CM_RESOLVE_MS) ||
		    (rc = cm_expect(ep, id, RDMA_CM_EVENT_ADDR_RESOLVED)) ||
		    cm->resolve_route(id, CM_RESOLVE_MS) ||
		    (rc = cm_expect(ep, id, RDMA_CM_EVENT_ROUTE_RESOLVED))) {
			rc = rc ? rc : -errno;
			cm->destroy_id(id);
			return rc;
		}
		if ((rc = conn_create(ep, &p->conns[k], p->id, k, id))) {
			if (!p->conns[k].cm_id)
				cm->destroy_id(id);
			return rc;
		}
		pdata_fill(ep, k, &d);
		cm_param(&cp, &d);
		if (cm->connect(id, &cp))
			return -errno;
	}
	return 0;
}

/* Either side, second half: every connection ESTABLISHED (the active side learns the peer's data here). */
static int cm_finish(struct core_ep *ep, struct peer *p, bool active, uint32_t *eager_max)
{
	uint64_t deadline = clock_ns() / 1000000 + CM_WAIT_MS;
	uint32_t left = p->nconn;

	while (left) {
		struct rdma_cm_event *ev;
		struct cm_pdata d;
		uint32_t k;
		int rc = cm_next(ep, deadline, &ev);

		if (rc)
			return rc;
		for (k = 0; k < p->nconn && p->conns[k].cm_id != ev->id; k++)
			;
		if (k == p->nconn || ev->event != RDMA_CM_EVENT_ESTABLISHED)
			rc = ev->event == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED : -EPROTO;
		else if (active && !(rc = pdata_take(&ev->param.conn, p->nconn, &d))) {
			p->conns[k].remote_rx_depth = d.rx_depth;
			*eager_max = d.eager_max;
		}
		ep_cm(ep)->ack_cm_event(ev);
		if (rc)
			return rc;
		left--;
	}
	return 0;
}

/* Passive side: the peer's nconn requests on listen, each given a QP and accepted. */
static int cm_passive_accept(struct core_ep *ep, struct peer *p, struct rdma_cm_id *listen,
			     uint32_t *eager_max)
{
	const struct hw_cm_ops *cm = ep_cm(ep);
	uint64_t deadline = clock_ns() / 1000000 + CM_WAIT_MS;

	for (uint32_t n = 0; n < p->nconn; n++) {
		struct rdma_cm_event *ev;
		struct rdma_conn_param cp;
		struct cm_pdata d, mine;
		struct rdma_cm_id *id;
		bool owned = false;
		int rc = cm_next(ep, deadline, &ev);

		if (rc)
			return rc;
		id = ev->id;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST || ev->listen_id != listen) {
			cm->ack_cm_event(ev);
			return -EPROTO;
		}
		if (!(rc = pdata_take(&ev->param.conn, p->nconn, &d)) && p->conns[d.index].qp)
			rc = -EPROTO; /* the same index twice */
		cm->ack_cm_event(ev);
		if (!rc) {
			rc = conn_create(ep, &p->conns[d.index], p->id, d.index, id);
			owned = p->conns[d.index].cm_id == id; /* freed with the connection from now on */
		}
		if (!rc) {
			p->conns[d.index].remote_rx_depth = d.rx_depth;
			*eager_max = d.eager_max;
			pdata_fill(ep, d.index, &mine);
			cm_param(&cp, &mine);
			if (cm->accept(id, &cp))
				rc = -errno;
		}
		if (rc) {
			if (!owned) {
				cm->reject(id, NULL, 0);
				cm->destroy_id(id);
			}
			return rc;
		}
	}
	return 0;
}

/* A listener on addr (port 0: any); its port in *port. */
static int cm_listen(struct core_ep *ep, const struct sockaddr_in *addr, struct rdma_cm_id **listen,
		     uint16_t *port)
{
	const struct hw_cm_ops *cm = ep_cm(ep);
	int rc;

	if ((rc = cm_channel(ep)))
		return rc;
	if (cm->create_id(ep->cm_channel, listen, NULL, RDMA_PS_TCP))
		return -errno;
	if (cm->bind_addr(*listen, (struct sockaddr *)addr) || cm->listen(*listen, 64)) {
		rc = -errno;
		cm->destroy_id(*listen);
		*listen = NULL;
		return rc;
	}
	*port = ntohs((*listen)->route.addr.src_sin.sin_port);
	return 0;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

int ep_cm_connect_pair(struct core_ep *a, struct core_ep *b, uint32_t *pa, uint32_t *pb)
{
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint32_t n = min_u32((uint32_t)a->nstripes, (uint32_t)b->nstripes), a_eager = 0, b_eager = 0;
	struct rdma_cm_id *listen = NULL;
	struct peer *p, *q;
	uint16_t port;
	int rc;

	if ((rc = cm_channel(a)) || (rc = cm_listen(b, &any, &listen, &port)))
		return rc;
	any.sin_port = htons(port);
	if (!(rc = peer_add(a, n, &p)) && !(rc = peer_add(b, n, &q)) && !(rc = cm_active_start(a, p, &any)) &&
	    !(rc = cm_passive_accept(b, q, listen, &b_eager)) && !(rc = cm_finish(a, p, true, &a_eager)) &&
	    !(rc = cm_finish(b, q, false, &b_eager)) && !(rc = peer_publish(a, p, a_eager, pa)))
		rc = peer_publish(b, q, b_eager, pb);
	ep_cm(b)->destroy_id(listen);
	return rc;
}

static uint64_t random_nonce(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = clock_ns() * 0x9e3779b97f4a7c15ull;
	return v;
}

int ep_cm_connect_oob(struct core_ep *ep, struct oob_conn *conn, uint32_t *peer)
{
	struct sockaddr_in local = {0}, remote = {0};
	socklen_t len = sizeof(local);
	struct cm_hello mine = {.nonce = random_nonce(), .nconn = (uint32_t)ep->nstripes}, theirs;
	struct rdma_cm_id *listen = NULL;
	uint32_t rlen, eager = 0;
	uint16_t type, port = 0;
	struct peer *p;
	bool active;
	int rc;

	/* The CM listens where the out-of-band connection arrived: an address the peer reaches. */
	if (getsockname(oob_conn_fd(conn), (struct sockaddr *)&local, &len) || local.sin_family != AF_INET ||
	    cm_listen(ep, &(struct sockaddr_in){.sin_family = AF_INET, .sin_addr = local.sin_addr}, &listen,
		      &port))
		port = 0;
	mine.port = port;
	len = sizeof(remote);
	if ((rc = oob_send(conn, OOB_TYPE_EP_CM_PORT, &mine, sizeof(mine))) ||
	    (rc = oob_recv(conn, &type, &theirs, sizeof(theirs), &rlen, 30000)))
		goto out;
	if (type != OOB_TYPE_EP_CM_PORT || rlen != sizeof(theirs) || theirs.nconn < 1 ||
	    theirs.nconn > CORE_MAX_STRIPES || theirs.nonce == mine.nonce ||
	    getpeername(oob_conn_fd(conn), (struct sockaddr *)&remote, &len) ||
	    remote.sin_family != AF_INET) {
		rc = -EPROTO;
		goto out;
	}
	if (!theirs.port || !port) {
		/* One side has no CM: both use the address blob, unless the CM was asked for. */
		rc = ep->attr.env.connect == CORE_CONNECT_CM ? -EPROTONOSUPPORT : -EAGAIN;
		goto out;
	}
	if ((rc = peer_add(ep, min_u32(mine.nconn, theirs.nconn), &p)))
		goto out;
	active = mine.nonce < theirs.nonce;
	remote.sin_port = htons((uint16_t)theirs.port);
	if (active)
		rc = cm_active_start(ep, p, &remote);
	else
		rc = cm_passive_accept(ep, p, listen, &eager);
	if (!rc)
		rc = cm_finish(ep, p, active, &eager);
	if (!rc)
		rc = peer_publish(ep, p, eager, peer);
out:
	if (listen)
		ep_cm(ep)->destroy_id(listen);
	return rc;
}
