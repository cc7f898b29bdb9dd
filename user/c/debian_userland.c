/* Debian's own programs on the kernel: busybox sh and bash run one POSIX script (pipes,
 * redirections, globbing, a subshell, command substitution, background jobs with wait, trap,
 * ulimit), coreutils list /proc/self/, sort, hash a file and copy with dd, and util-linux's
 * script runs a command on a pseudo-terminal. The programs come from the image
 * `./qemu-run.sh --debian busybox-static,bash,coreutils,bsdutils` builds; each test skips
 * when its program is not there (the ordinary userland has none of them). KTAP, like the other
 * test programs; the exit status is nonzero iff a test failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "ktap.h"

/* The script both shells run, and what it must print. */
static const char script[] =
	"set -e\n"
	"rm -rf /tmp/dsh && mkdir /tmp/dsh && cd /tmp/dsh\n"
	"printf 'b\\na\\nc\\n' > in.txt\n"
	"sort < in.txt > out.txt; cat out.txt | tr '\\n' ' '; echo\n"
	"echo d >> out.txt; wc -l < out.txt\n"
	"touch f1.c f2.c f3.h; echo *.c; echo nothing*.z\n"
	"(cd / && pwd); pwd\n"
	"v=$(echo inner | tr a-z A-Z); echo \"sub $v\"\n"
	"sleep 1 & p=$!; wait $p; echo \"bg $?\"\n"
	"(exit 3) & wait $! || echo \"bg2 $?\"\n"
	"trap 'echo got-usr1' USR1; kill -USR1 $$\n"
	"trap 'echo at-exit' EXIT\n"
	"ulimit -n 64; ulimit -n\n"
	"{ echo e1; echo e2 >&2; } 2>&1 | sort -r\n"
	"false || echo or\n"
	"echo end\n";

static const char script_out[] =
	"a b c \n"
	"4\n"
	"f1.c f2.c\n"
	"nothing*.z\n"
	"/\n"
	"/tmp/dsh\n"
	"sub INNER\n"
	"bg 0\n"
	"bg2 3\n"
	"got-usr1\n"
	"64\n"
	"e2\n"
	"e1\n"
	"or\n"
	"end\n"
	"at-exit\n";

static char out[65536];

static void check_script(const char *name, char *const argv[], char *const envp[])
{
	char why[512];
	int st = run(argv, envp, out, sizeof out);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, sizeof why, "%s: wait status %#x; output:\n%.400s", name, st, out);
		result(0, name, why);
		return;
	}
	if (strcmp(out, script_out) != 0) {
		snprintf(why, sizeof why, "%s printed:\n%.400s", name, out);
		result(0, name, why);
		return;
	}
	result(1, name, "");
}

static int exists(const char *p)
{
	return access(p, X_OK) == 0;
}

/* busybox: its applets as links in a directory of their own, first on PATH. */
static void test_busybox_sh(void)
{
	static const char *applets[] = { "sh", "sort", "cat", "tr", "wc", "rm", "mkdir",
					 "touch", "sleep", "kill" };
	if (!exists("/bin/busybox")) {
		skip("busybox_sh_script", "no /bin/busybox (boot with --debian busybox-static)");
		return;
	}
	mkdir("/tmp/bb", 0755);
	for (size_t i = 0; i < sizeof applets / sizeof *applets; i++) {
		char link[64];
		snprintf(link, sizeof link, "/tmp/bb/%s", applets[i]);
		unlink(link);
		if (symlink("/bin/busybox", link) != 0) {
			result(0, "busybox_sh_script", "symlink in /tmp/bb failed");
			return;
		}
	}
	char *argv[] = { "/tmp/bb/sh", "-c", (char *)script, NULL };
	char *envp[] = { "PATH=/tmp/bb", "HOME=/", NULL };
	check_script("busybox_sh_script", argv, envp);
}

