/* SPDX-License-Identifier: MIT */
/*
 * rdmatool madstress: the SMP MAD stress tester (seed 004, after
 * smp_mad_stress and infiniband-diags smpdump).  Options, the SET
 * write-back snapshot, progress and the report; the engine is core/mad_engine.
 */
#include "core/mad/mad_engine.h"
#include "core/mad/mad_target.h"
#include "cmd/cmd.h"
#include "core/stats/stats.h"
#include "cmd/json.h"

#include <errno.h>
#include <inttypes.h>
#include <popt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

static const char *const CMD = "madstress";

#define UMAD2SIM_LIB	     "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
#define SNAPSHOT_MIN_RETRIES 3
/*
 * umad2sim holds its one lock across a blocking write() to ibsim, and its
 * receiver thread needs that lock to hand a reply over: with many MADs in
 * flight ibsim's queue fills, ibsim blocks writing replies to us, and the
 * sender never returns (seen at -N 512; 256 ran clean).  Under the
 * simulator the port carries at most half of what ran clean.
 */
#define SIMULATOR_MAX_IN_FLIGHT 128

struct madstress_opts {
	double seconds;
	bool seconds_given;
	bool method_given;
	const char *ca;
	int port;
	int local_window, dest_window;
	int timeout_ms, retries;
	uint8_t method;
	int workers;
	const char *lids, *dr_path;
	uint64_t count;
	int decode;
	uint16_t attr;
	uint32_t mod;
};

static struct mad_engine *volatile running_engine;

static void on_signal(int sig)
{
	(void)sig;
	if (running_engine)
		mad_engine_request_stop(running_engine);
}

static const struct {
	const char *name;
	uint16_t attr;
} attr_names[] = {
    /* Full names, then smpquery's operation names and short aliases. */
    {"NodeInfo", SMP_ATTR_NODE_INFO},
    {"SwitchInfo", SMP_ATTR_SWITCH_INFO},
    {"PortInfo", SMP_ATTR_PORT_INFO},
    {"LinearForwardingTable", SMP_ATTR_LINEAR_FWD_TABLE},
    {"NodeDescription", 0x0010},
    {"GUIDInfo", 0x0014},
    {"PKeyTable", 0x0016},
    {"SLtoVLMappingTable", 0x0017},
    {"VLArbitrationTable", 0x0018},
    {"nodeinfo", SMP_ATTR_NODE_INFO},
    {"NI", SMP_ATTR_NODE_INFO},
    {"portinfo", SMP_ATTR_PORT_INFO},
    {"PI", SMP_ATTR_PORT_INFO},
    {"switchinfo", SMP_ATTR_SWITCH_INFO},
    {"SI", SMP_ATTR_SWITCH_INFO},
    {"LFT", SMP_ATTR_LINEAR_FWD_TABLE},
    {"nodedesc", 0x0010},
    {"ND", 0x0010},
    {"guids", 0x0014},
    {"GI", 0x0014},
    {"pkeys", 0x0016},
    {"sl2vl", 0x0017},
    {"vlarb", 0x0018},
};

static int parse_attr(const char *text, uint16_t *attr)
{
	uint32_t v;

	for (size_t i = 0; i < sizeof(attr_names) / sizeof(attr_names[0]); i++)
		if (strcasecmp(text, attr_names[i].name) == 0) {
			*attr = attr_names[i].attr;
			return 0;
		}
	if (mad_parse_number(text, 0xffff, &v) < 0 || v == 0)
		return -1;
	*attr = (uint16_t)v;
	return 0;
}

static int parse_method(const char *text, uint8_t *method)
{
	if (!strcmp(text, "1") || !strcasecmp(text, "set"))
		*method = SMP_METHOD_SET;
	else if (!strcmp(text, "2") || !strcasecmp(text, "get"))
		*method = SMP_METHOD_GET;
	else
		return -1;
	return 0;
}

