/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Endpoint life cycle and the control plane: open, connect, close (one mutex). */
#include "core/transport/endpoint_impl.h"
#include "core/oob/oob.h"
#include "core/util/clock.h"
#include "hw/cm.h"
#include "hw/hw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define ADDR_MAGIC 0x52434551u /* "RCEQ": the blob carries initial PSNs since this magic */
#define OOB_TYPE_EP_ADDR 0x4550

struct addr_blob {
	uint32_t magic;
	uint32_t nconn;
	uint32_t rx_depth;
	uint32_t eager_max;
	uint8_t gid[16];
	uint32_t lid;
	uint32_t qpn[CORE_MAX_STRIPES];
	uint32_t psn[CORE_MAX_STRIPES]; /* each QP's initial send PSN: random, so not guessable */
};

/* A random 24-bit PSN, as a NIC's driver picks one (rdma-core's examples use lrand48). */
static uint32_t random_psn(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)clock_ns() * 2654435761u;
	return v & 0xffffff;
}

/* Numbers the unnamed endpoints of this process for their stats entries. */
static _Atomic unsigned ep_count;

void core_ep_attr_defaults(struct core_ep_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->threading = CORE_THREAD_SAFE;
	attr->lock = CORE_LOCK_STRIPED;
	core_env_defaults(&attr->env);
	attr->depth = 128;
	attr->eager_max = 0; /* the device's: core_ep_eager_max */
	attr->rx_depth = 64;
	attr->max_recv = 1024;
}

const char *core_ep_device_name(const struct core_ep *ep)
{
	return ep->device.name;
}

struct ibv_context *core_ep_context(const struct core_ep *ep)
{
	return ep->ctx;
}

#define EAGER_MAX_NIC  8192u
#define EAGER_MAX_SOFT 65536u

uint32_t core_ep_eager_max(const struct core_ep *ep)
{
	return ep->attr.eager_max;
}

const char *core_ep_provider_name(const struct core_ep *ep)
{
	return ep->device.provider->name;
}

int core_ep_stripes(const struct core_ep *ep)
{
	return ep->nstripes;
}

static uint32_t pow2_at_least(uint64_t n)
{
	uint64_t p = 2;

	while (p < n && p < RING_MAX_CAPACITY)
		p <<= 1;
	return (uint32_t)p;
}

