/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The soft wire's key and challenge-response (see auth.h), HMAC-SHA256 from OpenSSL's libcrypto. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "hw/soft/auth.h"
#include "hw/soft/soft.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static void soft_auth_random(void *buf, size_t len)
{
	if (getrandom(buf, len, 0) != (ssize_t)len)
		abort(); /* no kernel entropy: nothing safe to fall back to */
}

/*
 * Reads a key file: a regular file of the user's that nobody else can read
 * or write, not empty, and not longer than SOFT_AUTH_MAX_SECRET (trailing
 * newlines aside): a longer one is refused, never cut, or two files that
 * differ past the limit would pass for one key.
 */
static int soft_auth_read_file(const char *path, const char *what, struct soft_auth_key *key)
{
	uint8_t text[SOFT_AUTH_MAX_SECRET + 3];
	struct stat st;
	size_t n = 0;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0) {
		soft_config_fail("%s%s: %s; it must name a file holding the shared secret", what, path,
				 strerror(errno));
		return EINVAL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		soft_config_fail("%s%s must be a regular file of yours with mode 0600 (chmod 600 it)", what,
				 path);
		return EINVAL;
	}
	while (n < sizeof(text) && (got = read(fd, text + n, sizeof(text) - n)) > 0)
		n += (size_t)got;
	close(fd);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	if (n == 0 || n > SOFT_AUTH_MAX_SECRET) {
		soft_config_fail(n ? "%s%s is longer than %d bytes; use a shorter secret"
				   : "%s%s is empty; put the shared secret in it",
				 what, path, SOFT_AUTH_MAX_SECRET);
		return EINVAL;
	}
	memcpy(key->secret, text, n);
	key->len = n;
	snprintf(key->source, sizeof(key->source), "%s%s", what, path);
	return 0;
}

/* The user's home: $HOME when it is an absolute path, else the password database's. */
static int soft_auth_home(char *home, size_t len)
{
	const char *env = getenv("HOME");
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (env && env[0] == '/') {
		snprintf(home, len, "%s", env);
		return 0;
	}
	if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &found) || !found || found->pw_dir[0] != '/')
		return ENOENT;
	snprintf(home, len, "%s", found->pw_dir);
	return 0;
}

/* ~/.rdmatool: made 0700 if missing; it must be the user's own directory that nobody else may enter. */
static int soft_auth_key_dir(char *dir, size_t len)
{
	char home[PATH_MAX];
	struct stat st;

	if (soft_auth_home(home, sizeof(home))) {
		soft_config_fail(
		    "no home directory for the soft wire's key; set RDMATOOL_SOFT_SECRET_FILE to a "
		    "key file (mode 0600)");
		return EINVAL;
	}
	if (snprintf(dir, len, "%s/%s", home, SOFT_AUTH_KEY_DIR) >= (int)len)
		return ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		soft_config_fail(
		    "cannot create %s for the soft wire's key: %s; set RDMATOOL_SOFT_SECRET_FILE "
		    "to a key file (mode 0600)",
		    dir, strerror(errno));
		return EINVAL;
	}
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		soft_config_fail("%s must be a directory of yours with mode 0700 (chmod 700 it), or set "
				 "RDMATOOL_SOFT_SECRET_FILE to a key file (mode 0600)",
				 dir);
		return EINVAL;
	}
	return 0;
}

/*
 * Makes the user's key file if it is missing: 32 random bytes, as hex, go
 * into a fresh private file (O_EXCL | O_NOFOLLOW, mode 0600) that is then
 * hard-linked to the key's name, which never replaces a file.  Of processes
 * starting at once one link wins and all read the winner's whole key.
 */
