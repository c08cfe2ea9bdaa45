/* The options every sampling command of the CLI takes the same way
 * (`corestack record`, `corestack top`): --pid, --duration, --rate,
 * --nonblocking. */
#ifndef CS_CORESTACK_SAMPLING_ARGS_H
#define CS_CORESTACK_SAMPLING_ARGS_H

#include <getopt.h>
#include <stdbool.h>

/* Their entries of a getopt_long table: 'p', 'd', 'r' and 'b'. */
/* clang-format off */
#define CS_SAMPLING_LONGOPTS                        \
	{"pid", required_argument, NULL, 'p'},      \
	{"duration", required_argument, NULL, 'd'}, \
	{"rate", required_argument, NULL, 'r'},     \
	{"nonblocking", no_argument, NULL, 'b'}
/* clang-format on */

/* Where a command keeps what they say. */
struct cs_sampling_args {
	int *pid, *nonblocking;
	double *duration, *rate;
};

/* Option c ('p', 'd', 'r' or 'b') with its value text into to; false,
 * with one line naming the option (prog names the command), when the
 * value is out of range. */
bool cs_sampling_arg(const char *prog, int c, const char *text,
		     const struct cs_sampling_args *to);

#endif
