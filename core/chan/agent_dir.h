/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The agent directory: where a node's channels, gateways, pid files and logs
 * live.  $RDMATOOL_AGENT_DIR, else /dev/shm/rdmatool-agent-<uid>.  It must be
 * a real directory (not a symlink) owned by this user with no group or other
 * access: that is what keeps other local users out of the channels.
 */
#ifndef RDMATOOL_CORE_AGENT_DIR_H
#define RDMATOOL_CORE_AGENT_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define AGENT_DIR_ENV "RDMATOOL_AGENT_DIR"

/*
 * Fills path with the directory; with create, makes it (mode 0700) when it
 * is missing.  Checks ownership and mode either way.  Returns 0 or a negative
 * errno with why filled (for the caller to print): -EINVAL for a bad
 * variable, -ENOENT when it does not exist and create is false, -EPERM when
 * it is a symlink, not ours, or open to others.
 */
int agent_dir_resolve(char *path, size_t len, bool create, char *why, size_t whylen);

/*
 * Opens a shared file of the directory (a channel, gateway or steal board)
 * read-write, and *st with it: it must be a regular file, not a symlink,
 * owned by this user with no group or other access.  Returns the fd, or a
 * negative errno: -EPERM when the file fails those checks.
 */
int agent_dir_open_own(const char *path, struct stat *st);

/*
 * Reserves the bytes [off, off + len) of a shared file being made (and grows
 * it to at least off + len): a file system that is full fails here with
 * -ENOSPC, not later with SIGBUS in whoever writes the mapping (any user can
 * fill /dev/shm).  0 or a negative errno.
 */
int agent_dir_reserve(int fd, uint64_t off, uint64_t len);

#endif
