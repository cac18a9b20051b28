/* SPDX-License-Identifier: MIT */
/* What a walk prints: the header, the final tables or the -j document. */
#include "cmd/walk/run.h"

#include "cmd/cmd.h"
#include "cmd/json.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

void walk_print_header(const struct walk_config *cfg, const char *device, bool type2_dropped)
{
	if (global_opts.json || global_opts.quiet)
		return;
	printf("walk: device %s, seed %llu, %d client%s, %s%s\n", device, (unsigned long long)cfg->seed,
	       cfg->clients, cfg->clients == 1 ? "" : "s",
	       cfg->multinode ? "one process each" : "threads of one process",
	       cfg->verify ? ", --verify" : "");
	if (cfg->steps)
		printf("walk: %llu steps per client\n", (unsigned long long)cfg->steps);
	else
		printf("walk: %d s\n", cfg->duration_s);
	printf("weights:");
	for (int a = 0; a < ACT_COUNT; a++)
		printf("%s %s=%u", a % 6 == 0 ? "\n " : "", walk_action_names[a], cfg->weight[a]);
	printf("\n");
	if (type2_dropped)
		printf("walk: %s has no type-2 memory windows: their weights are 0\n", device);
}

/* JSON keys: the enum's own names (the text report uses ibv_wc_status_str). */
static const char *const wc_enum_names[WALK_WC_STATUSES] = {
    "IBV_WC_SUCCESS",
    "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",
    "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",
    "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",
    "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",
    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",
    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",
    "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",
    "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR",
    "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",
    "IBV_WC_GENERAL_ERR",
    "IBV_WC_TM_ERR",
    "IBV_WC_TM_RNDV_INCOMPLETE",
};

static uint64_t wc_total(const struct walk_stats *s, int status)
{
	uint64_t n = 0;

	for (int a = 0; a < ACT_COUNT; a++)
		n += s->wc[a][status];
	return n;
}

static void print_json(const struct walk_config *cfg, const struct walk_result *r)
{
	const struct walk_stats *t = &r->total;
	struct json j;

	json_init(&j, stdout, global_opts.pretty);
	json_begin_object(&j, NULL);
	json_uint(&j, "seed", cfg->seed);
	json_int(&j, "clients", cfg->clients);
	json_double(&j, "duration_s", r->wall_s);
	json_uint(&j, "steps", t->steps);
	json_double(&j, "steps_per_s", r->wall_s > 0 ? (double)t->steps / r->wall_s : 0);
	json_begin_object(&j, "actions");
	for (int a = 0; a < ACT_COUNT; a++) {
		json_begin_object(&j, walk_action_names[a]);
		json_uint(&j, "issued", t->issued[a]);
		json_uint(&j, "ok", t->ok[a]);
		json_uint(&j, "errors", t->errors[a]);
		json_end_object(&j);
	}
	json_end_object(&j);
	json_begin_object(&j, "completions");
	for (int s = 0; s < WALK_WC_STATUSES; s++)
		if (wc_total(t, s))
			json_uint(&j, wc_enum_names[s], wc_total(t, s));
	json_end_object(&j);
	json_begin_array(&j, "failures");
	for (int i = 0; i < t->nfailures && i < WALK_MAX_FAILURES; i++)
		json_string(&j, NULL, walk_stats_failure(t, i));
	json_end_array(&j);
	json_string(&j, "result", t->nfailures ? "fail" : "pass");
	json_end_object(&j);
	json_finish(&j);
}

void walk_print_report(const struct walk_config *cfg, const struct walk_result *r)
{
	const struct walk_stats *t = &r->total;

	if (global_opts.json) {
		print_json(cfg, r);
		return;
	}
	printf("\n%-20s %10s %10s %10s %10s\n", "action", "issued", "ok", "redraws", "errors");
	for (int a = 0; a < ACT_COUNT; a++)
		printf("%-20s %10llu %10llu %10llu %10llu\n", walk_action_names[a],
		       (unsigned long long)t->issued[a], (unsigned long long)t->ok[a],
		       (unsigned long long)t->redraws[a], (unsigned long long)t->errors[a]);
	printf("\ncompletion status                  count\n");
	for (int s = 0; s < WALK_WC_STATUSES; s++)
		if (wc_total(t, s))
			printf("%-30s %10llu\n", ibv_wc_status_str((enum ibv_wc_status)s),
			       (unsigned long long)wc_total(t, s));
	if (t->wc_other)
		printf("%-30s %10llu\n", "(unknown status)", (unsigned long long)t->wc_other);
	printf("\nclient      steps   seconds    steps/s\n");
	for (int i = 0; i < r->clients; i++) {
		const struct walk_stats *s = &r->per_client[i];

		printf("%6d %10llu %9.2f %10.0f\n", i, (unsigned long long)s->steps, s->seconds,
		       s->seconds > 0 ? (double)s->steps / s->seconds : 0);
	}
	printf("\nobjects alive when the walk stopped: %llu (all destroyed at shutdown%s)\n",
	       (unsigned long long)t->alive_end, t->destroy_failures ? ", with failures" : "");
	if (t->outbox_full)
		printf("updates held back by a full queue: %llu times\n", (unsigned long long)t->outbox_full);
	for (int i = 0; i < t->nfailures && i < WALK_MAX_FAILURES; i++)
		printf("FAILURE: %s\n", walk_stats_failure(t, i));
	if (t->nfailures > WALK_MAX_FAILURES)
		printf("... and %d more failures\n", t->nfailures - WALK_MAX_FAILURES);
	printf("result: %s\n", t->nfailures ? "FAIL" : "pass");
}

void walk_write_history_file(const char *path, const struct walk_history *h, int client)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (fd < 0)
		return;
	flock(fd, LOCK_EX); /* multinode: one client's ring at a time */
	walk_history_dump(h, fd, client);
	flock(fd, LOCK_UN);
	close(fd);
}
