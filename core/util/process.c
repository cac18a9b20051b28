/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/util/process.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

bool process_gone(pid_t pid)
{
	char path[64], stat[512];
	const char *paren;
	FILE *f;
	size_t n;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	/* The state follows the command name, which may itself hold ')': "pid (comm) S ..." */
	paren = strrchr(stat, ')');
	return paren && paren[1] && (paren[2] == 'Z' || paren[2] == 'X');
}
