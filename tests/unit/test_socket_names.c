/* What a socket is (process/socket_names.c), for sockets this test opens
 * itself, against what the kernel's own calls say of them (getsockname,
 * getpeername): TCP connected and listening, over IPv4 and IPv6, UDP, a
 * bound and an unbound unix socket. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../process/socket_names.h"
#include "check.h"

static unsigned long inode_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* "127.0.0.1:8080" or, for IPv6, the full form "[0:0:0:0:0:0:0:1]:8080",
 * from the kernel's sockaddr */
static void text_of(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(buf, n, "%s:%u", ip, ntohs(a->sin_port));
		return;
	}
	const struct sockaddr_in6 *a = (const void *)ss;
	const uint8_t *b = a->sin6_addr.s6_addr;
	int k = snprintf(buf, n, "[");
	for (int g = 0; g < 8; g++)
		k += snprintf(buf + k, n - (size_t)k, "%s%x", g ? ":" : "",
			      (unsigned)(b[2 * g] << 8 | b[2 * g + 1]));
	snprintf(buf + k, n - (size_t)k, "]:%u", ntohs(a->sin6_port));
}

static void local_text(int fd, char *buf, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	text_of(&ss, buf, n);
}

static void peer_text(int fd, char *buf, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	getpeername(fd, (struct sockaddr *)&ss, &len);
	text_of(&ss, buf, n);
}

static void expect(int fd, const char *want, const char *what)
{
	char *got = cs_socket_name(getpid(), inode_of(fd));
	CHECK(got && !strcmp(got, want), "%s: \"%s\", want \"%s\"", what,
	      got ? got : "(null)", want);
	free(got);
}

/* A listening TCP socket of family af on its loopback, and a client
 * connected to it, and the accepted end. */
static int tcp_pair(int af, int *client, int *accepted)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	if (af == AF_INET) {
		struct sockaddr_in *a = (void *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (void *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	int srv = socket(af, SOCK_STREAM, 0);
	if (srv < 0 || bind(srv, (struct sockaddr *)&ss, len) != 0 ||
	    listen(srv, 4) != 0 ||
	    getsockname(srv, (struct sockaddr *)&ss, &len) != 0)
		return -1;
	*client = socket(af, SOCK_STREAM, 0);
	if (*client < 0 || connect(*client, (struct sockaddr *)&ss, len) != 0)
		return -1;
	*accepted = accept(srv, NULL, NULL);
	return srv;
}

static void tcp(int af, const char *proto)
{
	int client, accepted;
	int srv = tcp_pair(af, &client, &accepted);
	if (srv < 0) {
		printf("%s: no loopback for it here, not checked\n", proto);
		return;
	}
	char l[128], r[128], want[300];
	local_text(srv, l, sizeof(l));
	snprintf(want, sizeof(want), "%s %s listen", proto, l);
	expect(srv, want, "listening");
	local_text(client, l, sizeof(l));
	peer_text(client, r, sizeof(r));
	snprintf(want, sizeof(want), "%s %s -> %s established", proto, l, r);
	expect(client, want, "connected");
	close(client);
	close(accepted);
	close(srv);
}

int main(void)
{
	tcp(AF_INET, "tcp");
	tcp(AF_INET6, "tcp6");

	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(u >= 0 && bind(u, (struct sockaddr *)&a, sizeof(a)) == 0,
	      "udp socket");
	char l[128], want[300];
	local_text(u, l, sizeof(l));
	snprintf(want, sizeof(want), "udp %s", l);
	expect(u, want, "udp");
	close(u);

	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/cs-test-%d.sock",
		 (int)getpid());
	int x = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink(sun.sun_path);
	CHECK(x >= 0 && bind(x, (struct sockaddr *)&sun, sizeof(sun)) == 0,
	      "unix socket");
	snprintf(want, sizeof(want), "unix %s", sun.sun_path);
	expect(x, want, "bound unix");
	close(x);
	unlink(sun.sun_path);
	int pair[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0, "socketpair");
	expect(pair[0], "unix", "unbound unix");
	close(pair[0]);
	close(pair[1]);

	char *none = cs_socket_name(getpid(), 1);
	CHECK(!none, "inode 1 named \"%s\"", none ? none : "");
	free(none);
	return check_summary("socket_names");
}
