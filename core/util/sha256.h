/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * SHA-256, HMAC-SHA256 and HKDF-SHA256 from libcrypto (linked already, as
 * hw/soft/auth.c uses it), behind the small interface core needs: message
 * digests that scripts and tests compare with sha256sum, keyed proofs, key
 * derivation, and a comparison of secrets that takes the same time whatever
 * they hold.
 */
#ifndef RDMATOOL_CORE_SHA256_H
#define RDMATOOL_CORE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* HMAC-SHA256 (RFC 2104) of msg under key. */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len, unsigned char mac[32]);
/* The digest of buf as 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *buf, size_t len, char hex[65]);
/*
 * HKDF-SHA256 (RFC 5869): out_len bytes of key from the input keying
 * material ikm, a salt and a context string info.  0, or -EIO.
 */
int hkdf_sha256(const void *salt, size_t salt_len, const void *ikm, size_t ikm_len, const char *info,
		unsigned char *out, size_t out_len);
/* Whether a and b hold the same n bytes, in a time that does not depend on where they differ. */
bool secret_equal(const void *a, const void *b, size_t n);

#endif
