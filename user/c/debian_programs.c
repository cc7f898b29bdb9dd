/* What Debian's bigger programs ask of the kernel, run the way a user runs them: a Python
 * script with socketpair, an asyncio TCP echo over 127.0.0.1, multiprocessing's Pipe and
 * Manager, pty.fork and os.mkfifo; GNU make -j2 (its jobserver is a FIFO); iproute2's `ip addr`
 * over a netlink route socket; util-linux's dmesg reading the kernel log; and bash's `time` of
 * a busy loop (CPU-time accounting); coreutils' `df -i` (statfs's inode counts). The programs come from the image
 * `./qemu-run.sh --debian python3,make,iproute2,util-linux,bash,coreutils,procps` builds; each test skips when
 * its program is not there. Each program's output is also printed as `# prog: ` lines, which
 * tests/tests/debian.rs compares with Linux's. KTAP; the exit status is nonzero iff a test
 * failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktap.h"

static char out[65536];
static char why[4096];

static char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C",
			"TERM=linux", NULL };

static int exists(const char *p)
{
	return access(p, X_OK) == 0;
}

/* Prints a program's output as `# TAG: ` lines, for the harness to compare with Linux's. */
static void show(const char *tag, const char *text)
{
	char prefix[32];
	snprintf(prefix, sizeof prefix, "# %s: ", tag);
	ktap_lines(prefix, text);
}

/* Each step prints one line; the Python process's exit status says whether all ran. */
static const char python_script[] =
	"import asyncio, multiprocessing, os, pty, socket, sys\n"
	"a, b = socket.socketpair()\n"
	"a.sendall(b'ping'); print('socketpair', b.recv(16).decode())\n"
	"a.close(); print('socketpair eof', b.recv(16)); b.close()\n"
	"async def echo(r, w):\n"
	"    w.write(await r.read(100)); await w.drain(); w.close(); await w.wait_closed()\n"
	"async def main():\n"
	"    srv = await asyncio.start_server(echo, '127.0.0.1', 0)\n"
	"    port = srv.sockets[0].getsockname()[1]\n"
	"    r, w = await asyncio.open_connection('127.0.0.1', port)\n"
	"    w.write(b'hello over tcp'); await w.drain()\n"
	"    print('asyncio', (await r.read(100)).decode(), (await r.read(100)) == b'')\n"
	"    w.close(); await w.wait_closed(); srv.close(); await srv.wait_closed()\n"
	"asyncio.run(main())\n"
	"def child(conn):\n"
	"    conn.send(('from child', os.getppid() == parent)); conn.close()\n"
	"def square(x):\n"
	"    return x * x\n"
	"if __name__ == '__main__':\n"
	"    parent = os.getpid()\n"
	"    p, c = multiprocessing.Pipe()\n"
	"    proc = multiprocessing.Process(target=child, args=(c,)); proc.start()\n"
	"    print('pipe', p.recv()); proc.join(); print('pipe exit', proc.exitcode)\n"
	"    with multiprocessing.Manager() as m:\n"
	"        d = m.dict(); l = m.list(range(3)); d['k'] = sum(l)\n"
	"        print('manager', dict(d), list(l))\n"
	"    with multiprocessing.Pool(2) as pool:\n"
	"        print('pool', pool.map(square, range(5)))\n"
	"    pid, fd = pty.fork()\n"
	"    if pid == 0:\n"
	"        print('in child', os.isatty(0), os.ttyname(0).startswith('/dev/pts/')); sys.stdout.flush(); os._exit(3)\n"
	"    data = b''\n"
	"    while True:\n"
	"        try: chunk = os.read(fd, 100)\n"
	"        except OSError: break\n"
	"        if not chunk: break\n"
	"        data += chunk\n"
	"    print('pty', data.decode().strip(), os.waitpid(pid, 0)[1] >> 8)\n"
	"    os.mkfifo('/tmp/py.fifo')\n"
	"    if os.fork() == 0:\n"
	"        with open('/tmp/py.fifo', 'w') as f: f.write('through the fifo')\n"
	"        os._exit(0)\n"
	"    with open('/tmp/py.fifo') as f: print('fifo', f.read())\n"
	"    os.wait(); os.unlink('/tmp/py.fifo')\n"
	"    print('done')\n";

