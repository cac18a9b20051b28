/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Device memory (ibv_alloc_dm, ibv_memcpy_to_dm/from_dm, ibv_reg_dm_mr), as
 * mlx5's MEMIC behaves: up to SOFT_MAX_DM bytes per allocation, copies at
 * 4-byte aligned offsets and lengths within the allocation (else EINVAL),
 * MRs on it zero-based (IBV_ACCESS_ZERO_BASED required: the MR's addresses
 * count from the DM offset it starts at), freeing refused (EBUSY) while an
 * MR uses it.  The soft NIC's "device" memory is memory of the NIC's
 * process, so the MR's keys reach it like any other.
 */
#include "hw/soft/soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SOFT_DM_ALIGN 64 /* the largest log_align_req mlx5 grants: 2^6 */

struct ibv_dm *soft_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr)
{
	struct soft_dm *dm;
	size_t size;

	if (attr->comp_mask || !attr->length || attr->length > SOFT_MAX_DM || attr->log_align_req > 6) {
		errno = EINVAL;
		return NULL;
	}
	size = (attr->length + SOFT_DM_ALIGN - 1) & ~(size_t)(SOFT_DM_ALIGN - 1);
	dm = calloc(1, sizeof(*dm));
	if (dm)
		dm->buf = aligned_alloc(SOFT_DM_ALIGN, size);
	if (!dm || !dm->buf) {
		free(dm);
		errno = ENOMEM;
		return NULL;
	}
	memset(dm->buf, 0, size);
	dm->len = attr->length;
	dm->ibv.context = ctx;
	dm->ibv.memcpy_to_dm = soft_memcpy_to_dm;
	dm->ibv.memcpy_from_dm = soft_memcpy_from_dm;
	return &dm->ibv;
}

int soft_free_dm(struct ibv_dm *ibdm)
{
	struct soft_dm *dm = to_soft_dm(ibdm);

	if (atomic_load(&dm->mrs))
		return EBUSY;
	free(dm->buf);
	free(dm);
	return 0;
}

/* A copy's range: 4-byte aligned and inside the allocation. */
static bool soft_dm_range_ok(const struct soft_dm *dm, uint64_t off, size_t len)
{
	return !(off & 3) && !(len & 3) && off <= dm->len && len <= dm->len - off;
}

int soft_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t off, const void *host, size_t len)
{
	struct soft_dm *dm = to_soft_dm(ibdm);

	if (!soft_dm_range_ok(dm, off, len))
		return EINVAL;
	soft_dma_copy(dm->buf + off, host, len);
	return 0;
}

int soft_memcpy_from_dm(void *host, struct ibv_dm *ibdm, uint64_t off, size_t len)
{
	struct soft_dm *dm = to_soft_dm(ibdm);

	if (!soft_dm_range_ok(dm, off, len))
		return EINVAL;
	soft_dma_copy(host, dm->buf + off, len);
	return 0;
}

struct ibv_mr *soft_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t off, size_t len,
			      unsigned int access)
{
	struct soft_dm *dm = to_soft_dm(ibdm);
	struct ibv_mr *mr;

	if (!(access & IBV_ACCESS_ZERO_BASED) || ibdm->context->device != pd->context->device ||
	    off > dm->len || len > dm->len - off) {
		errno = EINVAL;
		return NULL;
	}
	mr = soft_reg_mr_iova(pd, dm->buf + off, len, 0, (int)(access & ~(unsigned)IBV_ACCESS_ZERO_BASED));
	if (mr) {
		to_soft_mr(mr)->dm = dm;
		atomic_fetch_add(&dm->mrs, 1);
	}
	return mr;
}
