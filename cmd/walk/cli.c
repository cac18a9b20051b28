/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool walk: options, the header, the run, the report, the exit status. */
#include "cmd/walk/run.h"

#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <popt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const CMD = "walk";

#define STR_(x) #x
#define STR(x)	STR_(x)

static bool parse_bool(const char *s, bool *out)
{
	bool yes = !strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes");

	if (!yes && strcmp(s, "false") && strcmp(s, "0") && strcmp(s, "no"))
		return false;
	*out = yes;
	return true;
}

/* A whole decimal number in [lo, hi]: no sign, no blank, nothing after it (popt's own ints take ' 5'). */
static bool parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return false;
	*out = strtoull(s, &end, 0);
	return !errno && !*end;
}

/* Opens the device once to name it and learn whether it has type-2 MWs. */
static int probe_device(struct walk_config *cfg, char *name, size_t len, bool *type2)
{
	struct hw_device chosen;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	union ibv_gid gid;
	struct ibv_context *ctx = hw_open_device(cfg->device, &chosen);

	if (!ctx) {
		if (cfg->device && errno == ENODEV)
			return unknown_device_error(CMD, cfg->device);
		if (*hw_open_error())
			return run_error(CMD, "%s", hw_open_error());
		return run_error(CMD, "cannot open %s: %s; check 'rdmatool devices'",
				 cfg->device ? cfg->device : "a device", strerror(errno));
	}
	snprintf(name, len, "%s", chosen.name);
	if (hw_query_device(ctx, &attr) || hw_query_port(ctx, (uint8_t)cfg->port, &port)) {
		hw_close_device(ctx);
		return usage_error(CMD, "--ib-port %d: %s has no such port (it has %d)", cfg->port, name,
				   attr.phys_port_cnt);
	}
	if (hw_query_gid(ctx, (uint8_t)cfg->port, cfg->gid_index, &gid)) {
		hw_close_device(ctx);
		return usage_error(CMD, "--gid-index %d: port %d of %s has no such GID", cfg->gid_index,
				   cfg->port, name);
	}
	*type2 = attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	hw_close_device(ctx);
	return 0;
}

/* The integer options, read as text so that each is checked whole (strict_ints). */
struct int_args {
	char *clients, *duration, *port, *gid_index, *history, *heartbeat;
};

/* Each given integer option parsed strictly and in range; 0, or a usage error naming it. */
static int strict_ints(const struct int_args *a, struct walk_config *cfg)
{
	const struct {
		const char *name, *text, *range;
		int lo, hi, *out;
	} ints[] = {
	    {"--clients", a->clients, "give 1 to " STR(WALK_MAX_CLIENTS), 1, WALK_MAX_CLIENTS, &cfg->clients},
	    {"--duration", a->duration, "give 1 to 86400 seconds", 1, 86400, &cfg->duration_s},
	    {"--ib-port", a->port, "give a port number from 1 to 255", 1, 255, &cfg->port},
	    {"--gid-index", a->gid_index, "give 0 to 255", 0, 255, &cfg->gid_index},
	    {"--history", a->history, "give 0 to 1000000 entries", 0, 1000000, &cfg->history},
	    {"--heartbeat", a->heartbeat, "give 1 to 3600 seconds", 1, 3600, &cfg->heartbeat_s},
	};

	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (ints[i].text && !parse_int(ints[i].text, ints[i].lo, ints[i].hi, ints[i].out))
			return usage_error(CMD, "%s '%s': %s", ints[i].name, ints[i].text, ints[i].range);
	return 0;
}

