/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/chan/pidfile.h"

#include "core/chan/sibling.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void pidfile_path(char *path, size_t len, const char *dir, uint32_t rank)
{
	char id[32];

	agent_id_text(rank, id, sizeof(id));
	snprintf(path, len, "%s/agent.%s.pid", dir, id);
}

int pidfile_acquire(const char *dir, uint32_t rank, int *fd, pid_t *holder)
{
	struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char path[PATH_MAX], text[32];
	struct stat st;
	int f, n;

	pidfile_path(path, sizeof(path), dir, rank);
	f = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f < 0)
		return -errno;
	if (fstat(f, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(f);
		return -EPERM;
	}
	if (fcntl(f, F_OFD_SETLK, &lk)) {
		int rc = errno == EAGAIN || errno == EACCES ? -EEXIST : -errno;

		close(f);
		if (rc == -EEXIST)
			*holder = pidfile_holder(dir, rank);
		return rc;
	}
	n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	if (ftruncate(f, 0) || pwrite(f, text, (size_t)n, 0) != n) {
		int rc = -errno;

		close(f);
		return rc;
	}
	*fd = f;
	return 0;
}

void pidfile_release(const char *dir, uint32_t rank, int fd)
{
	char path[PATH_MAX];

	pidfile_path(path, sizeof(path), dir, rank);
	unlink(path);
	close(fd);
}

pid_t pidfile_holder(const char *dir, uint32_t rank)
{
	struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char path[PATH_MAX], text[32] = "";
	long pid = 0;
	ssize_t n;
	int f;

	pidfile_path(path, sizeof(path), dir, rank);
	f = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (f < 0)
		return 0;
	/* Locked means an agent lives; its pid is what it wrote (the agent writes it right after locking). */
	if (fcntl(f, F_OFD_GETLK, &lk) == 0 && lk.l_type != F_UNLCK) {
		for (int tries = 0; tries < 100 && pid <= 0; tries++) {
			n = pread(f, text, sizeof(text) - 1, 0);
			text[n > 0 ? n : 0] = '\0';
			pid = strtol(text, NULL, 10);
			if (pid <= 0)
				usleep(1000);
		}
	}
	close(f);
	return pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

int pidfile_running(const char *dir, uint32_t *first)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		unsigned rank;
		char tail[8];

		if (sscanf(de->d_name, "agent.%u.pi%1s", &rank, tail) != 2 || strcmp(tail, "d") ||
		    !pidfile_holder(dir, rank))
			continue;
		if (!n || rank < *first)
			*first = rank;
		n++;
	}
	closedir(d);
	return n;
}
