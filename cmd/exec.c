/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmatool exec: runs an unmodified verbs program (ibv_devinfo, perftest,
 * pyverbs ...) with librdmatool-verbs.so preloaded, so libibverbs' device
 * list holds the soft device next to any real one (hw/preload).
 */
#include "cmd/cmd.h"
#include "cmd/exec_library.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD	      "exec"
#define VERBS_LIBRARY "librdmatool-verbs.so"

#ifndef RDMATOOL_PKGLIBDIR
#define RDMATOOL_PKGLIBDIR "/usr/local/lib/rdmatool"
#endif

/* IP or IP:PORT, IPv4, port 0..65535: what RDMATOOL_SOFT_ADDR takes. */
static bool soft_addr_valid(const char *spec)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strchr(spec, ':');
	size_t host_len = colon ? (size_t)(colon - spec) : strlen(spec);
	struct in_addr ip;

	if (host_len == 0 || host_len >= sizeof(host))
		return false;
	memcpy(host, spec, host_len);
	host[host_len] = '\0';
	if (inet_pton(AF_INET, host, &ip) != 1)
		return false;
	if (colon) {
		char *end;
		unsigned long port;

		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || port > 65535 || colon[1] == '-' || colon[1] == '+')
			return false;
	}
	return true;
}

static bool readable_file(const char *path)
{
	return access(path, R_OK) == 0;
}

/*
 * The library next to the binary (a build tree: build/rdmatool and
 * build/librdmatool-verbs.so), else in ../lib/rdmatool from it (an
 * installed tree, wherever it was moved), else where make install put it.
 */
static const char *find_verbs_library(char *buf, size_t len)
{
	static const char *const beside_binary[] = {"", "/../lib/rdmatool"};
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash = NULL;

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
	}
	if (slash) {
		*slash = '\0';
		for (size_t i = 0; i < sizeof(beside_binary) / sizeof(beside_binary[0]); i++)
			if ((size_t)snprintf(buf, len, "%s%s/%s", exe, beside_binary[i], VERBS_LIBRARY) <
				len &&
			    readable_file(buf))
				return buf;
	}
	snprintf(buf, len, "%s/%s", RDMATOOL_PKGLIBDIR, VERBS_LIBRARY);
	return readable_file(buf) ? buf : NULL;
}

static bool is_sanitizer_runtime(const char *entry, size_t len)
{
	static const char *const runtimes[] = {"libasan", "libtsan", "libubsan", "liblsan"};

	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		if (memmem(entry, len, runtimes[i], strlen(runtimes[i])))
			return true;
	return false;
}

/*
 * LD_PRELOAD with the library in front, behind any sanitizer runtime
 * already there (a sanitizer insists on coming first).  Entries are
 * separated by spaces or colons, as ld.so reads them.
 */
static char *preload_with(const char *library, const char *current)
{
	size_t cur_len = current ? strlen(current) : 0;
	size_t lib_len = strlen(library);
	char *out = malloc(cur_len + lib_len + 2);
	size_t head = 0, pos = 0;

	if (!out)
		return NULL;
	/* The leading sanitizer runtimes stay first. */
	while (current && head < cur_len) {
		size_t start = head + strspn(current + head, " :");
		size_t end = start + strcspn(current + start, " :");

		if (end == start || !is_sanitizer_runtime(current + start, end - start))
			break;
		head = end;
	}
	if (head)
		memcpy(out, current, head);
	pos = head;
	if (pos)
		out[pos++] = ':';
	memcpy(out + pos, library, lib_len);
	pos += lib_len;
	if (cur_len > head) {
		size_t rest = strspn(current + head, " :");

		if (head + rest < cur_len) {
			out[pos++] = ':';
			memcpy(out + pos, current + head + rest, cur_len - head - rest);
			pos += cur_len - head - rest;
		}
	}
	out[pos] = '\0';
	return out;
}

int cmd_exec(int argc, const char **argv)
{
	char *addr = NULL, *library = NULL, *preload;
	char found[PATH_MAX], safe[PATH_MAX];
	const char *lib, *why;
	const char **args;
	int rc;
	struct poptOption options[] = {
	    {"addr", 'a', POPT_ARG_STRING, &addr, 0,
	     "the soft device's wire address: IP or IP:PORT (default 127.0.0.1, any free port)", "IP[:PORT]"},
	    {"library", 'L', POPT_ARG_STRING, &library, 0,
	     "the preload library (default: next to rdmatool, else " RDMATOOL_PKGLIBDIR ")", "PATH"},
	    CMD_HELP(options), POPT_TABLEEND,
	};
	/* Options end at the program's name: its own options are its own. */
	poptContext pc = poptGetContext(argv[0], argc, argv, options, POPT_CONTEXT_POSIXMEHARDER);

	poptSetOtherOptionHelp(pc, "[OPTION...] [--] PROGRAM [ARGUMENT...]");
	rc = poptGetNextOpt(pc);
	if (rc < -1) {
		rc = popt_usage_error(CMD, pc, rc, argv);
		goto out;
	}
	args = poptGetArgs(pc);
	if (!args || !args[0]) {
		rc = usage_error(CMD, "no program given; use e.g. 'rdmatool exec -- ibv_devinfo -v'");
		goto out;
	}
	if (addr && !soft_addr_valid(addr)) {
		rc = usage_error(
		    CMD,
		    "--addr=%s is not IP or IP:PORT; use an IPv4 address, e.g. 127.0.0.2 or 127.0.0.2:7000",
		    addr);
		goto out;
	}
	lib = library ? library : find_verbs_library(found, sizeof(found));
	if (!lib || !readable_file(lib)) {
		rc = run_error(CMD, "cannot find %s%s%s; build it with 'make', or name it with --library",
			       VERBS_LIBRARY, library ? " at " : "", library ? library : "");
		goto out;
	}
	if (lib[0] != '/') {
		rc = usage_error(
		    CMD, "--library=%s must be an absolute path (the program may change directory)", lib);
		goto out;
	}
	/* Before anything runs: a program preloaded with something else would run without soft0. */
	why = exec_library_check(lib);
	if (why) {
		rc = library ? usage_error(CMD, "--library=%s is %s; give the path of %s", lib, why,
					   VERBS_LIBRARY)
			     : run_error(CMD, "%s is %s; rebuild it with 'make', or name it with --library",
					 lib, why);
		goto out;
	}
	lib = exec_library_safe_path(lib, safe, sizeof(safe), &why);
	if (!lib) {
		rc = run_error(CMD, "%s has a space or ':', which ld.so splits LD_PRELOAD at, and %s",
			       library ? library : found, why);
		goto out;
	}
	preload = preload_with(lib, getenv("LD_PRELOAD"));
	if (!preload || setenv("LD_PRELOAD", preload, 1) || (addr && setenv("RDMATOOL_SOFT_ADDR", addr, 1))) {
		free(preload);
		rc = run_error(CMD, "cannot set up the environment: %s", strerror(errno));
		goto out;
	}
	free(preload);
	fflush(stdout);
	execvp(args[0], (char *const *)args);
	/* As env(1) and the shells: 127 for a program not found, 126 for one that cannot run. */
	rc = errno == ENOENT ? 127 : 126;
	fprintf(stderr, "rdmatool %s: %s: %s\n", CMD, args[0], strerror(errno));
out:
	poptFreeContext(pc);
	free(addr);
	free(library);
	return rc;
}
