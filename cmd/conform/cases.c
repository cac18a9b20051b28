/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The conformance cases, one row each: name (grouped by the verbs object
 * they judge), the script, what it needs of the device.  A script draws
 * its details (sizes, SGEs, PSNs near the wrap, path attributes) from its
 * round's random stream and walks its named variants in turn
 * (rcp_variant), so --rounds of at least 11 runs every variant.
 */
#include "cmd/conform/cases.h"
#include "cmd/conform/rcp.h"

#include <stdio.h>
#include <stdlib.h>

const struct cf_case cf_cases[] = {
    /* QP states and transitions */
    {"qp_state.transitions", rcp_case_transitions, 0,
     "every QP type brought along the state machine; illegal steps refused"},
    {"qp_state.serve", rcp_case_serve, 0,
     "the receive side in every state that receives; INIT receives nothing"},
    {"qp_state.sqd", rcp_case_sqd, 0, "SQ drain: work posted before SQD completes, IBV_EVENT_SQ_DRAINED"},
    {"qp_state.drain", rcp_case_drain, 0,
     "WRs posted in SQD, SQ_DRAINED with a SEND outstanding, a shared CQ's head"},
    {"qp_state.held_work", rcp_case_hold, 0, "work a device must hold back (SQD, UC drops, LOCAL_INV's PD)"},
    {"qp_state.rq_flush", rcp_case_rq_flush, 0,
     "a receive queue filled to max_recv_wr, then flushed in order on ERR"},
    {"qp_state.stranger", rcp_case_stranger, 0,
     "requests from a QP not connected to the responder are not served"},
    /* MR and MW: access and keys */
    {"mr.local_access", rcp_case_local, 0, "local access rights and bounds of SGEs"},
    {"mr.remote_access", rcp_case_remote, 0, "remote access: the last bytes of a region"},
    {"mr.keys", rcp_case_keys, 0, "key rotation on reuse, a stale rkey, a window's hold on its MR"},
    {"mr.iova", rcp_case_iova, 0, "an MR registered at an IOVA of its own"},
    {"mw.window", rcp_case_window, CF_NEED_MW, "type-1 and type-2 windows: bind, access, invalidation"},
    {"mw.bind_error", rcp_case_bind_error, CF_NEED_MW2, "binds the device must fail with MW_BIND_ERR"},
    /* CQ */
    {"cq.overflow", rcp_case_cq_overflow, 0,
     "a CQ filled exactly, and one completion past it (IBV_EVENT_CQ_ERR)"},
    {"cq.notify", rcp_case_notify, 0, "completion events: solicited, next, re-armed, resized"},
    {"cq.resize", rcp_case_resize_cq, 0, "ibv_resize_cq with completions waiting"},
    {"cq.shared", rcp_case_shared_cq, 0, "a QP reset or destroyed on a shared CQ"},
    {"cq.timestamps", rcp_case_clock, 0, "completion timestamps against the host's clock"},
    {"cq.life", rcp_case_life, 0,
     "CQ arming across waiting completions and resize; PDs held, rereg CHANGE_PD"},
    /* data operations */
    {"data.basic", rcp_case_data, 0,
     "chains of SEND, WRITE, READ, atomics over SGE lists, inline, UC; every byte"},
    {"data.recv_short", rcp_case_recv_short, 0,
     "a receive shorter than the message: LOC_LEN_ERR, REM_INV_REQ_ERR"},
    {"data.ud", rcp_case_ud, 0, "UD datagrams: GRH, Q_Key, src_qp"},
    {"data.ext", rcp_case_ext, 0, "ibv_wr_* batch, ibv_start_poll, ibv_rereg_mr, IBV_QP_CUR_STATE"},
    {"data.wr_api", rcp_case_wrapi, 0,
     "ibv_wr_send/send_imm/rdma_write_imm/rdma_read with SGE and inline lists"},
    {"data.partial_post", rcp_case_partial_post, 0, "a chain refused part-way (*bad_wr)"},
    {"data.zero_length", rcp_case_zero, 0, "zero-length RC and UC operations"},
    {"data.opcodes", rcp_case_opcodes, 0, "opcodes a transport does not have (UC: READ, atomics; UD: RDMA)"},
    {"data.refused_imm", rcp_case_refused_imm, 0, "a refused WRITE_WITH_IMM loses no receive"},
    /* RC transport: PSN, retry, RNR, replay */
    {"rc.psn", rcp_case_psn, 0, "duplicates acknowledged, not executed; a gap waits"},
    {"rc.retry", rcp_case_retry, 0, "rnr_retry and retry_cnt counted"},
    {"rc.rnr", rcp_case_rnr, 0, "a receiver without receives: RNR waits, RNR_RETRY_EXC_ERR"},
    {"rc.replay", rcp_case_replay, CF_NEED_ATOMIC, "a duplicate atomic answered from the saved result"},
    {"rc.uc_resync", rcp_case_resync, 0, "a UC responder takes a message whatever its PSN"},
    {"rc.dead_peer", rcp_case_dead_peer, 0, "a peer that answers nothing: RETRY_EXC_ERR"},
    /* limits and creation rules */
    {"limits.qp", rcp_case_limits, 0, "device and QP limits at exactly their value"},
    {"limits.create", rcp_case_create, 0,
     "what creating CQs, QPs, SRQs, windows and ibv_rereg_mr refuse or report"},
    {"limits.rules", rcp_case_rules, 0,
     "attribute ranges, table indexes, timeout 0, unsignaled local work, rereg"},
    {"limits.claims", rcp_case_claims, 0, "what ibv_query_device claims works"},
    {"limits.refuse", rcp_case_refuse, 0, "binds, stale keys, modify_qp and events a device must refuse"},
    {"limits.held_objects", rcp_case_holds, 0,
     "channels and CQs held by their users only, REMOTE_READ alone, atomic_cap"},
    {"limits.busy", rcp_case_busy, 0, "a CQ, a channel, an MR in use refuse to go"},
};
const int cf_ncases = (int)(sizeof(cf_cases) / sizeof(cf_cases[0]));

