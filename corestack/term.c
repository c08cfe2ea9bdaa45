#include "term.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "../util/utf8.h"

static bool entered, keys; /* keys: stdin's termios was changed */
static struct termios saved;

static void put_all(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(STDOUT_FILENO, s, n);
		if (w <= 0)
			return; /* a terminal gone: nothing left to restore */
		s += w;
		n -= (size_t)w;
	}
}

bool cs_term_enter(void)
{
	static bool registered;
	if (!isatty(STDOUT_FILENO))
		return false;
	if (!registered && atexit(cs_term_leave) == 0)
		registered = true;
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
		struct termios raw = saved;
		/* Ctrl-C arrives as a key, so that it ends the view the way
		 * q does; nothing stops us behind the target's back. */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
		raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
		raw.c_cc[VMIN] = 0; /* a read returns at once */
		raw.c_cc[VTIME] = 0;
		keys = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	entered = true;
	/* alternate screen, cursor hidden, cleared */
	put_all("\033[?1049h\033[?25l\033[H\033[2J");
	return true;
}

void cs_term_leave(void)
{
	if (!entered)
		return;
	entered = false;
	put_all("\033[?25h\033[?1049l");
	if (keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	keys = false;
}

void cs_term_size(int *rows, int *cols)
{
	struct winsize ws;
	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row &&
	    ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

int cs_term_key(void)
{
	unsigned char c;
	if (!keys || read(STDIN_FILENO, &c, 1) != 1)
		return -1;
	return c;
}

#define CUT_MARK "\xe2\x80\xa6" /* U+2026, one column */

void cs_term_put(char *line, size_t cap, int *used, int width, const char *text)
{
	size_t at = strlen(line), last = at;
	const unsigned char *p = (const unsigned char *)text;
	while (*p && *used < width) {
		size_t n = utf8_sequence_length(p);
		/* C0 and C1 controls, DEL, and what is not UTF-8 */
		bool control = n == 0 || *p < 0x20 || *p == 0x7f ||
			       (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);
		size_t out = control ? 1 : n;
		if (at + out >= cap)
			break;
		last = at;
		if (control)
			line[at] = '?';
		else
			memcpy(line + at, p, n);
		at += out;
		p += n ? n : 1;
		(*used)++;
	}
	/* text cut at the width: its last column says so */
	if (*p && *used >= width && width > 0 && last < at &&
	    last + sizeof(CUT_MARK) <= cap) {
		memcpy(line + last, CUT_MARK, sizeof(CUT_MARK) - 1);
		at = last + sizeof(CUT_MARK) - 1;
	}
	line[at] = '\0';
}
