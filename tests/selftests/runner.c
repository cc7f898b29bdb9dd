// SPDX-License-Identifier: MIT
// /init of the selftests archive (tests/selftests/build.sh): Svelt has no shell, so this static
// program does what Linux's run_kselftest.sh would. It mounts proc, sysfs, devtmpfs and tmpfs (as
// user/src/bin/init.rs does), reads /selftests/list (one "DIR/PROGRAM" a line, optionally
// followed by " # SKIP reason"), and runs every program in order with DIR as its working
// directory (fp-stress starts ./sve-test and friends from there). Each program gets its own
// process group, a pipe as stdout and stderr, and a time limit; its output is passed through
// nested four spaces deep, so its own KTAP ("ok", "# Totals:") stays out of the top level.
//
// The top level is KTAP: `ok N DIR:PROGRAM` (exit 0), `ok N DIR:PROGRAM # SKIP` (exit 4,
// KSFT_SKIP), `not ok N DIR:PROGRAM # exit status S | killed by signal S | TIMEOUT`, then a
// summary line `# selftests: ...` and `svelt-init: exit status 0`. A failing selftest does not
// fail the run: what matters here is that every program comes to an end and the kernel is
// still there. Then the machine is powered off (reboot(RB_POWER_OFF)), on Svelt and on Linux.
//
// A list line `timeout=N` sets the time limit per program in seconds (default 60), a program's
// line may end with its own ` timeout=N`; lines starting with '#' are comments.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIST "/selftests/list"
#define KSFT_SKIP 4

static char *const child_env[] = {
	"PATH=/selftests/arm64:/bin", "HOME=/", "TERM=linux", NULL,
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void out(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(1, s, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (n > 0)
		out(buf, (size_t)n);
}

static void ensure_console(void)
{
	if (fcntl(1, F_GETFD) >= 0)
		return;
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;
	for (int t = 0; t < 3; t++)
		if (fd != t)
			dup2(fd, t);
	if (fd > 2)
		close(fd);
}

static void mount_all(void)
{
	static const char *const m[][3] = {
		{ "proc", "/proc", "proc" },
		{ "sysfs", "/sys", "sysfs" },
		{ "devtmpfs", "/dev", "devtmpfs" },
		{ "tmpfs", "/tmp", "tmpfs" },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		mkdir(m[i][1], 0755);
		if (mount(m[i][0], m[i][1], m[i][2], 0, NULL) < 0 &&
		    !(errno == EBUSY && strcmp(m[i][2], "devtmpfs") == 0))
			say("# mount %s on %s: %s\n", m[i][2], m[i][1], strerror(errno));
	}
}

// Reaps every child that has ended; returns the status of `pid` if it was among them.
static int reap(pid_t pid, int *status)
{
	int found = 0, st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == pid) {
			*status = st;
			found = 1;
		}
	}
	return found;
}

// Copies what the program wrote to our stdout, each line indented by four spaces.
struct nest {
	char line[4096];
	size_t len;
};

static void nest_flush(struct nest *n)
{
	if (n->len == 0)
		return;
	out("    ", 4);
	out(n->line, n->len);
	if (n->line[n->len - 1] != '\n')
		out("\n", 1);
	n->len = 0;
}

static void nest_feed(struct nest *n, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (c == '\r')
			continue;
		n->line[n->len++] = c;
		if (c == '\n' || n->len == sizeof(n->line))
			nest_flush(n);
	}
}

enum outcome { ENDED, TIMED_OUT, NOT_STARTED };

// Runs DIR/PROG; returns how it went, its wait status in *status and its wall time in *secs.
static enum outcome run(const char *dir, const char *prog, int timeout, int *status, double *secs)
{
	int p[2];
	double t0 = now();
	if (pipe2(p, O_CLOEXEC) < 0) {
		say("# pipe: %s\n", strerror(errno));
		return NOT_STARTED;
	}
	pid_t pid = fork();
	if (pid < 0) {
		say("# fork: %s\n", strerror(errno));
		close(p[0]);
		close(p[1]);
		return NOT_STARTED;
	}
	if (pid == 0) {
		setpgid(0, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0 && null != 0) {
			dup2(null, 0);
			close(null);
		}
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (chdir(dir) < 0) {
			dprintf(2, "chdir %s: %s\n", dir, strerror(errno));
			_exit(127);
		}
		char path[512];
		snprintf(path, sizeof(path), "./%s", prog);
		char *argv[] = { path, NULL };
		execve(path, argv, child_env);
		dprintf(2, "execve %s/%s: %s\n", dir, prog, strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(p[1]);

	struct nest n = { .len = 0 };
	double deadline = t0 + timeout;
	int ended = 0, open_pipe = 1, timed_out = 0;
	double ended_at = 0, last_read = t0;
	char buf[4096];
	for (;;) {
		if (!ended && reap(pid, status)) {
			ended = 1;
			ended_at = now();
			last_read = ended_at;
		}
		// After the program ends, take everything left in the pipe, however long our own
		// console takes to print it (a pipe holds 64 KiB, and a guest's console under TCG
		// prints a few KiB a second), then stop at its end, or when its remaining children
		// have written nothing for a second, or a minute after the end at most.
		if (ended && (!open_pipe || now() > last_read + 1.0 || now() > ended_at + 60.0))
			break;
		if (!ended && now() > deadline) {
			timed_out = 1;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			break;
		}
		if (!open_pipe) {
			usleep(20000);
			continue;
		}
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		int r = poll(&pfd, 1, 100);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0) {
			ssize_t got = read(p[0], buf, sizeof(buf));
			if (got > 0) {
				nest_feed(&n, buf, (size_t)got);
				last_read = now();
			} else if (got == 0 || errno != EINTR)
				open_pipe = 0;
		}
	}
	// Whatever it started and left behind goes too. What is still in the pipe then (after a
	// time-out, or the minute's limit above) is the program's output as well: it is printed.
	// (At most 1 MiB: a writer outside the group could keep the pipe full.)
	kill(-pid, SIGKILL);
	size_t left = 1 << 20;
	while (open_pipe && left >= sizeof(buf)) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		if (poll(&pfd, 1, 0) <= 0)
			break;
		ssize_t got = read(p[0], buf, sizeof(buf));
		if (got <= 0)
			break;
		nest_feed(&n, buf, (size_t)got);
		left -= (size_t)got;
	}
	nest_flush(&n);
	close(p[0]);
	int dummy;
	reap(-1, &dummy);
	*secs = now() - t0;
	return timed_out ? TIMED_OUT : ENDED;
}

