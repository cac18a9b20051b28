/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Protection domains, memory regions and memory windows: the key table and
 * every check a key undergoes (key, bounds, access, PD, window binding).
 * Keys are (table index << 8) | a rotating byte; MRs have lkey == rkey.
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>

struct ibv_pd *soft_alloc_pd(struct ibv_context *ctx)
{
	struct soft_nic *nic = soft_nic_of(ctx);
	struct soft_pd *pd;

	if (atomic_fetch_add(&nic->n_pd, 1) >= SOFT_MAX_PD) {
		atomic_fetch_sub(&nic->n_pd, 1);
		errno = ENOMEM;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		atomic_fetch_sub(&nic->n_pd, 1);
		return NULL;
	}
	pd->ibv.context = ctx;
	return &pd->ibv;
}

/*
 * ibv_alloc_parent_domain: a PD that stands for attr->pd (objects made on it
 * belong to that PD).  No thread domains here (ibv_alloc_td is not
 * implemented); the allocators are accepted and not called: the soft NIC's
 * queues live in its own memory, which the application never maps.
 */
struct ibv_pd *soft_alloc_parent_domain(struct ibv_context *ctx, struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known =
	    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct soft_pd *pd;

	if ((attr->comp_mask & ~known) || attr->td) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->pd || attr->pd->context->device != ctx->device || ((struct soft_pd *)attr->pd)->base ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) && (!attr->alloc || !attr->free))) {
		errno = EINVAL;
		return NULL;
	}
	pd = (struct soft_pd *)soft_alloc_pd(ctx);
	if (!pd)
		return NULL;
	pd->base = attr->pd;
	pd->ibv.handle = attr->pd->handle;
	soft_pd_hold(attr->pd);
	return &pd->ibv;
}

int soft_dealloc_pd(struct ibv_pd *pd)
{
	struct ibv_pd *base = ((struct soft_pd *)pd)->base;

	/* As the kernel's ib_dealloc_pd path: a PD with objects on it stays (EBUSY). */
	if (atomic_load(&((struct soft_pd *)pd)->users))
		return EBUSY;
	if (base)
		soft_pd_release(base);
	atomic_fetch_sub(&soft_nic_of(pd->context)->n_pd, 1);
	free(pd);
	return 0;
}

/* Takes a free key slot; called with obj_lock held for writing. */
static int soft_key_alloc(struct soft_nic *nic, enum soft_key_kind kind, void *obj, uint32_t *key)
{
	static const int first = 1; /* index 0 is never a valid key */

	for (int i = first; i < SOFT_MAX_KEYS; i++) {
		struct soft_key_slot *s = &nic->keys[i];

		if (s->kind != SOFT_KEY_FREE)
			continue;
		s->kind = kind;
		s->obj = obj;
		s->gen++;
		*key = ((uint32_t)i << 8) | s->gen;
		return 0;
	}
	return ENOMEM;
}

static struct soft_key_slot *soft_key_slot(struct soft_nic *nic, uint32_t key)
{
	uint32_t index = key >> 8;

	return index > 0 && index < SOFT_MAX_KEYS ? &nic->keys[index] : NULL;
}

struct ibv_mr *soft_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return soft_reg_mr_iova(pd, addr, length, (uintptr_t)addr, access);
}

/* The access rules every registration obeys; 0 or EINVAL. */
static int soft_mr_access_ok(int access)
{
	/* As the kernel enforces it: remote write or atomic needs local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

/*
 * ibv_rereg_mr: a new range, PD or access for a registered MR, which keeps
 * its keys.  Refused (EBUSY) while windows are bound to it.  Returns 0 or
 * one of libibverbs' IBV_REREG_MR_ERR_* codes, with errno set; the MR is
 * unchanged on failure.
 */
int soft_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct soft_mr *mr = to_soft_mr(ibmr);
	struct soft_nic *nic = soft_nic_of(ibmr->context);
	int err = 0;

	if (!flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED))
		err = EINVAL;
	else if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context->device != ibmr->context->device))
		err = EINVAL;
	else if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && soft_mr_access_ok(access))
		err = EINVAL;
	else if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (length > SOFT_MAX_MSG || (!addr && length)))
		err = EINVAL;
	if (err) {
		errno = err;
		return IBV_REREG_MR_ERR_INPUT;
	}
	pthread_rwlock_wrlock(&nic->obj_lock);
	if (mr->mw_bound) {
		pthread_rwlock_unlock(&nic->obj_lock);
		errno = EBUSY;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->ibv.addr = addr;
		mr->ibv.length = length;
		mr->iova = (uintptr_t)addr;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		soft_pd_hold(pd);
		soft_pd_release(mr->ibv.pd);
		mr->ibv.pd = pd;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = access;
	pthread_rwlock_unlock(&nic->obj_lock);
	return 0;
}

