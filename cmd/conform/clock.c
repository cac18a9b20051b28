/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Probe script (rcprobe.h): completion timestamps against the host's clock.
 *
 * A's send CQ is made by ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
 * (and, half the time, _WALLCLOCK).  Two WRITEs complete some 20-40 ms apart;
 * the first completion happened before it was polled, the second after its
 * post, so the device's clock must have advanced by at least the host's
 * time from the first poll to the second post, and at most from the first
 * post to the second poll.  The ticks are converted with ibv_query_device_ex's
 * hca_core_clock (kHz, ibv_query_device_ex(3)) and completion_timestamp_mask
 * (the counter may wrap); the wall-clock reading, in ns, must advance the same.
 * Only differences are judged for the device clock: a NIC's clock need not be
 * the host's.  The wall-clock reading is also judged absolutely, leniently: it
 * is time since the epoch, so it lies within a day of the host's CLOCK_REALTIME
 * (a NIC's PTP clock need not be synchronised to the host, but it is no boot-time counter).
 * A device without timestamps (flag refused, or hca_core_clock 0) is not judged.
 */
#include "cmd/conform/rcp.h"

#define CLOCK_SLACK_NS (2 * 1000000ull) /* plus 10%: two clocks, read at slightly different moments */

#define WALL_OFF_MAX_NS (86400ull * 1000000000ull) /* a wall clock a day off the host's is not one */

struct stamped {
	uint64_t posted, polled; /* host CLOCK_MONOTONIC, ns */
	uint64_t polled_real;	 /* host CLOCK_REALTIME at the poll, ns */
	uint64_t ticks, wall_ns;
};

static uint64_t realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* One signaled WRITE on A and its completion read with its timestamps; 0: it completed with SUCCESS. */
static int write_stamped(struct rcp *p, uint64_t wr_id, bool wall, struct stamped *st)
{
	struct rcp_piece src = {RCP_SRC + 8 * (uint32_t)rng_range(p->rng, 0, 255), 8},
			 dst = {RCP_TGT + 8 * (uint32_t)rng_range(p->rng, 0, 255), 8};
	uint64_t end;
	unsigned late = 0, idle = 0;
	int rc;

	st->posted = clock_ns();
	if ((rc = rcp_post1_rkey(p, p->a, wr_id, src, (uintptr_t)(p->buf + dst.off), p->mr->rkey))) {
		rcp_fail(p, "a WRITE refused at post: %s", strerror(rc));
		return -1;
	}
	rcp_model_move(p, &src, 1, &dst, 1);
	end = clock_ns() + RCP_DEADLINE_NS;
	for (;;) {
		struct ibv_poll_cq_attr pa = {0};

		if ((rc = ibv_start_poll(p->scq_ex, &pa)) == 0)
			break;
		if (rc != ENOENT) {
			rcp_fail(p, "ibv_start_poll returned %d", rc);
			return -1;
		}
		if (rcp_late(end, &late)) {
			rcp_fail(p, "a WRITE did not complete within %llu ms", RCP_DEADLINE_NS / 1000000);
			return -1;
		}
		rcp_idle(&idle);
	}
	st->polled = clock_ns();
	st->polled_real = realtime_ns();
	if (p->scq_ex->wr_id != wr_id || p->scq_ex->status != IBV_WC_SUCCESS) {
		rcp_fail(p, "A's send CQ: wr_id %#llx status %s; expected %#llx SUCCESS",
			 (unsigned long long)p->scq_ex->wr_id, ibv_wc_status_str(p->scq_ex->status),
			 (unsigned long long)wr_id);
		ibv_end_poll(p->scq_ex);
		return -1;
	}
	st->ticks = ibv_wc_read_completion_ts(p->scq_ex);
	st->wall_ns = wall ? ibv_wc_read_completion_wallclock_ns(p->scq_ex) : 0;
	ibv_end_poll(p->scq_ex);
	return 0;
}

static bool within(uint64_t got_ns, uint64_t lo_ns, uint64_t hi_ns)
{
	uint64_t lo = lo_ns - lo_ns / 10, hi = hi_ns + hi_ns / 10 + CLOCK_SLACK_NS;

	return got_ns + CLOCK_SLACK_NS >= lo && got_ns <= hi;
}

void rcp_case_clock(struct rcp *p)
{
	struct ibv_device_attr_ex dx = {0};
	bool wall = rng_bernoulli(p->rng, 0.5);
	struct stamped s1, s2;
	uint64_t mask, ticks, ns, lo, hi;

	p->name = wall ? "completion timestamps (device clock and wall clock) against the host's clock"
		       : "completion timestamps against the host's clock";
	if (ibv_query_device_ex(p->dev->ctx, NULL, &dx) || !dx.hca_core_clock)
		return;
	p->shape = (struct rcp_shape){.scqe = RCP_CQE,
				      .a_send_wr = 4,
				      .a_recv_wr = 1,
				      .b_recv_wr = 1,
				      .a_rnr_retry = 7,
				      .ext = true,
				      .ext_wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
						      (wall ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK : 0)};
	if (rcp_setup(p) || write_stamped(p, p->base_id, wall, &s1))
		return;
	rcp_wait_ns(rng_range(p->rng, 20, 40) * 1000000ull);
	if (write_stamped(p, p->base_id + 1, wall, &s2))
		return;
	mask = dx.completion_timestamp_mask ? dx.completion_timestamp_mask : UINT64_MAX;
	ticks = (s2.ticks - s1.ticks) & mask;
	/* ticks / kHz = ms */
	ns = (uint64_t)((long double)ticks * 1000000.0L / (long double)dx.hca_core_clock);
	lo = s2.posted - s1.polled;
	hi = s2.polled - s1.posted;
	if (!within(ns, lo, hi))
		rcp_fail(p,
			 "two completions %llu..%llu us apart by the host's clock are %llu ticks apart, "
			 "%llu us at hca_core_clock %llu kHz (mask %#llx)",
			 (unsigned long long)lo / 1000, (unsigned long long)hi / 1000, (unsigned long long)ticks,
			 (unsigned long long)ns / 1000, (unsigned long long)dx.hca_core_clock,
			 (unsigned long long)dx.completion_timestamp_mask);
	else if (wall && (s1.wall_ns > s1.polled_real + WALL_OFF_MAX_NS ||
			  s1.wall_ns + WALL_OFF_MAX_NS < s1.polled_real))
		rcp_fail(p,
			 "ibv_wc_read_completion_wallclock_ns read %llu ns, %.0f s from the host's CLOCK_REALTIME "
			 "%llu ns at the poll: wall-clock time is nanoseconds since the epoch",
			 (unsigned long long)s1.wall_ns,
			 ((double)s1.wall_ns - (double)s1.polled_real) / 1e9,
			 (unsigned long long)s1.polled_real);
	else if (wall && !within(s2.wall_ns - s1.wall_ns, lo, hi))
		rcp_fail(p,
			 "two completions %llu..%llu us apart by the host's clock are %lld us apart by "
			 "ibv_wc_read_completion_wallclock_ns",
			 (unsigned long long)lo / 1000, (unsigned long long)hi / 1000,
			 (long long)(s2.wall_ns - s1.wall_ns) / 1000);
	rcp_expect_empty(p, p->scq, "A's send CQ");
	rcp_check_memory(p);
}
