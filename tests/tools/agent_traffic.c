/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Message traffic through the agent's client API, for integration tests
 * that check every message arrives exactly once, whole and in order.
 *
 *   agent_traffic send RANK ADDR ID COUNT SEED MAXSIZE
 *     sends COUNT messages to ADDR through the agent of RANK: each opens
 *     with {magic, ID, sequence number, length, checksum} and has a random
 *     size (mostly small, some up to MAXSIZE) and a random mode
 *     (immediately, buffered, deposited); -EAGAIN (a full gateway) is tried
 *     again after a short pause.  Prints "sent COUNT eagain N".
 *     AGENT_TRAFFIC_MODE=immediately|buffered|deposited|received: every
 *     message in that mode; AGENT_TRAFFIC_GAP_US: a pause between messages;
 *     AGENT_TRAFFIC_KEEP_GOING=1: a failed send prints "failed ID SEQ ERRNO"
 *     and the next one goes on (each success prints "ok ID SEQ"), for tests
 *     that kill an agent mid-stream.
 *   agent_traffic recv RANK ADDR IDLE_MS [MAX [TIMEOUT_MS [CAP]]]
 *     takes messages (a GETMSG when ADDR is on another node), each receive
 *     with TIMEOUT_MS (default IDLE_MS), until none came for IDLE_MS, or MAX
 *     (0: no limit) arrived; checks each one's checksum and that the
 *     sequence numbers of each ID rise; prints "ID SEQ LEN" per message, then
 *     "received N timeouts T".  CAP is the receive buffer (default 8 MiB).
 *     Exit 1 on a bad or out-of-order message, or a failed receive.
 */
#include "core/agent/agent.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRAFFIC_MAGIC 0x54524146u /* "FART" little-endian: a traffic message */
#define MAX_IDS	      256
#define RECV_CAP      (8u << 20)

struct msg_head {
	uint32_t magic, id, seq, len;
	uint64_t sum;
};

static uint64_t fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t pick_size(uint64_t *s, size_t max)
{
	uint64_t r = rng_next(s) % 100;
	size_t head = sizeof(struct msg_head);
	size_t limit = r < 80 ? 3000 : r < 95 ? 200000 : max;

	if (limit > max)
		limit = max;
	return head + (limit > head ? rng_next(s) % (limit - head + 1) : 0);
}

static void pause_briefly(void)
{
	struct timespec ts = {0, 200000};

	nanosleep(&ts, NULL);
}

static int open_chan(const char *rank, const char *addr, struct agent_client **cl, struct agent_chan **h)
{
	char why[512];
	int rc = agent_attach((uint32_t)strtoul(rank, NULL, 10), cl, why, sizeof(why));

	if (rc) {
		fprintf(stderr, "attach: %s\n", why);
		return rc;
	}
	rc = agent_chan_open(*cl, addr, h);
	if (rc)
		fprintf(stderr, "open %s: %s\n", addr, strerror(-rc));
	return rc;
}

static int do_send(char **argv)
{
	static const enum agent_send_mode modes[] = {AGENT_SEND_IMMEDIATELY, AGENT_SEND_BUFFERED,
						     AGENT_SEND_DEPOSITED};
	struct agent_client *cl;
	struct agent_chan *h;
	uint32_t id = (uint32_t)strtoul(argv[3], NULL, 10), count = (uint32_t)strtoul(argv[4], NULL, 10);
	uint64_t seed = strtoull(argv[5], NULL, 10) * 2654435761u + 1, eagain = 0;
	size_t max = strtoul(argv[6], NULL, 10);
	uint8_t *buf;
	const char *fixed = getenv("AGENT_TRAFFIC_MODE"), *gap = getenv("AGENT_TRAFFIC_GAP_US");
	bool keep_going = getenv("AGENT_TRAFFIC_KEEP_GOING") && !strcmp(getenv("AGENT_TRAFFIC_KEEP_GOING"), "1");
	enum agent_send_mode fixed_mode = AGENT_SEND_DEPOSITED;
	struct timespec gap_ts = {0, 0};
	uint32_t failed = 0;

	if (fixed && agent_send_mode_parse(fixed, &fixed_mode)) {
		fprintf(stderr, "AGENT_TRAFFIC_MODE=%s: not a send mode\n", fixed);
		return 2;
	}
	if (gap) {
		long us = strtol(gap, NULL, 10);

		gap_ts = (struct timespec){us / 1000000, us % 1000000 * 1000};
	}
	if (max < sizeof(struct msg_head) || open_chan(argv[1], argv[2], &cl, &h))
		return 2;
	buf = malloc(max);
	if (!buf)
		return 2;
	for (uint32_t seq = 0; seq < count; seq++) {
		size_t len = pick_size(&seed, max);
		struct msg_head mh = {.magic = TRAFFIC_MAGIC, .id = id, .seq = seq, .len = (uint32_t)len};
		enum agent_send_mode mode = modes[rng_next(&seed) % 3];
		int rc;

		if (fixed)
			mode = fixed_mode;
		if (gap_ts.tv_sec || gap_ts.tv_nsec)
			nanosleep(&gap_ts, NULL);
		for (size_t i = sizeof(mh); i < len; i++)
			buf[i] = (uint8_t)rng_next(&seed);
		mh.sum = fnv64(buf + sizeof(mh), len - sizeof(mh));
		memcpy(buf, &mh, sizeof(mh));
		while ((rc = agent_send(h, buf, len, mode, 20000)) == -EAGAIN) {
			eagain++;
			pause_briefly();
		}
		if (rc && keep_going) {
			printf("failed %u %u %d\n", id, seq, rc);
			failed++;
			continue;
		}
		if (rc) {
			fprintf(stderr, "send %u/%u (%zu bytes): %s\n", id, seq, len, strerror(-rc));
			return 1;
		}
		if (keep_going)
			printf("ok %u %u\n", id, seq);
	}
	printf("sent %u eagain %llu failed %u\n", count - failed, (unsigned long long)eagain, failed);
	free(buf);
	agent_chan_close(h);
	agent_detach(cl);
	return 0;
}

