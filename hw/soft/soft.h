/* SPDX-License-Identifier: MIT */
/* The soft RDMA device: a user-space NIC, the embedded default provider. */
#ifndef RDMATOOL_HW_SOFT_H
#define RDMATOOL_HW_SOFT_H

#include "../hw.h"

#define SOFT_DEVICE_NAME "soft0"

#endif
