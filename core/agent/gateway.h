/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The gateway moved to core/chan/gateway.h (what clients and the agent both map).  This name
 * stays only for core/agent/bootstrap.h, which another change is editing; point it at
 * core/chan/gateway.h and remove this file.
 */
#include "core/chan/gateway.h"
