/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* SHA-256 (FIPS 180-4), for message digests that scripts and tests compare with sha256sum. */
#ifndef RDMATOOL_CORE_SHA256_H
#define RDMATOOL_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;
	unsigned char block[64];
	size_t used;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char digest[32]);
/* HMAC-SHA256 (RFC 2104) of msg under key. */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len, unsigned char mac[32]);
/* The digest of buf as 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *buf, size_t len, char hex[65]);

#endif
