/* What the C test programs share: KTAP results (a failure's reason printed as diagnostic
 * lines), the totals line, and running a program with its output collected. Each program
 * includes it once; everything is static (and may go unused). */
#ifndef SVELT_KTAP_H
#define SVELT_KTAP_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static int ktap_n, ktap_failed, ktap_passed, ktap_skipped;

/* Prints every line of `text` after `prefix`. */
static void ktap_lines(const char *prefix, const char *text)
{
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		int len = e ? (int)(e - l) : (int)strlen(l);
		printf("%s%.*s\n", prefix, len, l);
		l += len + (e != NULL);
	}
}

static void result(int ok, const char *name, const char *why)
{
	ktap_n++;
	if (ok) {
		ktap_passed++;
		printf("ok %d %s\n", ktap_n, name);
	} else {
		ktap_failed++;
		ktap_lines("# ", why);
		printf("not ok %d %s\n", ktap_n, name);
	}
	fflush(stdout);
}

__attribute__((unused)) static void skip(const char *name, const char *why)
{
	ktap_n++;
	ktap_skipped++;
	printf("ok %d %s # SKIP %s\n", ktap_n, name, why);
	fflush(stdout);
}

/* The totals line; the exit status (nonzero iff a test failed). As the first process the
 * kernel stops when it exits: the console is drained first (Linux drops what is queued). */
static int ktap_finish(void)
{
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n", ktap_passed,
	       ktap_failed, ktap_skipped);
	fflush(stdout);
	if (getpid() == 1)
		tcdrain(1);
	return ktap_failed ? 1 : 0;
}

/* Runs argv with envp, stdin from /dev/null, collecting stdout and stderr together in out
 * (NUL-terminated, at most cap - 1 bytes); returns the wait status (-1 if it could not run). */
__attribute__((unused)) static int run(char *const argv[], char *const envp[], char *out, size_t cap)
{
	int fds[2], st;
	size_t len = 0;
	if (pipe(fds) != 0)
		return -1;
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r = read(fds[0], out + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap - 1)
			break;
	}
	out[len] = 0;
	close(fds[0]);
	if (waitpid(p, &st, 0) != p)
		return -1;
	return st;
}

#endif
