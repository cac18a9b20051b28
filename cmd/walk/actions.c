/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The 28 actions, by the action each implements.  Every action checks its preconditions against the client's
 * bookkeeping (0 asks for a redraw), samples its parameters, issues the verb and records the result; they
 * live in one file per kind of object (actions_objects.c, actions_qp.c, actions_data.c, actions_srq.c).
 */
#include "cmd/walk/actions.h"

/* The memory-window actions take the window type, the data actions their own action. */
struct action_entry {
	int (*run)(struct walk_client *c);
	int (*run_type)(struct walk_client *c, int type);
	int (*run_action)(struct walk_client *c, enum walk_action a);
	int type;
};

static const struct action_entry actions[ACT_COUNT] = {
    [ACT_CREATE_CQ] = {.run = walk_do_create_cq},
    [ACT_DESTROY_CQ] = {.run = walk_do_destroy_cq},
    [ACT_ALLOC_PD] = {.run = walk_do_alloc_pd},
    [ACT_DEALLOC_PD] = {.run = walk_do_dealloc_pd},
    [ACT_REG_MR] = {.run = walk_do_reg_mr},
    [ACT_DEREG_MR] = {.run = walk_do_dereg_mr},
    [ACT_ALLOC_MW_TYPE1] = {.run_type = walk_do_alloc_mw, .type = 1},
    [ACT_ALLOC_MW_TYPE2] = {.run_type = walk_do_alloc_mw, .type = 2},
    [ACT_DEALLOC_MW_TYPE1] = {.run_type = walk_do_dealloc_mw, .type = 1},
    [ACT_DEALLOC_MW_TYPE2] = {.run_type = walk_do_dealloc_mw, .type = 2},
    [ACT_BIND_MW_TYPE1] = {.run_type = walk_do_bind_mw, .type = 1},
    [ACT_BIND_MW_TYPE2] = {.run_type = walk_do_bind_mw, .type = 2},
    [ACT_CREATE_RC_QP_PAIR] = {.run = walk_do_create_rc_qp_pair},
    [ACT_CREATE_UD_QP] = {.run = walk_do_create_ud_qp},
    [ACT_MODIFY_QP_ERROR] = {.run = walk_do_modify_qp_error},
    [ACT_DESTROY_QP] = {.run = walk_do_destroy_qp},
    [ACT_CREATE_AH] = {.run = walk_do_create_ah},
    [ACT_DESTROY_AH] = {.run = walk_do_destroy_ah},
    [ACT_SEND] = {.run = walk_do_send},
    [ACT_SEND_WITH_INV] = {.run = walk_do_send_with_inv},
    [ACT_RECV] = {.run = walk_do_recv},
    [ACT_READ] = {.run_action = walk_do_read_write},
    [ACT_WRITE] = {.run_action = walk_do_read_write},
    [ACT_FETCH_ADD] = {.run_action = walk_do_atomic},
    [ACT_COMP_SWAP] = {.run_action = walk_do_atomic},
    [ACT_CREATE_SRQ] = {.run = walk_do_create_srq},
    [ACT_DESTROY_SRQ] = {.run = walk_do_destroy_srq},
    [ACT_POST_SRQ_RECV] = {.run = walk_do_post_srq_recv},
};

int walk_do_action(struct walk_client *c, enum walk_action a)
{
	const struct action_entry *e;

	if ((unsigned)a >= ACT_COUNT)
		return 0;
	e = &actions[a];
	return e->run	       ? e->run(c)
	       : e->run_type   ? e->run_type(c, e->type)
	       : e->run_action ? e->run_action(c, a)
			       : 0;
}
