/* Command-line arguments: numbers range-checked, and one line for an option
 * that is wrong. A value is refused with one line on stderr that names the
 * option and the range it takes; NaN, infinities, overflow, signs where none
 * belongs and trailing junk are all refused, so no option silently takes a
 * value it cannot mean. */
#ifndef CS_UTIL_CLI_ARGS_H
#define CS_UTIL_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* An integer in [min, max]; prog and option name the refusal
 * ("corestack record", "--pid"). */
bool cli_integer(const char *prog, const char *option, const char *text,
		 uint64_t min, uint64_t max, uint64_t *ret);

/* A finite real number in [min, max]; what is the unit, for the message
 * ("seconds", "samples per second"). */
bool cli_real(const char *prog, const char *option, const char *text,
	      double min, double max, const char *what, double *ret);

/* An address as "0x" and hex digits, not 0, nothing after them; false
 * (nothing printed) for anything else. */
bool cli_hex_address(const char *text, uint64_t *ret);

/* The largest process id Linux hands out (PID_MAX_LIMIT on 64-bit). */
#define CLI_PID_MAX 4194304

/* After getopt_long (with opterr = 0 and an optstring starting with ':')
 * returned c for a bad option: one line naming it and pointing at --help,
 * not the whole usage text. */
void cli_unknown_option(const char *prog, int c, char **argv);

#endif