/* iova: the address the MR's first byte has in work requests and rkey accesses. */
struct ibv_mr *soft_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	struct soft_nic *nic = soft_nic_of(pd->context);

	pd = soft_pd_base(pd);
	struct soft_mr *mr;
	uint32_t key;
	int err;

	if (soft_mr_access_ok(access)) {
		errno = EINVAL;
		return NULL;
	}
	if (length > SOFT_MAX_MSG || (!addr && length) || iova > UINT64_MAX - length) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_fetch_add(&nic->n_mr, 1) >= SOFT_MAX_MR) {
		atomic_fetch_sub(&nic->n_mr, 1);
		errno = ENOMEM;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		atomic_fetch_sub(&nic->n_mr, 1);
		return NULL;
	}
	mr->ibv.context = pd->context;
	mr->ibv.pd = pd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->iova = iova;
	mr->access = access;
	/* The key slot makes the MR visible to the engine (under the read
	 * lock): every field it checks must be set before the lock drops. */
	pthread_rwlock_wrlock(&nic->obj_lock);
	err = soft_key_alloc(nic, SOFT_KEY_MR, mr, &key);
	if (!err) {
		mr->ibv.lkey = key;
		mr->ibv.rkey = key;
	}
	pthread_rwlock_unlock(&nic->obj_lock);
	if (err) {
		atomic_fetch_sub(&nic->n_mr, 1);
		free(mr);
		errno = err;
		return NULL;
	}
	soft_pd_hold(pd);
	return &mr->ibv;
}

int soft_dereg_mr(struct ibv_mr *ibmr)
{
	struct soft_nic *nic = soft_nic_of(ibmr->context);
	struct soft_mr *mr = to_soft_mr(ibmr);
	struct soft_key_slot *s;

	pthread_rwlock_wrlock(&nic->obj_lock);
	if (mr->mw_bound) {
		pthread_rwlock_unlock(&nic->obj_lock);
		return EBUSY;
	}
	s = soft_key_slot(nic, ibmr->lkey);
	s->kind = SOFT_KEY_FREE;
	s->obj = NULL;
	pthread_rwlock_unlock(&nic->obj_lock);
	atomic_fetch_sub(&nic->n_mr, 1);
	soft_pd_release(ibmr->pd);
	if (mr->dm)
		atomic_fetch_sub(&mr->dm->mrs, 1);
	free(mr);
	return 0;
}

struct ibv_mw *soft_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct soft_nic *nic = soft_nic_of(pd->context);

	pd = soft_pd_base(pd);
	struct soft_mw *mw;
	uint32_t key;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_fetch_add(&nic->n_mw, 1) >= SOFT_MAX_MW) {
		atomic_fetch_sub(&nic->n_mw, 1);
		errno = ENOMEM;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		atomic_fetch_sub(&nic->n_mw, 1);
		return NULL;
	}
	mw->ibv.context = pd->context;
	mw->ibv.pd = pd;
	mw->ibv.type = type;
	/* As for MRs: complete before the key slot publishes it. */
	pthread_rwlock_wrlock(&nic->obj_lock);
	err = soft_key_alloc(nic, SOFT_KEY_MW, mw, &key);
	if (!err) {
		mw->ibv.rkey = key;
		mw->key = key;
	}
	pthread_rwlock_unlock(&nic->obj_lock);
	if (err) {
		atomic_fetch_sub(&nic->n_mw, 1);
		free(mw);
		errno = err;
		return NULL;
	}
	soft_pd_hold(pd);
	return &mw->ibv;
}

static void soft_mw_unbind(struct soft_mw *mw)
{
	if (mw->valid && mw->mr)
		mw->mr->mw_bound--;
	mw->valid = false;
	mw->mr = NULL;
}

int soft_dealloc_mw(struct ibv_mw *ibmw)
{
	struct soft_nic *nic = soft_nic_of(ibmw->context);
	struct soft_mw *mw = to_soft_mw(ibmw);
	struct soft_key_slot *s;

	pthread_rwlock_wrlock(&nic->obj_lock);
	soft_mw_unbind(mw);
	s = soft_key_slot(nic, mw->key);
	s->kind = SOFT_KEY_FREE;
	s->obj = NULL;
	pthread_rwlock_unlock(&nic->obj_lock);
	atomic_fetch_sub(&nic->n_mw, 1);
	soft_pd_release(ibmw->pd);
	free(mw);
	return 0;
}

/* Type 1 binds travel through the send queue, ordered with other WRs (as rxe does). */
int soft_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr =
			       {
				   .wr_id = bind->wr_id,
				   .opcode = IBV_WR_BIND_MW,
				   .send_flags = bind->send_flags,
			       },
			   *bad;
	int err;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	err = soft_post_send(qp, &wr, &bad);
	if (!err)
		mw->rkey = wr.bind_mw.rkey; /* the caller undoes it on an error completion */
	return err;
}

