/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool madstress: the SMP MAD stress tester (modelled on the
 * smp_mad_stress tool and infiniband-diags' smpdump).  Options, the SET
 * write-back snapshot, progress and the report; the engine is core/mad_engine.
 */
#include "core/mad/mad_engine.h"
#include "core/mad/mad_target.h"
#include "cmd/cmd.h"
#include "cmd/help.h"
#include "core/stats/stats.h"
#include "cmd/print.h"

#include <infiniband/mad.h>

#include <ctype.h>
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

/* The attribute's names (letters first: a destination is digits); after the destination when one is given. */
void madstress_complete_arg(int n, const char **args, const char *cur)
{
	uint16_t attr;

	if (n > 1 || (n == 1 && !parse_attr(args[0], &attr) && !isdigit((unsigned char)args[0][0])) ||
	    (n == 0 && isdigit((unsigned char)cur[0])))
		return;
	for (size_t i = 0; i < sizeof(attr_names) / sizeof(attr_names[0]); i++)
		complete_word(cur, "", attr_names[i].name);
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

/* The counters of one row (a destination, a worker, the total): the text row or the JSON members. */
static void print_stats(const char *label, const struct mad_stats *s, double elapsed)
{
	char name[64];

	print_string(PRINT_TEXT, NULL, "%-12s", label);
	print_uint(PRINT_ANY, "sent", " %10llu", s->sent);
	print_uint(PRINT_ANY, "ok", " %10llu", s->ok);
	print_uint(PRINT_ANY, "timeouts", " %8llu", s->timeouts);
	print_uint(PRINT_ANY, "errors", " %8llu", s->errors);
	print_uint(PRINT_ANY, "retries", " %7llu", s->retries);
	print_uint(PRINT_ANY, "late", " %5llu", s->late);
	print_double(PRINT_ANY, "mads_per_s", " %10.0f",
		     elapsed > 0 ? (double)(s->ok + s->errors) / elapsed : 0);
	print_open_object("lat_us");
	if (s->lat.count) {
		print_double(PRINT_ANY, "min", "  %.1f", us(s->lat.min));
		print_double(PRINT_ANY, "avg", "/%.1f", hist_mean(&s->lat) / 1000.0);
		print_double(PRINT_ANY, "p50", "/%.1f", us(hist_quantile(&s->lat, 0.50)));
		print_double(PRINT_ANY, "p99", "/%.1f", us(hist_quantile(&s->lat, 0.99)));
		print_double(PRINT_ANY, "max", "/%.1f\n", us(s->lat.max));
	} else {
		print_text("  -\n");
	}
	print_close_object();
	/* Statuses: always an object in JSON, a line of their own in text when there are errors. */
	print_open_object("errors_by_status");
	if (s->errors)
		print_string(PRINT_TEXT, NULL, "%-12s errors by status:", label);
	for (int i = 0; i < MAD_STATUS_KINDS && s->by_status[i].count; i++) {
		status_name(s->by_status[i].status, name, sizeof(name));
		print_text(" %s=", name);
		print_uint(PRINT_ANY, name, "%llu", s->by_status[i].count);
	}
	if (s->other_status)
		print_uint(PRINT_ANY, "other", " other=%llu", s->other_status);
	if (s->errors)
		print_text("\n");
	print_close_object();
}

/* Process CPU (umad2sim's receiver thread included) per answered MAD. */
static double cpu_us_per_mad(const struct mad_stats *total, double cpu_pct, double elapsed)
{
	uint64_t answered = total->ok + total->errors;

	return answered ? cpu_pct / 100.0 * elapsed * 1e6 / (double)answered : 0;
}

/* -v: the last reply's fields as smpquery prints them ("Guid:....0x..."); in JSON numbers, hex ones as
 * "0x..". */
static void print_decoded(uint16_t attr, uint32_t mod, const uint8_t *data)
{
	struct smp_field f[SMP_DATA_SIZE];
	int n = data ? smp_decode_attr(attr, mod, data, f, SMP_DATA_SIZE) : 0;

	if (!n)
		return;
	print_open_object("decoded");
	for (int i = 0; i < n; i++) {
		char v[24], dots[40], text[64];
		int len = (int)strlen(f[i].name) + 1;
		bool hex;

		/* libibmad's rendering, smpquery's: "0x0002c90300001234", "Switch", "Active". */
		if (f[i].mad_field)
			mad_dump_val((enum MAD_FIELDS)f[i].mad_field, text, sizeof(text), f[i].raw);
		else
			snprintf(text, sizeof(text), "%" PRIu64, f[i].value);
		hex = !strncmp(text, "0x", 2);
		/* smpquery's layout: the name, a colon and dots to column 33, then the value. */
		snprintf(dots, sizeof(dots), "%.*s", len < 33 ? 33 - len : 0,
			 "........................................");
		print_text("    %s:%s%s\n", f[i].name, dots, text);
		if (hex) {
			snprintf(v, sizeof(v), "0x%" PRIx64, f[i].value);
			print_string(PRINT_JSON, f[i].name, NULL, v);
		} else {
			print_uint(PRINT_JSON, f[i].name, NULL, f[i].value);
		}
	}
	print_close_object();
}

static void print_params(const struct madstress_opts *o, const struct hw_umad_port_info *port,
			 const struct mad_dest *dests, int ndests, double elapsed)
{
	const char *an = smp_attr_name(o->attr);

	print_open_object("params");
	print_string(PRINT_ANY, "ca", "madstress: %s", port->ca_name);
	print_int(PRINT_ANY, "port", " port %lld", port->port);
	print_int(PRINT_ANY, "local_lid", " (lid %lld), ", port->base_lid);
	print_string(PRINT_JSON, "method", NULL, o->method == SMP_METHOD_SET ? "set" : "get");
	print_text("%s %s ", smp_method_name(o->method), an ? an : "attribute");
	print_int(PRINT_JSON, "attr", NULL, o->attr);
	print_text("(0x%04x)", o->attr);
	print_uint(PRINT_ANY, "mod", " mod %llu", o->mod);
	print_text(", %d destination%s\n", ndests, ndests == 1 ? "" : "s");
	print_int(PRINT_ANY, "local_depth", "  -N %lld", o->local_window);
	print_int(PRINT_ANY, "dest_depth", " -n %lld", o->dest_window);
	print_int(PRINT_ANY, "workers", " -p %lld", o->workers);
	print_int(PRINT_ANY, "timeout_ms", " -T %lld ms", o->timeout_ms);
	print_int(PRINT_ANY, "retries", " -r %lld", o->retries);
	print_double(PRINT_JSON, "seconds", NULL, o->seconds);
	print_uint(PRINT_JSON, "count", NULL, o->count);
	print_string(PRINT_JSON, "routing", NULL, dests[0].route.directed ? "directed" : "lid");
	print_text(", ran %.2f s\n\n", elapsed);
	print_close_object();
}

static void print_result(const struct madstress_opts *o, const struct hw_umad_port_info *port,
			 struct mad_engine *e, const struct mad_dest *dests, int ndests, double cpu_pct)
{
	double elapsed = mad_engine_elapsed(e);
	struct mad_stats total;
	char label[300], route[256];

	mad_engine_total(e, &total);
	print_begin();
	print_params(o, port, dests, ndests, elapsed);
	print_text("%-12s %10s %10s %8s %8s %7s %5s %10s  %s\n", "", "sent", "ok", "timeouts", "errors",
		   "retries", "late", "MAD/s", "lat us min/avg/p50/p99/max");
	print_open_array("destinations");
	for (int d = 0; d < ndests; d++) {
		struct mad_stats s;

		mad_engine_dest(e, d, &s);
		mad_route_format(&dests[d].route, route, sizeof(route));
		snprintf(label, sizeof(label), "%s %s", dests[d].route.directed ? "path" : "lid", route);
		print_open_object(NULL);
		if (dests[d].route.directed)
			print_string(PRINT_JSON, "dr_path", NULL, route);
		else
			print_int(PRINT_JSON, "lid", NULL, dests[d].route.lid);
		print_stats(label, &s, elapsed);
		if (o->decode)
			print_decoded(o->attr, o->mod, mad_engine_reply(e, d));
		print_close_object();
	}
	print_close_array();
	/* Per worker: always in JSON, in text only when there are several. */
	print_open_array("workers");
	for (int i = 0; i < o->workers && (print_is_json() || o->workers > 1); i++) {
		const struct mad_stats *w = mad_engine_worker(e, i);

		snprintf(label, sizeof(label), "worker %d", i);
		print_open_object(NULL);
		print_int(PRINT_JSON, "worker", NULL, i);
		print_stats(label, w, elapsed);
		print_double(PRINT_JSON, "cpu_pct", NULL,
			     elapsed > 0 ? (double)w->cpu_ns / 1e9 / elapsed * 100.0 : 0);
		print_close_object();
	}
	print_close_array();
	print_open_object("total");
	print_stats("total", &total, elapsed);
	print_double(PRINT_JSON, "elapsed_s", NULL, elapsed);
	print_double(PRINT_ANY, "cpu_pct", "cpu %.1f%% (whole process), ", cpu_pct);
	print_double(PRINT_ANY, "cpu_us_per_mad", "%.2f us of CPU per MAD\n",
		     cpu_us_per_mad(&total, cpu_pct, elapsed));
	print_close_object();
	print_end();
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
	const char *attr, *mod, *extra;

	/* smpdump's form: without -L or -D the destination comes first, LIDs or a DR path (from 0). */
	if (!o->lids && !o->dr_path && poptPeekArg(pc)) {
		const char *dest = poptGetArg(pc);

		if (!poptPeekArg(pc))
			return usage_error(CMD,
					   "'%s' alone: give the destination and the attribute ('rdmatool "
					   "madstress 4 NodeInfo'), or the destinations with -L <lids> or -D "
					   "<dr_path>",
					   dest);
		if (!strcmp(dest, "0") || !strncmp(dest, "0,", 2))
			o->dr_path = strdup(dest);
		else
			o->lids = strdup(dest);
	}
	attr = poptGetArg(pc);
	mod = poptGetArg(pc);
	extra = poptGetArg(pc);
	if (!attr)
		return usage_error(CMD, "missing <attr>; e.g. 'rdmatool madstress 4 NodeInfo' or 'rdmatool "
					"madstress -L 2,4-9 0x11' (NodeInfo)");
	if (parse_attr(attr, &o->attr) < 0)
		return usage_error(
		    CMD,
		    "bad attribute '%s'; give an attribute id like 0x11, a name (NodeInfo, PortInfo, "
		    "SwitchInfo, LinearForwardingTable, ...) or smpquery's alias (NI, PI, SI, LFT, ND, GI)",
		    attr);
	if (mod && mad_parse_number(mod, UINT32_MAX, &o->mod) < 0)
		return usage_error(CMD, "bad attribute modifier '%s'; give a number like 0 or 0x1", mod);
	if (extra)
		return usage_error(
		    CMD,
		    "unexpected argument '%s'; usage: madstress [options] [<lids>|-L LIDS|-D PATH] "
		    "<attr> [mod]",
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
	    {"method", 'm', POPT_ARG_STRING, &method, 0, "SET (the default, writes back what it read) or GET",
	     "set|get|1|2"},
	    {"workers", 'p', POPT_ARG_INT, &o->workers, 0, "worker threads, one umad fd each (default 1)",
	     "N"},
	    {"lids", 'L', POPT_ARG_STRING, &lids, 0, "destination LIDs: comma list, ranges like 4-9", "LIDS"},
	    {"dr-path", 'D', POPT_ARG_STRING, &dr, 0, "directed route to one destination, like 0,1,3",
	     "PATH"},
	    {"count", 'c', POPT_ARG_LONGLONG, &count, 'c', "stop after N MADs", "N"},
	    {"decode", 'v', POPT_ARG_NONE, &o->decode, 0,
	     "decode the last reply per destination (NodeInfo, PortInfo, SwitchInfo, LFT)", NULL},
	    CMD_HELP(options),
	    POPT_TABLEEND,
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
	print_result(o, &port, e, dests, ndests, cpu_pct);
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
	int rc = parse(argc, argv, &o);

	if (rc) {
		free_opts(&o);
		return rc;
	}
	catch_interrupts(on_signal);
	rc = run(&o);
	free_opts(&o);
	return rc;
}
