/* A static glibc program: what a real C program does at start-up and in its first minutes
 * (TLS set-up, IRELATIVE relocations, stdio, fork/exec/wait, a pthread, signals, a pty). It prints
 * KTAP like the Rust test programs and exits nonzero iff a test failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktap.h"

static int test_stdio(void)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%d %s %.2f %#x", 42, "str", 1.5, 255);
	return strcmp(buf, "42 str 1.50 0xff") == 0;
}

static int test_fork_wait(void)
{
	int st;
	pid_t p = fork();
	if (p < 0)
		return 0;
	if (p == 0)
		_exit(7);
	if (waitpid(p, &st, 0) != p)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 7;
}

static int test_exec(const char *self)
{
	int st;
	pid_t p = fork();
	if (p < 0)
		return 0;
	if (p == 0) {
		char *argv[] = { (char *)self, "--exit-with", "33", NULL };
		char *envp[] = { "SVELT_C=1", NULL };
		execve(self, argv, envp);
		_exit(99);
	}
	if (waitpid(p, &st, 0) != p)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 33;
}

static __thread int tls_value = 5;
static int shared_counter;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	tls_value += 100; /* the thread's own copy */
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&lock);
		shared_counter++;
		pthread_mutex_unlock(&lock);
	}
	return (void *)(long)(tls_value + (long)arg);
}

static int test_pthread(void)
{
	pthread_t t[3];
	void *ret;
	int ok = 1;
	for (long i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 0;
	for (long i = 0; i < 3; i++) {
		if (pthread_join(t[i], &ret) != 0 || (long)ret != 105 + i)
			ok = 0;
	}
	return ok && shared_counter == 3000 && tls_value == 5;
}

static volatile sig_atomic_t got_sig;
static volatile int got_code;

static void on_usr1(int sig, siginfo_t *info, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = info->si_code;
}

static int test_signal(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		return 0;
	if (raise(SIGUSR1) != 0)
		return 0;
	/* raise() is tgkill: si_code SI_TKILL */
	return got_sig == SIGUSR1 && got_code == SI_TKILL;
}

static int test_child_killed(void)
{
	int st;
	pid_t p = fork();
	if (p == 0) {
		pause();
		_exit(0);
	}
	kill(p, SIGTERM);
	if (waitpid(p, &st, 0) != p)
		return 0;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM;
}

static int test_env_auxv(void)
{
	struct utsname u;
	if (uname(&u) != 0 || strcmp(u.sysname, "Linux") != 0)
		return 0;
	return getauxval(AT_PAGESZ) == 4096 && sysconf(_SC_PAGESIZE) == 4096;
}

/* glibc's pty calls: posix_openpt, grantpt, unlockpt, ptsname, then forkpty running a child
 * on the slave as its controlling terminal. Run as the first process on Linux, /dev/pts is
 * not mounted: mount devpts there first. */
static const char *pty_stage = "";

static int test_pty(void)
{
	if (access("/dev/ptmx", F_OK) != 0)
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	if (access("/dev/pts/ptmx", F_OK) != 0) {
		mkdir("/dev/pts", 0755);
		mount("devpts", "/dev/pts", "devpts", 0, "gid=5,mode=620,ptmxmode=000");
	}
	pty_stage = "posix_openpt, grantpt, unlockpt";
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0)
		return 0;
	pty_stage = "ptsname and the slave";
	const char *name = ptsname(m);
	struct stat st;
	if (!name || strncmp(name, "/dev/pts/", 9) != 0 || stat(name, &st) != 0 ||
	    !S_ISCHR(st.st_mode) || st.st_uid != geteuid())
		return 0;
	int s = open(name, O_RDWR | O_NOCTTY);
	if (s < 0 || !isatty(s) || isatty(m) != 1)
		return 0;
	close(s);
	close(m);
	pty_stage = "forkpty";
	int fd;
	struct winsize ws = { .ws_row = 25, .ws_col = 81 };
	pid_t p = forkpty(&fd, NULL, NULL, &ws);
	if (p == 0) {
		struct winsize w;
		int ok = tcgetpgrp(0) == getpid() && getsid(0) == getpid() &&
			 ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_row == 25 && w.ws_col == 81;
		printf(ok ? "child ok\n" : "child bad\n");
		fflush(stdout);
		_exit(0);
	}
	if (p < 0)
		return 0;
	char buf[64];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	buf[got] = 0;
	int eio = errno == EIO;
	int st2;
	waitpid(p, &st2, 0);
	close(fd);
	return eio && strcmp(buf, "child ok\r\n") == 0 && WIFEXITED(st2) && WEXITSTATUS(st2) == 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--exit-with") == 0) {
		const char *e = getenv("SVELT_C");
		return e && strcmp(e, "1") == 0 ? atoi(argv[2]) : 98;
	}
	const char *self = (const char *)getauxval(AT_EXECFN);
	printf("TAP version 13\n1..8\n");
	result(test_stdio(), "printf", "snprintf formatting");
	result(test_fork_wait(), "fork_wait", "fork + waitpid exit status");
	result(self && test_exec(self), "execve_self", "execve of AT_EXECFN with argv/envp");
	result(test_pthread(), "pthread_create_join", "threads, TLS and a mutex");
	result(test_signal(), "sigaction_raise", "SA_SIGINFO handler via raise()");
	result(test_child_killed(), "kill_child", "child killed by SIGTERM");
	result(test_env_auxv(), "uname_auxv", "uname and getauxval");
	int pty_ok = test_pty();
	result(pty_ok, "openpty_forkpty", pty_stage);
	return ktap_finish();
}
