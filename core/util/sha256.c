/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "core/util/sha256.h"

#include <stdio.h>
#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
		       p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6],
	h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, iv, sizeof(iv));
	s->bytes = 0;
	s->used = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->bytes += len;
	while (len) {
		size_t n = 64 - s->used < len ? 64 - s->used : len;

		memcpy(s->block + s->used, p, n);
		s->used += n, p += n, len -= n;
		if (s->used == 64) {
			sha256_block(s, s->block);
			s->used = 0;
		}
	}
}

void sha256_final(struct sha256 *s, unsigned char digest[32])
{
	uint64_t bits = s->bytes * 8;
	unsigned char pad = 0x80, len_be[8];

	sha256_update(s, &pad, 1);
	pad = 0;
	while (s->used != 56)
		sha256_update(s, &pad, 1);
	for (int i = 0; i < 8; i++)
		len_be[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(s, len_be, 8);
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			digest[4 * i + k] = (unsigned char)(s->h[i] >> (24 - 8 * k));
}

void sha256_hex(const void *buf, size_t len, char hex[65])
{
	unsigned char d[32];
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, buf, len);
	sha256_final(&s, d);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len, unsigned char mac[32])
{
	unsigned char k[64] = {0}, pad[64], inner[32];
	struct sha256 s;

	if (key_len > sizeof(k)) {
		sha256_init(&s);
		sha256_update(&s, key, key_len);
		sha256_final(&s, k);
	} else {
		memcpy(k, key, key_len);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, msg, msg_len);
	sha256_final(&s, inner);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, inner, sizeof(inner));
	sha256_final(&s, mac);
}
