/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The ELF note of note.h, in a .note section the linker gathers into the library's PT_NOTE segment. */
#include "hw/preload/note.h"

#include <stdint.h>

__attribute__((section(".note.rdmatool"), aligned(4), used)) static const struct {
	uint32_t namesz, descsz, type;
	char name[(sizeof(PRELOAD_NOTE_NAME) + 3) & ~3u];
	char desc[(sizeof(PRELOAD_NOTE_DESC) + 3) & ~3u];
} preload_note = {sizeof(PRELOAD_NOTE_NAME), sizeof(PRELOAD_NOTE_DESC), PRELOAD_NOTE_TYPE, PRELOAD_NOTE_NAME,
		  PRELOAD_NOTE_DESC};
