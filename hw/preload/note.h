/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The ELF note that marks librdmatool-verbs.so as rdmatool's preload
 * library (note.c puts it in; rdmatool exec checks for it before it runs a
 * program with a --library, so libc, a directory or /dev/zero given there
 * is refused instead of leaving the program without soft0).
 */
#ifndef RDMATOOL_HW_PRELOAD_NOTE_H
#define RDMATOOL_HW_PRELOAD_NOTE_H

#define PRELOAD_NOTE_NAME "rdmatool"	      /* the note's owner */
#define PRELOAD_NOTE_TYPE 0x52544c31u	      /* "RTL1" */
#define PRELOAD_NOTE_DESC "librdmatool-verbs" /* what the file is */

#endif
