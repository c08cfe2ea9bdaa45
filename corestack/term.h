/* A full-screen terminal view with plain ANSI escapes and termios: the
 * alternate screen, keys read one at a time without echo, the size, and
 * the terminal given back as it was on every way out. */
#ifndef CS_CORESTACK_TERM_H
#define CS_CORESTACK_TERM_H

#include <stdbool.h>
#include <stddef.h>

/* Switch to the alternate screen, hide the cursor, and read keys as they
 * are typed, without echo and without waiting (when stdin is a terminal).
 * Registers cs_term_leave with atexit. False when stdout is not a
 * terminal. */
bool cs_term_enter(void);

/* Give the terminal back as cs_term_enter found it; does nothing when it
 * was not entered, or already left. */
void cs_term_leave(void);

/* The window's size; 80x24 when the terminal does not say. */
void cs_term_size(int *rows, int *cols);

/* The next key typed, or -1 when none is waiting. */
int cs_term_key(void);

/* Append text to a line being built, at most width columns wide in all
 * (*used counts them), control characters shown as '?': the names come
 * from the target's memory and must not drive the terminal. Text cut at
 * the width ends in a '…' in its last column. */
void cs_term_put(char *line, size_t cap, int *used, int width,
		 const char *text);

#endif