static void test_bash(void)
{
	if (!exists("/bin/bash") || !exists("/usr/bin/sort")) {
		skip("bash_script", "no /bin/bash and coreutils (boot with --debian bash,coreutils)");
		return;
	}
	char *argv[] = { "/bin/bash", "-c", (char *)script, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/", NULL };
	check_script("bash_script", argv, envp);
}

/* The same script as a file with a #! line, run by execve. */
static void test_bash_shebang(void)
{
	if (!exists("/bin/bash") || !exists("/usr/bin/sort")) {
		skip("bash_shebang_script", "no /bin/bash and coreutils");
		return;
	}
	FILE *f = fopen("/tmp/script.sh", "w");
	if (!f) {
		result(0, "bash_shebang_script", "cannot write /tmp/script.sh");
		return;
	}
	fprintf(f, "#!/bin/bash -e\n%s", script);
	fclose(f);
	chmod("/tmp/script.sh", 0755);
	char *argv[] = { "/tmp/script.sh", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/", NULL };
	check_script("bash_shebang_script", argv, envp);
}

static void test_coreutils(void)
{
	char why[1024];
	char *envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };
	if (!exists("/usr/bin/ls")) {
		skip("coreutils_ls_proc_self", "no coreutils (boot with --debian coreutils)");
		skip("coreutils_sort", "no coreutils");
		skip("coreutils_sha256sum", "no coreutils");
		skip("coreutils_dd", "no coreutils");
		return;
	}

	char *ls[] = { "/usr/bin/ls", "-l", "/proc/self/", NULL };
	int st = run(ls, envp, out, sizeof out);
	int ok = st == 0 && strncmp(out, "total ", 6) == 0 && strstr(out, " exe -> /usr/bin/ls\n") &&
		 strstr(out, " cwd -> ") && strstr(out, " status\n") && strstr(out, " maps\n") &&
		 strstr(out, " fd\n") && strstr(out, "dr-x");
	snprintf(why, sizeof why, "status %#x, printed:\n%.900s", st, out);
	result(ok, "coreutils_ls_proc_self", why);

	FILE *f = fopen("/tmp/nums", "w");
	fputs("10\n9\n-3\n100\n", f);
	fclose(f);
	char *sort[] = { "/usr/bin/sort", "-n", "/tmp/nums", NULL };
	st = run(sort, envp, out, sizeof out);
	snprintf(why, sizeof why, "status %#x, printed:\n%.900s", st, out);
	result(st == 0 && strcmp(out, "-3\n9\n10\n100\n") == 0, "coreutils_sort", why);

	f = fopen("/tmp/hashme", "w");
	fputs("svelt\n", f);
	fclose(f);
	char *sha[] = { "/usr/bin/sha256sum", "/tmp/hashme", NULL };
	st = run(sha, envp, out, sizeof out);
	snprintf(why, sizeof why, "status %#x, printed:\n%.900s", st, out);
	result(st == 0 && strcmp(out, "d2d0d761e64de1f832dae8810cacc495d7607abe46c0680d5065289bb97c182f"
				     "  /tmp/hashme\n") == 0,
	       "coreutils_sha256sum", why);

	char *dd[] = { "/usr/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=4096", "count=256", NULL };
	st = run(dd, envp, out, sizeof out);
	snprintf(why, sizeof why, "status %#x, printed:\n%.900s", st, out);
	result(st == 0 && strstr(out, "256+0 records in\n256+0 records out\n1048576 bytes (1.0 MB, "
				      "1.0 MiB) copied"),
	       "coreutils_dd", why);
}


/* util-linux's script(1) (bsdutils): a shell command on a pseudo-terminal, its output copied
 * to stdout and to a log. It needs /dev/ptmx and devpts on /dev/pts (mounted here if not), and
 * the event loop script runs on: signalfd for SIGCHLD and the terminal signals, poll. */
static void test_script(void)
{
	char why[1200];
	if (!exists("/usr/bin/script")) {
		skip("util_linux_script", "no /usr/bin/script (boot with --debian bsdutils)");
		return;
	}
	mkdir("/dev/pts", 0755);
	mount("devpts", "/dev/pts", "devpts", 0, "ptmxmode=0666");
	unlink("/tmp/script.log");
	char *envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", "SHELL=/bin/sh", NULL };
	char *argv[] = { "/usr/bin/script", "-q", "-c", "echo hi; tty", "/tmp/script.log", NULL };
	int st = run(argv, envp, out, sizeof out);
	char log[4096] = "";
	FILE *f = fopen("/tmp/script.log", "r");
	if (f) {
		size_t n = fread(log, 1, sizeof log - 1, f);
		log[n] = 0;
		fclose(f);
	}
	int ok = st == 0 && strstr(out, "hi\r\n/dev/pts/") && strstr(log, "hi\r\n/dev/pts/");
	snprintf(why, sizeof why, "status %#x, printed:\n%.400s\nlog:\n%.600s", st, out, log);
	result(ok, "util_linux_script", why);
}

int main(void)
{
	/* As the first process (--init) nothing has mounted /proc and /dev yet. */
	if (getpid() == 1) {
		mount("proc", "/proc", "proc", 0, NULL);
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
		mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	}
	printf("TAP version 13\n1..8\n");
	fflush(stdout);
	test_busybox_sh();
	test_bash();
	test_bash_shebang();
	test_coreutils();
	test_script();
	return ktap_finish();
}
