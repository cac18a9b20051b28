/* SPDX-License-Identifier: MIT */
/*
 * bench agent_lat: a message sent in mode "deposited" to a channel on
 * another node, through two agents (two processes linked over the core
 * transport, like two nodes), against the core transport's own send_lat
 * between two processes on their own devices (as the agents are), measured
 * in the same run.  A deposited send is a round trip: request to the far
 * agent, deposit, acknowledgement back; send_lat is half a round trip, so
 * the wire alone puts the ratio at 2.  The agents run pinned, one per CPU,
 * as the baseline's two processes do (measured under load, 6 interleaved
 * runs: 16.5-16.9 us pinned in 5, 19.6-19.8 unpinned in 5), and the client
 * beside the target agent (see measure).
 */
#include "cmd/bench/agent_pair.h"
#include "cmd/bench/bench.h"
#include "cmd/bench/pair_transport.h"
#include "cmd/bench/pin.h"
#include "cmd/cmd.h"
#include "cmd/print.h"
#include "core/agent/agent.h"
#include "core/agent/gateway.h"
#include "core/util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Deposited latencies (usec) of iters sends of size bytes from node 0 to a channel on node 1. */
struct lat_spread {
	double p10, median, p90;
};

static int measure(const struct agent_pair *p, size_t size, long iters, struct lat_spread *lat, char *err,
		   size_t errlen)
{
	char dir0[4200], dir1[4200], why[512];
	struct agent_client *cl = NULL;
	struct agent_chan *h = NULL;
	struct chan *far = NULL;
	double *t = calloc((size_t)iters, sizeof(*t));
	char *buf = calloc(1, size ? size : 1);
	size_t len;
	cpu_set_t cpus;
	bool pinned = false;
	int rc;

	agent_pair_dir(p, 0, dir0, sizeof(dir0));
	agent_pair_dir(p, 1, dir1, sizeof(dir1));
	rc = !t || !buf ? -ENOMEM : chan_create(dir1, "lat", NULL);
	if (!rc)
		rc = chan_open(dir1, "lat", &far);
	setenv("RDMATOOL_AGENT_DIR", dir0, 1);
	/*
	 * Three processes on two CPUs: this client shares the target agent's CPU.  Agent 0 works at
	 * both ends of a round trip, exactly when the client does (taking the request, answering
	 * it), so beside it every hand-off would be a context switch; agent 1 works in the middle,
	 * while the client sleeps (6 interleaved runs: 14.2-17.0 us median beside agent 1, 16.7-19.8
	 * unpinned, 18.2-20.0 beside agent 0).
	 */
	if (p->cpus[1] >= 0 && (pinned = bench_pin_save(&cpus)))
		bench_pin_to(p->cpus[1]);
	if (!rc)
		rc = agent_attach(0, &cl, why, sizeof(why));
	if (!rc)
		rc = agent_chan_open(cl, "1/lat", &h);
	for (long i = 0; i < iters && !rc && !bench_interrupted; i++) {
		uint64_t t0 = clock_ns();

		rc = agent_send(h, buf, size, AGENT_SEND_DEPOSITED, 5000);
		t[i] = (double)(clock_ns() - t0) / 1e3;
		if (!rc)
			rc = chan_recv(far, buf, size ? size : 1, &len, 1000);
	}
	if (bench_interrupted) { /* the agents, Ctrl-C'd too, may have failed the send first */
		snprintf(err, errlen, "interrupted");
		rc = -EINTR;
	} else if (rc) {
		snprintf(err, errlen, "a deposited send through the agents failed: %s", strerror(-rc));
	} else {
		qsort(t, (size_t)iters, sizeof(*t), cmp_double);
		lat->p10 = t[iters / 10];
		lat->median = t[iters / 2];
		lat->p90 = t[iters * 9 / 10];
	}
	if (pinned) /* the baseline that follows picks its own two CPUs */
		bench_pin_restore(&cpus);
	agent_chan_close(h);
	agent_detach(cl);
	chan_close(far);
	free(t);
	free(buf);
	return rc;
}

int bench_agent_lat(size_t size, long iters, bool baseline)
{
	char err[512] = "";
	struct agent_pair pair;
	struct lat_spread agent = {0};
	struct bench_result core = {0};
	int rc, status = EXIT_OK;

	if (iters <= 0)
		iters = 2000;
	if (size > GW_INLINE)
		return usage_error(
		    "bench", "agent_lat takes --size up to %u bytes (a message to another node)", GW_INLINE);
	if (agent_client_env_check(err, sizeof(err)))
		return usage_error("bench", "%s", err);
	rc = agent_pair_start(&pair, true, err, sizeof(err));
	if (!rc) {
		rc = measure(&pair, size, iters, &agent, err, sizeof(err));
		agent_pair_stop(&pair);
	}
	if (rc)
		return run_error("bench", "%s", err[0] ? err : strerror(-rc));
	if (baseline && pair_transport("send_lat", size ? size : 8, 0, iters, &core, err, sizeof(err)))
		return run_error("bench", "the core send_lat baseline failed: %s", err);
	print_begin();
	print_string(PRINT_JSON, "test", NULL, "agent_lat");
	print_uint(PRINT_ANY, "MsgSize",
		   "agent_lat: %llu-byte deposited sends from node 0 to a channel on node 1 ", size);
	print_int(PRINT_ANY, "iters", "(two agent processes), %lld iterations\n", iters);
	print_double(PRINT_ANY, "deposited_median_us",
		     "  through the agents: %.2f usec median (request, deposit, acknowledgement)",
		     agent.median);
	/* On a shared machine the median alone hides how much the scheduler moved it. */
	print_double(PRINT_ANY, "deposited_p10_us", ", %.2f p10", agent.p10);
	print_double(PRINT_ANY, "deposited_p90_us", ", %.2f p90\n", agent.p90);
	if (baseline) {
		print_double(PRINT_ANY, "core_send_lat_typical_us",
			     "  core send_lat:      %.2f usec typical (half a round trip, two processes)\n", core.t_typical);
		print_double(PRINT_ANY, "ratio_to_core_send_lat", "  ratio: %.2fx\n",
			     agent.median / core.t_typical);
	}
	print_end();
	return status;
}
