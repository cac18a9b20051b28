/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool exec: is the preload library ours, and a path for it that ld.so will not split. */
#include "cmd/exec_library.h"
#include "hw/preload/note.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOTE_SEGMENT_MAX 65536 /* a note segment bigger than this is not ours */
#define MAX_PHDRS	 256

static bool read_at(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off) == (ssize_t)len;
}

/* Whether the note segment at [off, off + size) holds our note. */
static bool segment_has_note(int fd, off_t off, size_t size, size_t align)
{
	uint8_t *buf;
	size_t pos = 0;
	bool found = false;

	if (size > NOTE_SEGMENT_MAX || !(buf = malloc(size ? size : 1)))
		return false;
	if (!read_at(fd, buf, size, off)) {
		free(buf);
		return false;
	}
	while (!found && size - pos >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) n;
		size_t name_len, desc_len;

		memcpy(&n, buf + pos, sizeof(n));
		pos += sizeof(n);
		name_len = (n.n_namesz + align - 1) & ~(align - 1);
		desc_len = (n.n_descsz + align - 1) & ~(align - 1);
		if (name_len > size - pos || desc_len > size - pos - name_len)
			break;
		found = n.n_type == PRELOAD_NOTE_TYPE && n.n_namesz == sizeof(PRELOAD_NOTE_NAME) &&
			n.n_descsz == sizeof(PRELOAD_NOTE_DESC) &&
			!memcmp(buf + pos, PRELOAD_NOTE_NAME, sizeof(PRELOAD_NOTE_NAME)) &&
			!memcmp(buf + pos + name_len, PRELOAD_NOTE_DESC, sizeof(PRELOAD_NOTE_DESC));
		pos += name_len + desc_len;
	}
	free(buf);
	return found;
}

static const char *elf_check(int fd)
{
	ElfW(Ehdr) eh;

	if (!read_at(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return "not an ELF file";
	if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) || eh.e_type != ET_DYN)
		return "not a shared library of this machine";
	if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum > MAX_PHDRS)
		return "a malformed ELF file";
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;

		if (!read_at(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))))
			return "a malformed ELF file";
		if (ph.p_type == PT_NOTE &&
		    segment_has_note(fd, (off_t)ph.p_offset, ph.p_filesz, ph.p_align == 8 ? 8 : 4))
			return NULL;
	}
	return "an ELF file, but not rdmatool's preload library (it has no rdmatool ELF note)";
}

const char *exec_library_check(const char *path)
{
	static char why[96];
	struct stat st;
	const char *verdict;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		snprintf(why, sizeof(why), "cannot be opened: %s", strerror(errno));
		return why;
	}
	if (fstat(fd, &st)) {
		snprintf(why, sizeof(why), "cannot be examined: %s", strerror(errno));
		verdict = why;
	} else if (S_ISDIR(st.st_mode)) {
		verdict = "a directory";
	} else if (!S_ISREG(st.st_mode)) {
		verdict = S_ISFIFO(st.st_mode)	? "a FIFO, not a regular file"
			  : S_ISCHR(st.st_mode) ? "a device, not a regular file"
						: "not a regular file";
	} else {
		verdict = elf_check(fd);
	}
	close(fd);
	return verdict;
}

/* A private directory for the link: ours, mode 0700, not a symlink. */
static bool private_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return false;
	return !lstat(dir, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077);
}

/* Links of libraries that are gone (a build tree removed, a test's temporary copy) are removed. */
static void prune_dangling(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;

		if (!strncmp(e->d_name, "librdmatool-verbs.", 18) && fstatat(dirfd(d), e->d_name, &st, 0) &&
		    errno == ENOENT)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

const char *exec_library_safe_path(const char *path, char *out, size_t len, const char **why)
{
	char dir[64], tmp[PATH_MAX], target[PATH_MAX];
	uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a of the path: one link per library */
	ssize_t n;

	if (!strpbrk(path, " :"))
		return path;
	for (const char *c = path; *c; c++)
		hash = (hash ^ (uint8_t)*c) * 0x100000001b3ull;
	snprintf(dir, sizeof(dir), "/tmp/rdmatool-exec.%u", (unsigned)geteuid());
	if (!private_dir(dir)) {
		*why = "/tmp/rdmatool-exec.UID is not a private directory of yours (mode 0700)";
		return NULL;
	}
	if ((size_t)snprintf(out, len, "%s/librdmatool-verbs.%016llx.so", dir, (unsigned long long)hash) >=
	    len) {
		*why = "the link's path is too long";
		return NULL;
	}
	n = readlink(out, target, sizeof(target) - 1);
	if (n >= 0 && (size_t)n == strlen(path) && !memcmp(target, path, (size_t)n))
		return out;
	prune_dangling(dir);
	/* A new link, put in place at once (rename): a concurrent exec sees the old or the new. */
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", out, (long)getpid());
	unlink(tmp);
	if (symlink(path, tmp) || rename(tmp, out)) {
		unlink(tmp);
		*why = "cannot make a link to it in /tmp/rdmatool-exec.UID";
		return NULL;
	}
	return out;
}
