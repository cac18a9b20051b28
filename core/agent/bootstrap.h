/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Where an agent learns the node list and its own rank: --hosts, a host
 * file, or the environment of the launcher that started it (Slurm, Open MPI,
 * PMIx), so that `srun -N 64 rdmatool agent foreground` needs no flags.
 * Pure functions (getenv and getifaddrs aside); nothing prints: errors come
 * back as a negative errno and a message naming the option or variable.
 */
#ifndef RDMATOOL_CORE_AGENT_BOOTSTRAP_H
#define RDMATOOL_CORE_AGENT_BOOTSTRAP_H

#include "core/chan/gateway.h"

#include <stddef.h>
#include <stdint.h>

#define BOOT_MAX_NODES GW_MAX_NODES

struct boot_nodes {
	uint32_t nodes;
	char hosts[BOOT_MAX_NODES][GW_HOST_LEN];
	uint16_t ports[BOOT_MAX_NODES]; /* 0: the default port */
	int32_t rank;			/* -1 until known */
	char hosts_source[96];		/* e.g. "--hosts", "SLURM_JOB_NODELIST" */
	char rank_source[96];		/* e.g. "--rank", "SLURM_NODEID", "the local address 10.0.0.3" */
	char launch_note[256];		/* why the launcher's rank was not taken ("": it was, or none) */
};

/* "H1[:PORT],H2,..." (what --hosts takes). */
int boot_parse_hosts(const char *list, struct boot_nodes *b, char *why, size_t whylen);
/* One host per line ("host[:port]", or "host slots=N" as MPI host files have); '#' starts a comment. */
int boot_read_hostfile(const char *path, struct boot_nodes *b, char *why, size_t whylen);
/*
 * Expands a Slurm node list the way `scontrol show hostnames` does:
 * "n[01-03,7],gpu[1-2]-ib" is n01 n02 n03 n7 gpu1-ib gpu2-ib; several
 * bracket groups multiply ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2).
 */
int boot_expand_nodelist(const char *list, struct boot_nodes *b, char *why, size_t whylen);
/*
 * Fills what the launcher's environment says: the node list from
 * SLURM_JOB_NODELIST (unless b already has one) and, unless b has a rank,
 * the rank from SLURM_NODEID (the node's index in the job), else a world
 * rank, OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK, which is the node's
 * index only when the launcher started one task per node: with
 * OMPI_COMM_WORLD_LOCAL_SIZE (PMIX_LOCAL_SIZE, MPI_LOCALNRANKS) above 1 it
 * is left alone and launch_note says why.  rank_source names the variable.
 * Returns 0 when nothing applies; -EINVAL for a variable that is set but
 * malformed, or a world rank whose host list entry is not this machine
 * while another entry is (the list is in another order than the launch).
 */
int boot_from_env(struct boot_nodes *b, char *why, size_t whylen);
/*
 * Rank = the entry that names this machine (its host name or one of its
 * addresses).  -EINVAL with launch_note as the reason when the launcher
 * started several tasks on this node (several agents would take one rank).
 */
int boot_rank_from_local(struct boot_nodes *b, char *why, size_t whylen);
/*
 * The IPv4 address (text, len >= INET_ADDRSTRLEN) that this node's entry,
 * hosts[rank], names on this machine, a non-loopback one first: where the
 * other nodes reach it, so where a soft device must listen when the nodes
 * are separate hosts.  -ENOENT when the entry names no address of this
 * machine; why says so.
 */
int boot_node_addr(const struct boot_nodes *b, char *ip, size_t len, char *why, size_t whylen);

#endif
