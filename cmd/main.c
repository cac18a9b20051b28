/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool: dispatch to a subcommand by argv[1], or by the program's own
 * name when invoked through a link (rdmatool-walk, or walk busybox-style).
 */
#include "cmd/cmd.h"
#include "cmd/help.h"
#include "cmd/version.h"
#include "core/stats/stats.h"

#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <popt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct global_options global_opts;

static void verror(const char *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, cmd ? "rdmatool %s: " : "rdmatool: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int run_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, fmt, ap);
	va_end(ap);
	return EXIT_FAILURES;
}

void notice(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	if (global_opts.quiet)
		return;
	va_start(ap, fmt);
	verror(cmd, fmt, ap);
	va_end(ap);
}

int popt_usage_error(const char *cmd, poptContext pc, int rc, const char **argv)
{
	const char *bad = poptBadOption(pc, 0), *option = "";

	/* For "-s abc" popt names only "abc": find the option that took it in argv. */
	for (int i = 1; argv && argv[i] && bad[0] != '-'; i++)
		if (argv[i] == bad || !strcmp(argv[i], bad)) {
			if (argv[i - 1][0] == '-')
				option = argv[i - 1];
			break;
		}
	return usage_error(cmd, "%s%s%s: %s; see 'rdmatool %s --help'", option, *option ? " " : "", bad,
			   poptStrerror(rc), cmd);
}

