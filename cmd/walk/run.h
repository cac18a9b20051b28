/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Orchestration of a walk: threads in one process, or one process per client. */
#ifndef RDMATOOL_CMD_WALK_RUN_H
#define RDMATOOL_CMD_WALK_RUN_H

#include "cmd/walk/walk.h"

struct walk_result {
	int clients;
	struct walk_stats total;
	struct walk_stats *per_client; /* [clients] */
	double wall_s;
};

/* Signals: SIGINT/SIGTERM stop the walk; crash signals dump the histories. */
void walk_install_signals(void);
extern atomic_bool walk_stop;
extern atomic_int walk_stop_signal;
struct walk_client;
void walk_register_crash_histories(struct walk_client *c, int n);

int walk_run_inproc(const struct walk_config *cfg, struct walk_result *res, const char *cmd);
int walk_run_multinode(const struct walk_config *cfg, struct walk_result *res, const char *cmd);

void walk_print_header(const struct walk_config *cfg, const char *device, bool type2_dropped);
void walk_print_report(const struct walk_config *cfg, const struct walk_result *res);
void walk_write_history_file(const char *path, const struct walk_history *h, int client);

#endif
