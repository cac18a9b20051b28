/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --verify: every SEND of MSG_HDR bytes or more starts with a header (length, sender, QP, per-QP sequence,
 * immediate data and invalidated rkey as posted, payload seed), in the WR slot's message cell in the check
 * zone at both ends (the first SGE, after a UD GRH), where no WRITE or READ lands.  A small message may be
 * all cell, a pattern after the header, checked when it lands in a receive that is all cell too.  On UD the
 * GRH must name both GIDs.
 */
#include "cmd/walk/actions.h"

#include <stdio.h>

#define MSG_MAGIC 0x574b4d48u

enum { HDR_IMM = 1, HDR_INV = 2, HDR_CONTENT = 4 };

struct msg_hdr {
	uint32_t magic, len;
	uint16_t sender;
	uint8_t flags, pad;
	uint32_t seq, imm, inv_rkey, seed, src_qpn;
};

_Static_assert(sizeof(struct msg_hdr) == MSG_HDR, "the header is MSG_HDR bytes");

int walk_msg_mr_reg(struct walk_client *c, int p)
{
	if (!c->cfg->verify)
		return 0;
	c->pd[p].msg_mr = hw_reg_mr(c->pd[p].pd, c->buf + MSG_CELL_OFF(0), MSG_AREA, IBV_ACCESS_LOCAL_WRITE);
	return c->pd[p].msg_mr ? 0 : -1;
}

int walk_msg_mr_dereg(struct walk_client *c, int p)
{
	int rc = c->pd[p].msg_mr ? hw_dereg_mr(c->pd[p].msg_mr) : 0;

	if (!rc)
		c->pd[p].msg_mr = NULL;
	return rc;
}

static unsigned char *cell(struct walk_client *c, uint32_t slot)
{
	return c->buf + MSG_CELL_OFF(slot);
}

/* SGEs of len bytes: all in the slot's cell (m < 0), or its first `head` bytes there, the rest from MR m. */
static int cell_sges(struct walk_client *c, uint32_t lkey, uint32_t max_sge, uint32_t slot, uint32_t len,
		     int m, uint32_t start, uint32_t head, struct ibv_sge *sge)
{
	if (m < 0)
		return walk_make_sges(c, lkey, MSG_CELL_OFF(slot), len, walk_sge_count(c, max_sge), sge);
	sge[0] = (struct ibv_sge){(uintptr_t)cell(c, slot), head, lkey};
	return 1 + walk_make_sges(c, c->mr[m].mr->lkey, start, len - head, walk_sge_count(c, max_sge - 1),
				  sge + 1);
}

void walk_msg_fill(struct walk_client *c, int q, uint32_t slot, struct ibv_send_wr *wr, uint32_t len, int m,
		   uint32_t start, struct ibv_sge *sge)
{
	const struct qp_rec *r = &c->qp[q];
	uint32_t lkey = c->pd[r->pd].msg_mr->lkey;
	struct msg_hdr h = {.magic = MSG_MAGIC,
			    .len = len,
			    .sender = (uint16_t)c->id,
			    .seq = r->type == IBV_QPT_RC ? r->tx_seq : 0,
			    .src_qpn = r->qp->qp_num};

	if (wr->opcode == IBV_WR_SEND_WITH_IMM) {
		h.flags |= HDR_IMM;
		h.imm = wr->imm_data;
	}
	if (wr->opcode == IBV_WR_SEND_WITH_INV) {
		h.flags |= HDR_INV;
		h.inv_rkey = wr->invalidate_rkey;
	}
	if (m < 0) {
		h.flags |= HDR_CONTENT;
		h.seed = (uint32_t)rng_next(&c->rng);
		walk_fill_pattern(cell(c, slot) + MSG_HDR, len - MSG_HDR, h.seed);
	}
	memcpy(cell(c, slot), &h, sizeof(h));
	wr->sg_list = sge;
	wr->num_sge = cell_sges(c, lkey, r->cap.max_send_sge, slot, len, m, start, MSG_HDR, sge);
	if (m < 0 && len <= r->cap.max_inline_data && rng_bernoulli(&c->rng, 0.5)) {
		wr->send_flags |= IBV_SEND_INLINE; /* taken at the post, its lkeys never looked at */
		for (int i = 0; i < wr->num_sge; i++)
			sge[i].lkey = 0;
	}
}

void walk_msg_recv_fill(struct walk_client *c, int pd, uint32_t max_sge, uint32_t slot,
			struct ibv_recv_wr *wr, uint32_t len, int m, uint32_t start, uint32_t head,
			struct ibv_sge *sge)
{
	uint32_t lkey = c->pd[pd].msg_mr->lkey;

	c->wr[slot].msg = true;
	c->wr[slot].msg_private = m < 0;
	/* a stale header must not pass for the next message's */
	memset(cell(c, slot), 0, MSG_CELL);
	wr->sg_list = sge;
	wr->num_sge = cell_sges(c, lkey, max_sge, slot, len, m, start, head, sge);
}

