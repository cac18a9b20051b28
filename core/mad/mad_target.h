/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Parsing where SMPs go: LID lists ("2,4-9") and directed routes ("0,1,3"). */
#ifndef RDMATOOL_CORE_MAD_TARGET_H
#define RDMATOOL_CORE_MAD_TARGET_H

#include "core/mad/mad_smp.h"

#include <stddef.h>
#include <stdint.h>

#define MAD_LID_MIN 1
#define MAD_LID_MAX 0xbfff /* the last unicast LID */
#define MAD_MAX_DESTS 16384

/*
 * Parses a comma-separated list of unicast LIDs and ranges (decimal or
 * 0x hex): "2,4-9,0x20".  Duplicates are kept out.  On success returns the
 * number of LIDs and sets *lids (malloc'd, caller frees).  On error returns
 * -1 and writes a one-line reason to err.
 */
int mad_parse_lid_list(const char *text, uint16_t **lids, char *err, size_t errlen);

/*
 * Parses a directed route as smpdump writes it: "0,1,3" = start at the
 * local port (0), leave through port 1, then port 3.  "0" alone is the
 * local port itself.  Returns 0, or -1 with a reason in err.
 */
int mad_parse_dr_path(const char *text, struct smp_route *route, char *err, size_t errlen);

/* Writes the route as the user typed it ("0,1,3") or the LID in decimal. */
void mad_route_format(const struct smp_route *route, char *buf, size_t len);

/* Parses an attribute id or modifier: decimal or 0x hex, at most max. */
int mad_parse_number(const char *text, uint32_t max, uint32_t *value);

#endif