int core_ep_open(const struct core_ep_attr *attr, struct core_ep **out, char *err, size_t errlen)
{
	struct core_ep *ep;
	struct ibv_port_attr port;
	uint32_t ring_size;
	int rc;

	if (attr->depth < 1 || attr->depth > 4096 || attr->rx_depth < 4 || attr->rx_depth > 4096 ||
	    attr->eager_max > CORE_EAGER_MAX_LIMIT || attr->env.eager_max > CORE_EAGER_MAX_LIMIT ||
	    attr->env.tx_stripes < 0 || attr->env.tx_stripes > CORE_MAX_STRIPES) {
		snprintf(err, errlen,
			 "endpoint attributes out of range (depth 1..4096, rx_depth 4..4096, eager_max up to %d, "
			 "stripes 0..%d)",
			 CORE_EAGER_MAX_LIMIT, CORE_MAX_STRIPES);
		return -EINVAL;
	}
	if (posix_memalign((void **)&ep, 64, sizeof(*ep)))
		return -ENOMEM;
	memset(ep, 0, sizeof(*ep));
	ep->attr = *attr;
	if (attr->name)
		snprintf(ep->label, sizeof(ep->label), "%s", attr->name);
	else
		snprintf(ep->label, sizeof(ep->label), "ep%u", atomic_fetch_add(&ep_count, 1) + 1);
	ep->cq_fd = -1;
	ep->global = attr->lock == CORE_LOCK_GLOBAL;
	pthread_mutex_init(&ep->ctrl, NULL);
	pthread_mutex_init(&ep->glock, NULL);
	pthread_rwlock_init(&ep->mr_lock, NULL);
	ep->nstripes = attr->threading == CORE_THREAD_SINGLE ? 1
		       : attr->env.tx_stripes	       ? attr->env.tx_stripes
						       : core_auto_stripes();
	ep->ctx = hw_open_device(attr->device, &ep->device);
	if (!ep->ctx) {
		rc = -errno;
		if (*hw_open_error())
			snprintf(err, errlen, "%s", hw_open_error());
		else
			snprintf(err, errlen, "cannot open device %s: %s; see `rdmatool devices`",
				 attr->device ? attr->device : "(default)", strerror(errno));
		free(ep);
		return rc;
	}
	rc = -EIO;
	if (!ep->attr.port)
		ep->attr.port = 1;
	if (!ep->attr.hop_limit)
		ep->attr.hop_limit = 64;
	if (hw_query_port(ep->ctx, ep->attr.port, &port)) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s has no port %u; 'rdmatool devices' lists its ports", ep->device.name,
			 ep->attr.port);
		goto fail;
	}
	if (hw_query_gid(ep->ctx, ep->attr.port, ep->attr.gid_index, &ep->gid)) {
		rc = -EINVAL;
		snprintf(err, errlen, "port %u of %s has no GID at index %u (its table holds %d)", ep->attr.port,
			 ep->device.name, ep->attr.gid_index, port.gid_tbl_len);
		goto fail;
	}
	if (ep->attr.mtu > port.active_mtu) {
		rc = -EINVAL;
		snprintf(err, errlen, "the MTU asked for is larger than port %u's active MTU (%d bytes)",
			 ep->attr.port, 128 << port.active_mtu);
		goto fail;
	}
	ep->lid = port.lid;
	ep->mtu = ep->attr.mtu ? ep->attr.mtu : port.active_mtu;
	/* The caller's threshold, else RDMATOOL_EAGER_MAX's, else the device's. */
	if (!ep->attr.eager_max)
		ep->attr.eager_max = attr->env.eager_max;
	if (!ep->attr.eager_max)
		ep->attr.eager_max = strcmp(ep->device.provider->name, "soft") ? EAGER_MAX_NIC : EAGER_MAX_SOFT;
	ep->pd = hw_alloc_pd(ep->ctx);
	if (!ep->pd) {
		snprintf(err, errlen, "cannot allocate a protection domain: %s", strerror(errno));
		goto fail;
	}
	ep->cq_channel = hw_create_comp_channel(ep->ctx);
	if (!ep->cq_channel) {
		snprintf(err, errlen, "cannot create a completion channel: %s", strerror(errno));
		goto fail;
	}
	/* Several readers may wake on one event: the losers must not block in get_cq_event. */
	if (fcntl(ep->cq_channel->fd, F_SETFL, fcntl(ep->cq_channel->fd, F_GETFL) | O_NONBLOCK)) {
		snprintf(err, errlen, "cannot make the completion channel non-blocking: %s", strerror(errno));
		goto fail;
	}
	ep->stripes = calloc((size_t)ep->nstripes + 1, sizeof(*ep->stripes));
	if (!ep->stripes)
		goto fail;
	for (int i = 0; i <= ep->nstripes; i++) {
		struct ibv_cq *cq = NULL;
		uint32_t nreqs = i < ep->nstripes ? attr->depth : 4 * attr->rx_depth;

		if (i < ep->nstripes) {
			cq = hw_create_cq(ep->ctx, (int)(attr->depth + 4 * attr->rx_depth) * 2, NULL,
					   ep->cq_channel, 0);
			if (!cq) {
				snprintf(err, errlen, "cannot create a completion queue: %s", strerror(errno));
				goto fail;
			}
		}
		rc = stripe_init(&ep->stripes[i], ep->label, (uint32_t)i, ep->pd, cq, nreqs,
				 HDR_SIZE + ep->attr.eager_max);
		if (rc) {
			if (cq && !ep->stripes[i].cq)
				hw_destroy_cq(cq);
			snprintf(err, errlen, "cannot set up stripe %d: %s", i, strerror(-rc));
			goto fail;
		}
	}
	ep->rx_cq = hw_create_cq(ep->ctx, 4096, NULL, ep->cq_channel, 0);
	if (!ep->rx_cq) {
		snprintf(err, errlen, "cannot create the receive completion queue: %s", strerror(errno));
		goto fail;
	}
	ring_size = attr->env.ring_size ? attr->env.ring_size
					: pow2_at_least((uint64_t)ep->nstripes * attr->depth + attr->max_recv);
	rc = cq_init(ep, ring_size);
	if (rc) {
		snprintf(err, errlen, "cannot create the completion ring: %s", strerror(-rc));
		goto fail;
	}
	rc = rx_init(ep);
	if (rc) {
		snprintf(err, errlen, "cannot set up the receive engine: %s", strerror(-rc));
		goto fail;
	}
	if (attr->env.progress_thread && (rc = progress_start(ep, err, errlen)))
		goto fail;
	*out = ep;
	return 0;
