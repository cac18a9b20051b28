/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* core/agent/bootstrap: --hosts, host files, Slurm node lists, launcher ranks, local-address ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/agent/bootstrap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct boot_nodes *fresh(void)
{
	static struct boot_nodes b;

	memset(&b, 0, sizeof(b));
	b.rank = -1;
	return &b;
}

/* Every variable a launcher may have left in this process's environment. */
static void clear_launcher_env(void)
{
	static const char *const vars[] = {
	    "SLURM_JOB_NODELIST",
	    "SLURM_NODEID",
	    "SLURM_PROCID",
	    "SLURM_LOCALID",
	    "OMPI_COMM_WORLD_RANK",
	    "OMPI_COMM_WORLD_NODE_RANK",
	    "OMPI_COMM_WORLD_LOCAL_RANK",
	    "OMPI_COMM_WORLD_SIZE",
	    "OMPI_COMM_WORLD_LOCAL_SIZE",
	    "PMIX_RANK",
	    "PMIX_LOCAL_SIZE",
	    "PMI_RANK",
	    "MPI_LOCALNRANKS",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* The expansion as one space-separated string, like `scontrol show hostnames | xargs`. */
static const char *expand(const char *list)
{
	static char out[4096];
	struct boot_nodes *b = fresh();
	char why[256];

	if (boot_expand_nodelist(list, b, why, sizeof(why)))
		return "ERROR";
	out[0] = '\0';
	for (uint32_t i = 0; i < b->nodes; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? " " : "", b->hosts[i]);
	return out;
}

static void test_nodelist(void **state)
{
	(void)state;
	assert_string_equal(expand("n1"), "n1");
	assert_string_equal(expand("a,b,c"), "a b c");
	assert_string_equal(expand("n[1-3]"), "n1 n2 n3");
	assert_string_equal(expand("n[01-03,7]"), "n01 n02 n03 n7");
	assert_string_equal(expand("n[01-03,7],gpu[1-2]-ib"), "n01 n02 n03 n7 gpu1-ib gpu2-ib");
	assert_string_equal(expand("r[1-2]n[1-2]"), "r1n1 r1n2 r2n1 r2n2");
	assert_string_equal(expand("node[098-101]"), "node098 node099 node100 node101");
	assert_string_equal(expand("login,c[5]"), "login c5");
	assert_string_equal(expand("x.example.org,y[1-2].example.org"),
			    "x.example.org y1.example.org y2.example.org");
	assert_string_equal(expand("n[1-"), "ERROR");
	assert_string_equal(expand("n[3-1]"), "ERROR");
	assert_string_equal(expand("n[a-b]"), "ERROR");
	assert_string_equal(expand("n]1["), "ERROR");
	assert_string_equal(expand("a,,b"), "ERROR");
	assert_string_equal(expand("n[1-100000]"), "ERROR");
	assert_string_equal(expand(""), "ERROR");
	assert_string_equal(expand("bad name"), "ERROR");
}

static void test_hosts_option(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256];

	(void)state;
	assert_int_equal(boot_parse_hosts("a,b:7000,c", b, why, sizeof(why)), 0);
	assert_int_equal(b->nodes, 3);
	assert_string_equal(b->hosts[1], "b");
	assert_int_equal(b->ports[1], 7000);
	assert_int_equal(b->ports[0], 0);
	assert_string_equal(b->hosts_source, "--hosts");
	assert_int_equal(boot_parse_hosts("a,", fresh(), why, sizeof(why)), -EINVAL);
	assert_int_equal(boot_parse_hosts("a:0", fresh(), why, sizeof(why)), -EINVAL);
	assert_int_equal(boot_parse_hosts("a:70000", fresh(), why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "70000"));
	assert_int_equal(boot_parse_hosts("a:x", fresh(), why, sizeof(why)), -EINVAL);
	assert_int_equal(boot_parse_hosts("", fresh(), why, sizeof(why)), -EINVAL);
}

static void test_hostfile(void **state)
{
	char path[] = "/tmp/rdmatool-hostfile.XXXXXX", why[256];
	struct boot_nodes *b = fresh();
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	(void)state;
	fputs("# cluster\n  n1 slots=4\n\nn2:7001   # spare\nn3\n", f);
	fclose(f);
	assert_int_equal(boot_read_hostfile(path, b, why, sizeof(why)), 0);
	assert_int_equal(b->nodes, 3);
	assert_string_equal(b->hosts[0], "n1");
	assert_int_equal(b->ports[1], 7001);
	f = fopen(path, "w");
	fputs("n1\nn2:99999\n", f);
	fclose(f);
	assert_int_equal(boot_read_hostfile(path, fresh(), why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "line 2"));
	unlink(path);
	assert_int_equal(boot_read_hostfile(path, fresh(), why, sizeof(why)), -ENOENT);
}

static void test_env(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256];

	(void)state;
	clear_launcher_env();
	setenv("SLURM_JOB_NODELIST", "n[1-4]", 1);
	setenv("SLURM_NODEID", "2", 1);
	setenv("PMIX_RANK", "3", 1);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->nodes, 4);
	assert_int_equal(b->rank, 2);
	assert_string_equal(b->rank_source, "SLURM_NODEID");
	assert_string_equal(b->hosts_source, "SLURM_JOB_NODELIST");
	/* A host list given on the command line wins over the launcher's. */
	b = fresh();
	assert_int_equal(boot_parse_hosts("x,y", b, why, sizeof(why)), 0);
	unsetenv("SLURM_NODEID");
	setenv("PMIX_RANK", "1", 1);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->nodes, 2);
	assert_int_equal(b->rank, 1);
	assert_string_equal(b->rank_source, "PMIX_RANK");
	/* Malformed or out of range: an error naming the variable. */
	setenv("PMIX_RANK", "7", 1);
	b = fresh();
	assert_int_equal(boot_parse_hosts("x,y", b, why, sizeof(why)), 0);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "PMIX_RANK"));
	unsetenv("PMIX_RANK");
	setenv("SLURM_JOB_NODELIST", "n[1-", 1);
	assert_int_equal(boot_from_env(fresh(), why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "SLURM_JOB_NODELIST"));
	unsetenv("SLURM_JOB_NODELIST");
	b = fresh();
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->nodes, 0);
	assert_int_equal(b->rank, -1);
}

