/* The command line from Ruby's own copy of its argc and argv (origarg,
 * which ruby_sysinit sets from main's): the strings on the initial stack
 * that a core's notes keep only the start of (80 bytes from the kernel,
 * argv[0] from gcore). Every pointer and length is checked, and the strings
 * must lie back to back as exec puts them: a bad one fails the whole, and
 * the caller keeps what the notes say. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "session.h"

/* More than any real exec passes with its strings in 64 KiB. */
#define MAX_ARGS 4096

static struct cs_error *join_args(struct rv_session *s, uint64_t argv,
				  uint64_t argc, char *out, size_t *len)
{
	size_t ptr_size = RV_ITEM(s, origarg_argv)->size;
	if (ptr_size != sizeof(uint64_t))
		return cs_error_create(CS_ERR_CORRUPT,
				       "Ruby's argv: pointers of %zu bytes",
				       ptr_size);
	*len = 0;
	uint64_t prev_end = 0;
	for (uint64_t i = 0; i < argc; i++) {
		uint64_t p;
		struct cs_error *err = rv_read_u64(s, argv + i * ptr_size, &p);
		if (err)
			return cs_error_wrap(err, "Ruby's argv[%llu]",
					     (unsigned long long)i);
		if (!p)
			return cs_error_create(CS_ERR_CORRUPT,
					       "Ruby's argv[%llu] is NULL "
					       "before argc %llu",
					       (unsigned long long)i,
					       (unsigned long long)argc);
		/* exec lays the strings out back to back: one that does
		 * not start where the last ended ran on past its NUL */
		if (i && p != prev_end + 1)
			return cs_error_create(
				CS_ERR_CORRUPT,
				"Ruby's argv[%llu] at 0x%llx, not "
				"right after argv[%llu]'s string",
				(unsigned long long)i, (unsigned long long)p,
				(unsigned long long)(i - 1));
		if (i)
			out[(*len)++] = ' ';
		size_t n;
		bool whole;
		err = rv_read_cstring(s, p, out + *len, RV_MAX_COMMAND - *len,
				      &n, &whole);
		if (err)
			return cs_error_wrap(err, "Ruby's argv[%llu]",
					     (unsigned long long)i);
		*len += n;
		prev_end = p + n;
		if (!whole) { /* past the bound: say it is cut */
			strcpy(out + RV_MAX_COMMAND - 3, "...");
			*len = RV_MAX_COMMAND;
			return NULL;
		}
		if (*len >= RV_MAX_COMMAND - 1)
			break;
	}
	/* $0 = "..." leaves the other arguments empty */
	while (*len && out[*len - 1] == ' ')
		(*len)--;
	return NULL;
}

struct cs_error *rv_command_line(struct rv_session *s, char **ret)
{
	*ret = NULL;
	if (!RV_HAS(s, origarg))
		return rv_missing(RVL_origarg);
	uint64_t base = s->load_bias + (uint64_t)RV_VAL(s, origarg);
	uint64_t argc, argv;
	struct cs_error *err;
	if ((err = rv_read_member(s, base, RVL_origarg_argc, &argc)) ||
	    (err = rv_read_member(s, base, RVL_origarg_argv, &argv)))
		return err;
	/* an int: a negative one reads as a large number */
	if (argc == 0 || argc > MAX_ARGS || !argv)
		return cs_error_create(CS_ERR_CORRUPT,
				       "Ruby's argv: argc %llu, argv 0x%llx",
				       (unsigned long long)argc,
				       (unsigned long long)argv);
	char *out = malloc(RV_MAX_COMMAND + 1);
	if (!out)
		return &cs_error_nomem;
	size_t len = 0;
	if ((err = join_args(s, argv, argc, out, &len))) {
		free(out);
		return err;
	}
	out[len] = '\0';
	*ret = out;
	return NULL;
}
