/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
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
	cp->retry_count = CORE_QP_RETRY_CNT;
	cp->rnr_retry_count = 7;
}

/*
 * The connection manager takes a QP to RTS itself (accept on the passive
 * side, the REP on the active one) with its own default ACK timeout, which
 * on a real NIC is the path's packet lifetime, often far shorter than
 * CORE_QP_TIMEOUT: a starved peer would end its connections in RETRY_EXC.
 */
static int cm_set_timers(const struct core_ep *ep, struct rdma_cm_id *id)
{
	uint8_t timeout = CORE_QP_TIMEOUT;

	return ep_cm(ep)->set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout,
				     sizeof(timeout))
		   ? -errno
		   : 0;
}

/*
 * One side connecting one peer: the events of its connections arrive in
 * any order (connection 0 may be ESTABLISHED while connection 1 still
 * resolves), so each is handled as it comes.
 */
struct cm_run {
	struct core_ep *ep;
	struct peer *p;
	bool active;
	struct rdma_cm_id *listen;		  /* passive */
	struct rdma_cm_id *ids[CORE_MAX_STRIPES]; /* active: connection k's id, before its QP exists */
	uint32_t established;
	uint32_t eager_max; /* the peer's */
};

static uint32_t cm_index_of(const struct cm_run *run, const struct rdma_cm_id *id)
{
	for (uint32_t k = 0; k < run->p->nconn; k++)
		if (run->ids[k] == id || run->p->conns[k].cm_id == id)
			return k;
	return UINT32_MAX;
}

/* Passive: a request gets its QP and is accepted. */
static int cm_on_request(struct cm_run *run, struct rdma_cm_event *ev)
{
	const struct hw_cm_ops *cm = ep_cm(run->ep);
	struct rdma_conn_param cp;
	struct cm_pdata d, mine;
	struct conn *c;
	int rc;

	if (run->active || ev->listen_id != run->listen)
		return -EPROTO;
	if ((rc = pdata_take(&ev->param.conn, run->p->nconn, &d)))
		return rc;
	c = &run->p->conns[d.index];
	if (c->qp)
		return -EPROTO; /* the same index twice */
	if ((rc = conn_create(run->ep, c, run->p->id, d.index, ev->id)))
		return rc;
	c->remote_rx_depth = d.rx_depth;
	run->eager_max = d.eager_max;
	if ((rc = cm_set_timers(run->ep, ev->id)))
		return rc;
	pdata_fill(run->ep, d.index, &mine);
	cm_param(&cp, &mine);
	return cm->accept(ev->id, &cp) ? -errno : 0;
}

/* Active: connection k resolved its route: its QP, then the REQ. */
static int cm_on_route(struct cm_run *run, uint32_t k)
{
	struct rdma_conn_param cp;
	struct cm_pdata d;
	int rc;

	if ((rc = conn_create(run->ep, &run->p->conns[k], run->p->id, k, run->ids[k])))
		return rc;
	run->ids[k] = NULL; /* the connection owns it now */
	if ((rc = cm_set_timers(run->ep, run->p->conns[k].cm_id)))
		return rc;
	pdata_fill(run->ep, k, &d);
	cm_param(&cp, &d);
	return ep_cm(run->ep)->connect(run->p->conns[k].cm_id, &cp) ? -errno : 0;
}

static int cm_on_event(struct cm_run *run, struct rdma_cm_event *ev)
{
	uint32_t k = cm_index_of(run, ev->id);
	struct cm_pdata d;
	int rc;

	if (ev->status)
		return ev->event == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED : -EPROTO;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return cm_on_request(run, ev);
	/*
	 * The event channel is the endpoint's: a connection of a peer connected
	 * earlier that goes away meanwhile (its process closed or exited) reports
	 * it here too.  Its QPs tell its users; this run has nothing to do with it.
	 */
	if (k == UINT32_MAX && ev->id != run->listen &&
	    (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT))
		return 0;
	if (k == UINT32_MAX)
		return -EPROTO;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!run->ids[k])
			return -EPROTO;
		return ep_cm(run->ep)->resolve_route(ev->id, CM_RESOLVE_MS) ? -errno : 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return run->ids[k] ? cm_on_route(run, k) : -EPROTO;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (run->active) {
			if ((rc = pdata_take(&ev->param.conn, run->p->nconn, &d)))
				return rc;
			run->p->conns[k].remote_rx_depth = d.rx_depth;
			run->eager_max = d.eager_max;
		}
		run->established++;
		return 0;
	default:
		return -EPROTO;
	}
}