static void status_name(uint32_t status, char *buf, size_t len)
{
	if (status >= MAD_STATUS_UMAD)
		snprintf(buf, len, "umad:%s", strerror((int)(status - MAD_STATUS_UMAD)));
	else
		snprintf(buf, len, "0x%04x", status);
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void json_stats(struct json *j, const struct mad_stats *s, double elapsed)
{
	char name[64];

	json_uint(j, "sent", s->sent);
	json_uint(j, "ok", s->ok);
	json_uint(j, "timeouts", s->timeouts);
	json_uint(j, "errors", s->errors);
	json_uint(j, "retries", s->retries);
	json_uint(j, "late", s->late);
	json_double(j, "mads_per_s", elapsed > 0 ? (double)(s->ok + s->errors) / elapsed : 0);
	json_begin_object(j, "errors_by_status");
	for (int i = 0; i < MAD_STATUS_KINDS && s->by_status[i].count; i++) {
		status_name(s->by_status[i].status, name, sizeof(name));
		json_uint(j, name, s->by_status[i].count);
	}
	if (s->other_status)
		json_uint(j, "other", s->other_status);
	json_end_object(j);
	json_begin_object(j, "lat_us");
	if (s->lat.count) {
		json_double(j, "min", us(s->lat.min));
		json_double(j, "avg", hist_mean(&s->lat) / 1000.0);
		json_double(j, "p50", us(hist_quantile(&s->lat, 0.50)));
		json_double(j, "p99", us(hist_quantile(&s->lat, 0.99)));
		json_double(j, "max", us(s->lat.max));
	}
	json_end_object(j);
}

/* Process CPU (umad2sim's receiver thread included) per answered MAD. */
static double cpu_us_per_mad(const struct mad_stats *total, double cpu_pct, double elapsed)
{
	uint64_t answered = total->ok + total->errors;

	return answered ? cpu_pct / 100.0 * elapsed * 1e6 / (double)answered : 0;
}

static void json_decoded(struct json *j, uint16_t attr, uint32_t mod, const uint8_t *data)
{
	struct smp_field f[SMP_DATA_SIZE];
	int n = data ? smp_decode_attr(attr, mod, data, f, SMP_DATA_SIZE) : 0;

	if (!n)
		return;
	json_begin_object(j, "decoded");
	for (int i = 0; i < n; i++) {
		if (f[i].hex) {
			char v[24];

			snprintf(v, sizeof(v), "0x%" PRIx64, f[i].value);
			json_string(j, f[i].name, v);
		} else {
			json_uint(j, f[i].name, f[i].value);
		}
	}
	json_end_object(j);
}

static const char *method_word(uint8_t method)
{
	return method == SMP_METHOD_SET ? "set" : "get";
}

static void print_json(const struct madstress_opts *o, const struct hw_umad_port_info *port,
		       struct mad_engine *e, const struct mad_dest *dests, int ndests, double cpu_pct)
{
	double elapsed = mad_engine_elapsed(e);
	struct mad_stats total;
	struct json j;
	char route[256];

	mad_engine_total(e, &total);
	json_init(&j, stdout, global_opts.pretty);
	json_begin_object(&j, NULL);
	json_begin_object(&j, "params");
	json_string(&j, "ca", port->ca_name);
	json_int(&j, "port", port->port);
	json_int(&j, "local_lid", port->base_lid);
	json_string(&j, "method", method_word(o->method));
	json_int(&j, "attr", o->attr);
	json_uint(&j, "mod", o->mod);
	json_int(&j, "local_depth", o->local_window);
	json_int(&j, "dest_depth", o->dest_window);
	json_int(&j, "workers", o->workers);
	json_int(&j, "timeout_ms", o->timeout_ms);
	json_int(&j, "retries", o->retries);
	json_double(&j, "seconds", o->seconds);
	json_uint(&j, "count", o->count);
	json_string(&j, "routing", dests[0].route.directed ? "directed" : "lid");
	json_end_object(&j);

	json_begin_object(&j, "total");
	json_stats(&j, &total, elapsed);
	json_double(&j, "elapsed_s", elapsed);
	json_double(&j, "cpu_pct", cpu_pct);
	json_double(&j, "cpu_us_per_mad", cpu_us_per_mad(&total, cpu_pct, elapsed));
	json_end_object(&j);

	json_begin_array(&j, "workers");
	for (int i = 0; i < o->workers; i++) {
		const struct mad_stats *w = mad_engine_worker(e, i);

		json_begin_object(&j, NULL);
		json_int(&j, "worker", i);
		json_stats(&j, w, elapsed);
		json_double(&j, "cpu_pct", elapsed > 0 ? (double)w->cpu_ns / 1e9 / elapsed * 100.0 : 0);
		json_end_object(&j);
	}
	json_end_array(&j);

	json_begin_array(&j, "destinations");
	for (int d = 0; d < ndests; d++) {
		struct mad_stats s;

		mad_engine_dest(e, d, &s);
		json_begin_object(&j, NULL);
		if (dests[d].route.directed) {
			mad_route_format(&dests[d].route, route, sizeof(route));
			json_string(&j, "dr_path", route);
		} else {
			json_int(&j, "lid", dests[d].route.lid);
		}
		json_stats(&j, &s, elapsed);
		if (o->decode)
			json_decoded(&j, o->attr, o->mod, mad_engine_reply(e, d));
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	json_finish(&j);
}

static void print_row(const char *label, const struct mad_stats *s, double elapsed)
{
	printf("%-12s %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %7" PRIu64 " %5" PRIu64 " %10.0f",
	       label, s->sent, s->ok, s->timeouts, s->errors, s->retries, s->late,
	       elapsed > 0 ? (double)(s->ok + s->errors) / elapsed : 0);
	if (s->lat.count)
		printf("  %.1f/%.1f/%.1f/%.1f/%.1f\n", us(s->lat.min), hist_mean(&s->lat) / 1000.0,
		       us(hist_quantile(&s->lat, 0.5)), us(hist_quantile(&s->lat, 0.99)), us(s->lat.max));
	else
		printf("  -\n");
}

static void print_statuses(const char *label, const struct mad_stats *s)
{
	char name[64];

	if (!s->errors)
		return;
	printf("%-12s errors by status:", label);
	for (int i = 0; i < MAD_STATUS_KINDS && s->by_status[i].count; i++) {
		status_name(s->by_status[i].status, name, sizeof(name));
		printf(" %s=%" PRIu64, name, s->by_status[i].count);
	}
	if (s->other_status)
		printf(" other=%" PRIu64, s->other_status);
	putchar('\n');
}

static void print_decoded(uint16_t attr, uint32_t mod, const uint8_t *data)
{
	struct smp_field f[SMP_DATA_SIZE];
	int n = data ? smp_decode_attr(attr, mod, data, f, SMP_DATA_SIZE) : 0;

	for (int i = 0; i < n; i++) {
		if (f[i].hex)
			printf("    %-20s 0x%" PRIx64 "\n", f[i].name, f[i].value);
		else
			printf("    %-20s %" PRIu64 "\n", f[i].name, f[i].value);
	}
}

static void print_text(const struct madstress_opts *o, const struct hw_umad_port_info *port,
		       struct mad_engine *e, const struct mad_dest *dests, int ndests, double cpu_pct)
{
	const char *an = smp_attr_name(o->attr);
	double elapsed = mad_engine_elapsed(e);
	struct mad_stats total;
	char label[300], route[256];

	mad_engine_total(e, &total);
	printf("madstress: %s port %d (lid %u), %s %s (0x%04x) mod %u, %d destination%s\n", port->ca_name,
	       port->port, port->base_lid, smp_method_name(o->method), an ? an : "attribute", o->attr, o->mod,
	       ndests, ndests == 1 ? "" : "s");
	printf("  -N %d -n %d -p %d -T %d ms -r %d, ran %.2f s\n\n", o->local_window, o->dest_window,
	       o->workers, o->timeout_ms, o->retries, elapsed);
	printf("%-12s %10s %10s %8s %8s %7s %5s %10s  %s\n", "", "sent", "ok", "timeouts", "errors",
	       "retries", "late", "MAD/s", "lat us min/avg/p50/p99/max");
	for (int d = 0; d < ndests; d++) {
		struct mad_stats s;

		mad_engine_dest(e, d, &s);
		mad_route_format(&dests[d].route, route, sizeof(route));
		snprintf(label, sizeof(label), "%s %s", dests[d].route.directed ? "path" : "lid", route);
		print_row(label, &s, elapsed);
		print_statuses(label, &s);
		if (o->decode)
			print_decoded(o->attr, o->mod, mad_engine_reply(e, d));
	}
	if (o->workers > 1)
		for (int i = 0; i < o->workers; i++) {
			snprintf(label, sizeof(label), "worker %d", i);
			print_row(label, mad_engine_worker(e, i), elapsed);
		}
	print_row("total", &total, elapsed);
	print_statuses("total", &total);
	printf("cpu %.1f%% (whole process), %.2f us of CPU per MAD\n", cpu_pct,
	       cpu_us_per_mad(&total, cpu_pct, elapsed));
}

static uint64_t process_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull +
	       (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
}

/* Runs the engine to the end, with progress on a terminal and Ctrl-C to stop early. */
static void run_engine(struct mad_engine *e, const char *what, double seconds)
{
	bool progress = progress_wanted();
	int ticks = 0;

	running_engine = e;
	while (!mad_engine_wait(e, progress ? 500 : 1000)) {
		ticks++;
		if (progress)
			fprintf(stderr, "\r%s: %" PRIu64 " MADs, %.1f s%s", what, mad_engine_finished(e),
				ticks * 0.5, seconds > 0 ? "" : " (Ctrl-C stops)");
	}
	running_engine = NULL;
	if (progress && ticks)
		fputs("\r\033[K", stderr);
}

static int engine_error(int rc, const struct hw_umad_port_info *port)
{
	return run_error(
	    CMD,
	    "cannot open %s port %d for SMPs: %s; check that you may use /dev/infiniband/umad* (run as root)",
	    port->ca_name, port->port, strerror(-rc));
}

/*
 * SET must not change the fabric: GET every destination's current block
 * first (with retries) and write exactly that back.
 */
static int snapshot(const struct madstress_opts *o, const struct hw_umad_port_info *port,
		    struct mad_dest *dests, int ndests)
{
	struct mad_engine_config cfg = {
	    .port = *port,
	    .workers = 1,
	    .local_window = o->local_window,
	    .dest_window = 1,
	    .timeout_ms = o->timeout_ms,
	    .retries = o->retries > SNAPSHOT_MIN_RETRIES ? o->retries : SNAPSHOT_MIN_RETRIES,
	    .method = SMP_METHOD_GET,
	    .attr = o->attr,
	    .mod = o->mod,
	    .count = (uint64_t)ndests,
	    .per_dest_limit = 1,
	    .keep_replies = true,
	};
	struct mad_engine *e;
	int rc = mad_engine_create(&e, &cfg, dests, ndests);
	int missing = 0;
	char first[256] = "";

	if (rc)
		return engine_error(rc, port);
	rc = mad_engine_start(e);
	if (rc) {
		mad_engine_destroy(e);
		return run_error(CMD, "cannot start a worker thread: %s", strerror(-rc));
	}
	run_engine(e, "reading current values", 0);
	for (int d = 0; d < ndests; d++) {
		const uint8_t *data = mad_engine_reply(e, d);

		if (data) {
			memcpy(dests[d].set_data, data, SMP_DATA_SIZE);
			continue;
		}
		if (!missing++)
			mad_route_format(&dests[d].route, first, sizeof(first));
	}
	mad_engine_destroy(e);
	if (missing)
		return run_error(
		    CMD,
		    "cannot read attribute 0x%04x mod %u from %d destination%s (first: %s%s), so SET "
		    "cannot write it back unchanged; check that they exist and answer GET (try -m get)",
		    o->attr, o->mod, missing, missing == 1 ? "" : "s",
		    dests[0].route.directed ? "path " : "lid ", first);
	return EXIT_OK;
}

static int build_dests(const struct madstress_opts *o, struct mad_dest **out, int *n)
{
	char err[256];

	*out = NULL;
	if (o->dr_path) {
		*out = calloc(1, sizeof(**out));
		if (!*out)
			return run_error(CMD, "out of memory");
		if (mad_parse_dr_path(o->dr_path, &(*out)->route, err, sizeof(err)) < 0) {
			free(*out);
			*out = NULL;
			return usage_error(CMD, "-D: %s", err);
		}
		*n = 1;
		return EXIT_OK;
	}
	uint16_t *lids;
	int count = mad_parse_lid_list(o->lids, &lids, err, sizeof(err));

	if (count < 0)
		return usage_error(CMD, "-L: %s", err);
	*out = calloc((size_t)count, sizeof(**out));
	if (!*out) {
		free(lids);
		return run_error(CMD, "out of memory");
	}
	for (int i = 0; i < count; i++)
		(*out)[i].route.lid = lids[i];
	free(lids);
	*n = count;
	return EXIT_OK;
}

static int find_port(struct madstress_opts *o, struct hw_umad_port_info *port)
{
	int rc = hw_umad_find_port(o->ca, o->port, port);

	if (rc == -ENODEV)
		return run_error(
		    CMD, "no umad device: this machine has no InfiniBand port (nothing in "
			 "/sys/class/infiniband_mad); to run against the ibsim simulator, start ibsim and "
			 "opensm and run 'LD_PRELOAD=" UMAD2SIM_LIB " rdmatool madstress ...' (see 'man "
			 "rdmatool-madstress')");
	if (rc == -ENOENT)
		return usage_error(CMD, "-C %s: no such CA; 'ibstat -l' lists the CAs", o->ca);
	if (rc == -EINVAL)
		return usage_error(CMD, "-P %d: CA %s has no such port; 'ibstat' lists its ports", o->port,
				   o->ca && *o->ca ? o->ca : "(first)");
	if (rc)
		return run_error(CMD, "cannot read the umad ports: %s", strerror(-rc));
	if (port->state != 4)
		notice(CMD, "%s port %d is not ACTIVE (state %d); SMPs may not get answers", port->ca_name,
		       port->port, port->state);
	if (port->simulator && o->workers > 1)
		return usage_error(
		    CMD,
		    "-p %d: %s is ibsim's simulated CA, where umad2sim delivers every reply to the last "
		    "worker that registered, so the other workers would see only timeouts; use -p 1 under "
		    "ibsim (-p > 1 is for real hardware)",
		    o->workers, port->ca_name);
	if (port->simulator && o->local_window > SIMULATOR_MAX_IN_FLIGHT) {
		notice(CMD,
		       "-N %d: %s is ibsim's simulated CA, whose umad2sim transport deadlocks with more than "
		       "%d MADs "
		       "in flight; using -N %d%s",
		       o->local_window, port->ca_name, SIMULATOR_MAX_IN_FLIGHT, SIMULATOR_MAX_IN_FLIGHT,
		       o->dest_window > SIMULATOR_MAX_IN_FLIGHT ? " and the same -n" : "");
		o->local_window = SIMULATOR_MAX_IN_FLIGHT;
		if (o->dest_window > o->local_window)
			o->dest_window = o->local_window;
	}
	return EXIT_OK;
}

static int check_opts(struct madstress_opts *o, poptContext pc)
{
	const char *attr = poptGetArg(pc), *mod = poptGetArg(pc), *extra = poptGetArg(pc);

	if (!attr)
		return usage_error(CMD, "missing <attr>; e.g. 'rdmatool madstress -L 2,4-9 0x11' (NodeInfo)");
	if (parse_attr(attr, &o->attr) < 0)
		return usage_error(
		    CMD,
		    "bad attribute '%s'; give an attribute id like 0x11, a name (NodeInfo, PortInfo, "
		    "SwitchInfo, LinearForwardingTable, ...) or smpquery's alias (NI, PI, SI, LFT, ND, GI)",
		    attr);
	if (mod && mad_parse_number(mod, UINT32_MAX, &o->mod) < 0)
		return usage_error(CMD, "bad attribute modifier '%s'; give a number like 0 or 0x1", mod);
	if (extra)
		return usage_error(CMD, "unexpected argument '%s'; usage: madstress [options] <attr> [mod]",
				   extra);
	if (!o->lids == !o->dr_path)
		return usage_error(CMD,
				   "give the destinations with -L <lids> (like 2,4-9) or -D <dr_path> (like "
				   "0,1,3), not both");
	if (o->seconds < 0 || (o->seconds_given && o->seconds == 0))
		return usage_error(CMD, "-t %g: give a positive number of seconds", o->seconds);
	if (o->workers < 1 || o->workers > 64)
		return usage_error(CMD, "-p %d: give 1..64 workers", o->workers);
	if (o->dest_window < 1)
		return usage_error(CMD, "-n %d: the per-destination depth must be at least 1",
				   o->dest_window);
	if (o->local_window < 1 || o->local_window > 65536)
		return usage_error(CMD, "-N %d: give a local depth of 1..65536", o->local_window);
	if (o->local_window < o->dest_window)
		return usage_error(
		    CMD, "-N %d is less than -n %d: the local depth bounds every destination's; raise -N",
		    o->local_window, o->dest_window);
	if (o->local_window < o->workers)
		return usage_error(CMD,
				   "-N %d is less than -p %d: each worker needs room for one MAD; raise -N",
				   o->local_window, o->workers);
	if (o->timeout_ms < 1)
		return usage_error(CMD, "-T %d: give a timeout of at least 1 ms", o->timeout_ms);
	if (o->retries < 0 || o->retries > 100)
		return usage_error(CMD, "-r %d: give 0..100 retries", o->retries);
	return EXIT_OK;
}

static int parse(int argc, const char **argv, struct madstress_opts *o)
{
	char *method = NULL, *lids = NULL, *dr = NULL, *ca = NULL;
	long long count = 0;
	struct poptOption options[] = {
	    {"time", 't', POPT_ARG_DOUBLE, &o->seconds, 't',
	     "run for SECONDS (default 10; none with -c); smpquery's -t (timeout) is -T here", "SECONDS"},
	    {"ca", 'C', POPT_ARG_STRING, &ca, 0, "local CA name (default: the first)", "CA"},
	    {"port", 'P', POPT_ARG_INT, &o->port, 0, "local port (default: the first ACTIVE)", "PORT"},
	    {"local-depth", 'N', POPT_ARG_INT, &o->local_window, 0,
	     "MADs in flight from the port, all workers together (default 64)", "N"},
	    {"dest-depth", 'n', POPT_ARG_INT, &o->dest_window, 0,
	     "MADs in flight per destination (default 2)", "N"},
	    {"timeout", 'T', POPT_ARG_INT, &o->timeout_ms, 0, "MAD timeout in ms (default 1000)", "MS"},
	    {"retries", 'r', POPT_ARG_INT, &o->retries, 0, "retransmissions after a timeout (default 0)",
	     "N"},
	    {"method", 'm', POPT_ARG_STRING, &method, 0, "1|set (default) or 2|get", "METHOD"},
	    {"workers", 'p', POPT_ARG_INT, &o->workers, 0, "worker threads, one umad fd each (default 1)",
	     "N"},
	    {"lids", 'L', POPT_ARG_STRING, &lids, 0, "destination LIDs: comma list, ranges like 4-9", "LIDS"},
	    {"dr-path", 'D', POPT_ARG_STRING, &dr, 0, "directed route to one destination, like 0,1,3",
	     "PATH"},
	    {"count", 'c', POPT_ARG_LONGLONG, &count, 'c', "stop after N MADs", "N"},
	    {"decode", 'v', POPT_ARG_NONE, &o->decode, 0,
	     "decode the last reply per destination (NodeInfo, PortInfo, SwitchInfo, LFT)", NULL},
	    POPT_AUTOHELP POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(argv[0], argc, argv, options, 0);
	int rc;
	bool count_given = false;

	poptSetOtherOptionHelp(pc, "[OPTION...] <attr> [mod]");
	while ((rc = poptGetNextOpt(pc)) > 0) {
		o->seconds_given |= rc == 't';
		count_given |= rc == 'c';
	}
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
		goto out;
	}
	o->method_given = method != NULL;
	if (method && parse_method(method, &o->method) < 0) {
		rc = usage_error(CMD, "-m %s: give 1 or set (SET), 2 or get (GET)", method);
		goto out;
	}
	if (count < 0 || (count_given && count == 0)) {
		rc = usage_error(CMD, "-c %lld: give a positive number of MADs", count);
		goto out;
	}
	o->count = (uint64_t)count;
	o->ca = ca ? strdup(ca) : NULL;
	o->lids = lids ? strdup(lids) : NULL;
	o->dr_path = dr ? strdup(dr) : NULL;
	rc = check_opts(o, pc);
	if (!rc && !o->seconds_given)
		o->seconds = o->count ? 0 : 10;
out:
	free(method);
	free(lids);
	free(dr);
	free(ca);
	poptFreeContext(pc);
	return rc;
}

static void free_opts(struct madstress_opts *o)
{
	free((char *)o->ca);
	free((char *)o->lids);
	free((char *)o->dr_path);
}

static int run(struct madstress_opts *o)
{
	struct hw_umad_port_info port;
	struct mad_dest *dests = NULL;
	struct mad_engine *e = NULL;
	int ndests = 0, rc;
	uint64_t cpu0;
	double cpu_pct;
	struct mad_stats total;

	rc = build_dests(o, &dests, &ndests);
	if (rc)
		return rc;
	rc = find_port(o, &port);
	if (rc)
		goto out;
	if (o->method == SMP_METHOD_SET) {
		if (!o->method_given)
			notice(CMD, "SET is the default: every SMP writes back the value read at the start; "
				    "-m get only reads");
		rc = snapshot(o, &port, dests, ndests);
		if (rc)
			goto out;
	}
	struct mad_engine_config cfg = {
	    .port = port,
	    .workers = o->workers,
	    .local_window = o->local_window,
	    .dest_window = o->dest_window,
	    .timeout_ms = o->timeout_ms,
	    .retries = o->retries,
	    .method = o->method,
	    .attr = o->attr,
	    .mod = o->mod,
	    .duration_ns = (uint64_t)(o->seconds * 1e9),
	    .count = o->count,
	    .keep_replies = o->decode,
	    .publish_stats = true,
	};
	stats_segment_open("madstress");
	rc = mad_engine_create(&e, &cfg, dests, ndests);
	if (rc) {
		rc = engine_error(rc, &port);
		goto out;
	}
	cpu0 = process_cpu_ns();
	rc = mad_engine_start(e);
	if (rc) {
		rc = run_error(CMD, "cannot start a worker thread: %s", strerror(-rc));
		goto out;
	}
	run_engine(e, "madstress", o->seconds);
	cpu_pct = mad_engine_elapsed(e) > 0
		      ? (double)(process_cpu_ns() - cpu0) / 1e9 / mad_engine_elapsed(e) * 100.0
		      : 0;
	if (global_opts.json)
		print_json(o, &port, e, dests, ndests, cpu_pct);
	else
		print_text(o, &port, e, dests, ndests, cpu_pct);
	mad_engine_total(e, &total);
	rc = total.timeouts || total.errors || !total.sent ? EXIT_FAILURES : EXIT_OK;
out:
	/* Drained above: unregister and close before exit, or umad2sim's exit handler can hang. */
	mad_engine_destroy(e);
	free(dests);
	return rc;
}

int cmd_madstress(int argc, const char **argv)
{
	struct madstress_opts o = {
	    .local_window = 64,
	    .dest_window = 2,
	    .timeout_ms = 1000,
	    .method = SMP_METHOD_SET,
	    .workers = 1,
	};
	struct sigaction sa = {.sa_handler = on_signal};
	int rc = parse(argc, argv, &o);

	if (rc) {
		free_opts(&o);
		return rc;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = run(&o);
	free_opts(&o);
	return rc;
}
