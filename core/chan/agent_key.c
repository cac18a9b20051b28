/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/chan/agent_key.h"

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

/* HKDF's salt and context: a key file used for something else derives another key here. */
#define AGENT_KEY_SALT "rdmatool agent key"
#define AGENT_KEY_INFO "rdmatool agent links"

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

/*
 * Creates the key file atomically: the whole key goes into a private
 * temporary file (O_EXCL, 0600) that is then hard-linked to the name, which
 * never replaces an existing file.  Two agents starting at once therefore
 * agree: one link wins, the other finds the winner's complete file and uses
 * it; nobody ever reads a half-written key.  A file system without hard links
 * gets renameat2(RENAME_NOREPLACE), which is just as exclusive.
 */
static int create_key(const char *path)
{
	unsigned char raw[AGENT_KEY_LEN];
	char hex[2 * AGENT_KEY_LEN + 2], tmp[PATH_MAX];
	int fd, rc = 0;

	if (access(path, F_OK) == 0)
		return 0; /* made already: the common case */
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (int i = 0; i < AGENT_KEY_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	strcat(hex, "\n");
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%02x%02x", path, (int)getpid(), raw[0], raw[1]) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex))
		rc = -EIO;
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && link(tmp, path)) {
		rc = -errno;
		if (rc == -EPERM || rc == -EOPNOTSUPP || rc == -ENOSYS)
			rc = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) ? -errno : 0;
	}
	unlink(tmp);		       /* after link: the name keeps the file; after a rename: already gone */
	return rc == -EEXIST ? 0 : rc; /* someone else made it first: use theirs */
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
	/* Whatever the file holds (hex or not) becomes a 32-byte key: HKDF-SHA256 (RFC 5869), libcrypto's. */
	rc = hkdf_sha256(AGENT_KEY_SALT, strlen(AGENT_KEY_SALT), text, (size_t)n, AGENT_KEY_INFO, key,
			 AGENT_KEY_LEN);
	explicit_bzero(text, sizeof(text));
	if (rc)
		snprintf(why, whylen, "cannot derive the agents' key from %s: libcrypto's HKDF failed", path);
	return rc;
}
