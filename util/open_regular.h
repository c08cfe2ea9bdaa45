/* Opening a file that a core, a debug link or the user named, for reading,
 * only when it is a regular file. */
#ifndef CS_UTIL_OPEN_REGULAR_H
#define CS_UTIL_OPEN_REGULAR_H

/* A read-only descriptor of path, or -1 with errno: EISDIR for a
 * directory, ENODEV for anything else that is not a regular file (a FIFO
 * would block the open, a device could be read without end or have side
 * effects when opened), else open's or stat's own. The type is checked
 * before opening and again on the descriptor, so a file swapped in
 * between is refused too; the open itself never waits (O_NONBLOCK). */
int cs_open_regular(const char *path);

#endif
