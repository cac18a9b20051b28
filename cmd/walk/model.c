/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The walker's reference model (model.h): what ibv_modify_qp(3), the key rules and a posted work request must
 * give, from the verbs specification (IBA 1.4 chapters 10 and 11, the per-transition attribute tables of
 * ibv_modify_qp(3)), never from the device under test.
 */
#include "cmd/walk/model.h"

#include <errno.h>
#include <stdio.h>

/*
 * One legal transition: the attributes RC, UC and UD QPs must give, and the ones they may give.  Moving to
 * RESET or ERR is legal from every state and takes nothing but IBV_QP_STATE; those are not listed.
 */
struct model_transition {
	enum ibv_qp_state from, to;
	int rc_req, rc_opt, uc_req, uc_opt, ud_req, ud_opt;
};

#define PATH_ATTRS (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define RTS_SWAP   (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE)

static const struct model_transition transitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
     0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
    {IBV_QPS_INIT, IBV_QPS_RTR, PATH_ATTRS | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX, PATH_ATTRS,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
     RTS_SWAP | IBV_QP_MIN_RNR_TIMER, IBV_QP_SQ_PSN, RTS_SWAP, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, RTS_SWAP | IBV_QP_MIN_RNR_TIMER, 0, RTS_SWAP, 0,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY, 0,
     IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {IBV_QPS_SQD, IBV_QPS_RTS, 0, RTS_SWAP | IBV_QP_MIN_RNR_TIMER, 0, RTS_SWAP, 0,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_SQD, IBV_QPS_SQD, 0,
     IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
	 IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
     0, IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE, 0,
     IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    /* SQE exists only for unreliable transports: an RC send error moves the QP to ERR */
    {IBV_QPS_SQE, IBV_QPS_RTS, -1, 0, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, 0,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
};

bool model_qp_masks(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next, int *required,
		    int *optional)
{
	if ((unsigned)cur > IBV_QPS_ERR || (unsigned)next > IBV_QPS_ERR ||
	    (type != IBV_QPT_RC && type != IBV_QPT_UC && type != IBV_QPT_UD))
		return false;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) {
		*required = *optional = 0;
		return true;
	}
	for (size_t i = 0; i < sizeof(transitions) / sizeof(transitions[0]); i++) {
		const struct model_transition *t = &transitions[i];

		if (t->from != cur || t->to != next)
			continue;
		*required = type == IBV_QPT_RC ? t->rc_req : type == IBV_QPT_UC ? t->uc_req : t->ud_req;
		*optional = type == IBV_QPT_RC ? t->rc_opt : type == IBV_QPT_UC ? t->uc_opt : t->ud_opt;
		return *required >= 0;
	}
	return false;
}

int model_modify_qp(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next, int mask)
{
	int req, opt;

	if (!(mask & IBV_QP_STATE) || !model_qp_masks(type, cur, next, &req, &opt))
		return EINVAL;
	/* IBV_QP_CUR_STATE names the state the QP is in, which only these states allow */
	if ((mask & IBV_QP_CUR_STATE) && !(opt & IBV_QP_CUR_STATE))
		return EINVAL;
	if ((mask & req) != req || (mask & ~(req | opt | IBV_QP_STATE)))
		return EINVAL;
	return 0;
}

int model_modify_qp_claimed(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state claimed,
			    enum ibv_qp_state next, int mask)
{
	if ((mask & IBV_QP_CUR_STATE) && claimed != cur)
		return EINVAL;
	return model_modify_qp(type, cur, next, mask);
}

bool model_can_post_send(enum ibv_qp_state state)
{
	return state == IBV_QPS_RTS || state == IBV_QPS_SQD || state == IBV_QPS_SQE || state == IBV_QPS_ERR;
}

bool model_can_post_recv(enum ibv_qp_state state)
{
	return state != IBV_QPS_RESET;
}

/* ---- keys ---- */

static bool inside(const struct model_key *k, uint64_t addr, uint64_t len)
{
	return addr >= k->addr && len <= k->length && addr - k->addr <= k->length - len;
}

enum ibv_wc_status model_local_sge(const struct model_key *k, uint32_t pd, uint64_t addr, uint32_t len,
				   bool write)
{
	if (!k->valid || k->pd != pd || !inside(k, addr, len))
		return IBV_WC_LOC_PROT_ERR;
	if (write && !(k->access & IBV_ACCESS_LOCAL_WRITE))
		return IBV_WC_LOC_PROT_ERR;
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status model_invalidate_mw(int mw_type, bool remote)
{
	return mw_type == 2 ? IBV_WC_SUCCESS : remote ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_LOC_QP_OP_ERR;
}

uint32_t model_ud_qkey(uint32_t dqkey, uint32_t own)
{
	return dqkey & 0x80000000u ? own : dqkey;
}

enum ibv_wc_status model_recv_fits(uint32_t recv_bytes, uint32_t msg_bytes)
{
	return msg_bytes > recv_bytes ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

int model_post_srq_recv(uint32_t posted, uint32_t max_wr)
{
	return posted >= max_wr ? ENOMEM : 0;
}

enum ibv_wc_status model_remote_access(const struct model_key *k, uint32_t pd, uint32_t qpn,
				       uint32_t qp_access, uint32_t access, uint64_t addr, uint64_t len)
{
	if (!(qp_access & access))
		return IBV_WC_REM_ACCESS_ERR;
	if (!k->valid || k->pd != pd || (k->qpn && k->qpn != qpn) || !(k->access & access) ||
	    !inside(k, addr, len))
		return IBV_WC_REM_ACCESS_ERR;
	if (access == IBV_ACCESS_REMOTE_ATOMIC && (addr % 8 || len != 8))
		return IBV_WC_REM_ACCESS_ERR; /* misaligned atomic: some devices say REM_INV_REQ_ERR */
	return IBV_WC_SUCCESS;
}

uint32_t model_access_for(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_ACCESS_REMOTE_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_ACCESS_REMOTE_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_ACCESS_REMOTE_ATOMIC;
	default:
		return 0;
	}
}

int model_rereg_mr(int flags, int access, int windows_bound)
{
	const int needs_local = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

	if (!flags || ((flags & IBV_REREG_MR_CHANGE_ACCESS) && (access & needs_local) &&
		       !(access & IBV_ACCESS_LOCAL_WRITE)))
		return EINVAL;
	return windows_bound ? EBUSY : 0;
}

/* ---- completions ---- */

/* The completion opcode of a send opcode; 0 (IBV_WC_SEND) for the SENDs. */
static const enum ibv_wc_opcode send_wc_opcodes[IBV_WR_SEND_WITH_INV + 1] = {
    [IBV_WR_RDMA_WRITE] = IBV_WC_RDMA_WRITE,	    [IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
    [IBV_WR_RDMA_READ] = IBV_WC_RDMA_READ,	    [IBV_WR_ATOMIC_FETCH_AND_ADD] = IBV_WC_FETCH_ADD,
    [IBV_WR_ATOMIC_CMP_AND_SWP] = IBV_WC_COMP_SWAP, [IBV_WR_BIND_MW] = IBV_WC_BIND_MW,
    [IBV_WR_LOCAL_INV] = IBV_WC_LOCAL_INV};

void model_send_wc(struct model_wc *e, enum ibv_wr_opcode op, uint32_t sge_bytes, uint32_t qp_num)
{
	*e = (struct model_wc){.statuses = MODEL_ST(IBV_WC_SUCCESS),
			       .opcode = (unsigned)op <= IBV_WR_SEND_WITH_INV ? (int)send_wc_opcodes[op] : -1,
			       .len_max = MODEL_ANY_LEN,
			       .qp_num = qp_num};
	if (op == IBV_WR_RDMA_READ) /* byte_len: the bytes read */
		e->len_min = e->len_max = sge_bytes;
	else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP)
		e->len_min = e->len_max = 8;
}

void model_recv_wc(struct model_wc *e, enum ibv_qp_type type, uint32_t recv_bytes, uint32_t qp_num)
{
	*e = (struct model_wc){.statuses = MODEL_ST(IBV_WC_SUCCESS),
			       .opcode = IBV_WC_RECV,
			       .len_min = 0,
			       .len_max = recv_bytes,
			       .qp_num = qp_num};
	if (type == IBV_QPT_UD) {
		e->len_min = 40; /* at least the GRH, which every UD receive holds */
		e->flags_set = IBV_WC_GRH;
	}
}

int model_destroy_srq(int qps)
{
	return qps > 0 ? EBUSY : 0;
}

bool model_srq_recv_may_fail(int failed_before)
{
	return failed_before == 0;
}

void model_flush_wc(struct model_wc *e, uint32_t qp_num)
{
	*e = (struct model_wc){.statuses = MODEL_ST(IBV_WC_WR_FLUSH_ERR),
			       .opcode = -1,
			       .len_max = MODEL_ANY_LEN,
			       .qp_num = qp_num};
}

/* "A or B"; a wide set (most of the enum) is "another status". */
static void statuses_text(uint64_t set, char *out, size_t n)
{
	const int last = IBV_WC_GENERAL_ERR;
	int in = 0;
	size_t at = 0;

	for (int s = 0; s <= last; s++)
		in += !!(set & MODEL_ST(s));
	out[0] = '\0';
	if (in > last / 2) {
		snprintf(out, n, "another status");
		return;
	}
	for (int s = 0; s <= last && at < n; s++)
		if (set & MODEL_ST(s))
			at += (size_t)snprintf(out + at, n - at, "%s%s", at ? " or " : "",
					       ibv_wc_status_str((enum ibv_wc_status)s));
}

bool model_wc_matches(const struct model_wc *e, const struct ibv_wc *wc, char *why, size_t why_len)
{
	char want[200];

	if (wc->qp_num != e->qp_num) {
		snprintf(why, why_len, "completed (%s) with qp_num %u; expected %u",
			 ibv_wc_status_str(wc->status), wc->qp_num, e->qp_num);
		return false;
	}
	if ((unsigned)wc->status >= 64 || !(e->statuses & MODEL_ST(wc->status))) {
		statuses_text(e->statuses, want, sizeof(want));
		snprintf(why, why_len, "completed with %s; expected %s", ibv_wc_status_str(wc->status), want);
		return false;
	}
	if (wc->status != IBV_WC_SUCCESS)
		return true; /* the other fields are undefined on an error */
	if (e->opcode >= 0 && (int)wc->opcode != e->opcode) {
		snprintf(why, why_len, "completed with opcode %d; expected %d", wc->opcode, e->opcode);
		return false;
	}
	if (wc->byte_len < e->len_min || wc->byte_len > e->len_max) {
		if (e->len_min == e->len_max)
			snprintf(why, why_len, "completed with byte_len %u; expected %u", wc->byte_len,
				 e->len_min);
		else
			snprintf(why, why_len, "completed with byte_len %u; expected %u to %u", wc->byte_len,
				 e->len_min, e->len_max);
		return false;
	}
	if ((wc->wc_flags & e->flags_set) != e->flags_set || (wc->wc_flags & e->flags_clear)) {
		snprintf(why, why_len, "completed with wc_flags %x; expected %x set and %x clear",
			 wc->wc_flags, e->flags_set, e->flags_clear);
		return false;
	}
	return true;
}
