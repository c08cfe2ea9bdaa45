#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The guard runs in a child of a multi-threaded debugger: from fork on,
 * only async-signal-safe calls, no malloc, no stdio. */

#define TRACER_WAIT_TICKS 1000 /* 10 s in steps of 10 ms */
#define RECHECK_TICKS 20

static void tick(void)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

/* Read /proc/PID/FILE into buf (NUL-terminated); 0 if the process is
 * gone. */
static int read_proc(int pid, const char *file, char *buf, size_t size)
{
	char path[64] = "/proc/";
	char digits[16];
	size_t n = 0, len = strlen(path);
	do {
		digits[n++] = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid && n < sizeof(digits));
	while (n && len < sizeof(path) - 1)
		path[len++] = digits[--n];
	path[len] = '\0';
	if (len + strlen(file) + 2 > sizeof(path))
		return 0;
	path[len++] = '/';
	memcpy(path + len, file, strlen(file) + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, buf, size - 1);
	close(fd);
	if (got <= 0)
		return 0;
	buf[got] = '\0';
	return 1;
}

/* -1: gone, 1: traced, 0: not traced. */
static int traced(int pid)
{
	char buf[4096];
	if (!read_proc(pid, "status", buf, sizeof(buf)))
		return -1;
	const char *t = strstr(buf, "\nTracerPid:");
	if (!t)
		return 0;
	t += strlen("\nTracerPid:");
	while (*t == ' ' || *t == '\t')
		t++;
	return *t != '0';
}

/* Is its main thread stopped (group stop, T)? */
static int stopped(int pid)
{
	char buf[1024];
	if (!read_proc(pid, "stat", buf, sizeof(buf)))
		return 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'T';
}

static void keep_away_from_signals(void)
{
	/* Not in the debugger's process group (timeout(1) signals that
	 * whole group), and deaf to what ends a session. */
	setsid();
	static const int deaf[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,
				   SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU,
				   SIGUSR1, SIGUSR2, SIGALRM};
	struct sigaction ign = {.sa_handler = SIG_IGN};
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		int is_deaf = 0;
		for (size_t i = 0; i < sizeof(deaf) / sizeof(deaf[0]); i++)
			is_deaf |= deaf[i] == sig;
		sigaction(sig, is_deaf ? &ign : &dfl, NULL);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void close_all_but(int keep)
{
	if (close_range(0, (unsigned)keep - 1, 0) == 0 &&
	    close_range((unsigned)keep + 1, ~0U, 0) == 0)
		return;
	for (int fd = 0; fd < 4096; fd++)
		if (fd != keep)
			close(fd);
}

static void guard(int pid, int fd)
{
	keep_away_from_signals();
	close_all_but(fd);
	char c;
	ssize_t got;
	while ((got = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (got != 0)
		return; /* released, or cannot tell: leave it alone */
	/* The debugger is gone: the kernel detaches the inferior as it
	 * exits; resume it once it has. */
	for (int i = 0; i < TRACER_WAIT_TICKS; i++) {
		int t = traced(pid);
		if (t < 0)
			return;
		if (!t)
			break;
		tick();
	}
	kill(pid, SIGCONT);
	for (int i = 0; i < RECHECK_TICKS; i++) {
		tick();
		if (stopped(pid))
			kill(pid, SIGCONT);
	}
}

int gx_guard_start(int pid)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	pid_t child = fork();
	if (child == 0) {
		/* Twice: the guard is nobody's child in the debugger. */
		close(fds[1]);
		if (fork() == 0)
			guard(pid, fds[0]);
		_exit(0);
	}
	close(fds[0]);
	if (child < 0) {
		close(fds[1]);
		return -1;
	}
	/* The debugger may have reaped it already (ECHILD). */
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	return fds[1];
}

void gx_guard_release(int fd)
{
	if (fd < 0)
		return;
	while (write(fd, "", 1) < 0 && errno == EINTR)
		;
	close(fd);
}