/* What `srun -N3` gives the task on the second node, also with --mpi=pmix. */
static void test_env_slurm(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256];

	(void)state;
	clear_launcher_env();
	setenv("SLURM_JOB_NODELIST", "node[08-10]", 1);
	setenv("SLURM_NODEID", "1", 1);
	setenv("SLURM_PROCID", "4", 1); /* a task index, not the node's */
	setenv("SLURM_LOCALID", "1", 1);
	setenv("PMIX_RANK", "4", 1);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->nodes, 3);
	assert_string_equal(b->hosts[0], "node08");
	assert_string_equal(b->hosts[2], "node10");
	assert_int_equal(b->rank, 1);
	assert_string_equal(b->rank_source, "SLURM_NODEID");
	assert_string_equal(b->launch_note, "");
	clear_launcher_env();
}

/*
 * `mpirun -N 1 --host n1,n2,n3`: the third node's task is world rank 2 and
 * rank 0 within its node; the agent is rank 2.
 */
static void test_env_openmpi(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256];

	(void)state;
	clear_launcher_env();
	setenv("OMPI_COMM_WORLD_RANK", "2", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
	setenv("OMPI_COMM_WORLD_NODE_RANK", "0", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
	setenv("PMIX_RANK", "2", 1);
	assert_int_equal(boot_parse_hosts("n1,n2,n3", b, why, sizeof(why)), 0);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, 2);
	assert_string_equal(b->rank_source, "OMPI_COMM_WORLD_RANK");
	/* Without a host list too (a client learns its node's agent this way). */
	b = fresh();
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, 2);
	/* Two tasks per node (mpirun -N 2): no world rank is a node's; the agent says how to launch. */
	setenv("OMPI_COMM_WORLD_RANK", "3", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
	b = fresh();
	assert_int_equal(boot_parse_hosts("n1,n2,n3", b, why, sizeof(why)), 0);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, -1);
	assert_non_null(strstr(b->launch_note, "OMPI_COMM_WORLD_LOCAL_SIZE=2"));
	assert_int_equal(boot_rank_from_local(b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "one agent per node"));
	clear_launcher_env();
}

