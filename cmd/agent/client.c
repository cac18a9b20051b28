/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmatool agent send|recv|poll|chan: the client API for scripts. */
#include "cmd/agent/agent_cmd.h"
#include "cmd/cmd.h"
#include "cmd/json.h"
#include "cmd/print.h"
#include "core/agent/agent.h"
#include "core/util/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static const char *errno_hint(int rc)
{
	switch (rc) {
	case -ENOENT:
		return "no such channel; create it with 'rdmatool agent chan create NAME'";
	case -ENOTCONN:
		return "no agent runs on this node; start one with 'rdmatool agent start'";
	case -EHOSTDOWN:
		return "the agent has no link to that node: nothing was sent (safe to retry once it is up)";
	case -ECONNRESET:
		return "the link to that node went down with the request in flight: it may or may not have "
		       "been "
		       "done";
	case -EHOSTUNREACH:
		return "no such node in the agent's host list";
	case -ECONNABORTED:
		return "the agent died holding the request: it may or may not have been done";
	case -EBADE:
		return "that node runs another count of agents per node than this one; start every node with "
		       "the same --agents-per-node ('rdmatool agent status' shows the counts)";
	case -EPROTONOSUPPORT:
		return "the agent on this node runs another rdmatool version; restart it with this one "
		       "('rdmatool agent stop', then 'rdmatool agent start')";
	case -EAGAIN:
		return "the channel (or the agent's gateway) is full, or another process holds its lock "
		       "(stopped?); "
		       "retry, or give --timeout";
	case -EBADMSG:
		return "the channel is corrupt (its shared state points outside it) and quarantined; destroy "
		       "it "
		       "and create it again";
	case -ETIMEDOUT:
		return "timed out";
	case -EINTR:
		return "interrupted";
	case -EPERM:
		return "not a private channel of this user (owner and mode 0600 are required)";
	default:
		return strerror(-rc);
	}
}

static int open_channel(const struct agent_opts *o, const char *what, struct agent_client **cl,
			struct agent_chan **h)
{
	char why[512];
	int rc;

	if (o->nargs < 1)
		return usage_error(AGENT_CMD, "%s needs an address: NAME or NODE/NAME", what);
	rc = agent_attach(o->rank, cl, why, sizeof(why));
	if (rc)
		return rc == -EINVAL ? usage_error(AGENT_CMD, "%s", why) : run_error(AGENT_CMD, "%s", why);
	rc = agent_chan_open(*cl, o->args[0], h);
	if (rc == -EINVAL) {
		agent_detach(*cl);
		return usage_error(
		    AGENT_CMD,
		    "'%s' is not a channel address; use NAME or NODE/NAME with NAME of [A-Za-z0-9._-]",
		    o->args[0]);
	}
	if (rc) {
		agent_detach(*cl);
		return run_error(AGENT_CMD, "%s: %s", o->args[0], errno_hint(rc));
	}
	return EXIT_OK;
}