/* FNV-1a: the case's stream follows its name, not its place in the table or in the run. */
static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static const char *lacks(const struct cf_dev *d, unsigned needs)
{
	if ((needs & CF_NEED_MW) && !(d->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW))
		return "the device has no memory windows (IBV_DEVICE_MEM_WINDOW)";
	if ((needs & CF_NEED_MW2) && !(d->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		return "the device has no type-2 memory windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B)";
	if ((needs & CF_NEED_ATOMIC) && d->dattr.atomic_cap == IBV_ATOMIC_NONE)
		return "the device has no atomics (atomic_cap IBV_ATOMIC_NONE)";
	return NULL;
}

void cf_run_case(struct cf_dev *d, const struct cf_case *k, uint64_t seed, unsigned rounds,
		 struct cf_result *r)
{
	unsigned char *mem = aligned_alloc(4096, 2 * RCP_BYTES);
	const char *skip = lacks(d, k->needs);
	uint64_t t0 = clock_ns();
	int setup_errno = 0;

	*r = (struct cf_result){.verdict = CF_PASS};
	d->nfailures = 0;
	if (skip || !mem) {
		snprintf(r->why, sizeof(r->why), "%s", skip ? skip : "out of memory");
		r->verdict = skip ? CF_SKIP : CF_FAIL;
		free(mem);
		return;
	}
	for (unsigned i = 0; i < rounds && !d->nfailures; i++) {
		struct rng rng;
		struct rcp p = {.dev = d, .rng = &rng, .round = i, .buf = mem, .model = mem + RCP_BYTES};

		rng_seed(&rng, seed, name_hash(k->name) + i);
		k->run(&p);
		rcp_teardown(&p);
		if (!p.abandoned)
			r->rounds_run++;
		else if (p.setup_errno)
			setup_errno = p.setup_errno;
	}
	free(mem);
	r->ns = clock_ns() - t0;
	r->nfailures = d->nfailures;
	if (d->nfailures) {
		r->verdict = CF_FAIL;
		snprintf(r->why, sizeof(r->why), "%s", d->failure[0]);
	} else if (!r->rounds_run) {
		r->verdict = CF_SKIP;
		if (setup_errno)
			snprintf(r->why, sizeof(r->why), "the device refused UC or the extended verbs: %s",
				 strerror(setup_errno));
		else
			snprintf(r->why, sizeof(r->why),
				 "the device refused every optional feature this case needs");
	}
}
