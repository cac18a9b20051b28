/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Where segments live and which process a pid names: shared by the writer and the reader. */
#include "core/stats/stats_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *stats_segment_dir(void)
{
	const char *dir = getenv(STATS_ENV_DIR);

	return dir && *dir ? dir : STATS_DEFAULT_DIR;
}

int stats_pid_path(pid_t pid, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s%d", stats_segment_dir(), STATS_FILE_PREFIX, (int)pid);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int stats_proc_starttime(pid_t pid, uint64_t *starttime)
{
	char path[64], buf[1024];
	unsigned long long v;
	const char *p;
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	got = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[got] = '\0';
	/* comm (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	/* After ')' come field 3 (state) ... field 22 (starttime): skip 19 fields. */
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	if (sscanf(p, " %llu", &v) != 1)
		return -EINVAL;
	*starttime = v;
	return 0;
}
