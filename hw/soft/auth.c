/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The soft wire's optional challenge-response (see auth.h), HMAC-SHA256 from OpenSSL's libcrypto. */
#include "hw/soft/auth.h"
#include "hw/soft/soft.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file must be a regular file of the user's that nobody else can read or write. */
static int soft_auth_read_file(const char *path, struct soft_auth_key *key)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0) {
		soft_config_fail("RDMATOOL_SOFT_SECRET_FILE=%s: %s; give a file holding the shared secret",
				 path, strerror(errno));
		return EINVAL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		soft_config_fail(
		    "RDMATOOL_SOFT_SECRET_FILE=%s must be a regular file of yours with mode 0600 "
		    "(chmod 600 it)",
		    path);
		return EINVAL;
	}
	n = read(fd, key->secret, sizeof(key->secret));
	close(fd);
	while (n > 0 && (key->secret[n - 1] == '\n' || key->secret[n - 1] == '\r'))
		n--;
	if (n <= 0) {
		soft_config_fail("RDMATOOL_SOFT_SECRET_FILE=%s is empty; put the shared secret in it", path);
		return EINVAL;
	}
	key->len = (size_t)n;
	return 0;
}

int soft_auth_load(struct soft_auth_key *key)
{
	const char *secret = getenv("RDMATOOL_SOFT_SECRET"), *file = getenv("RDMATOOL_SOFT_SECRET_FILE");

	memset(key, 0, sizeof(*key));
	if (secret && *secret && file && *file) {
		soft_config_fail("RDMATOOL_SOFT_SECRET and RDMATOOL_SOFT_SECRET_FILE are both set; keep one");
		return EINVAL;
	}
	if (file && *file) {
		if (soft_auth_read_file(file, key))
			return EINVAL;
	} else if (secret && *secret) {
		if (strlen(secret) > sizeof(key->secret)) {
			soft_config_fail("RDMATOOL_SOFT_SECRET is longer than %d bytes",
					 SOFT_AUTH_MAX_SECRET);
			return EINVAL;
		}
		key->len = strlen(secret);
		memcpy(key->secret, secret, key->len);
	} else {
		return 0;
	}
	key->on = true;
	return 0;
}

void soft_auth_hello(uint8_t nonce[SOFT_AUTH_NONCE], uint8_t hello[SOFT_AUTH_HELLO_LEN])
{
	uint32_t magic = htole32(SOFT_AUTH_MAGIC), version = htole32(1);

	if (getrandom(nonce, SOFT_AUTH_NONCE, 0) != SOFT_AUTH_NONCE)
		abort(); /* no kernel entropy: nothing safe to fall back to */
	memcpy(hello, &magic, 4);
	memcpy(hello + 4, &version, 4);
	memcpy(hello + 8, nonce, SOFT_AUTH_NONCE);
}

bool soft_auth_parse_hello(const uint8_t hello[SOFT_AUTH_HELLO_LEN], uint8_t nonce[SOFT_AUTH_NONCE])
{
	uint32_t magic, version;

	memcpy(&magic, hello, 4);
	memcpy(&version, hello + 4, 4);
	if (le32toh(magic) != SOFT_AUTH_MAGIC || le32toh(version) != 1)
		return false;
	memcpy(nonce, hello + 8, SOFT_AUTH_NONCE);
	return true;
}

void soft_auth_proof(const struct soft_auth_key *key, char role, const uint8_t sender_nonce[SOFT_AUTH_NONCE],
		     const uint8_t receiver_nonce[SOFT_AUTH_NONCE], uint8_t proof[SOFT_AUTH_PROOF_LEN])
{
	uint8_t msg[9 + 1 + 2 * SOFT_AUTH_NONCE];
	unsigned int len = SOFT_AUTH_PROOF_LEN;

	memcpy(msg, "soft-wire", 9);
	msg[9] = (uint8_t)role;
	memcpy(msg + 10, sender_nonce, SOFT_AUTH_NONCE);
	memcpy(msg + 10 + SOFT_AUTH_NONCE, receiver_nonce, SOFT_AUTH_NONCE);
	if (!HMAC(EVP_sha256(), key->secret, (int)key->len, msg, sizeof(msg), proof, &len))
		memset(proof, 0, SOFT_AUTH_PROOF_LEN); /* never matches a real proof's check below */
}

bool soft_auth_check(const struct soft_auth_key *key, char sender_role,
		     const uint8_t sender_nonce[SOFT_AUTH_NONCE],
		     const uint8_t receiver_nonce[SOFT_AUTH_NONCE], const uint8_t proof[SOFT_AUTH_PROOF_LEN])
{
	uint8_t want[SOFT_AUTH_PROOF_LEN];
	static const uint8_t zero[SOFT_AUTH_PROOF_LEN];

	soft_auth_proof(key, sender_role, sender_nonce, receiver_nonce, want);
	return CRYPTO_memcmp(want, zero, sizeof(want)) != 0 && CRYPTO_memcmp(want, proof, sizeof(want)) == 0;
}
