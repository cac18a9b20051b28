/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify: the oracle (oracle.h).  For a completion it builds the model's prediction (model.h) from the
 * walker's records of the WR, its QP and its keys, compares, and then runs the checks that need the walker's
 * own memory: the immediate data and message headers senders fill in, the checked WRITE's read-back, the
 * atomics on owned words, and the rkey probes, whose verdict the key's owner gives.
 */
#include "cmd/walk/oracle.h"

#include "cmd/walk/actions.h"
#include "cmd/walk/model.h"

#include <stdio.h>

/*
 * The statuses a correct device may give the walk's well-formed work (local SGEs in MRs it keeps registered
 * while the WR is out, receives as large as the credit it gave, binds inside the MR): any of them but a
 * local, bind or response error, which are the device's; the peers destroy QPs and keys at any time, and what
 * that brings (flush, remote access, invalid request, retry, RNR, timeout) the walk cannot time.
 */
#define ST_DEVICE_ONLY                                                                                       \
	(MODEL_ST(IBV_WC_LOC_LEN_ERR) | MODEL_ST(IBV_WC_LOC_QP_OP_ERR) | MODEL_ST(IBV_WC_LOC_PROT_ERR) |     \
	 MODEL_ST(IBV_WC_MW_BIND_ERR) | MODEL_ST(IBV_WC_BAD_RESP_ERR) | MODEL_ST(IBV_WC_LOC_ACCESS_ERR) |    \
	 MODEL_ST(IBV_WC_FATAL_ERR) | MODEL_ST(IBV_WC_GENERAL_ERR))
#define ST_PEERS (~ST_DEVICE_ONLY)

/*
 * An RC receive's immediate data says whether the sender wrote it with RDMA_WRITE_WITH_IMM (WRITE_IMM_FLAG,
 * --verify): the opcode it must have.
 */
static bool written(const struct qp_rec *r, const struct ibv_wc *wc)
{
	return r->type == IBV_QPT_RC && (wc->wc_flags & IBV_WC_WITH_IMM) &&
	       (be32toh(wc->imm_data) & WRITE_IMM_FLAG);
}

static void predict(struct walk_client *c, const struct wr_rec *w, const struct qp_rec *r,
		    const struct ibv_wc *wc, struct model_wc *e)
{
	if (w->expect_flush) { /* posted to a QP in ERR: it must never execute */
		model_flush_wc(e, r->qp->qp_num);
		return;
	}
	if (w->is_recv) {
		model_recv_wc(e, r->type, r->type == IBV_QPT_UD ? UD_RECV_BYTES : w->len, r->qp->qp_num);
		if (written(r, wc))
			e->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		if (r->type == IBV_QPT_UD) /* every UD message of the walk has UD_SEND_BYTES */
			e->len_min = UD_RECV_BYTES;
	} else {
		model_send_wc(e, w->mw >= 0 ? IBV_WR_BIND_MW : (enum ibv_wr_opcode)w->opcode, w->len,
			      r->qp->qp_num);
	}
	e->statuses |= ST_PEERS;
	if (w->srq_recv && !model_srq_recv_may_fail(r->srq_failed)) /* the SRQ's receives are not flushed */
		e->statuses = MODEL_ST(IBV_WC_SUCCESS);
	if (!w->is_recv && r->sq_failed) /* send completions are in order; the error moved it to ERR */
		e->statuses = MODEL_ST(IBV_WC_WR_FLUSH_ERR);
	if (c->faults) /* the statuses a fault explains are not judged */
		e->statuses = ~0ull;
}

static const char *why_expected(const struct wr_rec *w, const struct qp_rec *r, enum ibv_wc_status st)
{
	if (w->expect_flush)
		return " (posted to a QP in ERR, it must never execute)";
	if (w->srq_recv && r->srq_failed)
		return " (one failed before: an ERR QP flushes at most the SRQ receive it was filling)";
	if (!w->is_recv && r->sq_failed)
		return " (an error completion came before on the same send queue)";
	if ((unsigned)st < 64 && (MODEL_ST(st) & ST_DEVICE_ONLY))
		return "; the walker posts only well-formed work (local MRs kept registered, receives as "
		       "large as their credit), so this status is the device's";
	return "";
}