static int do_recv(int argc, char **argv)
{
	struct agent_client *cl;
	struct agent_chan *h;
	int idle_ms = atoi(argv[3]), timeout_ms = argc > 5 ? atoi(argv[5]) : idle_ms;
	uint64_t max = argc > 4 ? strtoull(argv[4], NULL, 10) : 0, n = 0, timeouts = 0;
	struct timespec last, now;
	int64_t next[MAX_IDS];
	size_t cap = argc > 6 ? strtoul(argv[6], NULL, 10) : RECV_CAP;
	uint8_t *buf = malloc(cap ? cap : 1);
	size_t len;
	int rc;

	if (!buf || open_chan(argv[1], argv[2], &cl, &h))
		return 2;
	for (int i = 0; i < MAX_IDS; i++)
		next[i] = 0;
	if (!max)
		max = UINT64_MAX;
	clock_gettime(CLOCK_MONOTONIC, &last);
	while (n < max) {
		struct msg_head mh;

		rc = agent_recv(h, buf, cap, &len, timeout_ms);
		if (rc == -ETIMEDOUT || rc == -EAGAIN) {
			timeouts++;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000 >=
			    idle_ms)
				break;
			continue;
		}
		if (rc)
			break;
		clock_gettime(CLOCK_MONOTONIC, &last);
		if (len < sizeof(mh)) {
			fprintf(stderr, "a message of %zu bytes has no header\n", len);
			return 1;
		}
		memcpy(&mh, buf, sizeof(mh));
		if (mh.magic != TRAFFIC_MAGIC || mh.id >= MAX_IDS || mh.len != len ||
		    mh.sum != fnv64(buf + sizeof(mh), len - sizeof(mh))) {
			fprintf(stderr, "message %llu (%zu bytes, id %u seq %u) is damaged\n",
				(unsigned long long)n, len, mh.id, mh.seq);
			return 1;
		}
		if ((int64_t)mh.seq < next[mh.id]) {
			fprintf(stderr, "id %u: seq %u after %lld\n", mh.id, mh.seq,
				(long long)next[mh.id] - 1);
			return 1;
		}
		next[mh.id] = (int64_t)mh.seq + 1;
		printf("%u %u %zu\n", mh.id, mh.seq, len);
		n++;
	}
	if (n < max && rc != -ETIMEDOUT && rc != -EAGAIN) {
		fprintf(stderr, "recv: %s\n", strerror(-rc));
		return 1;
	}
	printf("received %llu timeouts %llu\n", (unsigned long long)n, (unsigned long long)timeouts);
	free(buf);
	agent_chan_close(h);
	agent_detach(cl);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 8 && !strcmp(argv[1], "send"))
		return do_send(argv + 1);
	if (argc >= 5 && argc <= 8 && !strcmp(argv[1], "recv"))
		return do_recv(argc - 1, argv + 1);
	fprintf(stderr, "usage: agent_traffic send RANK ADDR ID COUNT SEED MAXSIZE | recv RANK ADDR IDLE_MS "
			"[MAX [TIMEOUT_MS [CAP]]]\n");
	return 2;
}
