/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Node list and rank for an agent; the contract is in bootstrap.h. */
#include "core/agent/bootstrap.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool host_name_valid(const char *h, size_t n)
{
	if (n == 0 || n >= GW_HOST_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)h[i]) && h[i] != '-' && h[i] != '.' && h[i] != '_')
			return false;
	return true;
}

/* Appends "host[:port]" (len bytes of text). */
static int add_host(struct boot_nodes *b, const char *text, size_t len, const char *what, char *why,
		    size_t whylen)
{
	const char *colon = memchr(text, ':', len);
	size_t hlen = colon ? (size_t)(colon - text) : len;
	long port = 0;

	if (b->nodes >= BOOT_MAX_NODES) {
		snprintf(why, whylen, "%s names more than %d nodes", what, BOOT_MAX_NODES);
		return -EINVAL;
	}
	if (!host_name_valid(text, hlen)) {
		snprintf(why, whylen, "%s: '%.*s' is not a host name", what, (int)len, text);
		return -EINVAL;
	}
	if (colon) {
		char digits[8] = "";
		char *end;
		size_t plen = len - hlen - 1;

		if (plen == 0 || plen >= sizeof(digits)) {
			snprintf(why, whylen, "%s: bad port in '%.*s'", what, (int)len, text);
			return -EINVAL;
		}
		memcpy(digits, colon + 1, plen);
		port = strtol(digits, &end, 10);
		if (*end || port < 1 || port > 65535) {
			snprintf(why, whylen, "%s: port '%s' of %.*s is not 1..65535", what, digits,
				 (int)hlen, text);
			return -EINVAL;
		}
	}
	memcpy(b->hosts[b->nodes], text, hlen);
	b->hosts[b->nodes][hlen] = '\0';
	b->ports[b->nodes] = (uint16_t)port;
	b->nodes++;
	return 0;
}

int boot_parse_hosts(const char *list, struct boot_nodes *b, char *why, size_t whylen)
{
	const char *p = list;

	b->nodes = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		int rc = add_host(b, p, n, "--hosts", why, whylen);

		if (rc)
			return rc;
		p += n;
		if (*p == ',' && !*++p) {
			snprintf(why, whylen, "--hosts ends with a comma");
			return -EINVAL;
		}
	}
	if (!b->nodes) {
		snprintf(why, whylen, "--hosts is empty");
		return -EINVAL;
	}
	snprintf(b->hosts_source, sizeof(b->hosts_source), "--hosts");
	return 0;
}

int boot_read_hostfile(const char *path, struct boot_nodes *b, char *why, size_t whylen)
{
	FILE *f = fopen(path, "re");
	char line[512], what[96];
	int lineno = 0, rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(why, whylen, "--hostfile=%s: %s", path, strerror(errno));
		return rc;
	}
	b->nodes = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		char *s = line;
		size_t n;

		lineno++;
		s[strcspn(s, "#\n")] = '\0';
		while (isspace((unsigned char)*s))
			s++;
		n = strcspn(s, " \t");
		if (!n)
			continue;
		snprintf(what, sizeof(what), "%.60s line %d", path, lineno);
		rc = add_host(b, s, n, what, why, whylen);
	}
	fclose(f);
	if (!rc && !b->nodes) {
		snprintf(why, whylen, "--hostfile=%s names no host", path);
		rc = -EINVAL;
	}
	if (!rc)
		snprintf(b->hosts_source, sizeof(b->hosts_source), "--hostfile=%.80s", path);
	return rc;
}

/* Expands one item with bracket groups (prefix[ranges]rest), appending every name. */
static int expand_item(const char *item, size_t len, struct boot_nodes *b, char *why, size_t whylen)
{
	const char *open = memchr(item, '[', len);

	if (!open)
		return add_host(b, item, len, "SLURM_JOB_NODELIST", why, whylen);
	const char *close = memchr(open, ']', len - (size_t)(open - item));
	size_t prefix = (size_t)(open - item);

	if (!close || prefix >= GW_HOST_LEN) {
		snprintf(why, whylen, "SLURM_JOB_NODELIST: unbalanced '[' in '%.*s'", (int)len, item);
		return -EINVAL;
	}
	const char *r = open + 1;

	while (r < close) {
		const char *comma = memchr(r, ',', (size_t)(close - r));
		size_t n = (size_t)((comma ? comma : close) - r);
		char lo_text[16] = "", *dash, *end;
		long lo, hi;

		if (n == 0 || n >= sizeof(lo_text)) {
			snprintf(why, whylen, "SLURM_JOB_NODELIST: bad range in '%.*s'", (int)len, item);
			return -EINVAL;
		}
		memcpy(lo_text, r, n);
		dash = strchr(lo_text, '-');
		if (dash)
			*dash = '\0';
		int width = (int)strlen(lo_text); /* "01-03" keeps its zero padding */

		lo = strtol(lo_text, &end, 10);
		hi = dash ? strtol(dash + 1, &end, 10) : lo;
		if (*end || lo < 0 || hi < lo || !isdigit((unsigned char)lo_text[0]) ||
		    (dash && !isdigit((unsigned char)dash[1])) || hi - lo >= BOOT_MAX_NODES) {
			snprintf(why, whylen, "SLURM_JOB_NODELIST: bad range '%.*s' in '%.*s'", (int)n, r,
				 (int)len, item);
			return -EINVAL;
		}
		for (long v = lo; v <= hi; v++) {
			/* prefix + number, then whatever follows the bracket, itself expanded. */
			char text[3 * GW_HOST_LEN];
			int m = snprintf(text, sizeof(text), "%.*s%0*ld%.*s", (int)prefix, item, width, v,
					 (int)(len - (size_t)(close + 1 - item)), close + 1);
			int rc;

			if (m < 0 || (size_t)m >= sizeof(text)) {
				snprintf(why, whylen, "SLURM_JOB_NODELIST: a name in '%.*s' is too long",
					 (int)len, item);
				return -EINVAL;
			}
			rc = expand_item(text, (size_t)m, b, why, whylen);
			if (rc)
				return rc;
		}
		r += n + (r + n < close);
	}
	return 0;
}

