/* SPDX-License-Identifier: MIT */
/*
 * Pinning the processes of a two-process benchmark each to its own CPU
 * (cmd/bench/pin.c): the pair baselines and the agents of agent_lat.
 */
#ifndef RDMATOOL_CMD_BENCH_PIN_H
#define RDMATOOL_CMD_BENCH_PIN_H

#include <stdbool.h>

/* The first two CPUs this process may run on: false when it may run on fewer. */
bool bench_two_cpus(int cpu[2]);
/* The calling process (and the threads it starts later) runs on cpu only. */
void bench_pin_to(int cpu);

#endif
