/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the stats writer (stats.c) and reader (stats_reader.c) both need:
 * the segment directory, a pid's segment path and a process's start time.
 * Both sit above this file, so neither calls the other.
 */
#ifndef RDMATOOL_CORE_STATS_PATH_H
#define RDMATOOL_CORE_STATS_PATH_H

#include "core/stats/stats.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where segments live: $RDMATOOL_STATS_DIR, else /dev/shm. */
const char *stats_segment_dir(void);
/* Writes the segment path for pid into buf.  0, or -ENAMETOOLONG. */
int stats_pid_path(pid_t pid, char *buf, size_t len);
/* Field 22 of /proc/<pid>/stat (clock ticks after boot).  0, or a negative errno. */
int stats_proc_starttime(pid_t pid, uint64_t *starttime);

#endif
