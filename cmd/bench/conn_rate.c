/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench conn_rate: connection setup, cm against oob in one run.  Two pairs
 * of endpoints in this process connect `iters` peers each (one QP pair per
 * peer: one stripe), one pair through the device's connection manager, the
 * other through the address blob, taking turns; each rate is connections
 * per second, with the setup time per QP pair.
 */
#include "cmd/cmd.h"
#include "cmd/print.h"
#include "cmd/bench/bench.h"
#include "core/util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CONN_RATE_MAX 255 /* peers per endpoint, less one */

struct conn_rate {
	long conns;
	double per_s, usec;
};

static int open_pair(const struct bench_opts *o, enum core_connect mode, struct core_ep **a,
		     struct core_ep **b, char *err, size_t errlen)
{
	struct core_ep_attr attr;
	int rc;

	core_ep_attr_defaults(&attr);
	attr.env = o->env;
	attr.env.connect = mode;
	attr.env.tx_stripes = 1;
	attr.threading = CORE_THREAD_SINGLE;
	attr.device = o->device;
	bench_ep_path(&attr, o);
	attr.rx_depth = 4;
	if ((rc = core_ep_open(&attr, a, err, errlen)))
		return rc;
	return core_ep_open(&attr, b, err, errlen);
}

/*
 * The two setups take turns, one connection each, on endpoints that are
 * all open: whatever state the device accumulates, both see the same.
 */
static int measure(const struct bench_opts *o, const enum core_connect *modes, long n, struct conn_rate *out,
		   char *err, size_t errlen)
{
	struct core_ep *ep[2][2] = {{NULL, NULL}, {NULL, NULL}};
	uint64_t ns[2] = {0, 0};
	int rc = 0;

	for (int m = 0; m < 2 && !rc; m++)
		rc = open_pair(o, modes[m], &ep[m][0], &ep[m][1], err, errlen);
	for (long i = 0; !rc && i < n && !bench_interrupted; i++) {
		for (int m = 0; m < 2 && !rc; m++) {
			uint64_t t0 = clock_ns();
			uint32_t pa, pb;

			if ((rc = core_ep_connect_pair(ep[m][0], ep[m][1], &pa, &pb))) {
				snprintf(err, errlen, "connection %ld (%s) failed: %s", i + 1,
					 modes[m] == CORE_CONNECT_CM ? "cm" : "oob", strerror(-rc));
				break;
			}
			ns[m] += clock_ns() - t0;
			out[m].conns = i + 1;
		}
	}
	for (int m = 0; m < 2; m++) {
		double secs = (double)ns[m] / 1e9;

		out[m].per_s = secs > 0 ? (double)out[m].conns / secs : 0;
		out[m].usec = out[m].conns ? secs * 1e6 / (double)out[m].conns : 0;
		core_ep_close(ep[m][0]);
		core_ep_close(ep[m][1]);
	}
	return rc;
}

int bench_conn_rate(const struct bench_opts *o, long iters, char *err, size_t errlen)
{
	static const enum core_connect modes[] = {CORE_CONNECT_CM, CORE_CONNECT_OOB};
	struct conn_rate r[2] = {{0}};
	long n = iters > CONN_RATE_MAX ? CONN_RATE_MAX : iters;
	int rc = measure(o, modes, n, r, err, errlen);

	if (rc)
		return rc;
	print_begin();
	print_string(PRINT_JSON, "test", NULL, "conn_rate");
	print_string(PRINT_JSON, "mode", NULL, "local");
	print_text("%-6s %12s %14s %16s\n", "setup", "connections", "conn/sec", "usec/connection");
	print_open_array("results");
	for (int i = 0; i < 2; i++) {
		print_open_object(NULL);
		print_string(PRINT_ANY, "connect", "%-6s", modes[i] == CORE_CONNECT_CM ? "cm" : "oob");
		print_int(PRINT_ANY, "connections", " %12lld", r[i].conns);
		print_double(PRINT_ANY, "conn_per_sec", " %14.1f", r[i].per_s);
		print_double(PRINT_ANY, "usec_per_conn", " %16.1f\n", r[i].usec);
		print_close_object();
	}
	print_close_array();
	print_double(PRINT_ANY, "oob_over_cm", "oob/cm connection rate: %.2fx\n",
		     r[0].per_s > 0 ? r[1].per_s / r[0].per_s : 0);
	print_end();
	return 0;
}