static int soft_auth_make_key(const char *dir, const char *path)
{
	uint8_t raw[32];
	char hex[sizeof(raw) * 2 + 2], tmp[PATH_MAX];
	int fd, err = 0;

	if (access(path, F_OK) == 0 || errno != ENOENT)
		return 0; /* there already (or unreadable: reading it says why) */
	soft_auth_random(raw, sizeof(raw));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	hex[sizeof(raw) * 2] = '\n';
	hex[sizeof(raw) * 2 + 1] = '\0';
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.%d.%02x%02x%02x", dir, SOFT_AUTH_KEY_NAME, (int)getpid(),
		     raw[0], raw[1], raw[2]) >= (int)sizeof(tmp))
		return ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex))
		err = errno ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	if (!err && link(tmp, path) && errno != EEXIST) {
		err = errno;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0 || errno == EEXIST)
			err = 0; /* a file system without hard links */
	}
	unlink(tmp);
	return err;
}

static int soft_auth_user_key(struct soft_auth_key *key)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	int err = soft_auth_key_dir(dir, sizeof(dir));

	if (err)
		return EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, SOFT_AUTH_KEY_NAME);
	err = soft_auth_make_key(dir, path);
	if (err) {
		soft_config_fail(
		    "cannot create the soft wire's key %s: %s; set RDMATOOL_SOFT_SECRET_FILE to a "
		    "key file (mode 0600)",
		    path, strerror(err));
		return EINVAL;
	}
	return soft_auth_read_file(path, "the soft wire's key ", key);
}

int soft_auth_load(struct soft_auth_key *key)
{
	const char *secret = getenv("RDMATOOL_SOFT_SECRET"), *file = getenv("RDMATOOL_SOFT_SECRET_FILE");

	memset(key, 0, sizeof(*key));
	if (secret && file) {
		soft_config_fail("RDMATOOL_SOFT_SECRET and RDMATOOL_SOFT_SECRET_FILE are both set; keep one");
		return EINVAL;
	}
	if ((secret && !*secret) || (file && !*file)) {
		soft_config_fail("%s is set but empty; give a secret, or unset it to use your own key "
				 "~/%s/%s",
				 secret ? "RDMATOOL_SOFT_SECRET" : "RDMATOOL_SOFT_SECRET_FILE",
				 SOFT_AUTH_KEY_DIR, SOFT_AUTH_KEY_NAME);
		return EINVAL;
	}
	if (file)
		return soft_auth_read_file(file, "RDMATOOL_SOFT_SECRET_FILE=", key);
	if (!secret)
		return soft_auth_user_key(key);
	if (strlen(secret) > SOFT_AUTH_MAX_SECRET) {
		soft_config_fail("RDMATOOL_SOFT_SECRET is longer than %d bytes; use a shorter secret",
				 SOFT_AUTH_MAX_SECRET);
		return EINVAL;
	}
	key->len = strlen(secret);
	memcpy(key->secret, secret, key->len);
	snprintf(key->source, sizeof(key->source), "RDMATOOL_SOFT_SECRET");
	return 0;
}

void soft_auth_start(struct soft_auth_session *s, bool connector, const uint8_t self[SOFT_AUTH_GID],
		     const uint8_t *expect, uint8_t hello[SOFT_AUTH_HELLO_LEN])
{
	uint32_t magic = htole32(SOFT_AUTH_MAGIC), version = htole32(SOFT_AUTH_VERSION);

	memset(s, 0, sizeof(*s));
	s->connector = connector;
	memcpy(s->self, self, SOFT_AUTH_GID);
	if (expect) {
		memcpy(s->expect, expect, SOFT_AUTH_GID);
		s->expect_set = true;
	}
	soft_auth_random(s->my_nonce, SOFT_AUTH_NONCE);
	memcpy(hello, &magic, 4);
	memcpy(hello + 4, &version, 4);
	memcpy(hello + 8, s->my_nonce, SOFT_AUTH_NONCE);
	memcpy(hello + 8 + SOFT_AUTH_NONCE, self, SOFT_AUTH_GID);
}

