/* What a live process's socket is, from its network namespace's tables
 * (socket_names.h). */
#include "socket_names.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines of one table read at most: a host with more sockets than this is
 * named by its inode alone. */
#define MAX_LINES 200000

/* TCP states by the kernel's number (include/net/tcp_states.h). */
static const char *const tcp_states[] = {
	NULL,         "established", "syn_sent",  "syn_recv",
	"fin_wait1",  "fin_wait2",   "time_wait", "close",
	"close_wait", "last_ack",    "listen",    "closing",
};

/* "0100007F:1F90" (IPv4) or 32 hex digits (IPv6, four 32-bit words in
 * the host's order) and a hex port -> "127.0.0.1:8080", "[::1]:8080". */
static bool address_text(const char *hex, char *buf, size_t size)
{
	const char *colon = strchr(hex, ':');
	if (!colon)
		return false;
	size_t n = (size_t)(colon - hex);
	unsigned port;
	if (sscanf(colon + 1, "%x", &port) != 1)
		return false;
	if (n == 8) {
		uint32_t a;
		if (sscanf(hex, "%8" SCNx32, &a) != 1)
			return false;
		const uint8_t *b = (const uint8_t *)&a;
		snprintf(buf, size, "%u.%u.%u.%u:%u", b[0], b[1], b[2], b[3],
			 port);
		return true;
	}
	if (n != 32)
		return false;
	uint8_t bytes[16];
	for (int w = 0; w < 4; w++) {
		char word[9];
		memcpy(word, hex + 8 * w, 8);
		word[8] = '\0';
		uint32_t v;
		if (sscanf(word, "%" SCNx32, &v) != 1)
			return false;
		memcpy(bytes + 4 * w, &v, 4);
	}
	/* the full form, each group without leading zeros: no :: folding */
	int k = snprintf(buf, size, "[");
	for (int g = 0; g < 8 && k > 0 && (size_t)k < size; g++)
		k += snprintf(buf + k, size - (size_t)k, "%s%x", g ? ":" : "",
			      (unsigned)(bytes[2 * g] << 8 | bytes[2 * g + 1]));
	if (k > 0 && (size_t)k < size)
		snprintf(buf + k, size - (size_t)k, "]:%u", port);
	return true;
}

/* The line of an inet table (tcp, udp, ...) whose inode is inode. */
static char *inet_name(FILE *f, const char *proto, unsigned long inode)
{
	char line[512];
	for (int n = 0; n < MAX_LINES && fgets(line, sizeof(line), f); n++) {
		char local[64], remote[64];
		unsigned st;
		unsigned long ino;
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %*s %*s %lu",
			   local, remote, &st, &ino) != 4 ||
		    ino != inode)
			continue;
		char l[64], r[64];
		if (!address_text(local, l, sizeof(l)) ||
		    !address_text(remote, r, sizeof(r)))
			return NULL;
		bool tcp = !strncmp(proto, "tcp", 3);
		const char *state =
			tcp && st < sizeof(tcp_states) / sizeof(*tcp_states)
				? tcp_states[st]
				: NULL;
		bool connected = tcp ? st != 10
				     : strcmp(r + strlen(r) - 2, ":0");
		char *s;
		if (asprintf(&s, "%s %s%s%s%s%s", proto, l,
			     connected ? " -> " : "", connected ? r : "",
			     state ? " " : "", state ? state : "") < 0)
			return NULL;
		return s;
	}
	return NULL;
}

/* The line of the unix table whose inode is inode: its path, if bound. */
static char *unix_name(FILE *f, unsigned long inode)
{
	char line[4352];
	for (int n = 0; n < MAX_LINES && fgets(line, sizeof(line), f); n++) {
		unsigned long ino;
		int used = 0;
		/* Num RefCount Protocol Flags Type St Inode [Path] */
		if (sscanf(line, " %*s %*s %*s %*s %*s %*s %lu%n", &ino,
			   &used) != 1 ||
		    ino != inode)
			continue;
		char *path = line + used;
		path += strspn(path, " ");
		path[strcspn(path, "\n")] = '\0';
		char *s;
		if (asprintf(&s, "unix%s%s", *path ? " " : "", path) < 0)
			return NULL;
		return s;
	}
	return NULL;
}

char *cs_socket_name(int pid, unsigned long inode)
{
	static const char *const tables[] = {"tcp", "tcp6", "udp", "udp6",
					     "unix"};
	for (size_t t = 0; t < sizeof(tables) / sizeof(*tables); t++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, tables[t]);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		char *s = strcmp(tables[t], "unix")
				  ? inet_name(f, tables[t], inode)
				  : unix_name(f, inode);
		fclose(f);
		if (s)
			return s;
	}
	return NULL;
}
