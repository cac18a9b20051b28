/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool exec's preload library: is it ours (issue 44 N11, N12), and a path ld.so will not split. */
#ifndef RDMATOOL_CMD_EXEC_LIBRARY_H
#define RDMATOOL_CMD_EXEC_LIBRARY_H

#include <stddef.h>

/*
 * NULL when path is rdmatool's preload library: a regular file (opened
 * without blocking, so a FIFO never hangs), an ELF shared object of this
 * machine's class that carries the note of hw/preload/note.h.  Otherwise
 * what it is instead ("a directory", "not an ELF file" ...).
 */
const char *exec_library_check(const char *path);

/*
 * ld.so splits LD_PRELOAD at spaces and colons: a path with either is
 * given as a symlink to it in a private directory (/tmp/rdmatool-exec.UID,
 * mode 0700, owned by the caller).  Returns the path to preload (path
 * itself when it is safe, else out), or NULL with *why set.
 */
const char *exec_library_safe_path(const char *path, char *out, size_t len, const char **why);

#endif