static const char python_out[] =
	"socketpair ping\n"
	"socketpair eof b''\n"
	"asyncio hello over tcp True\n"
	"pipe ('from child', True)\n"
	"pipe exit 0\n"
	"manager {'k': 3} [0, 1, 2]\n"
	"pool [0, 1, 4, 9, 16]\n"
	"pty in child True True 3\n"
	"fifo through the fifo\n"
	"done\n";

static void test_python(void)
{
	if (!exists("/usr/bin/python3")) {
		skip("python_sockets_pty_fifo", "no /usr/bin/python3 (boot with --debian python3)");
		return;
	}
	FILE *f = fopen("/tmp/prog.py", "w");
	if (!f) {
		result(0, "python_sockets_pty_fifo", "cannot write /tmp/prog.py");
		return;
	}
	fputs(python_script, f);
	fclose(f);
	unlink("/tmp/py.fifo");
	char *argv[] = { "/usr/bin/python3", "-u", "/tmp/prog.py", NULL };
	int st = run(argv, envp, out, sizeof out);
	show("python", out);
	snprintf(why, sizeof why, "status %#x, printed:\n%.3000s", st, out);
	result(st == 0 && strcmp(out, python_out) == 0, "python_sockets_pty_fifo", why);
}

/* Two recipes that can only finish together: each waits for the other's file, so a make that
 * ran them one at a time would hang (the harness's time limit ends it). */
static const char makefile[] =
	"all: a b\n"
	"\t@echo both done\n"
	"a:\n"
	"\t@touch a.started; while [ ! -e b.started ]; do sleep 0.1; done; echo a ran\n"
	"b:\n"
	"\t@touch b.started; while [ ! -e a.started ]; do sleep 0.1; done; sleep 0.3; echo b ran\n"
	".PHONY: all a b\n";

static void test_make(void)
{
	if (!exists("/usr/bin/make")) {
		skip("make_j2_jobserver", "no /usr/bin/make (boot with --debian make)");
		return;
	}
	mkdir("/tmp/mk", 0755);
	unlink("/tmp/mk/a.started");
	unlink("/tmp/mk/b.started");
	FILE *f = fopen("/tmp/mk/Makefile", "w");
	fputs(makefile, f);
	fclose(f);
	char *argv[] = { "/usr/bin/make", "-s", "-j2", "-C", "/tmp/mk", "--no-print-directory", NULL };
	int st = run(argv, envp, out, sizeof out);
	show("make", out);
	snprintf(why, sizeof why, "status %#x, printed:\n%.3000s", st, out);
	result(st == 0 && strcmp(out, "a ran\nb ran\nboth done\n") == 0, "make_j2_jobserver", why);
}

/* lo as a booted system has it once something has brought it up. */
static void test_ip(void)
{
	if (!exists("/usr/sbin/ip") && !exists("/usr/bin/ip")) {
		skip("iproute2_ip_addr", "no ip (boot with --debian iproute2)");
		return;
	}
	const char *ip = exists("/usr/bin/ip") ? "/usr/bin/ip" : "/usr/sbin/ip";
	char *up[] = { (char *)ip, "link", "set", "lo", "up", NULL };
	int st_up = run(up, envp, out, sizeof out);
	char up_out[512];
	snprintf(up_out, sizeof up_out, "%.400s", out);
	char *addr[] = { (char *)ip, "addr", NULL };
	int st = run(addr, envp, out, sizeof out);
	show("ip", out);
	snprintf(why, sizeof why, "ip link set lo up: %#x (%s); ip addr: %#x, printed:\n%.3000s",
		 st_up, up_out, st, out);
	result(st_up == 0 && st == 0 && strstr(out, "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536") &&
		       strstr(out, "link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00") &&
		       strstr(out, "inet 127.0.0.1/8 scope host lo") &&
		       strstr(out, "inet6 ::1/128 scope host"),
	       "iproute2_ip_addr", why);
}