struct soft_mr *soft_lookup_lkey(struct soft_nic *nic, uint32_t lkey)
{
	struct soft_key_slot *s = soft_key_slot(nic, lkey);
	struct soft_mr *mr;

	if (!s || s->kind != SOFT_KEY_MR)
		return NULL;
	mr = s->obj;
	return mr->ibv.lkey == lkey ? mr : NULL;
}

static bool soft_range_ok(uint64_t base, uint64_t size, uint64_t addr, uint64_t len)
{
	return addr >= base && len <= size && addr - base <= size - len;
}

enum ibv_wc_status soft_check_rkey(struct soft_nic *nic, struct soft_qp *qp, uint32_t rkey, uint64_t addr,
				   uint64_t len, int access, void **ptr)
{
	struct soft_key_slot *s = soft_key_slot(nic, rkey);

	*ptr = NULL;
	if (len == 0)
		return IBV_WC_SUCCESS; /* a zero-length access checks no key */
	if (!s)
		return IBV_WC_REM_ACCESS_ERR;
	if (s->kind == SOFT_KEY_MR) {
		struct soft_mr *mr = s->obj;

		if (mr->ibv.rkey != rkey || mr->ibv.pd != qp->ibv.pd || (mr->access & access) != access ||
		    !soft_range_ok(mr->iova, mr->ibv.length, addr, len))
			return IBV_WC_REM_ACCESS_ERR;
		*ptr = soft_mr_ptr(mr, addr);
	} else if (s->kind == SOFT_KEY_MW) {
		struct soft_mw *mw = s->obj;

		if (!mw->valid || mw->key != rkey || mw->ibv.pd != qp->ibv.pd ||
		    (mw->ibv.type == IBV_MW_TYPE_2 && mw->qpn != qp->ibv.qp_num) ||
		    (mw->access & access) != access || !soft_range_ok(mw->addr, mw->length, addr, len))
			return IBV_WC_REM_ACCESS_ERR;
		*ptr = soft_mr_ptr(mw->mr, addr); /* a window's range is in its MR's address space */
	} else {
		return IBV_WC_REM_ACCESS_ERR;
	}
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status soft_exec_bind(struct soft_qp *qp, struct soft_mw *mw, uint32_t new_rkey,
				  const struct ibv_mw_bind_info *info)
{
	struct soft_nic *nic = qp->nic;
	struct soft_mr *mr = to_soft_mr(info->mr);
	const int remote = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct soft_key_slot *s = soft_key_slot(nic, mw->key);

	if (!s || s->obj != mw || mw->ibv.pd != qp->ibv.pd || (new_rkey >> 8) != (mw->key >> 8))
		return IBV_WC_MW_BIND_ERR;
	if (mw->ibv.type == IBV_MW_TYPE_2 && (mw->valid || !mr))
		return IBV_WC_MW_BIND_ERR;
	if (!mr) {
		/* Type 1 with no MR and zero length: unbind. */
		if (info->length)
			return IBV_WC_MW_BIND_ERR;
		soft_mw_unbind(mw);
		mw->key = new_rkey;
		return IBV_WC_SUCCESS;
	}
	if (soft_lookup_lkey(nic, mr->ibv.lkey) != mr || mr->ibv.pd != mw->ibv.pd ||
	    !(mr->access & IBV_ACCESS_MW_BIND) ||
	    (info->mw_access_flags & ~(remote | IBV_ACCESS_LOCAL_WRITE)) ||
	    ((info->mw_access_flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & IBV_ACCESS_LOCAL_WRITE)) ||
	    !soft_range_ok(mr->iova, mr->ibv.length, info->addr, info->length))
		return IBV_WC_MW_BIND_ERR;
	soft_mw_unbind(mw);
	mw->mr = mr;
	mr->mw_bound++;
	mw->addr = info->addr;
	mw->length = info->length;
	mw->access = info->mw_access_flags;
	mw->qpn = qp->ibv.qp_num;
	mw->key = new_rkey;
	mw->valid = true;
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status soft_invalidate(struct soft_nic *nic, uint32_t rkey, struct soft_qp *qp, bool remote)
{
	struct soft_key_slot *s = soft_key_slot(nic, rkey);
	struct soft_mw *mw;
	enum ibv_wc_status bad = remote ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_LOC_QP_OP_ERR;

	if (!s || s->kind != SOFT_KEY_MW)
		return bad;
	mw = s->obj;
	/* Only a valid type 2 window of this PD (bound to this QP, remotely) can be invalidated. */
	if (mw->key != rkey || !mw->valid || mw->ibv.type != IBV_MW_TYPE_2 || mw->ibv.pd != qp->ibv.pd ||
	    (remote && mw->qpn != qp->ibv.qp_num))
		return bad;
	soft_mw_unbind(mw);
	return IBV_WC_SUCCESS;
}