/* The whole of FILE or stdin, up to limit + 1 bytes (one more says it is too long). */
static int read_message(const char *path, size_t limit, char **buf, size_t *len)
{
	int fd = !path || !strcmp(path, "-") ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 65536, n = 0;
	char *b;

	if (fd < 0)
		return -errno;
	b = malloc(cap);
	while (b) {
		if (n == cap) {
			char *nb = realloc(b, cap * 2);

			if (!nb) {
				if (fd != STDIN_FILENO)
					close(fd);
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int rc = r < 0 ? -errno : 0;

			if (fd != STDIN_FILENO)
				close(fd);
			if (rc) {
				free(b);
				return rc;
			}
			*buf = b;
			*len = n;
			return 0;
		}
		n += (size_t)r;
		if (n > limit)
			break;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	free(b);
	return b ? -EMSGSIZE : -ENOMEM; /* longer than limit, or no memory at all */
}

int agent_send_cmd(const struct agent_opts *o)
{
	enum agent_send_mode mode = AGENT_SEND_BUFFERED;
	struct agent_client *cl;
	struct agent_chan *h;
	struct chan_state st;
	size_t len = 0, limit = AGENT_REMOTE_MAX;
	char *buf = NULL;
	int rc;

	if (o->mode && agent_send_mode_parse(o->mode, &mode))
		return usage_error(AGENT_CMD,
				   "--mode='%s' is invalid; use immediately, buffered, deposited or received",
				   o->mode);
	if (o->nargs > 2)
		return usage_error(AGENT_CMD, "send takes an address and at most one FILE (or - for stdin)");
	rc = open_channel(o, "send", &cl, &h);
	if (rc)
		return rc;
	bool remote = !agent_chan_is_local(h);

	if (!remote && agent_poll(h, &st, 0) == 0)
		limit = st.max_msg;
	rc = read_message(o->nargs > 1 ? o->args[1] : NULL, limit, &buf, &len);
	if (rc) {
		agent_chan_close(h);
		agent_detach(cl);
		if (rc == -EMSGSIZE && remote)
			return run_error(
			    AGENT_CMD,
			    "the message is larger than %zu bytes, the limit of a message to another node",
			    limit);
		if (rc == -EMSGSIZE)
			return run_error(AGENT_CMD,
					 "the message is larger than %s's largest message, %zu bytes; "
					 "create the channel with a larger --max-msg",
					 o->args[0], limit);
		return run_error(AGENT_CMD, "cannot read %s: %s", o->nargs > 1 ? o->args[1] : "stdin",
				 strerror(-rc));
	}
	catch_interrupts(on_interrupt); /* a blocking wait ends with -EINTR, not mid-message */
	rc = agent_send(h, buf, len, mode, o->timeout_ms);
	free(buf);
	agent_chan_close(h);
	agent_detach(cl);
	if (rc == -ETIMEDOUT && mode == AGENT_SEND_RECEIVED)
		return run_error(AGENT_CMD,
				 "%s: nobody took the message within %d ms (it stays in the channel)",
				 o->args[0], o->timeout_ms);
	if (rc)
		return run_error(AGENT_CMD, "%s: %s", o->args[0], errno_hint(rc));
	return EXIT_OK;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

static int save_message(const char *dir, long index, const char *buf, size_t len)
{
	char path[PATH_MAX];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%06ld", dir, index);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, buf, len);
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

int agent_recv_cmd(const struct agent_opts *o)
{
	struct agent_client *cl;
	struct agent_chan *h;
	struct chan_state st;
	size_t cap = GW_INLINE, len;
	struct stat sb;
	long got = 0;
	bool write_failed = false;
	char *buf;
	int rc;

	if (o->nargs != 1)
		return usage_error(AGENT_CMD, "recv takes one address: NAME or NODE/NAME");
	if (o->out_dir && (stat(o->out_dir, &sb) || !S_ISDIR(sb.st_mode)))
		return usage_error(AGENT_CMD, "--out=%s is not a directory; create it first", o->out_dir);
	rc = open_channel(o, "recv", &cl, &h);
	if (rc)
		return rc;
	if (agent_chan_is_local(h) && agent_poll(h, &st, 0) == 0)
		cap = st.max_msg ? st.max_msg : 1;
	else if (!agent_chan_is_local(h))
		cap = CHAN_DEFAULT_MAX_MSG; /* a remote channel's own limit is not known here */
	buf = malloc(cap);
	if (!buf) {
		agent_chan_close(h);
		agent_detach(cl);
		return run_error(AGENT_CMD, "out of memory for a %zu-byte message", cap);
	}
	catch_interrupts(on_interrupt);
	rc = 0;
	while (o->count == 0 || got < o->count) {
		rc = agent_recv(h, buf, cap, &len, o->timeout_ms);
		/* A signal that was not ours (SIGCONT, a sanitizer's) wakes the wait early: wait again. */
		if (rc == -EINTR && !interrupted)
			continue;
		if (rc)
			break;
		if (global_opts.json) {
			char hex[65];

			sha256_hex(buf, len, hex);
			printf("{\"seq\":%ld,\"len\":%zu,\"sha256\":\"%s\"}\n", got, len, hex);
		} else if (o->out_dir) {
			rc = save_message(o->out_dir, got, buf, len);
			if (rc) {
				got++;
				write_failed = true;
				break;
			}
		} else {
			fflush(stdout);
			rc = write_all(STDOUT_FILENO, buf, len);
			if (rc)
				break;
		}
		got++;
	}
	fflush(stdout);
	free(buf);
	agent_chan_close(h);
	agent_detach(cl);
	/* With -n 0 the timeout ends a successful drain. */
	if (o->count == 0 && (rc == -ETIMEDOUT || rc == -EAGAIN))
		return EXIT_OK;
	if (rc == -ETIMEDOUT || rc == -EAGAIN)
		return run_error(AGENT_CMD, "%s: %ld of %ld message(s) within %d ms", o->args[0], got,
				 o->count, o->timeout_ms);
	if (rc && write_failed)
		return run_error(AGENT_CMD, "cannot write message %ld to %s: %s", got - 1, o->out_dir,
				 strerror(-rc));
	if (rc)
		return run_error(AGENT_CMD, "%s: %s", o->args[0], errno_hint(rc));
	return EXIT_OK;
}

int agent_poll_cmd(const struct agent_opts *o)
{
	struct agent_client *cl;
	struct agent_chan *h;
	struct chan_state st;
	int rc;

	if (o->nargs != 1)
		return usage_error(AGENT_CMD, "poll takes one address: NAME or NODE/NAME");
	rc = open_channel(o, "poll", &cl, &h);
	if (rc)
		return rc;
	catch_interrupts(on_interrupt);
	/* Without --timeout, poll reports at once; with one, it waits for a message first. */
	rc = agent_poll(h, &st, o->timeout_ms < 0 ? 0 : o->timeout_ms);
	agent_chan_close(h);
	agent_detach(cl);
	if (rc)
		return run_error(AGENT_CMD, "%s: %s", o->args[0], errno_hint(rc));
	print_begin();
	print_string(PRINT_ANY, "channel", "%s:", o->args[0]);
	print_uint(PRINT_ANY, "count", " %llu message(s)", st.count);
	print_uint(PRINT_ANY, "bytes", ", %llu bytes", st.bytes);
	print_bool(PRINT_JSON, "empty", NULL, st.empty);
	print_bool(PRINT_JSON, "full", NULL, st.full);
	print_text("%s%s", st.empty ? ", empty" : "", st.full ? ", full" : "");
	print_uint(PRINT_ANY, "capacity", "; capacity %llu messages", st.capacity_msgs);
	print_uint(PRINT_ANY, "capacity_bytes", ", %llu bytes", st.capacity_bytes);
	print_uint(PRINT_ANY, "max_msg", ", largest %llu\n", st.max_msg);
	print_uint(PRINT_JSON, "sent", NULL, st.sent);
	print_uint(PRINT_JSON, "received", NULL, st.received);
	print_end();
	return EXIT_OK;
}

static int print_name(const char *name, void *arg)
{
	struct json *j = arg;

	if (j)
		json_string(j, NULL, name);
	else
		printf("%s\n", name);
	return 0;
}

int agent_chan_cmd(const struct agent_opts *o)
{
	const char *what = o->nargs ? o->args[0] : NULL;
	struct agent_client *cl;
	char why[512];
	int rc;

	if (!what || (strcmp(what, "list") && o->nargs != 2) || (!strcmp(what, "list") && o->nargs != 1))
		return usage_error(AGENT_CMD, "use 'chan create NAME', 'chan destroy NAME' or 'chan list'");
	rc = agent_attach(o->rank, &cl, why, sizeof(why));
	if (rc)
		return rc == -EINVAL ? usage_error(AGENT_CMD, "%s", why) : run_error(AGENT_CMD, "%s", why);
	if (!strcmp(what, "list")) {
		struct json j;

		if (global_opts.json) {
			json_init(&j, stdout, global_opts.pretty);
			json_begin_object(&j, NULL); /* an object, as every document: {"channels":[...]} */
			json_begin_array(&j, "channels");
		}
		rc = chan_list(agent_client_dir(cl), print_name, global_opts.json ? &j : NULL);
		if (global_opts.json) {
			json_end_array(&j);
			json_end_object(&j);
			json_finish(&j);
		}
	} else if (!strcmp(what, "create")) {
		struct chan_attr a = {.capacity_msgs = (uint32_t)o->capacity,
				      .capacity_bytes = (uint64_t)o->bytes,
				      .max_msg = (uint32_t)o->max_msg};

		rc = agent_chan_create(cl, o->args[1], &a);
		if (rc == -EINVAL) {
			agent_detach(cl);
			return usage_error(
			    AGENT_CMD,
			    "cannot create '%s': the name must be 1..%d of [A-Za-z0-9._-] (not starting with "
			    "'.')",
			    o->args[1], CHAN_NAME_MAX);
		}
		if (rc == -EEXIST) {
			agent_detach(cl);
			return run_error(AGENT_CMD, "channel '%s' already exists", o->args[1]);
		}
		if (rc == -ENOSPC) {
			/* The message names the agent's directory: said before the client lets go of it. */
			int status = run_error(
			    AGENT_CMD,
			    "no room in %s for channel '%s' (its memory is reserved when it is made): "
			    "free space there, or give a smaller --bytes",
			    agent_client_dir(cl), o->args[1]);

			agent_detach(cl);
			return status;
		}
	} else if (!strcmp(what, "destroy")) {
		rc = agent_chan_destroy(cl, o->args[1]);
	} else {
		agent_detach(cl);
		return usage_error(AGENT_CMD, "unknown 'chan %s'; use create, destroy or list", what);
	}
	agent_detach(cl);
	if (rc)
		return run_error(AGENT_CMD, "chan %s: %s", what, errno_hint(rc));
	return EXIT_OK;
}
