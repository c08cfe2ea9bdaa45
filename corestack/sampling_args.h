/* The options every sampling command of the CLI takes the same way
 * (`corestack record`, `corestack top`): --pid, --duration, --rate,
 * --nonblocking, and the states kept, --state and --on-cpu. */
#ifndef CS_CORESTACK_SAMPLING_ARGS_H
#define CS_CORESTACK_SAMPLING_ARGS_H

#include <getopt.h>
#include <stdbool.h>

/* Their entries of a getopt_long table: 'p', 'd', 'r', 'b', 's' and 'c'. */
/* clang-format off */
#define CS_SAMPLING_LONGOPTS                        \
	{"pid", required_argument, NULL, 'p'},      \
	{"duration", required_argument, NULL, 'd'}, \
	{"rate", required_argument, NULL, 'r'},     \
	{"nonblocking", no_argument, NULL, 'b'},    \
	{"state", required_argument, NULL, 's'},    \
	{"on-cpu", no_argument, NULL, 'c'}

/* Their lines of a command's --help. */
#define CS_SAMPLING_STATE_HELP                                         \
	"  --state LIST       only threads in these states, a comma\n"  \
	"                     list of running (holds the GVL), waiting\n" \
	"                     (for the GVL), blocked (sleep, I/O, a\n"    \
	"                     lock, a queue, a join) and gc\n"            \
	"  --on-cpu           the same as --state running (not with\n" \
	"                     --state: name running in its list)\n"
/* clang-format on */

/* Where a command keeps what they say. */
struct cs_sampling_args {
	int *pid, *nonblocking;
	double *duration, *rate;
	unsigned *states; /* the states kept (profile.h); 0: all */
	/* which of --state and --on-cpu were given: they do not mix */
	unsigned *given;
};

/* Whether c is one of their options. */
bool cs_sampling_opt(int c);

/* Option c (one of CS_SAMPLING_LONGOPTS) with its value text into to; false,
 * with one line naming the option (prog names the command), when the
 * value is out of range, or --on-cpu comes with --state (whether it would
 * narrow the list or add to it is a guess: the user says it in the list). */
bool cs_sampling_arg(const char *prog, int c, const char *text,
		     const struct cs_sampling_args *to);

#endif