fail:
	core_ep_close(ep);
	return rc ? rc : -ENOMEM;
}

static void conn_free(struct core_ep *ep, struct conn *c)
{
	if (c->qp)
		hw_destroy_qp(c->qp);
	/* After the QP (librdmacm leaves a QP to its owner): the peer's CM sees the connection end. */
	if (c->cm_id)
		ep->device.provider->cm->destroy_id(c->cm_id);
	if (c->rx_mr)
		hw_dereg_mr(c->rx_mr);
	free(c->rxbuf);
	memset(c, 0, sizeof(*c));
}

static void peer_free(struct core_ep *ep, struct peer *p)
{
	if (!p)
		return;
	for (uint32_t k = 0; k < p->nconn; k++)
		conn_free(ep, &p->conns[k]);
	free(p->conns);
	free(p);
}

void core_ep_close(struct core_ep *ep)
{
	if (!ep)
		return;
	progress_stop(ep);
	if (ep->recv_free)
		rx_transition(&ep->rx_sm, rx_state_get(&ep->rx_sm), RX_DISABLED);
	for (uint32_t i = 0; i < ep->nprepared; i++)
		peer_free(ep, ep->peers[i]);
	ep_cm_close(ep);
	if (ep->recv_free)
		rx_fini(ep);
	cq_fini(ep);
	if (ep->cq_channel)
		cq_channel_drain(ep);
	if (ep->rx_cq)
		hw_destroy_cq(ep->rx_cq);
	mr_cache_fini(ep);
	for (int i = 0; ep->stripes && i <= ep->nstripes; i++) {
		struct ibv_cq *cq = ep->stripes[i].cq;

		stripe_fini(&ep->stripes[i]);
		if (cq)
			hw_destroy_cq(cq);
	}
	free(ep->stripes);
	if (ep->cq_channel)
		hw_destroy_comp_channel(ep->cq_channel);
	if (ep->pd)
		hw_dealloc_pd(ep->pd);
	if (ep->ctx)
		hw_close_device(ep->ctx);
	pthread_mutex_destroy(&ep->ctrl);
	pthread_mutex_destroy(&ep->glock);
	pthread_rwlock_destroy(&ep->mr_lock);
	free(ep);
}