/* The proof that the side in role sends: its nonce and GID first, the receiver's second. */
static void soft_auth_mac(const struct soft_auth_key *key, char role, const uint8_t *sender_nonce,
			  const uint8_t *receiver_nonce, const uint8_t *sender_gid,
			  const uint8_t *receiver_gid, uint8_t proof[SOFT_AUTH_PROOF_LEN])
{
	static const char label[] = "soft-wire/2";
	uint8_t msg[sizeof(label) - 1 + 1 + 2 * SOFT_AUTH_NONCE + 2 * SOFT_AUTH_GID], *p = msg;
	unsigned int len = SOFT_AUTH_PROOF_LEN;

	memcpy(p, label, sizeof(label) - 1);
	p += sizeof(label) - 1;
	*p++ = (uint8_t)role;
	memcpy(p, sender_nonce, SOFT_AUTH_NONCE);
	memcpy(p + SOFT_AUTH_NONCE, receiver_nonce, SOFT_AUTH_NONCE);
	p += 2 * SOFT_AUTH_NONCE;
	memcpy(p, sender_gid, SOFT_AUTH_GID);
	memcpy(p + SOFT_AUTH_GID, receiver_gid, SOFT_AUTH_GID);
	if (!HMAC(EVP_sha256(), key->secret, (int)key->len, msg, sizeof(msg), proof, &len))
		soft_auth_random(proof, SOFT_AUTH_PROOF_LEN); /* matches nothing the peer can send */
}

static size_t soft_auth_fail(struct soft_auth_session *s, enum soft_auth_failure why)
{
	s->state = SOFT_AUTH_FAILED;
	s->failure = why;
	return 0;
}

size_t soft_auth_step(struct soft_auth_session *s, const struct soft_auth_key *key, const uint8_t *in,
		      size_t len, uint8_t proof[SOFT_AUTH_PROOF_LEN], bool *send)
{
	char mine = s->connector ? 'C' : 'A', theirs = s->connector ? 'A' : 'C';
	uint8_t want[SOFT_AUTH_PROOF_LEN];
	size_t used = 0;

	*send = false;
	if (s->state == SOFT_AUTH_WAIT_HELLO) {
		uint32_t magic, version;

		if (len < SOFT_AUTH_HELLO_LEN)
			return 0;
		memcpy(&magic, in, 4);
		memcpy(&version, in + 4, 4);
		if (le32toh(magic) != SOFT_AUTH_MAGIC || le32toh(version) != SOFT_AUTH_VERSION)
			return soft_auth_fail(s, SOFT_AUTH_NOT_HELLO);
		memcpy(s->peer_nonce, in + 8, SOFT_AUTH_NONCE);
		memcpy(s->peer, in + 8 + SOFT_AUTH_NONCE, SOFT_AUTH_GID);
		if (s->expect_set && memcmp(s->peer, s->expect, SOFT_AUTH_GID))
			return soft_auth_fail(s, SOFT_AUTH_WRONG_PORT);
		soft_auth_mac(key, mine, s->my_nonce, s->peer_nonce, s->self, s->peer, proof);
		*send = true;
		s->state = SOFT_AUTH_WAIT_PROOF;
		used = SOFT_AUTH_HELLO_LEN;
	}
	if (s->state != SOFT_AUTH_WAIT_PROOF || len - used < SOFT_AUTH_PROOF_LEN)
		return used;
	soft_auth_mac(key, theirs, s->peer_nonce, s->my_nonce, s->peer, s->self, want);
	if (CRYPTO_memcmp(want, in + used, SOFT_AUTH_PROOF_LEN)) {
		soft_auth_fail(s, SOFT_AUTH_WRONG_KEY);
		return used;
	}
	s->state = SOFT_AUTH_DONE;
	return used + SOFT_AUTH_PROOF_LEN;
}

const char *soft_auth_failure_str(enum soft_auth_failure f)
{
	switch (f) {
	case SOFT_AUTH_NOT_HELLO:
		return "it does not speak the soft wire's handshake (not a soft NIC, or an older rdmatool)";
	case SOFT_AUTH_WRONG_PORT:
		return "another soft NIC answers at that address (the port was reused)";
	case SOFT_AUTH_WRONG_KEY:
		return "it holds a different key";
	}
	return "unknown failure";
}
