/* SPDX-License-Identifier: MIT */
/*
 * bench conn_rate: connection setup, cm against oob in one run.  Two
 * endpoints in this process connect `iters` peers (one QP pair each: one
 * stripe) through the device's connection manager, then as many through
 * the address blob; each rate is connections per second, with the setup
 * time per QP pair.
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

static int measure(const struct bench_opts *o, enum core_connect mode, long n, struct conn_rate *out,
		   char *err, size_t errlen)
{
	struct core_ep_attr attr;
	struct core_ep *a = NULL, *b = NULL;
	uint64_t t0;
	int rc;

	core_ep_attr_defaults(&attr);
	attr.env = o->env;
	attr.env.connect = mode;
	attr.env.tx_stripes = 1;
	attr.threading = CORE_THREAD_SINGLE;
	attr.device = o->device;
	attr.rx_depth = 4;
	if ((rc = core_ep_open(&attr, &a, err, errlen)) || (rc = core_ep_open(&attr, &b, err, errlen)))
		goto out;
	t0 = clock_ns();
	for (out->conns = 0; out->conns < n && !bench_interrupted; out->conns++) {
		uint32_t pa, pb;

		if ((rc = core_ep_connect_pair(a, b, &pa, &pb))) {
			snprintf(err, errlen, "connection %ld (%s) failed: %s", out->conns + 1,
				 mode == CORE_CONNECT_CM ? "cm" : "oob", strerror(-rc));
			goto out;
		}
	}
	double secs = (double)(clock_ns() - t0) / 1e9;

	out->per_s = secs > 0 ? (double)out->conns / secs : 0;
	out->usec = out->conns ? secs * 1e6 / (double)out->conns : 0;
out:
	core_ep_close(a);
	core_ep_close(b);
	return rc;
}

int bench_conn_rate(const struct bench_opts *o, long iters, char *err, size_t errlen)
{
	static const enum core_connect modes[] = {CORE_CONNECT_CM, CORE_CONNECT_OOB};
	struct conn_rate r[2];
	long n = iters > CONN_RATE_MAX ? CONN_RATE_MAX : iters;
	int rc;

	for (int i = 0; i < 2; i++)
		if ((rc = measure(o, modes[i], n, &r[i], err, errlen)))
			return rc;
	print_begin();
	print_string(PRINT_JSON, "test", NULL, "conn_rate");
	print_string(PRINT_JSON, "mode", NULL, "one process");
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