/*
 * A UD receive's GRH (an IPv6 header on RoCE v1/v2 with IPv6 GIDs and on IB; RoCE v2 with IPv4 GIDs puts an
 * IPv4 header there, not judged): its SGID at byte 8 is the sender's GID, its DGID at byte 24 ours.
 */
static const char *grh_wrong(const struct walk_client *c, const unsigned char *grh, int sender)
{
	if (grh[0] >> 4 != 6 || !c->peers[sender].valid)
		return NULL;
	if (memcmp(grh + 8, c->peers[sender].gid.raw, 16))
		return "a GRH whose SGID is not the sending client's GID (differs: 1, same: 0)";
	if (memcmp(grh + 24, c->peers[c->id].gid.raw, 16))
		return "a GRH whose DGID is not our GID (differs: 1, same: 0)";
	return NULL;
}

/* The first thing wrong with a received message's header, flags or content; NULL if none. */
static const char *judge(struct walk_client *c, uint32_t slot, struct qp_rec *r, const struct ibv_wc *wc,
			 const struct msg_hdr *h, uint64_t *expected, uint64_t *got)
{
	bool ud = r->type == IBV_QPT_UD;
	uint32_t grh = ud ? UD_RECV_BYTES - UD_SEND_BYTES : 0;
	bool imm = wc->wc_flags & IBV_WC_WITH_IMM, inv = wc->wc_flags & IBV_WC_WITH_INV;
	const unsigned char *body = cell(c, slot) + grh + MSG_HDR;
	unsigned char want[MSG_CELL];
	const char *what;

#define WRONG(what, e, g) (*expected = (e), *got = (g), (what))
	if (h->magic != MSG_MAGIC)
		return WRONG("no header (every --verify SEND of 32 bytes or more has one): first word",
			     MSG_MAGIC, h->magic);
	if (h->len + grh != wc->byte_len)
		return WRONG("a byte_len unlike the length the sender put in the header", h->len + grh,
			     wc->byte_len);
	if (ud ? h->sender >= c->clients : h->sender != r->peer)
		return WRONG("the header of another sender: client", r->peer, h->sender);
	if (ud ? h->src_qpn != wc->src_qp : h->src_qpn != r->peer_qpn)
		return WRONG("a source QP unlike the sender's", ud ? wc->src_qp : r->peer_qpn, h->src_qpn);
	if (ud && (wc->wc_flags & IBV_WC_GRH) && (what = grh_wrong(c, cell(c, slot), h->sender)))
		return WRONG(what, 0, 1);
	if (!ud && h->seq != r->rx_seq)
		return WRONG("a sequence number out of order (RC delivers in order, once)", r->rx_seq,
			     h->seq);
	if (imm != !!(h->flags & HDR_IMM))
		return WRONG("IBV_WC_WITH_IMM unlike the sender's opcode: flag", !!(h->flags & HDR_IMM), imm);
	if (imm && wc->imm_data != h->imm)
		return WRONG("immediate data unlike what was posted (both as the API carries them)", h->imm,
			     wc->imm_data);
	if (inv != !!(h->flags & HDR_INV))
		return WRONG("IBV_WC_WITH_INV unlike the sender's opcode (SEND_WITH_INV or not): flag",
			     !!(h->flags & HDR_INV), inv);
	if (inv && wc->invalidated_rkey != h->inv_rkey)
		return WRONG("an invalidated_rkey unlike the rkey the sender invalidated", h->inv_rkey,
			     wc->invalidated_rkey);
	if (!(h->flags & HDR_CONTENT) || !c->wr[slot].msg_private || ud || h->len > MSG_CELL)
		return NULL;
	c->stats.msgs_content_checked++;
	walk_fill_pattern(want, h->len - MSG_HDR, h->seed);
	for (uint32_t i = 0; i < h->len - MSG_HDR; i++)
		if (body[i] != want[i])
			return WRONG("content unlike the sender's (byte offset << 8 | value)",
				     (uint64_t)(MSG_HDR + i) << 8 | want[i],
				     (uint64_t)(MSG_HDR + i) << 8 | body[i]);
#undef WRONG
	return NULL;
}

/* A successful receive on a message cell: the header must say what the completion says. */
void walk_msg_check(struct walk_client *c, uint32_t slot, struct qp_rec *r, const struct ibv_wc *wc)
{
	uint32_t grh = r->type == IBV_QPT_UD ? UD_RECV_BYTES - UD_SEND_BYTES : 0;
	uint64_t expected = 0, got = 0;
	struct msg_hdr h;
	const char *what;

	if (wc->byte_len < grh + MSG_HDR)
		return;
	memcpy(&h, cell(c, slot) + grh, sizeof(h));
	c->stats.msgs_checked++;
	what = judge(c, slot, r, wc, &h, &expected, &got);
	if (what)
		WALK_FAIL(
		    c, "a message received on %s QP %u (peer c%d, byte_len %u) has %s: %llx, expected %llx",
		    r->type == IBV_QPT_UD ? "UD" : "RC", r->qp->qp_num, r->peer, wc->byte_len, what,
		    (unsigned long long)got, (unsigned long long)expected);
	if (r->type == IBV_QPT_RC && h.magic == MSG_MAGIC)
		r->rx_seq = h.seq + 1;
}