/* The kernel log as dmesg reads it (syslog(2)): lines with a [seconds] stamp. Only the
 * shape is compared; the text is each kernel's own. */
static void test_dmesg(void)
{
	if (!exists("/usr/bin/dmesg")) {
		skip("util_linux_dmesg", "no /usr/bin/dmesg (boot with --debian util-linux)");
		return;
	}
	char *argv[] = { "/usr/bin/dmesg", NULL };
	int st = run(argv, envp, out, sizeof out);
	int lines = 0, stamped = 0;
	for (char *l = out; *l;) {
		char *e = strchr(l, '\n');
		lines++;
		double t;
		char c;
		if (sscanf(l, "[%lf%c", &t, &c) == 2 && c == ']')
			stamped++;
		if (!e)
			break;
		l = e + 1;
	}
	printf("# dmesg: %s\n", st == 0 && lines >= 3 && stamped == lines ? "stamped lines" : "other");
	snprintf(why, sizeof why, "status %#x, %d lines, %d stamped; printed:\n%.1500s", st, lines,
		 stamped, out);
	result(st == 0 && lines >= 3 && stamped == lines, "util_linux_dmesg", why);
}

/* bash's `time` reads the children's user and system time (wait4's rusage / times). */
static void test_time(void)
{
	if (!exists("/bin/bash")) {
		skip("bash_time_user_seconds", "no /bin/bash (boot with --debian bash)");
		return;
	}
	char *argv[] = { "/bin/bash", "-c",
			 "TIMEFORMAT='%U %S %R'; time { i=0; while [ $i -lt 20000 ]; do "
			 "i=$((i+1)); done; }",
			 NULL };
	int st = run(argv, envp, out, sizeof out);
	double user = -1, sys = -1, real = -1;
	int n = sscanf(out, "%lf %lf %lf", &user, &sys, &real);
	printf("# time: %s\n", n == 3 && user > 0 ? "user time counted" : "no user time");
	snprintf(why, sizeof why, "status %#x, printed:\n%.500s", st, out);
	result(st == 0 && n == 3 && user > 0 && sys >= 0 && real > 0, "bash_time_user_seconds",
	       why);
}

/* coreutils' `df -i` over a tmpfs and /proc: statfs's inode counts. The numbers are each
 * kernel's own (RAM, files in the archive), so the lines are compared by shape: a count that is
 * 0 stays 0, any other becomes N (IUse% N%); proc has no inode counts (0 0 0 -). The first
 * column (the source df finds through mountinfo's device numbers) is left out: Svelt's
 * mountinfo does not give each mount its own st_dev yet, so df names /proc's source "-". */
static void test_df_inodes(void)
{
	if (!exists("/usr/bin/df")) {
		skip("coreutils_df_inodes", "no /usr/bin/df (boot with --debian coreutils)");
		return;
	}
	char *argv[] = { "/usr/bin/df", "-i", "/tmp", "/proc", "/dev/shm", NULL };
	int st = run(argv, envp, out, sizeof out);
	static char shape[8192];
	size_t n = 0;
	int lines = 0, zeros = 0, field = 0;
	for (char *p = out; *p && n + 64 < sizeof shape;) {
		size_t w = strcspn(p, " \t\n");
		if (w > 0 && field++ == 0) {
			p += w;
			continue;
		}
		if (w == 0) {
			if (*p == '\n') {
				lines++;
				field = 0;
				shape[n++] = '\n';
			} else if (field > 1 && n && shape[n - 1] != ' ' && shape[n - 1] != '\n') {
				shape[n++] = ' ';
			}
			p++;
			continue;
		}
		size_t d = strspn(p, "0123456789");
		if (d == w || (d + 1 == w && p[d] == '%' && d > 0)) {
			int zero = d == 1 && p[0] == '0';
			zeros += zero;
			n += snprintf(shape + n, sizeof shape - n, "%s%s", zero ? "0" : "N",
				      d == w ? "" : "%");
		} else {
			n += snprintf(shape + n, sizeof shape - n, "%.*s", (int)w, p);
		}
		p += w;
	}
	shape[n] = 0;
	show("df", shape);
	snprintf(why, sizeof why, "status %#x, printed:\n%.1500s", st, out);
	result(st == 0 && lines == 4 && zeros == 3 && strstr(shape, "0 0 0 - /proc") &&
		       strstr(shape, "N N N N% /tmp"),
	       "coreutils_df_inodes", why);
}