/*
 * What a receive completion says about the message, checked without looking at memory (others may write the
 * buffer): immediate data, which --verify senders fill with the length and their id (UD) or the QP's sequence
 * (RC), matches byte_len and RC's in-order, exactly-once delivery.
 */
static void check_recv_imm(struct walk_client *c, struct qp_rec *r, const struct ibv_wc *wc)
{
	uint32_t imm, len, from;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM))
		return;
	imm = be32toh(wc->imm_data);
	len = (imm & ~WRITE_IMM_FLAG) >> 8;
	from = imm & 0xff; /* UD: the sender's id; RC: the sequence on this QP */
	if (r->type == IBV_QPT_UD && (imm & WRONG_QKEY_IMM) == WRONG_QKEY_IMM) {
		WALK_FAIL(c,
			  "UD QP %u (Q_Key %x) received a message client %u sent with another Q_Key; "
			  "expected the device to drop it",
			  r->qp->qp_num, r->qkey, from);
		return;
	}
	if (len != wc->byte_len - (r->type == IBV_QPT_UD ? UD_RECV_BYTES - UD_SEND_BYTES : 0) ||
	    (r->type == IBV_QPT_UD && from >= (uint32_t)c->clients))
		WALK_FAIL(c,
			  "a receive on QP %u (peer c%d) has byte_len %u and immediate data %08x (host "
			  "order); the sender put the length there (and %s): expected length %u",
			  r->qp->qp_num, r->peer, wc->byte_len, imm,
			  r->type == IBV_QPT_UD ? "its id" : "its sequence", wc->byte_len);
	else if (r->type == IBV_QPT_RC && from != r->rx_imm_seq)
		WALK_FAIL(c,
			  "RC QP %u received message %u with immediate data from c%d; expected message %u "
			  "(RC delivers in order, once)",
			  r->qp->qp_num, from, r->peer, r->rx_imm_seq);
	if (r->type == IBV_QPT_RC)
		r->rx_imm_seq = (uint8_t)(from + 1);
}

/* A SEND_WITH_INV received may invalidate only a type-2 window bound to the QP it arrived on. */
static void check_invalidated(struct walk_client *c, const struct wr_rec *w, const struct qp_rec *r,
			      const struct ibv_wc *wc)
{
	for (int i = 0; i < 2 * MAX_MW; i++) {
		const struct mw_rec *m = &c->mw[i];

		if (!m->used || m->type != 2 || m->state != MW_BOUND || m->rkey != wc->invalidated_rkey)
			continue;
		if (m->qp != w->qp)
			WALK_FAIL(c,
				  "a SEND_WITH_INV received on QP %u invalidated rkey %x of the type-2 "
				  "window mw[%d] bound to our QP %u; only the QP a window is bound to may "
				  "invalidate it (expected REM_INV_REQ_ERR)",
				  r->qp->qp_num, wc->invalidated_rkey, i,
				  m->qp >= 0 ? c->qp[m->qp].qp->qp_num : 0);
		return;
	}
}

/* The checked WRITE and its READ-back: what was read is what was written. */
static void check_data(struct walk_client *c, const struct wr_rec *w, enum ibv_wc_status st)
{
	uint32_t slot_off = SLOT_OFF(c->id);
	unsigned char *expect = c->buf + slot_off, *got = c->buf + slot_off + CHECK_SLOT / 4;

	if (w->action == ACT_WRITE) {
		c->check_write_ok = st == IBV_WC_SUCCESS;
		return;
	}
	c->check_busy = false;
	if (st != IBV_WC_SUCCESS || !c->check_write_ok)
		return;
	walk_fill_pattern(expect, c->check_len, c->check_seed);
	if (memcmp(expect, got, c->check_len) != 0) {
		uint32_t at = 0;

		while (at < c->check_len && expect[at] == got[at])
			at++;
		WALK_FAIL(c,
			  "data check failed: %u-byte WRITE (seed %llx) read back differs at byte %u (%02x, "
			  "expected %02x)",
			  c->check_len, (unsigned long long)c->check_seed, at, got[at], expect[at]);
	}
}

