/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The agent's pid file, <dir>/agent.<rank>.pid, held with an open file description lock
 * (F_OFD_SETLK: closing another descriptor of the file does not drop it, as
 * it would a POSIX record lock) for the agent's whole life.  The lock, not the file's existence, says
 * whether an agent runs: it dies with its process, so a pid file left by an
 * agent killed with SIGKILL is simply taken over by the next one.
 */
#ifndef RDMATOOL_CORE_CHAN_PIDFILE_H
#define RDMATOOL_CORE_CHAN_PIDFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Locks and writes the pid file; *fd stays open.  -EEXIST (and *holder) if another agent holds it. */
int pidfile_acquire(const char *dir, uint32_t rank, int *fd, pid_t *holder);
/* Removes and closes it. */
void pidfile_release(const char *dir, uint32_t rank, int fd);
/* How many agents run in dir; *first gets the lowest rank among them. */
int pidfile_running(const char *dir, uint32_t *first);
/* The pid of the running agent of rank, or 0 when none runs. */
pid_t pidfile_holder(const char *dir, uint32_t rank);

#endif
