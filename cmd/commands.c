/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The command table: each subcommand registers here once it works. */
#include "cmd/cmd.h"

#include <stddef.h>

const struct command commands[] = {
    {"walk", cmd_walk, "the RDMA random walker: random, mostly valid verbs from many clients", 0},
    {"bench", cmd_bench, "latency, bandwidth and message-rate tests over the striped transport", 0},
    {"madstress", cmd_madstress, "SMP MAD stress tester: windows of SMPs to many LIDs, rate and latency",
     CMD_OWNS_SHORT_P | CMD_OWNS_SHORT_V},
    {"cqstat", cmd_cqstat, "live per-stripe and per-CQ counters of running rdmatool processes", 0},
    {"agent", cmd_agent, "node-level transport agent: shared-memory channels, daemon and client", 0},
    {"devices", cmd_devices, "list RDMA devices and ports, the soft device included", 0},
    {"conform", cmd_conform, "named, deterministic verbs conformance cases on any device", 0},
    {"exec", cmd_exec, "run any verbs program (ibv_devinfo, perftest, pyverbs) on the soft device",
     CMD_ARGS_END_OPTIONS},
    {NULL, NULL, NULL, 0},
};
