/* What a live process's socket is: its protocol, its addresses and, for
 * TCP, its state, from the tables of the process's network namespace
 * (/proc/PID/net/tcp, tcp6, udp, udp6, unix), found by the socket's inode
 * (what /proc/PID/fd/N names: "socket:[INODE]"). */
#ifndef CS_PROCESS_SOCKET_NAMES_H
#define CS_PROCESS_SOCKET_NAMES_H

/* "tcp 127.0.0.1:41234 -> 127.0.0.1:8080 established", "tcp
 * 0.0.0.0:8080 listen", "udp [0:0:0:0:0:0:0:1]:53", "unix /run/x.sock",
 * "unix" (unbound); malloc'd, NULL when no table has the inode. */
char *cs_socket_name(int pid, unsigned long inode);

#endif
