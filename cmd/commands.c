/* SPDX-License-Identifier: MIT */
/* The command table: each subcommand registers here once it works. */
#include "cmd.h"

#include <stddef.h>

const struct command commands[] = {
	{ "devices", cmd_devices, "list RDMA devices and ports, the soft device included" },
	{ "walk", cmd_walk, "the RDMA random walker: random, mostly valid verbs from many clients" },
	{ NULL, NULL, NULL },
};
