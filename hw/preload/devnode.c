/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The soft device's node in /dev/infiniband, as a verbs consumer checks it.
 * UCX uses a verbs device only if stat("/dev/infiniband/<dev_name>") finds a
 * character device and access() grants read and write; soft0 has no kernel
 * node, and making one takes root (mknod).  This library answers for its own
 * device instead: stat() and access() of exactly that path, when the file
 * system has nothing there, report a character device the caller may read
 * and write.  Every other path goes on to the file system untouched.
 *
 * They are defined in glibc's version nodes (libibverbs.map) so a program's
 * versioned references (stat@GLIBC_2.33, access@GLIBC_2.2.5) bind here; the
 * file system is asked with fstatat()/faccessat(), which mean the same.
 */
#include "hw/preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PRELOAD_DEVNODE_DIR "/dev/infiniband/"
#define UVERBS_MAJOR	    231 /* the kernel's uverbs character devices */

static bool preload_is_soft_node(const char *path)
{
	const struct ibv_device *dev = preload_soft_device();

	return path && dev && !strncmp(path, PRELOAD_DEVNODE_DIR, sizeof(PRELOAD_DEVNODE_DIR) - 1) &&
	       !strcmp(path + sizeof(PRELOAD_DEVNODE_DIR) - 1, dev->dev_name);
}

PRELOAD_EXPORT int stat(const char *restrict path, struct stat *restrict st)
{
	int ret = fstatat(AT_FDCWD, path, st, 0);

	if (ret && errno == ENOENT && preload_is_soft_node(path)) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(UVERBS_MAJOR, 255);
		st->st_nlink = 1;
		st->st_uid = getuid();
		st->st_gid = getgid();
		st->st_blksize = 4096;
		return 0;
	}
	return ret;
}

PRELOAD_EXPORT int access(const char *path, int mode)
{
	int ret = faccessat(AT_FDCWD, path, mode, 0);

	if (ret && errno == ENOENT && preload_is_soft_node(path)) {
		if (mode & X_OK) {
			errno = EACCES;
			return -1;
		}
		return 0;
	}
	return ret;
}
