/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool conform: options, the cases selected, the run, the exit status. */
#include "cmd/cmd.h"
#include "cmd/conform/report.h"

#include <errno.h>
#include <fnmatch.h>
#include <popt.h>
#include <stdlib.h>
#include <string.h>

static const char *const CMD = "conform";

#define DEFAULT_ROUNDS 12 /* at least as many as a script has named variants (11) */

struct cf_opts {
	char *device, *cases, *seed, *format;
	int port, gid_index, rounds, list;
};

static bool parse_seed(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-' || *s == ' ' || *s == '+')
		return false;
	*out = strtoull(s, &end, 0);
	return !errno && !*end;
}

/* Does name match one of the comma-separated globs in list (NULL: all)? */
static bool selected(const char *name, const char *list)
{
	char glob[128];

	if (!list)
		return true;
	for (const char *at = list; *at;) {
		size_t n = strcspn(at, ",");

		if (n < sizeof(glob)) {
			memcpy(glob, at, n);
			glob[n] = '\0';
			if (!fnmatch(glob, name, 0))
				return true;
		}
		at += n + (at[n] == ',');
	}
	return false;
}

static int parse(int argc, const char **argv, struct cf_opts *o)
{
	struct poptOption options[] = {
	    {"list", 'l', POPT_ARG_NONE, &o->list, 0,
	     "list the cases (with --case: those it selects) and exit", NULL},
	    {"case", 'C', POPT_ARG_STRING, &o->cases, 0,
	     "run only the cases whose name matches GLOB (comma-separated globs: any of them)", "GLOB"},
	    {"ib-dev", 'd', POPT_ARG_STRING, &o->device, 0, "device (default: first active, else soft0)",
	     "NAME"},
	    {"device", 'D', POPT_ARG_STRING, &o->device, 0, "the same as --ib-dev", "NAME"},
	    {"ib-port", 'i', POPT_ARG_INT, &o->port, 0, "port number (default 1)", "N"},
	    {"port", 'P', POPT_ARG_INT, &o->port, 0, "the same as --ib-port", "N"},
	    {"gid-index", 'x', POPT_ARG_INT, &o->gid_index, 0, "GID index (default 0)", "N"},
	    {"seed", 's', POPT_ARG_STRING, &o->seed, 0, "random seed of the cases' details (default 1)", "N"},
	    {"rounds", 'r', POPT_ARG_INT, &o->rounds, 0,
	     "rounds of each case, each on fresh objects (default 12: every variant)", "N"},
	    {"format", 'f', POPT_ARG_STRING, &o->format, 0, "text, tap or junit (-j: JSON)", "text|tap|junit"},
	    CMD_HELP(options), POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(argv[0], argc, argv, options, 0);
	int rc;

	poptSetOtherOptionHelp(pc, "[OPTION...]");
	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1)
		rc = popt_usage_error(CMD, pc, rc, argv);
	else if (poptPeekArg(pc))
		rc = usage_error(CMD, "unexpected argument '%s'; give cases with --case GLOB",
				 poptPeekArg(pc));
	else
		rc = 0;
	poptFreeContext(pc);
	return rc;
}

static int check(const struct cf_opts *o, struct cf_run *run)
{
	if (o->port < 1 || o->port > 255)
		return usage_error(CMD, "--ib-port %d: give a port number from 1 to 255", o->port);
	if (o->gid_index < 0 || o->gid_index > 255)
		return usage_error(CMD, "--gid-index %d: give 0 to 255", o->gid_index);
	if (o->rounds < 1 || o->rounds > 10000)
		return usage_error(CMD, "--rounds %d: give 1 to 10000", o->rounds);
	if (o->seed && !parse_seed(o->seed, &run->seed))
		return usage_error(CMD, "--seed '%s': give a non-negative integer", o->seed);
	if (!o->format || !strcmp(o->format, "text"))
		run->format = global_opts.json ? CF_JSON : CF_TEXT;
	else if (!strcmp(o->format, "tap"))
		run->format = CF_TAP;
	else if (!strcmp(o->format, "junit"))
		run->format = CF_JUNIT;
	else
		return usage_error(CMD, "--format '%s': give text, tap or junit (-j for JSON)", o->format);
	if (global_opts.json && run->format != CF_JSON)
		return usage_error(CMD, "-j and --format=%s: choose one output", o->format);
	return 0;
}

static int select_cases(const struct cf_opts *o, struct cf_run *run)
{
	run->cases = calloc((size_t)cf_ncases, sizeof(*run->cases));
	run->results = calloc((size_t)cf_ncases, sizeof(*run->results));
	if (!run->cases || !run->results)
		return run_error(CMD, "out of memory");
	for (int i = 0; i < cf_ncases; i++)
		if (selected(cf_cases[i].name, o->cases))
			run->cases[run->n++] = &cf_cases[i];
	if (!run->n)
		return usage_error(CMD, "--case '%s' matches no case; 'rdmatool conform --list' lists them",
				   o->cases);
	return 0;
}

static int run_cases(struct cf_run *run, struct cf_dev *dev)
{
	cf_report_begin(run);
	for (int i = 0; i < run->n; i++) {
		cf_run_case(dev, run->cases[i], run->seed, run->rounds, &run->results[i]);
		switch (run->results[i].verdict) {
		case CF_PASS:
			run->passed++;
			break;
		case CF_FAIL:
			run->failed++;
			break;
		case CF_SKIP:
			run->skipped++;
			break;
		}
		cf_report_case(run, i);
	}
	cf_report_end(run);
	if (fflush(stdout) || ferror(stdout))
		return run_error(CMD, "cannot write the results to standard output: %s", strerror(errno));
	return run->failed ? EXIT_FAILURES : EXIT_OK;
}

int cmd_conform(int argc, const char **argv)
{
	struct cf_opts o = {.port = 1, .rounds = DEFAULT_ROUNDS};
	struct cf_run run = {.seed = 1};
	struct cf_dev dev;
	char why[300];
	int rc = parse(argc, argv, &o);

	if (!rc)
		rc = check(&o, &run);
	if (!rc)
		rc = select_cases(&o, &run);
	run.rounds = (unsigned)o.rounds;
	if (!rc && o.list)
		cf_report_list(&run);
	else if (!rc && (rc = cf_dev_open(&dev, o.device, o.port, o.gid_index, why, sizeof(why))))
		rc = rc == 2 ? usage_error(CMD, "%s", why) : run_error(CMD, "%s", why);
	else if (!rc) {
		run.dev = &dev;
		rc = run_cases(&run, &dev);
		cf_dev_close(&dev);
	}
	free(run.cases);
	free(run.results);
	free(o.device);
	free(o.cases);
	free(o.seed);
	free(o.format);
	return rc;
}
