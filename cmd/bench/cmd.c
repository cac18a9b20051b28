/* SPDX-License-Identifier: MIT */
/* rdmatool bench <test>: perftest-like tests over core, striped against global lock in one run. */
#include "../cmd.h"
#include "../json.h"
#include "bench.h"
#include "../../core/clock.h"

#include <popt.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "bench";
static const char *const TESTS[] = { "send_lat", "write_lat", "read_lat", "atomic_lat", "send_bw",
				     "write_bw", "read_bw",  "msg_rate", "ring",	 NULL };

static double memcpy_mib_s(size_t size)
{
	size_t len = size < 4096 ? 4096 : size;
	char *a = malloc(len), *b = malloc(len);
	uint64_t t0, bytes = 0;

	memset(a, 1, len);
	memset(b, 0, len);
	t0 = clock_ns();
	while (clock_ns() - t0 < 200000000ull) {
		memcpy(b, a, len);
		bytes += len;
		__asm__ volatile("" ::"r"(b) : "memory");
	}
	double secs = (double)(clock_ns() - t0) / 1e9;

	free(a);
	free(b);
	return (double)bytes / secs / (1024.0 * 1024.0);
}

static int parse_threads(const char *text, int *out, int max)
{
	int n = 0;
	char *copy = strdup(text), *save, *tok;

	for (tok = strtok_r(copy, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(tok, &end, 10);

		if (*end || v < 1 || v > 64) {
			free(copy);
			return -1;
		}
		out[n++] = (int)v;
	}
	free(copy);
	return n;
}

int cmd_bench(int argc, const char **argv)
{
	long size = 8, iters = 0;
	char *threads_arg = NULL, *lock_arg = NULL, *device = NULL;
	int stripes = 0, progress = 0, baseline = 0;
	struct poptOption opts[] = {
		{ "size", 's', POPT_ARG_LONG, &size, 0, "message size in bytes (default 8)", "BYTES" },
		{ "iters", 'n', POPT_ARG_LONG, &iters, 0, "iterations per thread", "N" },
		{ "threads", 0, POPT_ARG_STRING, &threads_arg, 0, "thread counts to sweep, e.g. 1,2,4", "LIST" },
		{ "stripes", 0, POPT_ARG_INT, &stripes, 0, "stripes per endpoint (0 = auto)", "N" },
		{ "lock", 0, POPT_ARG_STRING, &lock_arg, 0, "striped, global or both (default both)", "MODE" },
		{ "progress-thread", 0, POPT_ARG_NONE, &progress, 0, "progress in a background thread", NULL },
		{ "device", 0, POPT_ARG_STRING, &device, 0, "device to use (default: first active, else soft0)", "NAME" },
		{ "baseline", 0, POPT_ARG_NONE, &baseline, 0, "measure memcpy bandwidth in the same run", NULL },
		POPT_AUTOHELP POPT_TABLEEND
	};
	poptContext pc = poptGetContext(argv[0], argc, argv, opts, 0);
	int rc, threads[16] = { 1 }, nthreads = 1, do_striped = 1, do_global = 1;
	const char *test;
	char err[512];

	poptSetOtherOptionHelp(pc, "[OPTIONS] <test>");
	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1)
		return popt_usage_error(CMD, pc, rc);
	test = poptGetArg(pc);
	int known = 0;

	for (int i = 0; test && TESTS[i]; i++)
		known |= !strcmp(test, TESTS[i]);
	if (!known) {
		poptFreeContext(pc);
		return usage_error(CMD, "%s test%s%s; use one of send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw msg_rate ring",
				   test ? "unknown" : "missing", test ? " " : "", test ? test : "");
	}
	if (size < 1 || size > (8l << 20) || iters < 0 || stripes < 0 || stripes > CORE_MAX_STRIPES) {
		poptFreeContext(pc);
		return usage_error(CMD, "--size must be 1..8388608, --iters >= 0, --stripes 0..%d", CORE_MAX_STRIPES);
	}
	if (threads_arg && (nthreads = parse_threads(threads_arg, threads, 16)) <= 0) {
		poptFreeContext(pc);
		return usage_error(CMD, "--threads='%s' is invalid; give counts 1..64 separated by commas", threads_arg);
	}
	if (lock_arg) {
		do_striped = !strcmp(lock_arg, "striped") || !strcmp(lock_arg, "both");
		do_global = !strcmp(lock_arg, "global") || !strcmp(lock_arg, "both");
		if (!do_striped && !do_global) {
			poptFreeContext(pc);
			return usage_error(CMD, "--lock='%s' is invalid; use striped, global or both", lock_arg);
		}
	}
	bool is_ring = !strcmp(test, "ring"), is_lat = strstr(test, "_lat") != NULL;

	if (!iters)
		iters = is_ring ? 1000000 : is_lat ? 2000 : 20000;
	struct bench_opts o = { .size = (size_t)size, .iters = iters, .threads = 1, .stripes = stripes,
				.progress_thread = progress, .device = device };
	struct json j;
	double mc = baseline ? memcpy_mib_s((size_t)size) : 0;

	if (global_opts.json) {
		json_init(&j, stdout, global_opts.pretty);
		json_begin_object(&j, NULL);
		json_string(&j, "test", test);
		if (baseline)
			json_double(&j, "memcpy_MiB_s", mc);
		json_begin_array(&j, "results");
	} else if (is_ring) {
		printf("%-9s %-8s %14s\n", "impl", "threads", "ops/s");
	} else if (is_lat) {
		printf("%-8s %-7s %-8s %-11s %-8s %-8s %-10s %-8s %-8s %-8s %-8s\n", "lock", "threads", "#bytes",
		       "#iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "99%", "99.9%");
	} else {
		printf("%-8s %-7s %-8s %-11s %-20s %-23s %-14s\n", "lock", "threads", "#bytes", "#iterations",
		       "BW peak[MiB/sec]", "BW average[MiB/sec]", "MsgRate[Mpps]");
	}
	double ratio_vals[16];
	int nratios = 0, status = EXIT_OK;

	for (int ti = 0; ti < nthreads; ti++) {
		double val[2] = { 0, 0 };

		o.threads = threads[ti];
		for (int m = 0; m < 2; m++) {
			struct bench_result r;
			const char *name;

			if ((m == 0 && !do_striped) || (m == 1 && !do_global))
				continue;
			o.lock = m == 0 ? CORE_LOCK_STRIPED : CORE_LOCK_GLOBAL;
			name = is_ring ? (m == 0 ? "lockfree" : "mutex") : (m == 0 ? "striped" : "global");
			if (progress_wanted())
				fprintf(stderr, "\r%s %s threads=%d ...", test, name, o.threads);
			rc = is_ring ? bench_ring(&o, m == 0, &r, err, sizeof(err))
				     : bench_transport(test, &o, &r, err, sizeof(err));
			if (progress_wanted())
				fprintf(stderr, "\r\033[K");
			if (rc) {
				status = run_error(CMD, "%s", err);
				goto done;
			}
			val[m] = is_ring ? r.ops_per_s : is_lat ? r.t_avg : r.msg_rate;
			if (global_opts.json) {
				json_begin_object(&j, NULL);
				if (is_ring) {
					json_string(&j, "impl", name);
					json_int(&j, "threads", o.threads);
					json_double(&j, "ops_per_s", r.ops_per_s);
				} else {
					json_string(&j, "lock", name);
					json_int(&j, "threads", o.threads);
					json_uint(&j, "MsgSize", r.size);
					json_int(&j, "n_iterations", r.iters);
					if (is_lat) {
						json_double(&j, "t_min", r.t_min);
						json_double(&j, "t_max", r.t_max);
						json_double(&j, "t_typical", r.t_typical);
						json_double(&j, "t_avg", r.t_avg);
						json_double(&j, "t_stdev", r.t_stdev);
						json_double(&j, "percentile_99", r.p99);
						json_double(&j, "percentile_99_9", r.p999);
					} else {
						json_double(&j, "BW_peak", r.bw_peak);
						json_double(&j, "BW_average", r.bw_avg);
						json_double(&j, "MsgRate", r.msg_rate);
						if (baseline)
							json_double(&j, "ratio_to_memcpy", r.bw_avg / mc);
					}
				}
				json_end_object(&j);
			} else if (is_ring) {
				printf("%-9s %-8d %14.0f\n", name, o.threads, r.ops_per_s);
			} else if (is_lat) {
				printf("%-8s %-7d %-8zu %-11ld %-8.2f %-8.2f %-10.2f %-8.2f %-8.2f %-8.2f %-8.2f\n", name,
				       o.threads, r.size, r.iters, r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.p99,
				       r.p999);
			} else {
				printf("%-8s %-7d %-8zu %-11ld %-20.2f %-23.2f %-14.4f", name, o.threads, r.size, r.iters,
				       r.bw_peak, r.bw_avg, r.msg_rate);
				if (baseline)
					printf("  %.3fx memcpy", r.bw_avg / mc);
				printf("\n");
			}
		}
		if (do_striped && do_global && val[1] > 0)
			ratio_vals[nratios++] = is_lat ? val[1] / val[0] : val[0] / val[1];
	}
done:
	if (global_opts.json) {
		json_end_array(&j);
		json_begin_array(&j, "ratios");
		for (int i = 0; i < nratios; i++) {
			json_begin_object(&j, NULL);
			json_int(&j, "threads", threads[i]);
			json_double(&j, is_ring ? "lockfree_over_mutex" : "striped_over_global", ratio_vals[i]);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
		json_finish(&j);
	} else {
		if (baseline)
			printf("baseline memcpy: %.1f MiB/s\n", mc);
		for (int i = 0; i < nratios; i++)
			printf("threads=%d %s: %.3fx\n", threads[i],
			       is_ring ? "lockfree/mutex" : is_lat ? "global/striped latency" : "striped/global rate",
			       ratio_vals[i]);
	}
	poptFreeContext(pc);
	return status;
}
