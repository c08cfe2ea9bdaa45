#include "args.h"

#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 16
#define MAX_WORD 4096

/* Split at blanks (no quoting: arguments are numbers, keywords and one
 * path). 0 if there are too many or too long. */
static int split(const char *line, char words[][MAX_WORD], int *n)
{
	*n = 0;
	for (const char *p = line ? line : "";;) {
		p += strspn(p, " \t\n");
		if (!*p)
			return 1;
		size_t len = strcspn(p, " \t\n");
		if (*n == MAX_WORDS || len >= MAX_WORD)
			return 0;
		memcpy(words[*n], p, len);
		words[(*n)++][len] = '\0';
		p += len;
	}
}

static int positive(const char *s, double max, double *ret)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end || !(v > 0) || v > max)
		return 0;
	*ret = v;
	return 1;
}

struct cs_error *gx_parse_bt_args(const char *line, struct gx_bt_args *ret)
{
	char words[MAX_WORDS][MAX_WORD];
	int n, target = 0;
	memset(ret, 0, sizeof(*ret));
	if (!split(line, words, &n))
		goto bad;
	for (int i = 0; i < n; i++) {
		const char *w = words[i];
		if (strcmp(w, "--json") == 0) {
			ret->json = 1;
		} else if (strcmp(w, "--via-debugger") == 0) {
			ret->via_debugger = 1;
		} else if (strcmp(w, "full") == 0) {
			ret->full = 1;
		} else if (strcmp(w, "--out") == 0 && i + 1 < n) {
			free(ret->out);
			if (!(ret->out = strdup(words[++i])))
				return &cs_error_nomem;
		} else if (target++) {
			goto bad;
		} else if (strcmp(w, "all") == 0) {
			ret->which = GX_BT_ALL;
		} else {
			char *end;
			long v = strtol(w, &end, 10);
			if (!*w || *end || v <= 0)
				goto bad;
			ret->which = GX_BT_NUMBER;
			ret->number = v;
		}
	}
	return NULL;
bad:
	gx_bt_args_free(ret);
	return cs_error_create(CS_ERR_USAGE, "%s", GX_BT_USAGE);
}

void gx_bt_args_free(struct gx_bt_args *a)
{
	free(a->out);
	a->out = NULL;
}

struct cs_error *gx_parse_locals_args(const char *line, long *frame)
{
	char words[MAX_WORDS][MAX_WORD];
	int n;
	*frame = -1;
	if (!split(line, words, &n) || n > 1)
		goto bad;
	if (n == 1) {
		char *end;
		long v = strtol(words[0], &end, 10);
		if (!words[0][0] || *end || v < 0)
			goto bad;
		*frame = v;
	}
	return NULL;
bad:
	return cs_error_create(CS_ERR_USAGE, "%s", GX_LOCALS_USAGE);
}

struct cs_error *gx_parse_sample_args(const char *line,
				      struct gx_sample_args *ret)
{
	char words[MAX_WORDS][MAX_WORD];
	int n, seconds_given = 0;
	memset(ret, 0, sizeof(*ret));
	ret->seconds = 5;
	ret->rate = 100;
	if (!split(line, words, &n))
		goto bad;
	for (int i = 0; i < n; i++) {
		const char *w = words[i];
		if (strcmp(w, "--rate") == 0 && i + 1 < n) {
			if (!positive(words[++i], 10000, &ret->rate))
				goto bad;
		} else if (strcmp(w, "--out") == 0 && i + 1 < n) {
			free(ret->out);
			if (!(ret->out = strdup(words[++i])))
				return &cs_error_nomem;
		} else if (!seconds_given++) {
			if (!positive(w, 86400, &ret->seconds))
				goto bad;
		} else {
			goto bad;
		}
	}
	return NULL;
bad:
	free(ret->out);
	ret->out = NULL;
	return cs_error_create(CS_ERR_USAGE, "%s", GX_SAMPLE_USAGE);
}