/* procps and util-linux tools a user reaches for first: each one's exit status is printed
 * (`# tools: `) and compared with Linux's; their output is each kernel's own. */
static void run_tools(void)
{
	static char *const tools[][6] = {
		{ "/usr/bin/ps", "-ef" },
		{ "/usr/bin/top", "-b", "-n", "1" },
		{ "/usr/bin/vmstat" },
		{ "/usr/bin/free" },
		{ "/usr/bin/uptime" },
		{ "/usr/bin/pmap", "1" },
		{ "/usr/bin/lscpu" },
		{ "/usr/bin/nice", "-n", "5", "/usr/bin/true" },
		{ "/usr/bin/chrt", "-p", "1" },
		{ "/usr/bin/ionice", "-p", "1" },
		{ "/usr/bin/taskset", "-p", "1" },
		{ "/usr/bin/df", "/" },
		{ "/usr/bin/findmnt", "/proc" },
		{ "/usr/bin/nproc" },
	};
	for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
		if (!exists(tools[i][0]))
			continue;
		int st = run(tools[i], envp, out, sizeof out);
		printf("# tools: %s %s: %s %d\n", tools[i][0], tools[i][1] ? tools[i][1] : "",
		       WIFEXITED(st) ? "status" : "signal",
		       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		if (st != 0)
			ktap_lines("#   ", out);
	}
	fflush(stdout);
}

/* The calls these programs made that the kernel does not have: Svelt logs each one
 * ("unknown syscall N (name) from pid P"), Linux has none of these lines. Not a test: the list,
 * as `# enosys: ` lines, is what is left to build. */
static void report_enosys(void)
{
	if (!exists("/usr/bin/dmesg"))
		return;
	char *argv[] = { "/usr/bin/dmesg", NULL };
	if (run(argv, envp, out, sizeof out) != 0)
		return;
	for (char *l = out; *l;) {
		char *e = strchr(l, '\n');
		if (e)
			*e = 0;
		char *u = strstr(l, "unknown syscall");
		if (u)
			printf("# enosys: %s\n", u);
		if (!e)
			break;
		l = e + 1;
	}
}

int main(void)
{
	/* As the first process (--init) nothing has mounted /proc, /dev or /tmp yet. */
	if (getpid() == 1) {
		mount("proc", "/proc", "proc", 0, NULL);
		mkdir("/sys", 0555);
		mount("sysfs", "/sys", "sysfs", 0, NULL);
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
		mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
		mkdir("/dev/pts", 0755);
		mount("devpts", "/dev/pts", "devpts", 0, "ptmxmode=0666");
		mkdir("/dev/shm", 01777);
		mount("tmpfs", "/dev/shm", "tmpfs", 0, NULL);
	}
	printf("TAP version 13\n1..6\n");
	fflush(stdout);
	/* Linux boots with lo down (an init script brings it up): `ip` first, then Python's
	 * TCP over 127.0.0.1. */
	test_ip();
	test_python();
	test_make();
	test_dmesg();
	test_time();
	test_df_inodes();
	run_tools();
	report_enosys();
	return ktap_finish();
}