static int parse(int argc, const char **argv, struct walk_config *cfg)
{
	char *multinode = NULL, *steps = NULL, *seed = NULL, *preset = NULL, *weight = NULL;
	char *device = NULL, *history_file = NULL;
	struct int_args ia = {0};
	int verify = 0, outstanding = 0, rc;
	char *weights[64];
	int nweights = 0;
	/* perftest's letters for the device, port, GID index and duration (-d, -i, -x, -D). */
	struct poptOption options[] = {
	    {"clients", 'c', POPT_ARG_STRING, &ia.clients, 0, "number of clients (default 2)", "N"},
	    {"duration", 'D', POPT_ARG_STRING, &ia.duration, 0, "seconds each client walks (default 20)",
	     "S"},
	    {"multinode", 'm', POPT_ARG_STRING, &multinode, 0,
	     "true: each client is its own process, updates over TCP (default false)", "BOOL"},
	    {"ib-dev", 'd', POPT_ARG_STRING, &device, 0, "device (default: first active, else soft0)",
	     "NAME"},
	    {"device", 0, POPT_ARG_STRING, &device, 0, "the same as --ib-dev", "NAME"},
	    {"ib-port", 'i', POPT_ARG_STRING, &ia.port, 0, "port number (default 1)", "N"},
	    {"port", 'P', POPT_ARG_STRING, &ia.port, 0, "the same as --ib-port", "N"},
	    {"gid-index", 'x', POPT_ARG_STRING, &ia.gid_index, 0, "GID index (default 0)", "N"},
	    {"steps", 'n', POPT_ARG_STRING, &steps, 0, "steps per client instead of --duration", "N"},
	    {"seed", 's', POPT_ARG_STRING, &seed, 0, "random seed (printed when not given)", "N"},
	    {"weight", 'w', POPT_ARG_STRING, &weight, 'w', "set an action's weight (repeatable)", "ACTION=W"},
	    {"preset", 0, POPT_ARG_STRING, &preset, 0, "weights: default, control or rdma",
	     "default|control|rdma"},
	    {"history", 'H', POPT_ARG_STRING, &ia.history, 0,
	     "actions kept per client for triage (default 200)", "N"},
	    {"history-file", 0, POPT_ARG_STRING, &history_file, 0, "also write the history to FILE", "FILE"},
	    {"heartbeat", 0, POPT_ARG_STRING, &ia.heartbeat, 0,
	     "multinode: a client or the hub silent this many seconds is reported and stopped (default 10)",
	     "S"},
	    {"verify", 'V', POPT_ARG_NONE, &verify, 0,
	     "judge every completion and verb return against a model of the device (see the man page)", NULL},
	    {"allow-outstanding-ops", 0, POPT_ARG_NONE, &outstanding, 0,
	     "allow modify-to-ERR and destroy of QPs with WRs in flight", NULL},
	    CMD_HELP(options),
	    POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(argv[0], argc, argv, options, 0);

	poptSetOtherOptionHelp(pc, "[OPTION...]");
	while ((rc = poptGetNextOpt(pc)) > 0)
		if (rc == 'w' && nweights < 64)
			weights[nweights++] = weight;
		else if (rc == 'w')
			free(weight);
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
		goto out;
	}
	rc = 0;
	if (poptPeekArg(pc)) {
		rc = usage_error(CMD, "unexpected argument '%s'; walk takes options only", poptPeekArg(pc));
		goto out;
	}
	if ((rc = strict_ints(&ia, cfg)))
		goto out;
	if (multinode && !parse_bool(multinode, &cfg->multinode))
		rc = usage_error(CMD, "--multinode '%s': give true or false", multinode);
	else if (steps && (!parse_u64(steps, &cfg->steps) || cfg->steps == 0))
		rc = usage_error(CMD, "--steps '%s': give a positive number of steps", steps);
	else if (seed && !parse_u64(seed, &cfg->seed))
		rc = usage_error(CMD, "--seed '%s': give a non-negative integer", seed);
	else if (walk_preset(preset ? preset : "default", cfg->weight))
		rc = usage_error(CMD, "--preset '%s': give default, control or rdma", preset);
	for (int i = 0; !rc && i < nweights; i++) {
		char why[200];

		if (walk_apply_weight(weights[i], cfg->weight, why, sizeof(why)))
			rc = usage_error(CMD, "%s", why);
	}
	if (!rc) {
		uint64_t sum = 0;

		for (int a = 0; a < ACT_COUNT; a++)
			sum += cfg->weight[a];
		if (!sum)
			rc = usage_error(
			    CMD, "every action weight is 0; give at least one --weight ACTION=W above 0");
	}
	cfg->seed_given = seed != NULL;
	cfg->verify = verify;
	cfg->allow_outstanding_ops = outstanding;
	cfg->device = device ? strdup(device) : NULL;
	cfg->history_file = history_file ? strdup(history_file) : NULL;
out:
	for (int i = 0; i < nweights; i++)
		free(weights[i]);
	char *strs[] = {multinode,  steps,	 seed,	  preset,	device,	    history_file,
			ia.clients, ia.duration, ia.port, ia.gid_index, ia.history, ia.heartbeat};

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		free(strs[i]);
	poptFreeContext(pc);
	return rc;
}

int cmd_walk(int argc, const char **argv)
{
	struct walk_config cfg = {
	    .clients = 2, .duration_s = 20, .port = 1, .history = 200, .heartbeat_s = 10};
	struct walk_result res = {0};
	char device[64];
	bool type2 = true;
	int rc = parse(argc, argv, &cfg);

	if (rc)
		goto out;
	if (!cfg.seed_given) {
		cfg.seed = rng_entropy_seed();
		if (global_opts.json || global_opts.quiet)
			fprintf(stderr, "rdmatool walk: seed %llu\n", (unsigned long long)cfg.seed);
	}
	if ((rc = probe_device(&cfg, device, sizeof(device), &type2)))
		goto out;
	if (!type2 && walk_drop_type2(cfg.weight))
		notice(CMD,
		       "%s has no type-2 memory windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B): their weights drop "
		       "to 0",
		       device);
	/* Made empty now: an unwritable path is a usage error before the run, not a silent loss. */
	if (cfg.history_file) {
		int fd = open(cfg.history_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0) {
			rc = usage_error(CMD,
					 "--history-file %s: %s; give a path in a directory you can write",
					 cfg.history_file, strerror(errno));
			goto out;
		}
		close(fd);
	}
	walk_print_header(&cfg, device, !type2);
	res.clients = cfg.clients;
	res.per_client = calloc((size_t)cfg.clients, sizeof(*res.per_client));
	if (!res.per_client) {
		rc = run_error(CMD, "out of memory");
		goto out;
	}
	/* A fixed mmap threshold: glibc's sliding one let the device's large, short-lived buffers fragment
	 * every client thread's heap arena (RSS crept by ~1.5 MiB/s with 16 clients). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	atomic_store(&walk_stop, false);
	atomic_store(&walk_stop_signal, 0);
	walk_install_signals();
	rc = cfg.multinode ? walk_run_multinode(&cfg, &res, CMD) : walk_run_inproc(&cfg, &res, CMD);
	if (!rc) {
		walk_check_classes(&cfg, &res.total);
		walk_print_report(&cfg, &res);
		rc = res.total.nfailures ? EXIT_FAILURES : EXIT_OK;
		if (atomic_load(&walk_stop_signal))
			notice(CMD, "stopped by signal %d after %llu steps", atomic_load(&walk_stop_signal),
			       (unsigned long long)res.total.steps);
		if (atomic_load(&walk_stop_signal))
			rc = interrupted_status(CMD, atomic_load(&walk_stop_signal));
	}
	free(res.per_client);
out:
	free((char *)cfg.device);
	free((char *)cfg.history_file);
	return rc;
}
