#include "args.h"

#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../profile/profile.h"
#include "../profile/profile_format.h"

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

/* A bad number of ruby-sample's: the usage line, and why. */
static struct cs_error *bad_number(const char *what, const char *word,
				   double max, const char *unit)
{
	return cs_error_create(CS_ERR_USAGE,
			       "%s %s: must be a number above 0 and at most "
			       "%g %s; " GX_SAMPLE_USAGE,
			       what, word, max, unit);
}

/* The error for an unknown --format: the formats there are. */
static struct cs_error *unknown_format(const char *name)
{
	char list[256] = "";
	for (const struct cs_profile_format *f = cs_profile_formats; f->name;
	     f++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s%s", f == cs_profile_formats ? "" : ", ", f->name);
	return cs_error_create(CS_ERR_USAGE, "--format is one of %s, not '%s'",
			       list, name);
}

struct cs_error *gx_parse_locks_args(const char *line, struct gx_bt_args *ret)
{
	struct cs_error *err = gx_parse_bt_args(line, ret);
	if (!err && !ret->json && !ret->full && ret->which == GX_BT_SELECTED)
		return NULL;
	if (!err)
		gx_bt_args_free(ret);
	else if (err->code != CS_ERR_USAGE)
		return err;
	else
		cs_error_destroy(err);
	return cs_error_create(CS_ERR_USAGE, "%s", GX_LOCKS_USAGE);
}

/* A word's copy in *slot, replacing what was there. */
static bool take_word(char **slot, const char *word)
{
	free(*slot);
	*slot = strdup(word);
	return *slot != NULL;
}

void gx_heap_args_free(struct gx_heap_args *a)
{
	free(a->retainers);
	free(a->dump);
	memset(a, 0, sizeof(*a));
}

struct cs_error *gx_parse_heap_args(const char *line, struct gx_bt_args *ret,
				    struct gx_heap_args *heap)
{
	char words[MAX_WORDS][MAX_WORD];
	int n;
	bool top_given = false, nomem = false;
	memset(ret, 0, sizeof(*ret));
	memset(heap, 0, sizeof(*heap));
	heap->top = GX_HEAP_DEFAULT_TOP;
	if (!split(line, words, &n))
		goto bad;
	for (int i = 0; i < n && !nomem; i++) {
		const char *w = words[i];
		if (strcmp(w, "--json") == 0) {
			ret->json = 1;
		} else if (strcmp(w, "--via-debugger") == 0) {
			ret->via_debugger = 1;
		} else if (strcmp(w, "--out") == 0 && i + 1 < n) {
			nomem = !take_word(&ret->out, words[++i]);
		} else if (strcmp(w, "--retainers") == 0 && i + 1 < n) {
			nomem = !take_word(&heap->retainers, words[++i]);
		} else if (strcmp(w, "--dump") == 0 && i + 1 < n) {
			nomem = !take_word(&heap->dump, words[++i]);
		} else if (strcmp(w, "--top") == 0 && i + 1 < n) {
			char *end;
			const char *v = words[++i];
			long k = strtol(v, &end, 10);
			if (!*v || *end || k <= 0 || k > 1000000000)
				goto bad;
			heap->top = k;
			top_given = true;
		} else {
			goto bad;
		}
	}
	if (nomem) {
		gx_bt_args_free(ret);
		gx_heap_args_free(heap);
		return &cs_error_nomem;
	}
	if (heap->retainers && heap->dump)
		goto bad;
	if (heap->retainers && !top_given)
		heap->top = GX_RETAINERS_DEFAULT_TOP;
	return NULL;
bad:
	gx_bt_args_free(ret);
	gx_heap_args_free(heap);
	return cs_error_create(CS_ERR_USAGE, "%s", GX_HEAP_USAGE);
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
	struct cs_error *err = NULL;
	memset(ret, 0, sizeof(*ret));
	ret->seconds = 5;
	ret->rate = 100;
	if (!split(line, words, &n))
		goto bad;
	for (int i = 0; i < n && !err; i++) {
		const char *w = words[i];
		if (strcmp(w, "--rate") == 0 && i + 1 < n) {
			if (!positive(words[++i], GX_SAMPLE_MAX_RATE,
				      &ret->rate))
				err = bad_number("--rate", words[i],
						 GX_SAMPLE_MAX_RATE, "Hz");
		} else if (strcmp(w, "--out") == 0 && i + 1 < n) {
			free(ret->out);
			if (!(ret->out = strdup(words[++i])))
				return &cs_error_nomem;
		} else if (strcmp(w, "--state") == 0 && i + 1 < n) {
			char why[160];
			unsigned set;
			if (cs_profile_states_parse(words[++i], &set, why,
						    sizeof(why)))
				ret->states |= set;
			else
				err = cs_error_create(CS_ERR_USAGE, "%s", why);
		} else if (strcmp(w, "--format") == 0 && i + 1 < n) {
			const struct cs_profile_format *f =
				cs_profile_format_find(words[++i]);
			if (f)
				ret->format = f->name;
			else
				err = unknown_format(words[i]);
		} else if (!seconds_given++ && *w != '-') {
			if (!positive(w, GX_SAMPLE_MAX_SECONDS, &ret->seconds))
				err = bad_number("SECONDS", w,
						 GX_SAMPLE_MAX_SECONDS, "s");
		} else {
			goto bad;
		}
	}
	/* the summary is printed; a format says how --out is written */
	if (!err && ret->format && !ret->out)
		goto bad;
	if (!err)
		return NULL;
	free(ret->out);
	ret->out = NULL;
	return err;
bad:
	free(ret->out);
	ret->out = NULL;
	return cs_error_create(CS_ERR_USAGE, "%s", GX_SAMPLE_USAGE);
}