/* PMIx alone (prterun, or another PMIx launcher), and PMI-1 (MPICH's hydra). */
static void test_env_pmix(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256];

	(void)state;
	clear_launcher_env();
	setenv("PMIX_RANK", "1", 1);
	setenv("PMIX_LOCAL_SIZE", "1", 1);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, 1);
	assert_string_equal(b->rank_source, "PMIX_RANK");
	setenv("PMIX_LOCAL_SIZE", "4", 1);
	b = fresh();
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, -1);
	assert_non_null(strstr(b->launch_note, "PMIX_LOCAL_SIZE=4"));
	clear_launcher_env();
	setenv("PMI_RANK", "3", 1);
	setenv("MPI_LOCALNRANKS", "1", 1);
	b = fresh();
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, 3);
	assert_string_equal(b->rank_source, "PMI_RANK");
	clear_launcher_env();
}

/*
 * A host list in another order than the launch: world rank 0 names an entry
 * that is not this machine while entry 1 is.  240.0.0.0/4 is reserved.
 */
static void test_env_order(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256];

	(void)state;
	clear_launcher_env();
	setenv("OMPI_COMM_WORLD_RANK", "0", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
	assert_int_equal(boot_parse_hosts("240.0.0.1,127.0.0.1", b, why, sizeof(why)), 0);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "OMPI_COMM_WORLD_RANK=0 names 240.0.0.1"));
	assert_non_null(strstr(why, "127.0.0.1, entry 1"));
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	b = fresh();
	assert_int_equal(boot_parse_hosts("240.0.0.1,127.0.0.1", b, why, sizeof(why)), 0);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, 1);
	/* No entry is this machine: nothing to compare with, the launcher's rank stands. */
	setenv("OMPI_COMM_WORLD_RANK", "0", 1);
	b = fresh();
	assert_int_equal(boot_parse_hosts("240.0.0.1,240.0.0.2", b, why, sizeof(why)), 0);
	assert_int_equal(boot_from_env(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, 0);
	clear_launcher_env();
}

/* 240.0.0.0/4 is reserved: no machine has those addresses. */
static void test_local_rank(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256];

	(void)state;
	assert_int_equal(boot_parse_hosts("240.0.0.1,127.0.0.1,240.0.0.2", b, why, sizeof(why)), 0);
	assert_int_equal(boot_rank_from_local(b, why, sizeof(why)), 0);
	assert_int_equal(b->rank, 1);
	b = fresh();
	assert_int_equal(boot_parse_hosts("240.0.0.1,240.0.0.2", b, why, sizeof(why)), 0);
	assert_int_equal(boot_rank_from_local(b, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "--rank"));
	b = fresh();
	assert_int_equal(boot_parse_hosts("127.0.0.1,localhost", b, why, sizeof(why)), 0);
	assert_int_equal(boot_rank_from_local(b, why, sizeof(why)), -EINVAL);
}

/* Where this node's soft device must listen: the address its entry names here. */
static void test_node_addr(void **state)
{
	struct boot_nodes *b = fresh();
	char why[256], ip[64];

	(void)state;
	assert_int_equal(boot_parse_hosts("240.0.0.1,127.0.0.1:7000,localhost", b, why, sizeof(why)), 0);
	b->rank = 1;
	assert_int_equal(boot_node_addr(b, ip, sizeof(ip), why, sizeof(why)), 0);
	assert_string_equal(ip, "127.0.0.1");
	b->rank = 2;
	assert_int_equal(boot_node_addr(b, ip, sizeof(ip), why, sizeof(why)), 0);
	assert_string_equal(ip, "127.0.0.1");
	b->rank = 0;
	assert_int_equal(boot_node_addr(b, ip, sizeof(ip), why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "240.0.0.1 (entry 0 of --hosts)"));
	b->rank = 3;
	assert_int_equal(boot_node_addr(b, ip, sizeof(ip), why, sizeof(why)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodelist),	cmocka_unit_test(test_hosts_option),
	    cmocka_unit_test(test_hostfile),	cmocka_unit_test(test_env),
	    cmocka_unit_test(test_local_rank),	cmocka_unit_test(test_env_slurm),
	    cmocka_unit_test(test_env_openmpi), cmocka_unit_test(test_env_pmix),
	    cmocka_unit_test(test_env_order),	cmocka_unit_test(test_node_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