int conn_create(struct core_ep *ep, struct conn *c, uint32_t peer, uint32_t stripe, struct rdma_cm_id *cm_id)
{
	struct ibv_qp_init_attr init = {
		.send_cq = ep->stripes[stripe].cq,
		.recv_cq = ep->rx_cq,
		.cap = { .max_send_wr = ep->attr.depth + 4 * ep->attr.rx_depth, .max_recv_wr = ep->attr.rx_depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = ep->attr.port,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };
	int rc;

	c->peer = peer;
	c->stripe = stripe;
	c->slot_size = (HDR_SIZE + ep->attr.eager_max + 63) & ~63u;
	if (posix_memalign((void **)&c->rxbuf, 4096, (size_t)c->slot_size * ep->attr.rx_depth))
		return -ENOMEM;
	c->rx_mr = hw_reg_mr(ep->pd, c->rxbuf, (size_t)c->slot_size * ep->attr.rx_depth, IBV_ACCESS_LOCAL_WRITE);
	if (!c->rx_mr)
		return errno ? -errno : -ENOMEM;
	if (cm_id) {
		/* The CM creates the QP and moves it to INIT (and later to RTR and RTS). */
		if (ep->device.provider->cm->create_qp(cm_id, ep->pd, &init))
			return errno ? -errno : -ENOMEM;
		c->qp = cm_id->qp;
		c->cm_id = cm_id;
	} else {
		c->qp = hw_create_qp(ep->pd, &init);
		if (!c->qp)
			return errno ? -errno : -ENOMEM;
		rc = hw_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		if (rc)
			return -rc;
	}
	for (uint32_t i = 0; i < ep->attr.rx_depth; i++)
		if ((rc = rx_post_buffer(c, i)))
			return rc;
	return 0;
}

/*
 * A connect that failed after its slot was prepared gives the slot back.
 * Slots are published in the order they were prepared, so one left behind
 * would refuse every later connect (EINVAL, or EBUSY on the CM path) and the
 * endpoint could never reach a new peer again.  Only the newest unpublished
 * slot can go back; the data path never reads a slot at or past npeers.
 */
static void slot_drop_locked(struct core_ep *ep, uint32_t slot)
{
	if (slot + 1 != ep->nprepared || slot != atomic_load(&ep->npeers))
		return;
	peer_free(ep, ep->peers[slot]);
	ep->peers[slot] = NULL;
	ep->nprepared--;
}

void peer_drop(struct core_ep *ep, uint32_t slot)
{
	pthread_mutex_lock(&ep->ctrl);
	slot_drop_locked(ep, slot);
	pthread_mutex_unlock(&ep->ctrl);
}

int core_ep_prepare(struct core_ep *ep, void *blob, uint32_t *len, uint32_t *slot)
{
	struct addr_blob *b = blob;
	struct peer *p;
	int rc = 0;

	pthread_mutex_lock(&ep->ctrl);
	if (ep->nprepared >= CORE_MAX_PEERS) {
		rc = -ENOSPC;
		goto out;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->conns = calloc((size_t)ep->nstripes, sizeof(*p->conns)))) {
		free(p);
		rc = -ENOMEM;
		goto out;
	}
	p->id = ep->nprepared;
	p->nconn = (uint32_t)ep->nstripes;
	ep->peers[ep->nprepared++] = p;
	memset(b, 0, sizeof(*b));
	b->magic = htobe32(ADDR_MAGIC);
	b->nconn = htobe32(p->nconn);
	b->rx_depth = htobe32(ep->attr.rx_depth);
	b->eager_max = htobe32(ep->attr.eager_max);
	memcpy(b->gid, ep->gid.raw, 16);
	b->lid = htobe32(ep->lid);
	for (uint32_t k = 0; k < p->nconn; k++) {
		rc = conn_create(ep, &p->conns[k], p->id, k, NULL);
		if (rc) {
			slot_drop_locked(ep, p->id);
			goto out;
		}
		b->qpn[k] = htobe32(p->conns[k].qp->qp_num);
		p->conns[k].sq_psn = random_psn();
		b->psn[k] = htobe32(p->conns[k].sq_psn);
	}
	*len = sizeof(*b);
	*slot = p->id;
out:
	pthread_mutex_unlock(&ep->ctrl);
	return rc;
}

static int conn_connect(struct core_ep *ep, struct conn *c, const struct addr_blob *b, uint32_t k)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = ep->mtu ? ep->mtu : IBV_MTU_4096,
		.dest_qp_num = be32toh(b->qpn[k]),
		.rq_psn = be32toh(b->psn[k]) & 0xffffff,
		.max_dest_rd_atomic = 16,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .dlid = (uint16_t)be32toh(b->lid), .sl = ep->attr.sl,
			     .port_num = ep->attr.port,
			     .grh = { .hop_limit = ep->attr.hop_limit, .sgid_index = ep->attr.gid_index } },
	};
	int rc;

	memcpy(a.ah_attr.grh.dgid.raw, b->gid, 16);
	rc = hw_modify_qp(c->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	/*
	 * Local ACK timeout 4.096 us * 2^18 = 1.07 s, 7 retries: a peer that does
	 * not answer for ~8.6 s ends in RETRY_EXC.  A peer that is only starved
	 * (a loaded host, a sanitizer build, a stopped debugger) rides it out, as
	 * with Open MPI's and UCX's defaults; a peer whose process died is seen
	 * at once where the device can tell (the soft wire's closed connection).
	 */
	a.timeout = CORE_QP_TIMEOUT;
	a.retry_cnt = CORE_QP_RETRY_CNT;
	a.rnr_retry = 7;
	a.sq_psn = c->sq_psn;
	a.max_rd_atomic = 16;
	rc = hw_modify_qp(c->qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		return -rc;
	c->remote_rx_depth = be32toh(b->rx_depth);
	return 0;
}

int core_ep_connect(struct core_ep *ep, uint32_t slot, const void *remote, uint32_t len, uint32_t *peer)
{
	const struct addr_blob *b = remote;
	uint32_t remote_nconn;
	struct peer *p;
	int rc = 0;

	if (len != sizeof(*b) || be32toh(b->magic) != ADDR_MAGIC) {
		peer_drop(ep, slot);
		return -EPROTO;
	}
	pthread_mutex_lock(&ep->ctrl);
	if (slot >= ep->nprepared || slot != atomic_load(&ep->npeers)) {
		rc = -EINVAL; /* connect in the order of prepare */
		goto out;
	}
	p = ep->peers[slot];
	remote_nconn = be32toh(b->nconn);
	if (remote_nconn < 1 || remote_nconn > CORE_MAX_STRIPES || be32toh(b->rx_depth) < 4) {
		rc = -EPROTO;
		slot_drop_locked(ep, slot);
		goto out;
	}
	/*
	 * Both ends prepared one QP per own stripe; the pair uses the first
	 * min(ours, theirs) of them, and both sides drop their extra QPs the
	 * same way.  Our stripes beyond that share connections (stripe s posts
	 * on connection s % nconn, see begin() in endpoint_ops.c): QPs take
	 * posts from several threads, and completions find their request
	 * through wr_id whichever CQ reports them.
	 */
	while (p->nconn > remote_nconn)
		conn_free(ep, &p->conns[--p->nconn]);
	p->eager_max = be32toh(b->eager_max) < ep->attr.eager_max ? be32toh(b->eager_max) : ep->attr.eager_max;
	for (uint32_t k = 0; k < p->nconn; k++)
		if ((rc = conn_connect(ep, &p->conns[k], b, k))) {
			slot_drop_locked(ep, slot); /* half connected: unusable */
			goto out;
		}
	/* Publish: the entry is complete and never changes again. */
	atomic_store_explicit(&ep->npeers, slot + 1, memory_order_release);
	*peer = slot;
out:
	pthread_mutex_unlock(&ep->ctrl);
	return rc;
}

int peer_add(struct core_ep *ep, uint32_t nconn, struct peer **out)
{
	struct peer *p;
	int rc = 0;

	pthread_mutex_lock(&ep->ctrl);
	if (ep->nprepared >= CORE_MAX_PEERS || ep->nprepared != atomic_load(&ep->npeers)) {
		rc = ep->nprepared >= CORE_MAX_PEERS ? -ENOSPC : -EBUSY; /* one connect at a time */
		goto out;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->conns = calloc(nconn, sizeof(*p->conns)))) {
		free(p);
		rc = -ENOMEM;
		goto out;
	}
	p->id = ep->nprepared;
	p->nconn = nconn;
	ep->peers[ep->nprepared++] = p;
	*out = p;
out:
	pthread_mutex_unlock(&ep->ctrl);
	return rc;
}

