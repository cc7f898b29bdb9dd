/* Debian's debuggers on the kernel: strace -f follows this program as it forks, execs itself
 * and uses SVE, and gdb --batch stops it at a breakpoint with known SVE and SME state, prints
 * VG, Z0, P0, FFR, SVG, SVCR and ZA, sets Z0 and ZA, and lets it go on to report what it then
 * holds. The tools' output is printed as KTAP diagnostics (`# strace: `, `# gdb: `) so the host
 * (tests/tests/debian.rs) can compare it, normalised, with Linux's line for line; the tests here
 * check what the program itself can see. Without strace or gdb (the ordinary userland) those
 * tests skip.
 *
 * gdb's `bt` from a breakpoint in a signal handler shows the interrupted frame below
 * `<signal handler called>`, both for a handler glibc installed (it returns through glibc's
 * restorer) and for one installed by the raw syscall without SA_RESTORER (it returns through
 * the vDSO's __kernel_rt_sigreturn).
 *
 * Modes: no argument: the tests; `fork-exec`: fork, the child execs `sve`, wait; `sve`: use
 * SVE and print the vector length; `gdb-target`: set up Z0, P0, FFR and ZA, stop in
 * checkpoint(), then print Z0's first lane and ZA's first row as they are after it;
 * `gdb-signal`: take SIGUSR1 (glibc's sigaction) and SIGUSR2 (raw rt_sigaction, no
 * SA_RESTORER) in on_signal(), each sent from interrupted(). */
#define _GNU_SOURCE
#include <dirent.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "ktap.h"

#ifndef PR_SME_SET_VL
#define PR_SME_SET_VL 63
#endif

static const char *self = "/bin/tests/debug_tools";

/* 32-byte SVE vectors and 32-byte streaming vectors: short, identical output on every CPU
 * configuration the tests use. */
static void set_lengths(void)
{
	prctl(PR_SVE_SET_VL, 32);
	prctl(PR_SME_SET_VL, 32);
}

static int mode_sve(void)
{
	uint64_t vl;
	asm volatile(".arch armv8.2-a+sve\n"
		     "index z1.b, #0, #1\n"
		     "cntb %0\n"
		     : "=r"(vl)
		     :
		     : "v1", "memory");
	printf("sve vl %llu\n", (unsigned long long)vl);
	return 0;
}

static int mode_fork_exec(void)
{
	int st;
	pid_t p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		char *argv[] = { (char *)self, "sve", NULL };
		char *envp[] = { NULL };
		execve(self, argv, envp);
		_exit(127);
	}
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	printf("child done\n");
	return 0;
}

/* Where gdb stops; it must not be inlined or folded away. */
__attribute__((noinline)) void checkpoint(void)
{
	asm volatile("" ::: "memory");
}

static int mode_gdb_target(void)
{
	uint64_t z0, za0;
	uint8_t row[32];
	set_lengths();
	/* ZA row 0 = 0x11... (written in streaming mode), then out of streaming mode with ZA
	 * kept: Z0 = 0, 1, 2...; P0 = every other byte; FFR all true. */
	asm volatile(".arch armv9-a+sve+sme\n"
		     "smstart\n"
		     "ptrue p1.b\n"
		     "mov z2.b, #0x11\n"
		     "mov w12, #0\n"
		     "mova za0h.b[w12, 0], p1/m, z2.b\n"
		     "smstop sm\n"
		     "index z0.b, #0, #1\n"
		     "ptrue p0.h\n"
		     "setffr\n"
		     :
		     :
		     : "v0", "v2", "p0", "p1", "w12", "memory");
	checkpoint();
	/* Z0 first: entering streaming mode zeroes it. ZA row 0 is read in streaming mode. */
	asm volatile(".arch armv9-a+sve+sme\n"
		     "fmov %0, d0\n"
		     "smstart sm\n"
		     "ptrue p1.b\n"
		     "mov w12, #0\n"
		     "mova z3.b, p1/m, za0h.b[w12, 0]\n"
		     "str z3, [%1]\n"
		     "smstop\n"
		     : "=&r"(z0)
		     : "r"(row)
		     : "v0", "v3", "p1", "w12", "memory");
	memcpy(&za0, row, 8);
	printf("after: z0.d[0]=%#llx za[0].d[0]=%#llx\n", (unsigned long long)z0,
	       (unsigned long long)za0);
	return 0;
}

int main(int argc, char **argv);

static volatile int signals_handled;
static void *unwound[3];
static volatile int nunwound;

