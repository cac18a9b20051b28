/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef RDMATOOL_CORE_UTIL_PROCESS_H
#define RDMATOOL_CORE_UTIL_PROCESS_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Whether pid is gone: no such process, or a zombie nobody has reaped yet
 * (an agent's parent is often init, which may be slow to reap it).
 */
bool process_gone(pid_t pid);

#endif
