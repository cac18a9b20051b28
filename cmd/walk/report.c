/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What a walk prints: the header, the final tables or the -j document. */
#include "cmd/walk/run.h"

#include "cmd/cmd.h"
#include "cmd/json.h"
#include "cmd/print.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/resource.h>
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

/* JSON keys: the enum's own names (the text report uses ibv_wc_status_str), in the enum's order. */
/* clang-format off */
#define WC_STATUSES(X) \
	X(SUCCESS) X(LOC_LEN_ERR) X(LOC_QP_OP_ERR) X(LOC_EEC_OP_ERR) X(LOC_PROT_ERR) \
	X(WR_FLUSH_ERR) X(MW_BIND_ERR) X(BAD_RESP_ERR) X(LOC_ACCESS_ERR) X(REM_INV_REQ_ERR) \
	X(REM_ACCESS_ERR) X(REM_OP_ERR) X(RETRY_EXC_ERR) X(RNR_RETRY_EXC_ERR) X(LOC_RDD_VIOL_ERR) \
	X(REM_INV_RD_REQ_ERR) X(REM_ABORT_ERR) X(INV_EECN_ERR) X(INV_EEC_STATE_ERR) X(FATAL_ERR) \
	X(RESP_TIMEOUT_ERR) X(GENERAL_ERR) X(TM_ERR) X(TM_RNDV_INCOMPLETE)
/* clang-format on */
#define WC_ENUM_NAME(s) "IBV_WC_" #s,
static const char *const wc_enum_names[WALK_WC_STATUSES] = {WC_STATUSES(WC_ENUM_NAME)};

static uint64_t wc_total(const struct walk_stats *s, int status)
{
	uint64_t n = 0;

	for (int a = 0; a < ACT_COUNT; a++)
		n += s->wc[a][status];
	return n;
}

