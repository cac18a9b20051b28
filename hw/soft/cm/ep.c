/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft CM's convenience layer, as librdmacm's: rdma_getaddrinfo,
 * rdma_create_ep/rdma_destroy_ep and rdma_get_request, built on the
 * synchronous ids of cm.c (rdma_server and rdma_client use nothing else).
 */
#include "hw/soft/cm/id.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#define SOFT_CM_RESOLVE_MS 2000

static struct sockaddr *soft_cm_dup_addr(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *copy = malloc(len);

	if (copy)
		memcpy(copy, sa, len);
	return copy;
}

/* An address of the hints, copied; false when it is there but not IPv4. */
static bool soft_cm_hint_addr(const struct sockaddr *sa, socklen_t len, struct sockaddr **out,
			      socklen_t *out_len)
{
	if (!sa || !len)
		return true;
	if (sa->sa_family != AF_INET || len < sizeof(struct sockaddr_in))
		return false;
	*out = soft_cm_dup_addr(sa, sizeof(struct sockaddr_in));
	*out_len = *out ? sizeof(struct sockaddr_in) : 0;
	return true;
}

/*
 * rdma_getaddrinfo(NULL, NULL, hints): as librdmacm, the addresses come from
 * the hints (ai_src_addr, ai_dst_addr); libfabric's verbs provider asks so.
 */
static int soft_cm_addrinfo_from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r;
	bool ok;

	if (!hints || (!hints->ai_src_addr && !hints->ai_dst_addr)) {
		errno = EINVAL;
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return -1;
	}
	r->ai_flags = hints->ai_flags;
	r->ai_family = AF_INET;
	r->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	ok = soft_cm_hint_addr(hints->ai_src_addr, hints->ai_src_len, &r->ai_src_addr, &r->ai_src_len) &&
	     soft_cm_hint_addr(hints->ai_dst_addr, hints->ai_dst_len, &r->ai_dst_addr, &r->ai_dst_len);
	if (!ok || (!r->ai_src_addr && !r->ai_dst_addr)) {
		soft_cm_freeaddrinfo(r);
		errno = ok ? ENOMEM : EAFNOSUPPORT;
		return -1;
	}
	*res = r;
	return 0;
}

int soft_cm_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
			struct rdma_addrinfo **res)
{
	struct addrinfo want = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	struct rdma_addrinfo *r;
	bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
	int rc;

	if (!res || (!node && !service && !hints)) {
		errno = EINVAL;
		return -1;
	}
	if (hints && hints->ai_family && hints->ai_family != AF_INET) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (!node && !service)
		return soft_cm_addrinfo_from_hints(hints, res);
	if (passive)
		want.ai_flags |= AI_PASSIVE;
	if (hints && (hints->ai_flags & RAI_NUMERICHOST))
		want.ai_flags |= AI_NUMERICHOST;
	rc = getaddrinfo(node, service, &want, &ai);
	if (rc) {
		errno = rc == EAI_SYSTEM ? errno : ENOENT;
		return rc;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		errno = ENOMEM;
		return -1;
	}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = AF_INET;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	if (passive) {
		r->ai_src_len = ai->ai_addrlen;
		r->ai_src_addr = soft_cm_dup_addr(ai->ai_addr, ai->ai_addrlen);
	} else {
		r->ai_dst_len = ai->ai_addrlen;
		r->ai_dst_addr = soft_cm_dup_addr(ai->ai_addr, ai->ai_addrlen);
		if (hints && hints->ai_src_addr && hints->ai_src_addr->sa_family == AF_INET) {
			r->ai_src_len = sizeof(struct sockaddr_in);
			r->ai_src_addr = soft_cm_dup_addr(hints->ai_src_addr, sizeof(struct sockaddr_in));
		}
	}
	freeaddrinfo(ai);
	if (passive ? !r->ai_src_addr : !r->ai_dst_addr) {
		soft_cm_freeaddrinfo(r);
		errno = ENOMEM;
		return -1;
	}
	*res = r;
	return 0;
}

void soft_cm_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

int soft_cm_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	int err;

	if (!out || !res) {
		errno = EINVAL;
		return -1;
	}
	if (soft_cm_create_id(NULL, &cm, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	if (res->ai_qp_type)
		cm->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		if (soft_cm_bind_addr(cm, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			struct soft_cm_id *id = to_soft_cm_id(cm);

			id->ep_attr = *qp_init_attr;
			id->has_ep_attr = true;
			cm->pd = pd;
		}
		*out = cm;
		return 0;
	}
	if (soft_cm_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, SOFT_CM_RESOLVE_MS) ||
	    soft_cm_resolve_route(cm, SOFT_CM_RESOLVE_MS))
		goto fail;
	if (qp_init_attr && soft_cm_create_qp(cm, pd, qp_init_attr))
		goto fail;
	*out = cm;
	return 0;
fail:
	err = errno;
	soft_cm_destroy_id(cm);
	errno = err;
	return -1;
}

void soft_cm_destroy_ep(struct rdma_cm_id *cm)
{
	if (!cm)
		return;
	if (cm->qp)
		soft_cm_destroy_qp(cm);
	soft_cm_destroy_id(cm);
}

int soft_cm_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct soft_cm_id *l = to_soft_cm_id(listen);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *cm;
	int err;

	if (!out || !l->sync) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		if (soft_cm_get_cm_event(listen->channel, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		soft_cm_ack_cm_event(
		    ev); /* e.g. a DISCONNECTED of an earlier connection: not asked for here */
	}
	cm = ev->id;
	soft_cm_ack_cm_event(ev);
	/* A request on a synchronous listener makes a synchronous id. */
	if (soft_cm_migrate_id(cm, NULL))
		goto fail;
	if (l->has_ep_attr) {
		struct ibv_qp_init_attr attr = l->ep_attr;

		if (soft_cm_create_qp(cm, listen->pd, &attr))
			goto fail;
	}
	*out = cm;
	return 0;
fail:
	err = errno;
	soft_cm_reject(cm, NULL, 0);
	soft_cm_destroy_id(cm);
	errno = err;
	return -1;
}
