/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The soft NIC singleton, device/port/GID queries, contexts and async events. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "hw/soft/soft.h"
#include "hw/cm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t soft_nic_lock = PTHREAD_MUTEX_INITIALIZER;
static struct soft_nic *soft_nic_instance;
static char soft_config_error[256];
static pthread_once_t soft_atfork_once = PTHREAD_ONCE_INIT;

static struct ibv_device soft_ibv_device = {
    .node_type = IBV_NODE_CA,
    .transport_type = IBV_TRANSPORT_IB,
    .name = SOFT_DEVICE_NAME,
    .dev_name = "soft_uverbs0",
};

uint64_t soft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct soft_nic *soft_nic_of(struct ibv_context *ctx)
{
	return to_soft_context(ctx)->nic;
}

bool soft_gid_is_local(const struct soft_nic *nic, const union ibv_gid *gid)
{
	return memcmp(gid->raw, nic->gid.raw, sizeof(gid->raw)) == 0;
}

const union ibv_gid *soft_gid_at(const struct soft_nic *nic, unsigned index)
{
	return index == 1 ? &nic->wire_gid : &nic->gid;
}

void soft_config_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(soft_config_error, sizeof(soft_config_error), fmt, ap);
	va_end(ap);
}

static const char *soft_open_error(void)
{
	return soft_config_error;
}

/* A forked child has no engine thread: it must build its own NIC. */
static void soft_forget_nic_in_child(void)
{
	soft_nic_instance = NULL;
	pthread_mutex_init(&soft_nic_lock, NULL);
}

static void soft_register_atfork(void)
{
	pthread_atfork(NULL, NULL, soft_forget_nic_in_child);
}

/*
 * Identifiers a stranger must not predict (issue: forged WRITEs at guessed
 * QPNs and rkeys): every QP slot's generation, which is the QPN's high bits,
 * and every key slot's rotating byte start at random values, per process.
 */
static void soft_randomize_ids(struct soft_nic *nic)
{
	uint16_t qp_gen[SOFT_MAX_QP];
	uint8_t key_gen[SOFT_MAX_KEYS];

	if (getrandom(qp_gen, sizeof(qp_gen), 0) != (ssize_t)sizeof(qp_gen) ||
	    getrandom(key_gen, sizeof(key_gen), 0) != (ssize_t)sizeof(key_gen))
		return; /* no entropy: the counters start at 0, as before */
	for (int i = 0; i < SOFT_MAX_QP; i++)
		nic->qp_gen[i] = qp_gen[i] % 0x3fff; /* qp.c adds 1: generations 1..0x3fff */
	for (int i = 0; i < SOFT_MAX_KEYS; i++)
		nic->keys[i].gen = key_gen[i];
}

/*
 * A node GUID that stays the same from run to run: the GID carries the wire
 * port, which is ephemeral, so the GUID is a hash of the host's identity
 * (/etc/machine-id, else gethostid) and the device's IP address, with the
 * EUI-64 "locally administered" bit set.  Big-endian, as verbs reports it.
 */
static __be64 soft_node_guid(const struct soft_nic *nic)
{
	char host[64] = "";
	uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a */
	FILE *f = fopen("/etc/machine-id", "re");
	uint8_t guid[8];

	if (!f || !fgets(host, sizeof(host), f))
		snprintf(host, sizeof(host), "%lx", gethostid());
	if (f)
		fclose(f);
	for (const char *c = host; *c && *c != '\n'; c++)
		hash = (hash ^ (uint8_t)*c) * 0x100000001b3ull;
	for (int i = 8; i < 12; i++)
		hash = (hash ^ nic->gid.raw[i]) * 0x100000001b3ull;
	for (int i = 0; i < 8; i++)
		guid[i] = (uint8_t)(hash >> (56 - 8 * i));
	guid[0] = (guid[0] & ~1u) | 2u;
	return *(const __be64 *)(const void *)guid;
}