int peer_publish(struct core_ep *ep, struct peer *p, uint32_t remote_eager_max, uint32_t *peer)
{
	int rc = 0;

	pthread_mutex_lock(&ep->ctrl);
	if (p->id != atomic_load(&ep->npeers)) {
		rc = -EINVAL;
	} else {
		p->eager_max = remote_eager_max < ep->attr.eager_max ? remote_eager_max : ep->attr.eager_max;
		atomic_store_explicit(&ep->npeers, p->id + 1, memory_order_release);
		*peer = p->id;
	}
	pthread_mutex_unlock(&ep->ctrl);
	return rc;
}

int core_ep_connect_pair(struct core_ep *a, struct core_ep *b, uint32_t *pa, uint32_t *pb)
{
	struct addr_blob ba, bb;
	uint32_t la, lb, sa, sb;
	int rc;

	if (ep_uses_cm(a) && ep_uses_cm(b))
		return ep_cm_connect_pair(a, b, pa, pb);
	if ((rc = core_ep_prepare(a, &ba, &la, &sa)) || (rc = core_ep_prepare(b, &bb, &lb, &sb)))
		return rc;
	if ((rc = core_ep_connect(a, sa, &bb, lb, pa)))
		return rc;
	return core_ep_connect(b, sb, &ba, la, pb);
}

int core_ep_connect_oob(struct core_ep *ep, struct oob_conn *conn, uint32_t *peer)
{
	struct addr_blob mine, theirs;
	uint32_t len, rlen, slot;
	uint16_t type;
	int rc;

	if (ep_uses_cm(ep) && (rc = ep_cm_connect_oob(ep, conn, peer)) != -EAGAIN)
		return rc;
	if ((rc = core_ep_prepare(ep, &mine, &len, &slot)))
		return rc;
	if (!(rc = oob_send(conn, OOB_TYPE_EP_ADDR, &mine, len)) &&
	    !(rc = oob_recv(conn, &type, &theirs, sizeof(theirs), &rlen, 30000)))
		rc = type == OOB_TYPE_EP_ADDR ? core_ep_connect(ep, slot, &theirs, rlen, peer) : -EPROTO;
	if (rc)
		peer_drop(ep, slot);
	return rc;
}