int boot_expand_nodelist(const char *list, struct boot_nodes *b, char *why, size_t whylen)
{
	const char *p = list;

	b->nodes = 0;
	while (*p) {
		/* Split at commas outside brackets. */
		size_t n = 0;
		int depth = 0;

		while (p[n] && (depth || p[n] != ',')) {
			depth += p[n] == '[' ? 1 : p[n] == ']' ? -1 : 0;
			n++;
		}
		if (depth || n == 0) {
			snprintf(why, whylen, "SLURM_JOB_NODELIST='%.100s' is malformed near '%.20s'", list,
				 p);
			return -EINVAL;
		}
		int rc = expand_item(p, n, b, why, whylen);

		if (rc)
			return rc;
		p += n + (p[n] == ',');
	}
	if (!b->nodes) {
		snprintf(why, whylen, "SLURM_JOB_NODELIST is empty");
		return -EINVAL;
	}
	return 0;
}

/* Whether host (a name or a literal address) resolves to one of addrs. */
/*
 * The first address of host (a name or a literal address) that is one of
 * addrs, a non-loopback one first; false when none is.
 */
static bool local_addr_of(const char *host, struct ifaddrs *addrs, struct in_addr *out)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res, *ai;
	bool found = false;

	if (getaddrinfo(host, NULL, &hints, &res))
		return false;
	for (int pass = 0; pass < 2 && !found; pass++)
		for (ai = res; ai && !found; ai = ai->ai_next) {
			struct in_addr a = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;

			if (pass == 0 && (ntohl(a.s_addr) >> 24) == 127)
				continue; /* loopback only when there is nothing else */
			for (struct ifaddrs *ifa = addrs; ifa && !found; ifa = ifa->ifa_next)
				found = ifa->ifa_addr && ifa->ifa_addr->sa_family == AF_INET &&
					((struct sockaddr_in *)ifa->ifa_addr)->sin_addr.s_addr == a.s_addr;
			if (found)
				*out = a;
		}
	freeaddrinfo(res);
	return found;
}

/* Whether host is this machine: its host name, or a name or address of one of addrs. */
static bool host_is_local(const char *host, const char *self, struct ifaddrs *addrs)
{
	struct in_addr a;

	return !strcmp(host, self) || local_addr_of(host, addrs, &a);
}

/* A rank variable: set and a number below the node count, or an error naming it. */
static int env_rank(const char *var, struct boot_nodes *b, char *why, size_t whylen)
{
	const char *v = getenv(var);
	char *end;
	long r;

	if (!v)
		return 0;
	r = strtol(v, &end, 10);
	if (!*v || *end || r < 0 || (b->nodes && r >= (long)b->nodes) || r >= BOOT_MAX_NODES) {
		snprintf(why, whylen, "%s='%s' is not a rank below the %u node(s) of %s", var, v, b->nodes,
			 b->hosts_source[0] ? b->hosts_source : "the host list");
		return -EINVAL;
	}
	b->rank = (int32_t)r;
	snprintf(b->rank_source, sizeof(b->rank_source), "%s", var);
	return 1;
}

/*
 * How many tasks the launcher started on this node, from the first of
 * Open MPI's, PMIx's or MPICH's variables that is set (0: none is).
 */
static long env_local_size(const char **var)
{
	static const char *const size_vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE",
						"MPI_LOCALNRANKS"};

	for (size_t i = 0; i < sizeof(size_vars) / sizeof(size_vars[0]); i++) {
		const char *v = getenv(size_vars[i]);
		char *end;
		long n;

		if (!v)
			continue;
		n = strtol(v, &end, 10);
		*var = size_vars[i];
		return *v && !*end && n > 0 ? n : 0;
	}
	return 0;
}

/*
 * A world rank names an entry of the host list only when the launcher's
 * order and the list's agree: when the entry it names is not this machine
 * but another entry is, the list is in another order than the launch.
 */
