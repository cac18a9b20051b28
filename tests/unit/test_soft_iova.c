/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * MRs registered with an iova (ibv_reg_mr_iova2): keys and SGEs name the
 * memory by the iova, not by its host address; ibv_rereg_mr moves an MR;
 * RDMA ATOMIC WRITE stores 8 aligned bytes and refuses misaligned ones.
 */
#include "tests/unit/soft_fixture.h"
#include "hw/soft/soft.h"

#define IOVA 0x100000000ull

static void write_through_iova_lands_at_the_host_address(void **state)
{
	struct fx *f = *state;
	uint8_t *mem = aligned_alloc(64, 4096);
	struct ibv_mr *mr;
	struct ibv_wc wc;

	assert_non_null(mem);
	memset(mem, 0, 4096);
	mr = soft_reg_mr_iova(f->pd, mem, 4096, IOVA,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	memcpy(f->abuf, "by iova", 8);
	/* Remote side: the target address is in the MR's iova space. */
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 8, f->amr->lkey, IOVA + 100, mr->rkey),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)mem + 100, "by iova");
	/* The host address is not a valid remote address of that MR. */
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 2, f->abuf, 8, f->amr->lkey, (uintptr_t)mem, mr->rkey), 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(hw_dereg_mr(mr), 0);
	free(mem);
}

static void local_sge_in_iova_space(void **state)
{
	struct fx *f = *state;
	uint8_t *mem = aligned_alloc(64, 4096);
	struct ibv_mr *mr;
	struct ibv_wc wc;

	assert_non_null(mem);
	memcpy(mem + 8, "source", 7);
	mr = soft_reg_mr_iova(f->pd, mem, 4096, IOVA, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	/* A's WRITE gathers from the iova-named MR into B's buffer. */
	assert_int_equal(fx_post(f->a, IBV_WR_RDMA_WRITE, 1, (void *)(uintptr_t)(IOVA + 8), 7, mr->lkey,
				 (uintptr_t)f->bbuf, f->bmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)f->bbuf, "source");
	assert_int_equal(hw_dereg_mr(mr), 0);
	free(mem);
}

static void rereg_moves_the_mr(void **state)
{
	struct fx *f = *state;
	uint8_t *other = aligned_alloc(64, 4096);
	struct ibv_wc wc;

	assert_non_null(other);
	memset(other, 0, 4096);
	assert_int_equal(soft_rereg_mr(f->bmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other, 4096, 0), 0);
	memcpy(f->abuf, "moved", 6);
	assert_int_equal(
	    fx_post(f->a, IBV_WR_RDMA_WRITE, 1, f->abuf, 6, f->amr->lkey, (uintptr_t)other + 8, f->bmr->rkey),
	    0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)other + 8, "moved");
	/* Bad input leaves the MR as it was. */
	errno = 0;
	assert_int_equal(soft_rereg_mr(f->bmr, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(
	    soft_rereg_mr(f->bmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE),
	    IBV_REREG_MR_ERR_INPUT);
	assert_ptr_equal(f->bmr->addr, other);
	assert_int_equal(soft_rereg_mr(f->bmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, f->bbuf, FX_BUF, 0), 0);
	free(other);
}

static void atomic_write_stores_eight_aligned_bytes(void **state)
{
	struct fx *f = *state;
	uint64_t value = 0x0123456789abcdefull;
	struct ibv_wc wc;

	memcpy(f->abuf, &value, 8);
	memset(f->bbuf, 0, 64);
	assert_int_equal(fx_post(f->a, IBV_WR_ATOMIC_WRITE, 1, f->abuf, 8, f->amr->lkey,
				 (uintptr_t)f->bbuf + 16, f->bmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_ATOMIC_WRITE);
	assert_memory_equal(f->bbuf + 16, &value, 8);
	/* Misaligned: the responder refuses it (and the QP goes to ERR). */
	assert_int_equal(fx_post(f->a, IBV_WR_ATOMIC_WRITE, 2, f->abuf, 8, f->amr->lkey,
				 (uintptr_t)f->bbuf + 4, f->bmr->rkey),
			 0);
	fx_wait(f->scq, &wc, 2000);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	assert_memory_equal(f->bbuf + 16, &value, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(write_through_iova_lands_at_the_host_address, fx_setup,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(local_sge_in_iova_space, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(rereg_moves_the_mr, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(atomic_write_stores_eight_aligned_bytes, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