static struct soft_nic *soft_nic_create(void)
{
	struct soft_nic *nic = calloc(1, sizeof(*nic));
	const char *faults = getenv("RDMATOOL_SOFT_FAULTS");
	int err;

	if (!nic)
		return NULL;
	soft_config_error[0] = '\0';
	if (faults && soft_faults_parse(faults, &nic->faults, soft_config_error, sizeof(soft_config_error))) {
		free(nic);
		errno = EINVAL;
		return NULL;
	}
	pthread_rwlock_init(&nic->obj_lock, NULL);
	pthread_mutex_init(&nic->runq_lock, NULL);
	soft_randomize_ids(nic);
	nic->listen_fd = -1;
	nic->epoll_fd = -1;
	nic->wake_fd = -1;
	err = soft_auth_load(&nic->auth);
	if (!err)
		err = soft_wire_listen(nic, getenv("RDMATOOL_SOFT_ADDR"));
	if (!err) {
		nic->node_guid = soft_node_guid(nic); /* once: it reads /etc/machine-id */
		err = soft_engine_start(nic);
	}
	if (err) {
		soft_wire_close(nic);
		pthread_rwlock_destroy(&nic->obj_lock);
		pthread_mutex_destroy(&nic->runq_lock);
		free(nic);
		errno = err;
		return NULL;
	}
	return nic;
}

static void soft_nic_destroy(struct soft_nic *nic)
{
	soft_engine_stop(nic);
	soft_wire_close(nic);
	pthread_rwlock_destroy(&nic->obj_lock);
	pthread_mutex_destroy(&nic->runq_lock);
	free(nic);
}

static struct soft_nic *soft_nic_get(void)
{
	struct soft_nic *nic;

	pthread_once(&soft_atfork_once, soft_register_atfork);
	pthread_mutex_lock(&soft_nic_lock);
	if (!soft_nic_instance)
		soft_nic_instance = soft_nic_create();
	nic = soft_nic_instance;
	if (nic)
		nic->refs++;
	pthread_mutex_unlock(&soft_nic_lock);
	return nic;
}

static void soft_nic_put(struct soft_nic *nic)
{
	bool last;

	pthread_mutex_lock(&soft_nic_lock);
	last = --nic->refs == 0;
	if (last && soft_nic_instance == nic)
		soft_nic_instance = NULL;
	pthread_mutex_unlock(&soft_nic_lock);
	if (last)
		soft_nic_destroy(nic);
}

static int soft_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	struct soft_nic *nic = soft_nic_of(ctx);

	memset(attr, 0, sizeof(*attr));
	strcpy(attr->fw_ver, "1.0");
	attr->node_guid = nic->node_guid;
	attr->sys_image_guid = attr->node_guid;
	attr->max_mr_size = SOFT_MAX_MSG;
	attr->page_size_cap = 0xfffff000;
	attr->vendor_id = 0xffffff;
	attr->vendor_part_id = 1;
	attr->hw_ver = 1;
	attr->max_qp = SOFT_MAX_QP;
	attr->max_qp_wr = SOFT_MAX_QP_WR;
	attr->device_cap_flags = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
				 IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
				 IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SRQ_RESIZE;
	attr->max_sge = SOFT_MAX_SGE;
	attr->max_sge_rd = SOFT_MAX_SGE;
	attr->max_cq = SOFT_MAX_CQ;
	attr->max_cqe = SOFT_MAX_CQE;
	attr->max_mr = SOFT_MAX_MR;
	attr->max_mw = SOFT_MAX_MW;
	attr->max_pd = SOFT_MAX_PD;
	attr->max_srq = SOFT_MAX_SRQ;
	attr->max_srq_wr = SOFT_MAX_SRQ_WR;
	attr->max_srq_sge = SOFT_MAX_SGE;
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->max_res_rd_atom = SOFT_MAX_QP * 16;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->max_ah = SOFT_MAX_AH;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	attr->phys_port_cnt = 1;
	return 0;
}

