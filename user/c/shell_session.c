/* An interactive shell on the serial console, for a person or a harness typing: as the first
 * process it mounts /proc, /dev and /tmp, starts a new session whose controlling terminal is
 * the serial port (/dev/ttyAMA0: /dev/console never becomes one), runs an interactive shell there
 * with job control (busybox's sh where busybox is installed, else /bin/sh), and reports how the
 * shell ended. tests/tests/debian.rs drives it with busybox's
 * sh (`./qemu-run.sh --debian busybox-static --init /bin/tests/shell_session`). Run any other
 * way (by the test init) it skips, since nobody types. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

int main(void)
{
	printf("TAP version 13\n1..1\n");
	if (getpid() != 1 || access("/bin/sh", X_OK) != 0) {
		printf("ok 1 shell_session # SKIP only as the first process, with a /bin/sh\n");
		printf("# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0\n");
		return 0;
	}
	mount("proc", "/proc", "proc", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		setsid();
		int fd = open("/dev/ttyAMA0", O_RDWR);
		if (fd < 0) {
			perror("open /dev/ttyAMA0");
			_exit(126);
		}
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
		/* busybox's sh where busybox is installed (the tests expect its prompt), else
		 * whatever /bin/sh is (bash in a bash-only set). */
		int bb = access("/bin/busybox", X_OK) == 0;
		char *argv[] = { bb ? "/bin/busybox" : "/bin/sh", bb ? "sh" : "-i", bb ? "-i" : NULL,
				 NULL };
		char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/root", "TERM=dumb", "PS1=$ ", NULL };
		execve(argv[0], argv, envp);
		_exit(127);
	}
	int st = 0;
	int ok = p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st);
	printf("# shell_session: the shell ended with wait status %#x\n", st);
	printf("%s 1 shell_session\n", ok ? "ok" : "not ok");
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n", ok, !ok);
	fflush(stdout);
	tcdrain(1);
	return ok ? 0 : 1;
}
