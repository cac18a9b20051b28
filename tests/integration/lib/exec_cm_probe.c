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
 *   destroyed  an id destroyed (by another thread, say) is refused with EINVAL
 *          by every call, never used: rdma_create_qp, rdma_accept, a second
 *          rdma_destroy_id.
 *   burst  10 connection requests at once: 10 CONNECT_REQUESTs, 10 distinct
 *          new ids (one id is never handed out twice); destroying the listener
 *          with requests not yet retrieved rejects them (the clients see
 *          REJECTED at once, not a timeout).
 *   mcast  rdma_join_multicast fails with EOPNOTSUPP, as rdmatool-exec(1)
 *          says (it was ENOSYS).
 * Prints what went wrong and exits 1; 0 when all held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
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

static int destroyed(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {.max_send_wr = 1, .max_recv_wr = 1}};
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rdma_cm_id *id;

	CHECK(ch && !rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "rdma_create_id: %s", strerror(errno));
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&sin), "rdma_bind_addr: %s", strerror(errno));
	CHECK(!rdma_destroy_id(id), "rdma_destroy_id: %s", strerror(errno));
	errno = 0;
	CHECK(rdma_create_qp(id, NULL, &qa) && errno == EINVAL, "rdma_create_qp on a destroyed id: %s",
	      errno ? strerror(errno) : "it worked");
	errno = 0;
	CHECK(rdma_accept(id, NULL) && errno == EINVAL, "rdma_accept on a destroyed id: %s",
	      errno ? strerror(errno) : "it worked");
	errno = 0;
	CHECK(rdma_destroy_id(id) && errno == EINVAL, "a second rdma_destroy_id: %s",
	      errno ? strerror(errno) : "it worked");
	rdma_destroy_event_channel(ch);
	printf("destroyed ok\n");
	return 0;
}

/* The next event on ch within 10 s (a deadline: the probe never hangs). */
static int next_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};

	if (poll(&p, 1, 10000) != 1)
		return -1;
	return rdma_get_cm_event(ch, ev);
}

#define BURST 10

static int burst(void)
{
	struct rdma_event_channel *lch = rdma_create_event_channel(), *cch = rdma_create_event_channel();
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rdma_cm_id *listener, *c[BURST], *got[BURST];
	struct rdma_cm_event *ev;
	int n = 0, rejected = 0;

	CHECK(lch && cch && !rdma_create_id(lch, &listener, NULL, RDMA_PS_TCP), "rdma_create_id: %s",
	      strerror(errno));
	CHECK(!rdma_bind_addr(listener, (struct sockaddr *)&sin) && !rdma_listen(listener, BURST),
	      "bind and listen: %s", strerror(errno));
	sin.sin_port = rdma_get_src_port(listener);
	for (int i = 0; i < BURST; i++) {
		CHECK(!rdma_create_id(cch, &c[i], NULL, RDMA_PS_TCP), "rdma_create_id: %s", strerror(errno));
		CHECK(!rdma_resolve_addr(c[i], NULL, (struct sockaddr *)&sin, 2000), "resolve_addr: %s",
		      strerror(errno));
	}
	/* Route, then connect each as its events come (QP-less: qp_num 0). */
	for (int done = 0; done < 2 * BURST;) {
		struct rdma_conn_param p = {.retry_count = 7, .rnr_retry_count = 7};
		struct rdma_cm_id *id;
		enum rdma_cm_event_type t;

		CHECK(!next_event(cch, &ev), "client: no event within 10 s (%d done)", done);
		id = ev->id;
		t = ev->event;
		rdma_ack_cm_event(ev);
		CHECK(t == RDMA_CM_EVENT_ADDR_RESOLVED || t == RDMA_CM_EVENT_ROUTE_RESOLVED, "client: %s",
		      rdma_event_str(t));
		CHECK(t == RDMA_CM_EVENT_ADDR_RESOLVED ? !rdma_resolve_route(id, 2000)
						       : !rdma_connect(id, &p),
		      "client: %s", strerror(errno));
		done++;
	}
	/* Half the requests are retrieved; the other half are still queued when the listener goes. */
	for (; n < BURST / 2; n++) {
		CHECK(!next_event(lch, &ev), "server: %d CONNECT_REQUESTs of %d within 10 s", n, BURST);
		CHECK(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST, "server: %s", rdma_event_str(ev->event));
		CHECK(ev->listen_id == listener && ev->id != listener, "server: the request's ids");
		got[n] = ev->id;
		for (int j = 0; j < n; j++)
			CHECK(got[j] != got[n], "server: one id handed out for two requests");
		rdma_ack_cm_event(ev);
		CHECK(!rdma_reject(got[n], NULL, 0), "rdma_reject: %s", strerror(errno));
	}
	/* Let the rest arrive before the listener goes. */
	for (int i = 0; i < 100; i++) {
		struct pollfd p = {.fd = lch->fd, .events = POLLIN};

		if (poll(&p, 1, 10) != 1)
			break;
	}
	CHECK(!rdma_destroy_id(listener), "rdma_destroy_id(listener): %s", strerror(errno));
	for (int i = 0; i < BURST; i++) {
		CHECK(!next_event(cch, &ev), "client: %d of %d answered within 10 s", rejected, BURST);
		CHECK(ev->event == RDMA_CM_EVENT_REJECTED, "client: %s, want REJECTED",
		      rdma_event_str(ev->event));
		rejected++;
		rdma_ack_cm_event(ev);
	}
	for (int i = 0; i < n; i++)
		rdma_destroy_id(got[i]);
	for (int i = 0; i < BURST; i++)
		rdma_destroy_id(c[i]);
	printf("burst ok: %d requests, %d distinct ids retrieved, %d rejected\n", BURST, n, rejected);
	return 0;
}

static int mcast(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in group = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0xe0000101)};
	struct rdma_cm_id *id;

	CHECK(!rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), "rdma_create_id: %s", strerror(errno));
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&sin), "rdma_bind_addr: %s", strerror(errno));
	errno = 0;
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&group, NULL) && errno == EOPNOTSUPP,
	      "rdma_join_multicast: %s, want EOPNOTSUPP", errno ? strerror(errno) : "it worked");
	rdma_destroy_id(id);
	printf("mcast ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "mcast"))
		return mcast();
	if (argc == 2 && !strcmp(argv[1], "destroyed"))
		return destroyed();
	if (argc == 2 && !strcmp(argv[1], "burst"))
		return burst();
	if (argc == 2 && !strcmp(argv[1], "bind0"))
		return bind0();
	if (argc == 2 && !strcmp(argv[1], "hints"))
		return hints();
	fprintf(stderr, "usage: %s bind0|hints|destroyed|burst|mcast\n", argv[0]);
	return 2;
}