static int soft_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	(void)ctx;
	if (port != 1)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->phys_state = 5; /* LinkUp */
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = IBV_MTU_4096;
	attr->gid_tbl_len = SOFT_GID_TBL_LEN;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = SOFT_MAX_MSG;
	attr->port_cap_flags = IBV_PORT_CM_SUP;
	attr->lid = 0; /* Ethernet link layer: addressing is by GID */
	attr->sm_lid = 0;
	attr->active_width = 2;	 /* 4x */
	attr->active_speed = 32; /* EDR */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

static int soft_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (port != 1 || index < 0 || index >= SOFT_GID_TBL_LEN)
		return EINVAL;
	*gid = *soft_gid_at(soft_nic_of(ctx), (unsigned)index);
	return 0;
}

bool soft_is_cmd_fd(int fd)
{
	static const char prefix[] = "/memfd:" SOFT_CMD_FD_NAME " ";
	char path[64], target[sizeof(prefix) + 16];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strncmp(target, prefix, sizeof(prefix) - 1) == 0;
}

static int soft_close_device(struct ibv_context *ctx)
{
	struct soft_context *sctx = to_soft_context(ctx);

	if (sctx->vctx.context.cmd_fd >= 0)
		close(sctx->vctx.context.cmd_fd);
	close(sctx->vctx.context.async_fd);
	close(sctx->async_wr);
	soft_async_free(sctx);
	pthread_mutex_destroy(&sctx->vctx.context.mutex);
	soft_nic_put(sctx->nic);
	free(sctx);
	return 0;
}

/* Every soft QP has the ibv_wr_* API (qp_ex.c). */
static struct ibv_qp_ex *soft_qp_to_qp_ex(struct ibv_qp *qp)
{
	return &to_soft_qp(qp)->ibv_ex;
}

static const struct hw_ops soft_ops = {
    .query_device = soft_query_device,
    .query_port = soft_query_port,
    .query_gid = soft_query_gid,
    .close_device = soft_close_device,
    .alloc_pd = soft_alloc_pd,
    .dealloc_pd = soft_dealloc_pd,
    .reg_mr = soft_reg_mr,
    .reg_mr_iova = soft_reg_mr_iova,
    .dereg_mr = soft_dereg_mr,
    .rereg_mr = soft_rereg_mr,
    .alloc_mw = soft_alloc_mw,
    .dealloc_mw = soft_dealloc_mw,
    .bind_mw = soft_bind_mw,
    .create_comp_channel = soft_create_comp_channel,
    .destroy_comp_channel = soft_destroy_comp_channel,
    .get_cq_event = soft_get_cq_event,
    .ack_cq_events = soft_ack_cq_events,
    .create_cq = soft_create_cq,
    .destroy_cq = soft_destroy_cq,
    .resize_cq = soft_resize_cq,
    .poll_cq = soft_poll_cq,
    .req_notify_cq = soft_req_notify_cq,
    .create_qp = soft_create_qp,
    .modify_qp = soft_modify_qp,
    .query_qp = soft_query_qp,
    .destroy_qp = soft_destroy_qp,
    .qp_to_qp_ex = soft_qp_to_qp_ex,
    .post_send = soft_post_send,
    .post_recv = soft_post_recv,
    .create_ah = soft_create_ah,
    .destroy_ah = soft_destroy_ah,
    .create_srq = soft_create_srq,
    .modify_srq = soft_modify_srq,
    .query_srq = soft_query_srq,
    .destroy_srq = soft_destroy_srq,
    .post_srq_recv = soft_post_srq_recv,
    .get_async_event = soft_get_async_event,
    .ack_async_event = soft_ack_async_event,
};

static int soft_list_devices(struct hw_device *out, int max)
{
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	strcpy(out->name, SOFT_DEVICE_NAME);
	out->provider = &hw_soft_provider;
	out->ibv_device = &soft_ibv_device;
	return 1;
}

