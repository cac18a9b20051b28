/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* SHA-256, HMAC and HKDF through libcrypto (see sha256.h). */
#include "core/util/sha256.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <stdio.h>
#include <string.h>

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len, unsigned char mac[32])
{
	unsigned int len = 32;

	/* HMAC() fails only when it cannot allocate; then the all-zero MAC matches no proof. */
	if (!HMAC(EVP_sha256(), key, (int)key_len, msg, msg_len, mac, &len))
		memset(mac, 0, 32);
}

void sha256_hex(const void *buf, size_t len, char hex[65])
{
	unsigned char d[32];
	unsigned int n = 32;

	if (!EVP_Digest(buf, len, d, &n, EVP_sha256(), NULL))
		memset(d, 0, sizeof(d));
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int hkdf_sha256(const void *salt, size_t salt_len, const void *ikm, size_t ikm_len, const char *info,
		unsigned char *out, size_t out_len)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	size_t len = out_len;
	int ok = ctx && EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
		 EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt, (int)salt_len) > 0 &&
		 EVP_PKEY_CTX_set1_hkdf_key(ctx, ikm, (int)ikm_len) > 0 &&
		 EVP_PKEY_CTX_add1_hkdf_info(ctx, (const unsigned char *)info, (int)strlen(info)) > 0 &&
		 EVP_PKEY_derive(ctx, out, &len) > 0 && len == out_len;

	EVP_PKEY_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

bool secret_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}