static int check_world_rank(struct boot_nodes *b, char *why, size_t whylen)
{
	struct ifaddrs *addrs = NULL;
	char self[256] = "";
	int other = -1;

	gethostname(self, sizeof(self) - 1);
	if (getifaddrs(&addrs))
		return 0; /* nothing to compare with */
	if (!host_is_local(b->hosts[b->rank], self, addrs))
		for (uint32_t i = 0; i < b->nodes && other < 0; i++)
			if (host_is_local(b->hosts[i], self, addrs))
				other = (int)i;
	freeifaddrs(addrs);
	if (other < 0)
		return 0;
	snprintf(why, whylen,
		 "%s=%d names %.64s, entry %d of %s, but this machine is %.64s, entry %d: list the "
		 "hosts in the order the launcher starts its tasks (or give --rank)",
		 b->rank_source, b->rank, b->hosts[b->rank], b->rank, b->hosts_source, b->hosts[other],
		 other);
	b->rank = -1;
	return -EINVAL;
}

int boot_from_env(struct boot_nodes *b, char *why, size_t whylen)
{
	/*
	 * One agent per node: Slurm's node index is the rank whatever the task
	 * count; a world rank (task index) is one only where the launcher started
	 * one task per node (mpirun -N 1).  OMPI_COMM_WORLD_NODE_RANK is the
	 * task's index within its node, never the node's.
	 */
	static const char *const world_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	const char *list = getenv("SLURM_JOB_NODELIST"), *size_var = NULL;
	long local_size;
	int rc;

	b->launch_note[0] = '\0';
	if (!b->nodes && list) {
		rc = boot_expand_nodelist(list, b, why, whylen);
		if (rc)
			return rc;
		snprintf(b->hosts_source, sizeof(b->hosts_source), "SLURM_JOB_NODELIST");
	}
	if (b->rank >= 0)
		return 0;
	rc = env_rank("SLURM_NODEID", b, why, whylen);
	if (rc)
		return rc < 0 ? rc : 0;
	local_size = env_local_size(&size_var);
	for (size_t i = 0; i < sizeof(world_vars) / sizeof(world_vars[0]); i++) {
		if (!getenv(world_vars[i]))
			continue;
		if (local_size > 1) {
			snprintf(b->launch_note, sizeof(b->launch_note),
				 "%s=%ld: the launcher started %ld tasks on this node, so %s is no node's "
				 "rank; start one agent per node (mpirun -N 1), and --agents-per-node=N for "
				 "more",
				 size_var, local_size, local_size, world_vars[i]);
			return 0;
		}
		rc = env_rank(world_vars[i], b, why, whylen);
		if (rc < 0)
			return rc;
		return b->nodes > 1 ? check_world_rank(b, why, whylen) : 0;
	}
	return 0;
}

int boot_rank_from_local(struct boot_nodes *b, char *why, size_t whylen)
{
	struct ifaddrs *addrs = NULL;
	char self[256] = "";
	int match = -1, nmatch = 0;

	if (b->launch_note[0]) {
		snprintf(why, whylen, "%s", b->launch_note);
		return -EINVAL;
	}
	gethostname(self, sizeof(self) - 1);
	if (getifaddrs(&addrs))
		addrs = NULL;
	for (uint32_t i = 0; i < b->nodes; i++)
		if (host_is_local(b->hosts[i], self, addrs)) {
			if (match < 0)
				match = (int)i;
			nmatch++;
		}
	freeifaddrs(addrs);
	if (match < 0) {
		snprintf(why, whylen, "none of the %u hosts of %s is this machine (%s); give --rank",
			 b->nodes, b->hosts_source, self);
		return -ENOENT;
	}
	if (nmatch > 1) {
		snprintf(why, whylen,
			 "%d hosts of %s are this machine (several agents on one machine); give --rank",
			 nmatch, b->hosts_source);
		return -EINVAL;
	}
	b->rank = match;
	snprintf(b->rank_source, sizeof(b->rank_source), "the entry %.60s, this machine", b->hosts[match]);
	return 0;
}

int boot_node_addr(const struct boot_nodes *b, char *ip, size_t len, char *why, size_t whylen)
{
	struct ifaddrs *addrs = NULL;
	struct in_addr a;
	bool found;

	if (b->rank < 0 || (uint32_t)b->rank >= b->nodes) {
		snprintf(why, whylen, "no rank yet");
		return -EINVAL;
	}
	if (getifaddrs(&addrs)) {
		int rc = -errno;

		snprintf(why, whylen, "cannot list this machine's addresses: %s", strerror(-rc));
		return rc;
	}
	found = local_addr_of(b->hosts[b->rank], addrs, &a);
	freeifaddrs(addrs);
	if (!found) {
		snprintf(why, whylen, "%.64s (entry %d of %s) names no address of this machine",
			 b->hosts[b->rank], b->rank, b->hosts_source);
		return -ENOENT;
	}
	if (!inet_ntop(AF_INET, &a, ip, (socklen_t)len)) {
		snprintf(why, whylen, "no room for an address");
		return -ENOSPC;
	}
	return 0;
}