static bool oracle_wc(struct walk_client *c, uint32_t slot, const struct ibv_wc *wc)
{
	const struct wr_rec *w = &c->wr[slot];
	struct qp_rec *r = &c->qp[w->qp];
	struct model_wc e;
	char why[256];
	bool ok;

	predict(c, w, r, wc, &e);
	ok = model_wc_matches(&e, wc, why, sizeof(why));
	if (!ok)
		WALK_FAIL(c, "a %s %s QP %u %s%s", w->is_recv ? "receive" : walk_action_names[w->action],
			  w->srq_recv ? "posted to an SRQ, taken by" : "posted to", r->qp->qp_num, why,
			  why_expected(w, r, wc->status));
	if (!w->is_recv && wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		r->sq_failed = true;
	r->srq_failed += w->srq_recv && wc->status != IBV_WC_SUCCESS;
	c->stats.srq_recvs_checked += w->srq_recv;
	if (ok && wc->status == IBV_WC_SUCCESS && w->is_recv && !w->expect_flush) {
		check_recv_imm(c, r, wc);
		if (wc->wc_flags & IBV_WC_WITH_INV)
			check_invalidated(c, w, r, wc);
	}
	if (w->msg && wc->status == IBV_WC_SUCCESS && !w->expect_flush && !written(r, wc))
		walk_msg_check(c, slot, r, wc);
	if (w->probe)
		walk_probe_done(c, w, wc->status);
	if (w->check)
		check_data(c, w, wc->status);
	if (w->atom_check)
		walk_atomic_check_done(c, wc->status);
	return ok;
}

static bool oracle_verb(struct walk_client *c, const struct walk_obs *o)
{
	if (o->kind == WALK_OBS_ATTR) {
		if (o->rc != o->want)
			WALK_FAIL(c, "%s after %s is %#x; expected %#x", o->verb, o->what, (unsigned)o->rc,
				  (unsigned)o->want);
		return o->rc == o->want;
	}
	if (o->rc == o->want || (o->want == -1 && o->rc))
		return true;
	if (o->want == 0)
		WALK_FAIL(c, "%s of %s failed: %s; expected success", o->verb, o->what,
			  strerror(o->rc < 0 ? -o->rc : o->rc));
	else
		WALK_FAIL(c, "%s of %s returned %d; expected %s", o->verb, o->what, o->rc,
			  o->want == -1 ? "an error (EINVAL)" : strerror(o->want < 0 ? -o->want : o->want));
	return false;
}

bool walk_oracle(struct walk_client *c, const struct walk_obs *o)
{
	char why[256];

	switch (o->kind) {
	case WALK_OBS_WC:
		return oracle_wc(c, o->slot, o->wc);
	case WALK_OBS_PREDICTED:
		if (model_wc_matches(o->predicted, o->wc, why, sizeof(why)))
			return true;
		WALK_FAIL(c, "%s %s", o->what, why);
		return false;
	default:
		return oracle_verb(c, o);
	}
}

bool walk_judge_verb(struct walk_client *c, const char *verb, const char *what, int rc, int want)
{
	return walk_oracle(
	    c, &(struct walk_obs){WALK_OBS_VERB, .verb = verb, .what = what, .rc = rc, .want = want});
}

bool walk_judge_attr(struct walk_client *c, const char *attr, const char *what, int got, int want)
{
	return walk_oracle(
	    c, &(struct walk_obs){WALK_OBS_ATTR, .verb = attr, .what = what, .rc = got, .want = want});
}

bool walk_verb_returned(struct walk_client *c, enum walk_action a, const char *verb, const char *what, int rc)
{
	c->stats.ok[a] += !rc;
	if (!rc)
		return true;
	walk_count_error(c, a, rc);
	if (c->cfg->verify)
		walk_judge_verb(c, verb, what, rc, 0);
	return false;
}
