/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * librdmatool-verbs.so: the soft device as a libibverbs device, for any
 * unmodified verbs program (the pattern is libumad2sim's for libibumad).
 *
 * Preloaded (rdmatool exec), it defines libibverbs' exported functions in
 * their own version nodes (libibverbs.map), so the dynamic linker binds a
 * program's ibv_* calls here.  Each call on a soft object goes to hw/soft;
 * each call on a real device's object goes on to libibverbs, found with
 * dlvsym(RTLD_NEXT), so a machine with a real NIC sees both.  The data path
 * (ibv_post_send, ibv_poll_cq ...) and the extended verbs (ibv_create_cq_ex,
 * ibv_wr_*) are libibverbs inline functions that reach hw/soft through the
 * context's ops without passing here.
 *
 * Only the functions of this library's interface are visible: everything
 * else, hw/soft included, is built with hidden visibility.
 */
#ifndef RDMATOOL_HW_PRELOAD_H
#define RDMATOOL_HW_PRELOAD_H

#include "hw/soft/soft.h"

#define PRELOAD_EXPORT __attribute__((visibility("default")))

/* libibverbs' definition of name in version node version, or NULL when libibverbs is not loaded. */
void *preload_next(const char *name, const char *version);

/*
 * The next definition of a function this library overrides, looked up once
 * (a relaxed atomic: two threads may both look it up, with the same result).
 */
#define PRELOAD_NEXT(name, version)                                                                          \
	({                                                                                                   \
		static __typeof__(&name) next_;                                                              \
		__typeof__(&name) fn_ = __atomic_load_n(&next_, __ATOMIC_RELAXED);                           \
		if (!fn_) {                                                                                  \
			fn_ = (__typeof__(&name))preload_next(#name, version);                               \
			__atomic_store_n(&next_, fn_, __ATOMIC_RELAXED);                                     \
		}                                                                                            \
		fn_;                                                                                         \
	})

/* The soft device's struct ibv_device (one per process). */
struct ibv_device *preload_soft_device(void);

static inline bool preload_is_soft_device(const struct ibv_device *dev)
{
	return dev && dev == preload_soft_device();
}

static inline bool preload_is_soft(const struct ibv_context *ctx)
{
	return ctx && hw_soft_provider.owns_context(ctx);
}

static inline const struct hw_ops *preload_soft_ops(void)
{
	return hw_soft_provider.ops;
}

#endif
