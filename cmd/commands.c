/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The command table: each subcommand registers here once it works. */
#include "cmd/cmd.h"
#include "cmd/help.h"

#include <stddef.h>

const struct command commands[] = {
    {"walk", cmd_walk, "the RDMA random walker: random, mostly valid verbs from many clients", 0,
     "[OPTION...]", NULL, NULL},
    {"bench", cmd_bench, "latency, bandwidth and message-rate tests over the striped transport", 0,
     "[OPTION...] <test> | --server[=[ADDR:]PORT]", bench_more_help, bench_complete_arg},
    {"madstress", cmd_madstress, "SMP MAD stress tester: windows of SMPs to many LIDs, rate and latency",
     CMD_OWNS_SHORT_P | CMD_OWNS_SHORT_V, "[OPTION...] [<lids>|-L LIDS|-D PATH] <attr> [mod]", NULL,
     madstress_complete_arg},
    {"cqstat", cmd_cqstat, "live per-stripe and per-CQ counters of running rdmatool processes", 0,
     "[OPTION...] [PID...]", NULL, cqstat_complete_arg},
    {"agent", cmd_agent, "node-level transport agent: shared-memory channels, daemon and client", 0,
     "[OPTION...] foreground|start|stop|status\n"
     "[OPTION...] send ADDR [FILE|-] | recv ADDR | poll ADDR\n"
     "[OPTION...] chan create|destroy NAME | chan list",
     NULL, agent_complete_arg},
    {"devices", cmd_devices, "list RDMA devices and ports, the soft device included", 0, "[OPTION...]", NULL,
     NULL},
    {"conform", cmd_conform, "named, deterministic verbs conformance cases on any device", 0, "[OPTION...]",
     NULL, NULL},
    {"exec", cmd_exec, "run any verbs program (ibv_devinfo, perftest, pyverbs) on the soft device",
     CMD_ARGS_END_OPTIONS, "[OPTION...] [--] PROGRAM [ARGUMENT...]", NULL, exec_complete_arg},
    {NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