/* verbs_context.query_port: the caller says how much of struct ibv_port_attr it has. */
static int soft_query_port_sized(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
				 size_t len)
{
	struct ibv_port_attr full;
	int err = soft_query_port(ctx, port, &full);

	if (!err)
		memcpy(attr, &full, len < sizeof(full) ? len : sizeof(full));
	return err;
}

static int soft_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full = {0};
	int err;

	if (input && input->comp_mask)
		return EINVAL;
	err = soft_query_device(ctx, &full.orig_attr);
	if (err)
		return err;
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
	/* Completion timestamps are CLOCK_MONOTONIC in ns (cq_ex.c): a 1 GHz clock, in kHz. */
	full.completion_timestamp_mask = UINT64_MAX;
	full.hca_core_clock = 1000000;
	full.phys_port_cnt_ex = 1;
	full.max_dm_size = SOFT_MAX_DM;
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	return 0;
}

static void soft_context_init(struct soft_context *sctx, int async_fd)
{
	struct verbs_context *v = &sctx->vctx;
	struct ibv_context *ctx = &v->context;

	ctx->device = &soft_ibv_device;
	/*
	 * There is no kernel device to talk to; programs still dup() the
	 * command fd (to import the context elsewhere), so it is a real,
	 * recognizable file (soft_is_cmd_fd).
	 */
	ctx->cmd_fd = memfd_create(SOFT_CMD_FD_NAME, MFD_CLOEXEC);
	ctx->async_fd = async_fd;
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->ops.post_send = soft_post_send;
	ctx->ops.post_recv = soft_post_recv;
	ctx->ops.poll_cq = soft_poll_cq;
	ctx->ops.req_notify_cq = soft_req_notify_cq;
	ctx->ops.alloc_mw = soft_alloc_mw;
	ctx->ops.dealloc_mw = soft_dealloc_mw;
	ctx->ops.bind_mw = soft_bind_mw;
	ctx->ops.post_srq_recv = soft_post_srq_recv;
	/* The extended ops libibverbs' inline helpers look up (verbs_get_ctx_op). */
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	v->sz = sizeof(*v);
	v->query_port = soft_query_port_sized;
	v->query_device_ex = soft_query_device_ex;
	v->create_cq_ex = soft_create_cq_ex;
	v->create_qp_ex = soft_create_qp_ex;
	v->create_srq_ex = soft_create_srq_ex;
	v->alloc_parent_domain = soft_alloc_parent_domain;
	v->alloc_dm = soft_alloc_dm;
	v->free_dm = soft_free_dm;
	v->reg_dm_mr = soft_reg_dm_mr;
}

static struct ibv_context *soft_open_device(const struct hw_device *dev)
{
	struct soft_context *sctx = calloc(1, sizeof(*sctx));
	int fds[2];

	(void)dev;
	if (!sctx)
		return NULL;
	if (pipe2(fds, O_CLOEXEC)) {
		free(sctx);
		return NULL;
	}
	/* The NIC never blocks on a consumer that does not read its events. */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	sctx->nic = soft_nic_get();
	if (!sctx->nic) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		free(sctx);
		errno = err;
		return NULL;
	}
	soft_context_init(sctx, fds[0]);
	sctx->async_wr = fds[1];
	pthread_mutex_init(&sctx->async_lock, NULL);
	return &sctx->vctx.context;
}

static bool soft_owns_context(const struct ibv_context *ctx)
{
	return ctx && ctx->device == &soft_ibv_device;
}

const struct hw_provider hw_soft_provider = {
    .name = "soft",
    .ops = &soft_ops,
    .list_devices = soft_list_devices,
    .open_device = soft_open_device,
    .owns_context = soft_owns_context,
    .cm = &hw_cm_soft,
    .open_error = soft_open_error,
};
