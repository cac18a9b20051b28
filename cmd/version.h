/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#define RDMATOOL_VERSION "0.1.0"
/* The release date of this version: the date every man page's .TH line carries (the Makefile puts it there).
 */
#define RDMATOOL_DATE "2026-11-29"