/* Active: an id per connection, each asked to resolve the peer's address. */
static int cm_active_start(struct cm_run *run, const struct sockaddr_in *dst)
{
	const struct hw_cm_ops *cm = ep_cm(run->ep);

	for (uint32_t k = 0; k < run->p->nconn; k++)
		if (cm->create_id(run->ep->cm_channel, &run->ids[k], NULL, RDMA_PS_TCP) ||
		    cm->resolve_addr(run->ids[k], NULL, (struct sockaddr *)dst, CM_RESOLVE_MS))
			return -errno;
	return 0;
}

/* Handles the events of every run until each has all its connections ESTABLISHED. */
static int cm_pump(struct cm_run **runs, int n)
{
	uint64_t deadline = clock_ns() / 1000000 + CM_WAIT_MS;

	for (;;) {
		struct pollfd pfd[2];
		bool done = true;
		int rc;

		for (int i = 0; i < n; i++) {
			pfd[i] = (struct pollfd){.fd = runs[i]->ep->cm_channel->fd, .events = POLLIN};
			done &= runs[i]->established == runs[i]->p->nconn;
		}
		if (done)
			return 0;
		uint64_t now = clock_ns() / 1000000;

		if (now >= deadline)
			return -ETIMEDOUT;
		rc = poll(pfd, (nfds_t)n, (int)(deadline - now));
		if (rc < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; rc > 0 && i < n; i++) {
			struct rdma_cm_event *ev;

			if (!(pfd[i].revents & POLLIN))
				continue;
			if (ep_cm(runs[i]->ep)->get_cm_event(runs[i]->ep->cm_channel, &ev))
				return -errno;
			struct rdma_cm_id *id = ev->id;
			bool request = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;

			rc = cm_on_event(runs[i], ev);
			ep_cm(runs[i]->ep)->ack_cm_event(ev);
			/* A request that could not be taken is refused, so the peer does not wait. */
			if (rc && request && cm_index_of(runs[i], id) == UINT32_MAX) {
				ep_cm(runs[i]->ep)->reject(id, NULL, 0);
				ep_cm(runs[i]->ep)->destroy_id(id);
			}
			if (rc)
				return rc;
			rc = 1;
		}
	}
}

/* Ids a failed run still holds that no connection owns. */
static void cm_run_drop(struct cm_run *run)
{
	for (uint32_t k = 0; run->p && k < run->p->nconn; k++)
		if (run->ids[k])
			ep_cm(run->ep)->destroy_id(run->ids[k]);
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
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint32_t n = min_u32((uint32_t)a->nstripes, (uint32_t)b->nstripes);
	struct cm_run ra = {.ep = a, .active = true}, rb = {.ep = b};
	struct cm_run *runs[2] = {&ra, &rb};
	uint16_t port;
	int rc;

	if ((rc = cm_channel(a)) || (rc = cm_listen(b, &dst, &rb.listen, &port)))
		return rc;
	dst.sin_port = htons(port);
	if (!(rc = peer_add(a, n, &ra.p)) && !(rc = peer_add(b, n, &rb.p)) &&
	    !(rc = cm_active_start(&ra, &dst)) && !(rc = cm_pump(runs, 2)) &&
	    !(rc = peer_publish(a, ra.p, ra.eager_max, pa)))
		rc = peer_publish(b, rb.p, rb.eager_max, pb);
	cm_run_drop(&ra);
	ep_cm(b)->destroy_id(rb.listen);
	if (rc && rb.p)
		peer_drop(b, rb.p->id);
	if (rc && ra.p)
		peer_drop(a, ra.p->id);
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
	struct cm_run run = {0}, *runs[1] = {&run};
	uint32_t rlen;
	uint16_t type, port = 0;
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
	run.ep = ep;
	run.listen = listen;
	run.active = mine.nonce < theirs.nonce;
	if ((rc = peer_add(ep, min_u32(mine.nconn, theirs.nconn), &run.p)))
		goto out;
	remote.sin_port = htons((uint16_t)theirs.port);
	if (!(rc = run.active ? cm_active_start(&run, &remote) : 0) && !(rc = cm_pump(runs, 1)))
		rc = peer_publish(ep, run.p, run.eager_max, peer);
	cm_run_drop(&run);
	if (rc)
		peer_drop(ep, run.p->id); /* gives the slot back for the next connect */
out:
	if (listen)
		ep_cm(ep)->destroy_id(listen);
	return rc;
}