__attribute__((noinline)) void on_signal(int sig)
{
	signals_handled++;
	/* libgcc's unwinder through the vDSO's trampoline (its CFI, found through the vDSO's
	 * PT_GNU_EH_FRAME), three frames deep: the CFI gives back only x29 and x30 (Linux's
	 * too), so the frames past the interrupted one are guesses from a wrong SP. */
	if (sig == SIGUSR2)
		nunwound = backtrace(unwound, 3);
	asm volatile("" ::: "memory");
}

/* Sends `sig` to this thread with one svc here, so that the interrupted frame is this
 * function's. */
__attribute__((noinline)) void interrupted(int sig)
{
	register long x0 asm("x0") = getpid();
	register long x1 asm("x1") = gettid();
	register long x2 asm("x2") = sig;
	register long x8 asm("x8") = SYS_tgkill;
	asm volatile("svc #0" : "+r"(x0) : "r"(x1), "r"(x2), "r"(x8) : "memory");
}

static int mode_gdb_signal(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	/* The kernel's struct sigaction: handler, flags, restorer, mask. No SA_RESTORER: the
	 * handler returns to the vDSO's __kernel_rt_sigreturn. */
	struct {
		void (*handler)(int);
		unsigned long flags, restorer, mask;
	} raw = { on_signal, 0, 0, 0 };
	if (sigaction(SIGUSR1, &sa, NULL) != 0 || syscall(SYS_rt_sigaction, SIGUSR2, &raw, NULL, 8) != 0)
		return 1;
	interrupted(SIGUSR1);
	interrupted(SIGUSR2);
	printf("handled %d\n", signals_handled);
	/* The frames backtrace() found in the SIGUSR2 handler, named by where they are: the
	 * vDSO's image is different on each kernel, so only its name shows. */
	uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
	const struct {
		const char *name;
		uintptr_t start;
	} known[] = { { "on_signal", (uintptr_t)on_signal },
		      { "interrupted", (uintptr_t)interrupted },
		      { "main", (uintptr_t)main } };
	printf("unwind:");
	for (int i = 0; i < nunwound; i++) {
		uintptr_t a = (uintptr_t)unwound[i];
		const char *name = "elsewhere";
		uintptr_t best = 0x1000;
		if (vdso && a - vdso < 0x2000)
			name = "vdso";
		/* The nearest of the known functions below (within 4 KiB). */
		for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
			if (a - known[k].start < best) {
				best = a - known[k].start;
				name = known[k].name;
			}
		printf(" %s", name);
	}
	printf("\n");
	return signals_handled == 2 ? 0 : 1;
}

static char out[1 << 16];

/* Runs argv (stdin /dev/null) in a fixed environment, collecting its output in out[]. */
static int run_tool(char *const argv[])
{
	char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/root", "TERM=dumb", "LC_ALL=C", NULL };
	return run(argv, envp, out, sizeof out);
}

/* Prints out[] as diagnostics, each line after `# TAG: `. */
static void show(const char *tag)
{
	char prefix[32];
	snprintf(prefix, sizeof prefix, "# %s: ", tag);
	ktap_lines(prefix, out);
	fflush(stdout);
}

/* The files `strace -ff -o /tmp/st` wrote, one per process, in pid order: each shown after a
 * `process K` line (K counts from 1, so pids do not show). Returns the concatenation in out[]. */
static int collect_strace(void)
{
	char path[64];
	int pids[8], count = 0;
	size_t len = 0;
	DIR *d = opendir("/tmp");
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d)) && count < 8)
		if (strncmp(e->d_name, "st.", 3) == 0)
			pids[count++] = atoi(e->d_name + 3);
	closedir(d);
	for (int i = 0; i < count; i++)
		for (int j = i + 1; j < count; j++)
			if (pids[j] < pids[i]) {
				int t = pids[i];
				pids[i] = pids[j];
				pids[j] = t;
			}
	for (int i = 0; i < count; i++) {
		len += (size_t)snprintf(out + len, sizeof out - len, "process %d\n", i + 1);
		snprintf(path, sizeof path, "/tmp/st.%d", pids[i]);
		int fd = open(path, O_RDONLY);
		ssize_t r;
		while (fd >= 0 && len < sizeof out - 1 &&
		       (r = read(fd, out + len, sizeof out - 1 - len)) > 0)
			len += (size_t)r;
		if (fd >= 0)
			close(fd);
		unlink(path);
	}
	out[len] = 0;
	return count;
}

