/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/chan/agent_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int agent_dir_resolve(char *path, size_t len, bool create, char *why, size_t whylen)
{
	const char *env = getenv(AGENT_DIR_ENV);
	struct stat st;

	if (env && (env[0] != '/' || strlen(env) >= len - 80)) {
		snprintf(why, whylen, "%s='%s' must be an absolute path shorter than %zu characters",
			 AGENT_DIR_ENV, env, len - 80);
		return -EINVAL;
	}
	if (env)
		snprintf(path, len, "%s", env);
	else
		snprintf(path, len, "/dev/shm/rdmatool-agent-%u", (unsigned)geteuid());
	if (create && mkdir(path, 0700) && errno != EEXIST) {
		int rc = -errno;

		snprintf(why, whylen, "cannot create the agent directory %s: %s", path, strerror(errno));
		return rc;
	}
	if (lstat(path, &st)) {
		int rc = -errno;

		snprintf(
		    why, whylen,
		    "no agent directory %s (%s): is an agent running? start one with 'rdmatool agent start'",
		    path, strerror(errno));
		return rc;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(
		    why, whylen,
		    "%s must be a directory owned by uid %u with mode 0700 (it is %s, uid %u, mode %04o); "
		    "remove it or set %s to a private directory",
		    path, (unsigned)geteuid(),
		    S_ISLNK(st.st_mode)	  ? "a symlink"
		    : S_ISDIR(st.st_mode) ? "a directory"
					  : "not a directory",
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), AGENT_DIR_ENV);
		return -EPERM;
	}
	return 0;
}

int agent_dir_open_own(const char *path, struct stat *st)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int agent_dir_reserve(int fd, uint64_t off, uint64_t len)
{
	int rc;

	do
		rc = posix_fallocate(fd, (off_t)off, (off_t)len);
	while (rc == EINTR);
	return -rc;
}