/* One printer for both outputs (cmd/print.h): each field is printed once, for text and JSON. */
void walk_print_report(const struct walk_config *cfg, const struct walk_result *r)
{
	struct rusage ru;
	const struct walk_stats *t = &r->total;

	print_begin();
	/* The text header printed these at the start. */
	print_uint(PRINT_JSON, "seed", NULL, cfg->seed);
	print_int(PRINT_JSON, "clients", NULL, cfg->clients);
	print_double(PRINT_JSON, "duration_s", NULL, r->wall_s);
	print_uint(PRINT_JSON, "steps", NULL, t->steps);
	print_double(PRINT_JSON, "steps_per_s", NULL, r->wall_s > 0 ? (double)t->steps / r->wall_s : 0);

	/* The effective mix: each action's share of all issued actions next to its share of the weight. */
	uint64_t issued_sum = 0, weight_sum = 0;

	for (int a = 0; a < ACT_COUNT; a++) {
		issued_sum += t->issued[a];
		weight_sum += cfg->weight[a];
	}
	print_text("\n%-20s %10s %10s %10s %10s %10s %8s %8s\n", "action", "issued", "ok", "redraws",
		   "toward", "errors", "issued%", "weight%");
	print_open_object("actions");
	for (int a = 0; a < ACT_COUNT; a++) {
		print_open_object(walk_action_names[a]);
		print_text("%-20s", walk_action_names[a]);
		print_uint(PRINT_ANY, "issued", " %10llu", t->issued[a]);
		print_uint(PRINT_ANY, "ok", " %10llu", t->ok[a]);
		print_uint(PRINT_ANY, "redraws", " %10llu", t->redraws[a]);
		print_uint(PRINT_ANY, "toward", " %10llu", t->toward[a]);
		print_uint(PRINT_ANY, "errors", " %10llu", t->errors[a]);
		print_double(PRINT_ANY, "issued_share", " %7.2f%%",
			     issued_sum ? 100.0 * (double)t->issued[a] / (double)issued_sum : 0);
		print_double(PRINT_ANY, "weight_share", " %7.2f%%\n",
			     weight_sum ? 100.0 * cfg->weight[a] / (double)weight_sum : 0);
		print_close_object();
	}
	print_close_object();
	uint64_t data_ops = t->issued[ACT_SEND] + t->issued[ACT_SEND_WITH_INV] + t->issued[ACT_RECV] +
			    t->issued[ACT_POST_SRQ_RECV] + t->issued[ACT_READ] + t->issued[ACT_WRITE] +
			    t->issued[ACT_FETCH_ADD] + t->issued[ACT_COMP_SWAP];

	print_double(PRINT_ANY, "data_ops_per_s", "data-path operations per second: %.0f\n",
		     r->wall_s > 0 ? (double)data_ops / r->wall_s : 0);

	/* JSON keys are the enum's own names; the table says what ibv_wc_status_str says. */
	print_text("\ncompletion status                  count\n");
	print_open_object("completions");
	for (int s = 0; s < WALK_WC_STATUSES; s++)
		if (wc_total(t, s)) {
			print_text("%-30s", ibv_wc_status_str((enum ibv_wc_status)s));
			print_uint(PRINT_ANY, wc_enum_names[s], " %10llu\n", wc_total(t, s));
		}
	if (t->wc_other)
		print_uint(PRINT_ANY, "unknown", "(unknown status)               %10llu\n", t->wc_other);
	print_close_object();

	print_text("\nclient      steps   seconds    steps/s\n");
	print_open_array("per_client");
	for (int i = 0; i < r->clients; i++) {
		const struct walk_stats *c = &r->per_client[i];

		print_open_object(NULL);
		print_int(PRINT_ANY, "client", "%6lld", i);
		print_uint(PRINT_ANY, "steps", " %10llu", c->steps);
		print_double(PRINT_ANY, "seconds", " %9.2f", c->seconds);
		print_double(PRINT_ANY, "steps_per_s", " %10.0f\n",
			     c->seconds > 0 ? (double)c->steps / c->seconds : 0);
		print_close_object();
	}
	print_close_array();

	if (cfg->verify) {
		print_open_object("verify");
		const struct {
			const char *key, *text;
			uint64_t n;
		} rows[] = {
		    {"probe_removed", "\nverify: probes through removed keys %llu", t->probes[PROBE_REMOVED]},
		    {"probe_outside", ", outside regions %llu", t->probes[PROBE_OUTSIDE]},
		    {"probe_other_pd", ", from other PDs/QPs %llu", t->probes[PROBE_OTHER_PD]},
		    {"probe_last_byte", ", last bytes %llu", t->probes[PROBE_LAST_BYTE]},
		    {"probe_forbidden", ", not granted by the key's flags %llu", t->probes[PROBE_FORBIDDEN]},
		    {"probe_unaligned", ", unaligned atomics %llu", t->probes[PROBE_UNALIGNED]},
		    {"probe_inv_other_qp", ", SEND_WITH_INV on another QP %llu",
		     t->probes[PROBE_INV_OTHER_QP]},
		    {"probe_cq_full", ", CQs filled to capacity %llu", t->devprobes[0]},
		    {"probe_ud_sqe", ", UD send errors (SQE) %llu", t->devprobes[1]},
		    {"probe_unsignaled", ", unsignaled sends %llu", t->devprobes[2]},
		    {"probe_cq_notify", ", CQ notifications %llu", t->devprobes[3]},
		    {"probe_uc", ", UC pairs %llu", t->devprobes[4]},
		    {"probe_rc_pair", ", RC pairs %llu", t->devprobes[5]},
		    {"probe_verb_rules", ", verb rules %llu", t->devprobes[6]},
		    {"probe_qp_access", ", denied by the QP %llu", t->probes[PROBE_QP_ACCESS]},
		    {"posted_to_err", ", WRs posted to QPs in ERR %llu", t->flush_posts},
		    {"modify_qp", ", RTS-to-RTS modify_qp %llu", t->modifies},
		    {"qkey_changes", " (Q_Key changes %llu)", t->qkey_changes},
		    {"cq_resizes", ", CQs resized %llu", t->cq_resizes},
		    {"mr_reregs", ", MRs reregistered %llu", t->reregs},
		    {"wr_api_posts", ", WRs posted by ibv_wr_* %llu", t->wr_api_posts},
		    {"write_imms", ", RDMA_WRITE_WITH_IMMs %llu", t->write_imms},
		    {"srq_receives_checked", ", SRQ receives checked %llu", t->srq_recvs_checked},
		    {"srq_destroy_busy", " (destroys refused while in use %llu)", t->srq_busy},
		    {"atomics_checked", ", atomics checked %llu", t->atomics_checked},
		    {"messages_checked", ", message headers checked %llu", t->msgs_checked},
		    {"payloads_checked", " (payloads %llu)\n", t->msgs_content_checked},
		};

		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
			print_uint(PRINT_ANY, rows[i].key, rows[i].text, rows[i].n);
		print_close_object();
	}
	print_uint(PRINT_ANY, "objects_alive_at_end", "\nobjects alive when the walk stopped: %llu",
		   t->alive_end);
	print_uint(PRINT_JSON, "destroy_failures", NULL, (unsigned long long)t->destroy_failures);
	if (t->destroy_failures)
		print_text(" (%d destroys failed at shutdown)\n", t->destroy_failures);
	else
		print_text(" (all destroyed at shutdown)\n");
	if (getrusage(RUSAGE_SELF, &ru) == 0) /* this process: in a multinode run, the hub */
		print_uint(PRINT_ANY, "peak_rss_kb", "peak RSS: %llu KiB\n",
			   (unsigned long long)ru.ru_maxrss);
	if (t->outbox_full)
		print_uint(PRINT_ANY, "updates_held_back", "updates held back by a full queue: %llu times\n",
			   t->outbox_full);
	print_open_array("failures");
	for (int i = 0; i < t->nfailures && i < WALK_MAX_FAILURES; i++)
		print_array_string(PRINT_ANY, "FAILURE: %s\n", walk_stats_failure(t, i));
	print_close_array();
	if (t->nfailures > WALK_MAX_FAILURES)
		print_int(PRINT_ANY, "more_failures", "... and %lld more failures\n",
			  t->nfailures - WALK_MAX_FAILURES);
	print_string(PRINT_JSON, "result", NULL, t->nfailures ? "fail" : "pass");
	print_text("result: %s\n", t->nfailures ? "FAIL" : "pass");
	print_end();
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
