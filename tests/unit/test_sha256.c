/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core/util/sha256: FIPS 180-4 and RFC 4231 test vectors, and agreement with sha256sum's answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/util/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hex(const unsigned char *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_digests(void **state)
{
	char h[65];
	char *million = malloc(1000000);

	(void)state;
	sha256_hex("", 0, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_hex("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', 1000000);
	sha256_hex(million, 1000000, h);
	assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

static void test_hmac(void **state)
{
	unsigned char key[20], mac[32], big_key[131];
	char h[65];

	(void)state;
	memset(key, 0x0b, sizeof(key));
	hmac_sha256(key, sizeof(key), "Hi There", 8, mac);
	hex(mac, 32, h);
	assert_string_equal(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	hex(mac, 32, h);
	assert_string_equal(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* RFC 4231 case 6: a key longer than the block is hashed first. */
	memset(big_key, 0xaa, sizeof(big_key));
	hmac_sha256(big_key, sizeof(big_key), "Test Using Larger Than Block-Size Key - Hash Key First", 54,
		    mac);
	hex(mac, 32, h);
	assert_string_equal(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* RFC 5869, test case 1. */
static void test_hkdf(void **state)
{
	unsigned char ikm[22], salt[13], okm[42];
	const char info[] = "\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9";
	char h[85];

	(void)state;
	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (unsigned char)i;
	assert_int_equal(hkdf_sha256(salt, sizeof(salt), ikm, sizeof(ikm), info, okm, sizeof(okm)), 0);
	hex(okm, sizeof(okm), h);
	assert_string_equal(
	    h, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
}

static void test_secret_equal(void **state)
{
	unsigned char a[32] = {1, 2, 3}, b[32] = {1, 2, 3};

	(void)state;
	assert_true(secret_equal(a, b, sizeof(a)));
	b[31] ^= 1;
	assert_false(secret_equal(a, b, sizeof(a)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_digests),
	    cmocka_unit_test(test_hmac),
	    cmocka_unit_test(test_hkdf),
	    cmocka_unit_test(test_secret_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
