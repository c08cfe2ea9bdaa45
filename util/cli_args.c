#include "cli_args.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

bool cli_integer(const char *prog, const char *option, const char *text,
		 uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end = (char *)text;
	errno = 0;
	/* strtoull takes "-1" as a huge number: only digits are accepted */
	unsigned long long n =
		isdigit((unsigned char)*text) ? strtoull(text, &end, 10) : 0;
	if (!isdigit((unsigned char)*text) || *end || errno == ERANGE ||
	    n < min || n > max) {
		fprintf(stderr,
			"%s: %s takes a whole number from %" PRIu64
			" to %" PRIu64 ", not '%s'\n",
			prog, option, min, max, text);
		return false;
	}
	*ret = n;
	return true;
}

bool cli_hex_address(const char *text, uint64_t *ret)
{
	if (strncmp(text, "0x", 2) != 0 || !isxdigit((unsigned char)text[2]))
		return false;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(text + 2, &end, 16);
	if (*end || errno == ERANGE || !n)
		return false;
	*ret = n;
	return true;
}

bool cli_real(const char *prog, const char *option, const char *text,
	      double min, double max, const char *what, double *ret)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (end == text || *end || errno == ERANGE || !isfinite(v) || v < min ||
	    v > max) {
		fprintf(stderr,
			"%s: %s takes %s from %.15g to %.15g, not '%s'\n", prog,
			option, what, min, max, text);
		return false;
	}
	*ret = v;
	return true;
}

void cli_unknown_option(const char *prog, int c, char **argv)
{
	/* getopt_long leaves optind past the offending word */
	const char *word = optind > 0 ? argv[optind - 1] : "?";
	char shortopt[3] = {'-', (char)optopt, 0};
	if (c == '?' && optopt)
		word = shortopt; /* maybe one letter of a bundle such as -xj */
	if (c == ':')
		fprintf(stderr, "%s: %s needs a value (see %s --help)\n", prog,
			word, prog);
	else
		fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n",
			prog, word, prog);
}