void catch_interrupts(void (*handler)(int))
{
	struct sigaction sa = {.sa_handler = handler};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int interrupted_status(const char *cmd, int sig)
{
	notice(cmd, "interrupted: the results above are partial (%s)", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	return 128 + sig;
}

int unknown_device_error(const char *cmd, const char *name)
{
	return usage_error(cmd, "no device '%s'; 'rdmatool devices' lists them", name);
}

bool progress_wanted(void)
{
	return !global_opts.quiet && isatty(STDERR_FILENO);
}

const struct command *find_command(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static void list_commands(FILE *out)
{
	fputs("Commands:\n", out);
	for (const struct command *c = commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
}

static int show_version, show_help;
static struct poptOption global_options[] = {
    {"json", 'j', POPT_ARG_NONE, &global_opts.json, 0, "print one JSON document", NULL},
    {"pretty", 'p', POPT_ARG_NONE, &global_opts.pretty, 0, "indent JSON output", NULL},
    {"verbose", 'v', POPT_ARG_NONE, NULL, 'v', "say more (repeat for more)", NULL},
    {"quiet", 'q', POPT_ARG_NONE, &global_opts.quiet, 0, "no notices or progress on stderr", NULL},
    {"version", 0, POPT_ARG_NONE, &show_version, 0, "print the version and exit", NULL},
    {"help", 'h', POPT_ARG_NONE, &show_help, 0, "print this help and exit", NULL},
    POPT_TABLEEND,
};

static void print_help(FILE *out)
{
	fputs("Usage: rdmatool [OPTION...] <command> [options]\n"
	      "       rdmatool help <command>\n"
	      "Stress, drive and measure RDMA fabrics.\n\n"
	      "Options:\n",
	      out);
	help_print_options(out, global_options);
	fputc('\n', out);
	list_commands(out);
	fputs("\nRun 'rdmatool <command> --help' for the options of a command.\n"
	      "Exit status: 0 success, 1 failures or the work failed, 2 usage error,\n"
	      "130 interrupted (Ctrl-C).  Manual: rdmatool(1).\n",
	      out);
}

/* Levenshtein distance, for "did you mean": names are short. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[32];

	if (la >= 32 || lb >= 32)
		return 32;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* As git: "did you mean 'walk'?" for a command one or two edits away, or one the word begins. */
static int unknown_command(const char *name)
{
	const struct command *best = NULL;
	size_t best_d = 3;

	for (const struct command *c = commands; c->name; c++) {
		size_t d = edit_distance(name, c->name);

		if (*name && !strncmp(c->name, name, strlen(name)))
			d = 1;
		if (d < best_d) {
			best_d = d;
			best = c;
		}
	}
	if (best)
		return usage_error(NULL,
				   "unknown command '%s'; did you mean '%s'? 'rdmatool --help' lists them",
				   name, best->name);
	usage_error(NULL, "unknown command '%s'; 'rdmatool --help' lists them", name);
	list_commands(stderr);
	return EXIT_USAGE;
}

/*
 * Global options also work after the command, so the rdmatool-<cmd> links
 * can print JSON: they are taken out of the command's arguments here, up to
 * "--".  Long forms always; -p and -v only where the command does not use
 * them itself (madstress: workers, decode), where `rdmatool -p madstress`
 * still means pretty.  Returns the new argc.
 */
static int take_global_options(const struct command *c, int argc, const char **argv)
{
	int out = 1, i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		const char *a = argv[i];

		if ((c->flags & CMD_ARGS_END_OPTIONS) && a[0] != '-')
			break; /* exec: from the program's name on, every word is the program's */
		if (!strcmp(a, "--json") || !strcmp(a, "-j"))
			global_opts.json = 1;
		else if (!strcmp(a, "--pretty") || (!strcmp(a, "-p") && !(c->flags & CMD_OWNS_SHORT_P)))
			global_opts.pretty = global_opts.json = 1;
		else if (!strcmp(a, "--verbose") || (!strcmp(a, "-v") && !(c->flags & CMD_OWNS_SHORT_V)))
			global_opts.verbose++;
		else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
			global_opts.quiet = 1;
		else
			argv[out++] = a;
	}
	while (i < argc)
		argv[out++] = argv[i++];
	argv[out] = NULL;
	return out;
}

static bool stdout_reader_gone(void)
{
	struct pollfd p = {.fd = STDOUT_FILENO, .events = 0};

	/* A pipe whose reading end is closed polls POLLERR for its writer; a socket, POLLHUP. */
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

bool stdout_closed(void)
{
	/* Asked of the pipe itself, not of a failed write: a sample that printed nothing still notices. */
	return stdout_reader_gone();
}

/*
 * A full disk must not pass for success: as git's run_builtin() does, flush
 * and close stdout once after the command, and fail with a message if
 * anything it printed was lost.  A reader that went away (`| head`) is a
 * normal end, as for git and iproute2: the command's own status, no message.
 */
int finish_stdout(int status)
{
	int err = 0;
	bool failed, gone;

	errno = 0;
	failed = fflush(stdout) != 0 || ferror(stdout);
	err = errno;
	gone = err == EPIPE || (failed && stdout_reader_gone());
	if (fclose(stdout) && !failed) {
		failed = true;
		err = errno;
		gone = err == EPIPE;
	}
	if (!failed || gone || status != EXIT_OK)
		return status;
	/* A line-buffered stream may have failed long before: then errno no longer says why. */
	return err ? run_error(NULL, "cannot write to standard output: %s", strerror(err))
		   : run_error(NULL, "cannot write to standard output; the output is incomplete");
}

static int run_command(const struct command *c, int argc, const char **argv)
{
	char name[64], msg[256];

	/* The command sees argv[0] = "rdmatool <cmd>", as popt prints it in usage lines. */
	snprintf(name, sizeof(name), "rdmatool %s", c->name);
	argv[0] = name;
	current_command = c;
	argc = take_global_options(c, argc, argv);
	/*
	 * A closed pipe is an error of write() (EPIPE), which finish_stdout and the
	 * commands that print for long (cqstat, bench sweeps) take for a normal
	 * end, with their stats segments removed; not a SIGPIPE that kills before
	 * they clean up.  exec keeps the default: the program it runs inherits it.
	 */
	if (!(c->flags & CMD_ARGS_END_OPTIONS))
		signal(SIGPIPE, SIG_IGN);
	if (stats_env_check(msg, sizeof(msg)))
		return run_error(c->name, "%s", msg);
	return c->run(argc, argv);
}

/* "rdmatool-walk" or "walk" -> the walk command; NULL for "rdmatool". */
const struct command *command_from_program_name(const char *argv0)
{
	char buf[256];
	const char *base;

	snprintf(buf, sizeof(buf), "%s", argv0);
	base = basename(buf);
	if (strncmp(base, "rdmatool-", 9) == 0)
		base += 9;
	return find_command(base);
}

static int dispatch(int argc, const char **argv)
{
	const struct command *c = command_from_program_name(argv[0]);
	poptContext pc;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The shell completions' helper: before the program's name picks a command (links complete too). */
	if (argc > 1 && !strcmp(argv[1], "__complete"))
		return complete_main(argc - 2, argv + 2, global_options);
	if (c)
		return run_command(c, argc, argv);

	pc = poptGetContext("rdmatool", argc, argv, global_options, POPT_CONTEXT_POSIXMEHARDER);
	while ((rc = poptGetNextOpt(pc)) > 0)
		if (rc == 'v')
			global_opts.verbose++;
	if (rc < -1) {
		fprintf(stderr, "rdmatool: %s: %s\n", poptBadOption(pc, 0), poptStrerror(rc));
		list_commands(stderr);
		poptFreeContext(pc);
		return EXIT_USAGE;
	}
	if (global_opts.pretty)
		global_opts.json = true;

	int rest_argc = 0;
	const char **rest = poptGetArgs(pc);

	while (rest && rest[rest_argc])
		rest_argc++;

	if (show_version) {
		printf("rdmatool %s\n", RDMATOOL_VERSION);
		poptFreeContext(pc);
		return EXIT_OK;
	}
	if (show_help || rest_argc == 0) {
		print_help(show_help ? stdout : stderr);
		poptFreeContext(pc);
		return show_help ? EXIT_OK : EXIT_USAGE;
	}

	/* popt owns rest[]; give the command its own NULL-terminated copy. */
	const char **args = calloc((size_t)rest_argc + 2, sizeof(*args));
	int status;

	if (!args) {
		poptFreeContext(pc);
		return run_error(NULL, "out of memory");
	}
	if (strcmp(rest[0], "help") == 0) {
		if (rest_argc < 2) {
			print_help(stdout);
			status = EXIT_OK;
			goto out;
		}
		c = find_command(rest[1]);
		if (!c) {
			status = unknown_command(rest[1]);
			goto out;
		}
		args[0] = c->name;
		args[1] = "--help";
		status = run_command(c, 2, args);
		goto out;
	}
	c = find_command(rest[0]);
	if (!c) {
		status = unknown_command(rest[0]);
		goto out;
	}
	for (int i = 0; i < rest_argc; i++)
		args[i] = rest[i];
	status = run_command(c, rest_argc, args);
out:
	free(args);
	poptFreeContext(pc);
	return status;
}

int main(int argc, const char **argv)
{
	return finish_stdout(dispatch(argc, argv));
}
