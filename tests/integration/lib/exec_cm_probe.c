// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * exec_cm_probe: librdmacm calls whose answers a program relies on, checked
 * under rdmatool exec (tests/integration/exec_cm_calls.sh builds and runs it).
 *   bind0  rdma_bind_addr to port 0 reserves a port at once: rdma_get_src_port
 *          right after it is non-zero (qperf sends it to its client before it
 *          listens), a second id cannot bind that port (EADDRINUSE), and the
 *          listen that follows keeps it.
 *   hints  rdma_getaddrinfo(NULL, NULL, hints) takes the addresses from the
 *          hints, as librdmacm does (libfabric's verbs provider asks so).
 * Prints what went wrong and exits 1; 0 when all held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, __VA_ARGS__);                                                        \
			fputc('\n', stderr);                                                                 \
			return 1;                                                                            \
		}                                                                                            \
	} while (0)

static int bind0(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *other;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint16_t port;

	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	CHECK(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "rdma_create_id: %s", strerror(errno));
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&sin), "rdma_bind_addr port 0: %s", strerror(errno));
	port = ntohs(rdma_get_src_port(id));
	CHECK(port != 0, "rdma_get_src_port right after rdma_bind_addr to port 0 is 0: no port reserved");
	CHECK(!rdma_create_id(ch, &other, NULL, RDMA_PS_TCP), "rdma_create_id: %s", strerror(errno));
	sin.sin_port = htons(port);
	CHECK(rdma_bind_addr(other, (struct sockaddr *)&sin) && errno == EADDRINUSE,
	      "a second rdma_bind_addr to the reserved port %u: %s (want EADDRINUSE)", port,
	      errno ? strerror(errno) : "it worked");
	CHECK(!rdma_listen(id, 4), "rdma_listen: %s", strerror(errno));
	CHECK(ntohs(rdma_get_src_port(id)) == port, "rdma_listen moved the port from %u to %u", port,
	      ntohs(rdma_get_src_port(id)));
	rdma_destroy_id(other);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	printf("bind0 ok: port %u\n", port);
	return 0;
}

static int hints(void)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(4711)};
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(4712)};
	struct rdma_addrinfo h = {.ai_port_space = RDMA_PS_TCP, .ai_qp_type = IBV_QPT_RC}, *res = NULL;
	struct sockaddr_in *got;

	src.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Passive: the source address of the hints. */
	h.ai_flags = RAI_PASSIVE;
	h.ai_src_addr = (struct sockaddr *)&src;
	h.ai_src_len = sizeof(src);
	CHECK(!rdma_getaddrinfo(NULL, NULL, &h, &res), "rdma_getaddrinfo(NULL, NULL, passive hints): %s",
	      strerror(errno));
	got = (struct sockaddr_in *)res->ai_src_addr;
	CHECK(got && res->ai_src_len == sizeof(src) && got->sin_port == src.sin_port &&
		  got->sin_addr.s_addr == src.sin_addr.s_addr,
	      "passive: the source address is not the hints'");
	CHECK(res->ai_flags & RAI_PASSIVE, "passive: RAI_PASSIVE lost");
	rdma_freeaddrinfo(res);
	/* Active: source and destination of the hints. */
	h.ai_flags = 0;
	h.ai_dst_addr = (struct sockaddr *)&dst;
	h.ai_dst_len = sizeof(dst);
	CHECK(!rdma_getaddrinfo(NULL, NULL, &h, &res), "rdma_getaddrinfo(NULL, NULL, active hints): %s",
	      strerror(errno));
	got = (struct sockaddr_in *)res->ai_dst_addr;
	CHECK(got && got->sin_port == dst.sin_port && got->sin_addr.s_addr == dst.sin_addr.s_addr,
	      "active: the destination address is not the hints'");
	got = (struct sockaddr_in *)res->ai_src_addr;
	CHECK(got && got->sin_port == src.sin_port, "active: the source address is not the hints'");
	CHECK(res->ai_qp_type == IBV_QPT_RC && res->ai_port_space == RDMA_PS_TCP,
	      "active: type or port space lost");
	rdma_freeaddrinfo(res);
	/* Nothing to go on: EINVAL, as librdmacm. */
	CHECK(rdma_getaddrinfo(NULL, NULL, NULL, &res) && errno == EINVAL,
	      "rdma_getaddrinfo(NULL, NULL, NULL) did not fail with EINVAL");
	printf("hints ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "bind0"))
		return bind0();
	if (argc == 2 && !strcmp(argv[1], "hints"))
		return hints();
	fprintf(stderr, "usage: %s bind0|hints\n", argv[0]);
	return 2;
}
