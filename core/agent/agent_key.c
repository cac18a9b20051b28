/* SPDX-License-Identifier: MIT */
#include "core/agent/agent_key.h"

#include "core/util/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int key_path(char *path, size_t len, char *why, size_t whylen)
{
	const char *env = getenv(AGENT_KEY_ENV), *home = getenv("HOME");

	if (env && *env) {
		snprintf(path, len, "%s", env);
		return 0;
	}
	if (!home || home[0] != '/') {
		snprintf(why, whylen, "HOME is not set: set %s to the agents' key file", AGENT_KEY_ENV);
		return -EINVAL;
	}
	snprintf(path, len, "%s/.rdmatool-agent.key", home);
	return 0;
}

static int create_key(const char *path)
{
	unsigned char raw[AGENT_KEY_LEN];
	char hex[2 * AGENT_KEY_LEN + 2];
	int fd, rc = 0;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (int i = 0; i < AGENT_KEY_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	strcat(hex, "\n");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno; /* someone else made it first: use theirs */
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex))
		rc = -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		unlink(path);
	return rc;
}

int agent_key_load(unsigned char key[AGENT_KEY_LEN], char *why, size_t whylen)
{
	char path[PATH_MAX], text[4096];
	struct stat st;
	ssize_t n;
	int fd, rc = key_path(path, sizeof(path), why, whylen);

	if (rc)
		return rc;
	rc = create_key(path);
	if (rc) {
		snprintf(why, whylen, "cannot create the agents' key %s: %s", path, strerror(-rc));
		return rc;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot open the agents' key %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		snprintf(why, whylen,
			 "the agents' key %s must be a regular file of uid %u with mode 0600 (chmod 600 it)",
			 path, (unsigned)geteuid());
		return -EPERM;
	}
	n = read(fd, text, sizeof(text));
	close(fd);
	if (n < 16) {
		snprintf(why, whylen, "the agents' key %s is shorter than 16 bytes", path);
		return -EINVAL;
	}
	/* Whatever the file holds (hex or not) becomes a 32-byte key. */
	hmac_sha256("rdmatool agent key", 18, text, (size_t)n, key);
	return 0;
}