int main(void)
{
	ensure_console();
	setvbuf(stdout, NULL, _IONBF, 0);
	mount_all();

	int timeout = 60;

	FILE *f = fopen(LIST, "r");
	if (!f) {
		say("# %s: %s\n", LIST, strerror(errno));
		say("svelt-init: exit status 1\n");
		sync();
		reboot(RB_POWER_OFF);
		return 1;
	}
	char *lines[1024];
	size_t count = 0;
	char line[512];
	while (count < 1024 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] == 0 || line[0] == '#')
			continue;
		if (strncmp(line, "timeout=", 8) == 0) {
			if (atoi(line + 8) > 0)
				timeout = atoi(line + 8);
			continue;
		}
		lines[count++] = strdup(line);
	}
	fclose(f);

	say("TAP version 13\n");
	say("# selftests: %zu programs, %d s each at most\n", count, timeout);
	say("1..%zu\n", count);
	unsigned pass = 0, fail = 0, skip = 0, timeouts = 0, signalled = 0, started = 0, ended = 0;
	double total0 = now();
	for (size_t i = 0; i < count; i++) {
		char *l = lines[i];
		char *why = strstr(l, " # SKIP");
		if (why) {
			*why = 0;
			why += 7;
			while (*why == ' ')
				why++;
		}
		int limit = timeout;
		char *own = strstr(l, " timeout=");
		if (own) {
			*own = 0;
			if (atoi(own + 9) > 0)
				limit = atoi(own + 9);
		}
		char *slash = strchr(l, '/');
		if (!slash) {
			say("not ok %zu %s # bad list line\n", i + 1, l);
			fail++;
			continue;
		}
		*slash = 0;
		char dir[256];
		snprintf(dir, sizeof(dir), "/selftests/%s", l);
		const char *prog = slash + 1;
		if (why) {
			say("ok %zu %s:%s # SKIP %s\n", i + 1, l, prog, why);
			skip++;
			continue;
		}
		say("# selftests: %s: %s\n", l, prog);
		int st = 0;
		double secs = 0;
		enum outcome o = run(dir, prog, limit, &st, &secs);
		if (o != NOT_STARTED) {
			started++;
			say("# %s:%s: %.1f s\n", l, prog, secs);
		}
		if (o == ENDED)
			ended++;
		if (o == NOT_STARTED) {
			say("not ok %zu %s:%s # not started\n", i + 1, l, prog);
			fail++;
		} else if (o == TIMED_OUT) {
			say("not ok %zu %s:%s # TIMEOUT %d seconds\n", i + 1, l, prog, limit);
			timeouts++;
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			say("ok %zu %s:%s\n", i + 1, l, prog);
			pass++;
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == KSFT_SKIP) {
			say("ok %zu %s:%s # SKIP\n", i + 1, l, prog);
			skip++;
		} else if (WIFEXITED(st)) {
			say("not ok %zu %s:%s # exit status %d\n", i + 1, l, prog, WEXITSTATUS(st));
			fail++;
		} else {
			say("not ok %zu %s:%s # killed by signal %d (%s)\n", i + 1, l, prog,
			    WTERMSIG(st), strsignal(WTERMSIG(st)));
			signalled++;
		}
	}
	// Not a "# Totals:" line: qemu-run.sh would turn fail>0 into a failed run.
	say("# selftests: %zu programs, %u started, %u ended: pass:%u fail:%u skip:%u signalled:%u timeout:%u in %.1f s\n",
	    count, started, ended, pass, fail, skip, signalled, timeouts, now() - total0);
	say("svelt-init: exit status 0\n");
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