static void test_strace(void)
{
	if (access("/usr/bin/strace", X_OK) != 0) {
		skip("strace_fork_exec_sve", "no /usr/bin/strace (boot with --debian strace)");
		return;
	}
	char *argv[] = { "/usr/bin/strace", "-f", "-qq", "-ff", "-o", "/tmp/st", "-e", "signal=none",
			 (char *)self, "fork-exec", NULL };
	int st = run_tool(argv);
	int ok = st == 0 && strstr(out, "sve vl ") && strstr(out, "child done");
	int procs = collect_strace();
	show("strace");
	ok = ok && procs == 2 &&
	     strstr(out, "execve(\"/bin/tests/debug_tools\", [\"/bin/tests/debug_tools\", \"sve\"]") &&
	     strstr(out, "write(1, \"sve vl ") && strstr(out, "wait4(") && strstr(out, "exit_group(0)");
	result(ok, "strace_fork_exec_sve", "strace's output lacks the fork, exec or exit");
}

static void test_gdb(void)
{
	if (access("/usr/bin/gdb", X_OK) != 0) {
		skip("gdb_sve_sme_registers", "no /usr/bin/gdb (boot with --debian gdb)");
		return;
	}
	char *argv[] = { "/usr/bin/gdb", "-nx", "--batch", "-ex", "set style enabled off",
			 "-ex", "set width 0", "-ex", "break checkpoint", "-ex", "run",
			 "-ex", "p $vg", "-ex", "p $svg", "-ex", "p $svcr",
			 "-ex", "p/x $z0.b.u", "-ex", "p/x $p0", "-ex", "p/x $ffr",
			 "-ex", "p/x $za[0]", "-ex", "p/x $za[1]",
			 "-ex", "set var $z0.d.u[0] = 0x1122334455667788",
			 "-ex", "set var $za[0][0] = 0xab", "-ex", "p/x $z0.d.u",
			 "-ex", "continue", "--args", (char *)self, "gdb-target", NULL };
	int st = run_tool(argv);
	show("gdb");
	int ok = st == 0 && strstr(out, "after: z0.d[0]=0x1122334455667788 za[0].d[0]=0x11111111111111ab") &&
		 strstr(out, "$1 = 4\n") && strstr(out, "$2 = 4\n");
	result(ok, "gdb_sve_sme_registers",
	       "gdb did not show VG 4 and SVG 4 or the program did not see the values gdb set");
}

static void test_gdb_signal(void)
{
	if (access("/usr/bin/gdb", X_OK) != 0) {
		skip("gdb_signal_backtrace", "no /usr/bin/gdb (boot with --debian gdb)");
		return;
	}
	char *argv[] = { "/usr/bin/gdb", "-nx", "--batch", "-ex", "set style enabled off",
			 "-ex", "set width 0", "-ex", "handle SIGUSR1 SIGUSR2 nostop noprint pass",
			 "-ex", "break on_signal", "-ex", "run", "-ex", "bt", "-ex", "continue",
			 "-ex", "bt", "-ex", "continue", "--args", (char *)self, "gdb-signal", NULL };
	int st = run_tool(argv);
	show("gdb-signal");
	/* Each backtrace: on_signal, <signal handler called>, interrupted, main. */
	int frames = 0;
	for (const char *p = out; (p = strstr(p, "#1  <signal handler called>\n#2  ")); p++) {
		const char *eol = strchr(p + 30, '\n');
		const char *f = strstr(p + 30, " interrupted (");
		frames += f && eol && f < eol;
	}
	/* libgcc's unwinder went on past the vDSO's trampoline, to the caller's x30 (a return
	 * address in interrupted(), after its last call). */
	int ok = st == 0 && frames == 2 && strstr(out, "handled 2") &&
		 strstr(out, "unwind: on_signal vdso interrupted\n");
	result(ok, "gdb_signal_backtrace",
	       "gdb's bt in the handlers did not show interrupted() below <signal handler called>");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "sve") == 0)
		return mode_sve();
	if (argc > 1 && strcmp(argv[1], "fork-exec") == 0)
		return mode_fork_exec();
	if (argc > 1 && strcmp(argv[1], "gdb-target") == 0)
		return mode_gdb_target();
	if (argc > 1 && strcmp(argv[1], "gdb-signal") == 0)
		return mode_gdb_signal();
	if (getpid() == 1) {
		mount("proc", "/proc", "proc", 0, NULL);
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
		mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	}
	printf("TAP version 13\n1..4\n");
	fflush(stdout);
	if (!(getauxval(AT_HWCAP) & HWCAP_SVE)) {
		/* Every test here runs SVE instructions. */
		skip("fork_exec_sve", "no SVE");
		skip("strace_fork_exec_sve", "no SVE");
		skip("gdb_sve_sme_registers", "no SVE");
		test_gdb_signal();
		return ktap_finish();
	}
	char *me[] = { (char *)self, "fork-exec", NULL };
	int st = run_tool(me);
	result(st == 0 && strstr(out, "sve vl ") && strstr(out, "child done"), "fork_exec_sve",
	       "the program itself failed");
	test_strace();
	test_gdb();
	test_gdb_signal();
	return ktap_finish();
}
