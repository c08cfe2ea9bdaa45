#include "sampling_args.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../util/cli_args.h"
#include "../profile/profile.h"

bool cs_sampling_opt(int c)
{
	return c && strchr("pdrbsc", c);
}

enum { GIVEN_STATE = 1, GIVEN_ON_CPU = 2 };

bool cs_sampling_arg(const char *prog, int c, const char *text,
		     const struct cs_sampling_args *to)
{
	uint64_t n;
	if (c == 'c' || c == 's') {
		*to->given |= c == 'c' ? GIVEN_ON_CPU : GIVEN_STATE;
		if (*to->given == (GIVEN_STATE | GIVEN_ON_CPU)) {
			fprintf(stderr,
				"%s: --on-cpu is --state running: not both "
				"(add running to --state's list)\n",
				prog);
			return false;
		}
	}
	switch (c) {
	case 'p':
		if (!cli_integer(prog, "--pid", text, 1, CLI_PID_MAX, &n))
			return false;
		*to->pid = (int)n;
		return true;
	case 'b':
		*to->nonblocking = 1;
		return true;
	case 'c':
		*to->states |= 1u << CS_PROFILE_RUNNING;
		return true;
	case 's': {
		unsigned set;
		char why[160];
		if (!cs_profile_states_parse(text, &set, why, sizeof(why))) {
			fprintf(stderr, "%s: %s\n", prog, why);
			return false;
		}
		*to->states |= set;
		return true;
	}
	/* a duration past a year or a rate no sampler keeps up with is a
	 * typing mistake */
	case 'd':
		return cli_real(prog, "--duration", text, 0.001, 366 * 86400.0,
				"seconds", to->duration);
	default:
		return cli_real(prog, "--rate", text, 0.01, 10000,
				"samples per second", to->rate);
	}
}
