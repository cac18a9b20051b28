/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft CM's ids: the table of live ids under the CM lock, the ids
 * retired after rdma_destroy_id, and the soft device every id is bound to
 * (its context and default PD, opened once).  The bottom of the CM: the API
 * (cm.c), the CM thread (conn.c) and the convenience layer (ep.c) call in
 * here, and it calls nothing of theirs.
 */
#include "hw/soft/cm/id.h"
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

pthread_mutex_t soft_cm_lock = PTHREAD_MUTEX_INITIALIZER;
struct soft_cm_id *soft_cm_ids;
static uint64_t soft_cm_next_serial;
static struct ibv_context *soft_cm_ctx; /* the device every id resolves to, opened once */
static struct ibv_pd *soft_cm_pd;	/* rdma_create_qp's PD when the caller gives none */

/* The soft device's context, opened on first use and kept for the process; lock held. */
struct ibv_context *soft_cm_context(void)
{
	static struct hw_device dev; /* outlives the call, whatever open_device keeps of it */

	if (!soft_cm_ctx && hw_soft_provider.list_devices(&dev, 1) == 1)
		soft_cm_ctx = hw_soft_provider.open_device(&dev);
	return soft_cm_ctx;
}

/*
 * At exit, the soft NIC gets a moment (about 2 ms) to send what it holds:
 * the ACK of the peer's last SEND waits up to 20 us to ride with a later
 * packet, and the NIC drains only when its last context closes, which
 * programs never do for librdmacm's id->verbs.  perftest -R exits right
 * after its closing exchange; without this its peer saw RETRY_EXC_ERR.
 */
__attribute__((destructor)) static void soft_cm_exit(void)
{
	struct ibv_context *ctx;

	pthread_mutex_lock(&soft_cm_lock);
	ctx = soft_cm_ctx;
	pthread_mutex_unlock(&soft_cm_lock);
	for (int i = 0; ctx && i < 40; i++) {
		soft_app_round(soft_nic_of(ctx), false);
		usleep(50);
	}
}

void soft_cm_forget_ids(void)
{
	soft_cm_ids = NULL;
	soft_cm_ctx = NULL;
	soft_cm_pd = NULL;
}

struct soft_cm_id *soft_cm_find(uint64_t serial)
{
	for (struct soft_cm_id *id = soft_cm_ids; id; id = id->next)
		if (id->serial == serial)
			return id;
	return NULL;
}

static uint32_t soft_cm_random_psn(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)soft_now_ns();
	return v & 0xffffff;
}

struct soft_cm_id *soft_cm_new_id(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps)
{
	struct soft_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->serial = ++soft_cm_next_serial;
	id->fd = -1;
	id->port_fd = -1;
	id->id.channel = channel;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
	/* Chosen once: an external QP takes it (rdma_init_qp_attr) before the REP or REQ carries it. */
	id->mine.psn = soft_cm_random_psn();
	id->next = soft_cm_ids;
	soft_cm_ids = id;
	return id;
}

void soft_cm_unlink(struct soft_cm_id *id)
{
	for (struct soft_cm_id **pp = &soft_cm_ids; *pp; pp = &(*pp)->next)
		if (*pp == id) {
			*pp = id->next;
			return;
		}
}

/*
 * Destroyed ids stay allocated for a while (the last SOFT_CM_RETIRED of them):
 * a stale pointer a program still uses on another thread (rping -P's race
 * hands one id to two threads) never finds another live id at its address,
 * and soft_cm_live() refuses it without reading it.
 */
#define SOFT_CM_RETIRED 256
static struct soft_cm_id *soft_cm_retired[SOFT_CM_RETIRED];
static unsigned soft_cm_retired_next;

void soft_cm_retire(struct soft_cm_id *id)
{
	struct soft_cm_id **slot = &soft_cm_retired[soft_cm_retired_next++ % SOFT_CM_RETIRED];

	free(*slot);
	*slot = id;
}

struct soft_cm_id *soft_cm_live(const struct rdma_cm_id *cm)
{
	for (struct soft_cm_id *id = soft_cm_ids; id; id = id->next)
		if (&id->id == cm)
			return id;
	return NULL;
}

bool soft_cm_lock_live(const struct rdma_cm_id *cm)
{
	pthread_mutex_lock(&soft_cm_lock);
	if (cm && soft_cm_live(cm))
		return true;
	pthread_mutex_unlock(&soft_cm_lock);
	errno = EINVAL;
	return false;
}

/* The PD for a QP made without one: the process's default on the CM's context. */
struct ibv_pd *soft_cm_default_pd(struct rdma_cm_id *cm)
{
	if (!cm->verbs)
		return NULL;
	if (!soft_cm_pd)
		soft_cm_pd = soft_alloc_pd(cm->verbs);
	return soft_cm_pd;
}
