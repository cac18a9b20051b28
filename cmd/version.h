/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#define RDMATOOL_VERSION "0.1.0"
