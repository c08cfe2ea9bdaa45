/* Cores grouped by crash signature, and the summary as text and JSON
 * (crash_groups.h). */
#include "crash_groups.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/json.h"
#include "render.h"

/* Frames of the representative stack at most. */
#define STACK_FRAMES 40

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*oom = true;
	return d;
}

static const char *function_of(const struct cs_crash *c)
{
	const struct cs_native_frame *f = c->kind == CS_CRASH_EXECUTE
						  ? c->called_from_function
						  : c->at_function;
	const struct cs_native_frame *inner =
		c->kind == CS_CRASH_EXECUTE ? c->called_from : c->at;
	if (f && f->function)
		return f->function;
	return inner ? inner->function : NULL;
}

static void signature_of(const struct cs_report *r,
			 struct cs_crash_signature *sig, bool *oom)
{
	const struct cs_crash *c = r->crash;
	memset(sig, 0, sizeof(*sig));
	sig->kind = cs_crash_kind_name(c->kind);
	sig->function = dup_or_null(function_of(c), oom);
	const struct cs_native_frame *in = c->entered_from;
	const struct cs_native_frame *fn =
		c->entered_from_function ? c->entered_from_function : in;
	if (c->thread < 0 && in && in->function) {
		/* no Ruby frame: the caller into the faulting module tells
		 * one crash site from another ("crashtest.so: run"), by the
		 * module's file name alone: the same on every machine */
		const char *module = fn->module ? strrchr(fn->module, '/')
						: NULL;
		module = module ? module + 1 : fn->module;
		char *name = NULL;
		if (asprintf(&name, "%s: %s", module ? module : "?",
			     in->function) < 0) {
			name = NULL;
			*oom = true;
		}
		if (name)
			sig->frames[sig->nframes++] = name;
		return;
	}
	if (c->thread < 0 || !r->ruby)
		return;
	const struct rv_thread *t = &r->ruby->threads[c->thread];
	for (size_t i = 0; i < t->nframes && sig->nframes < CS_SIGNATURE_FRAMES;
	     i++) {
		const struct rv_frame *f = &t->frames[i];
		const char *name = f->stable ? f->stable : f->label;
		sig->frames[sig->nframes++] =
			dup_or_null(name ? name : "?", oom);
	}
}

static int str_cmp(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int signature_cmp(const struct cs_crash_signature *a,
			 const struct cs_crash_signature *b)
{
	int d = strcmp(a->kind, b->kind);
	if (!d)
		d = str_cmp(a->function, b->function);
	for (size_t i = 0; !d && i < CS_SIGNATURE_FRAMES; i++)
		d = str_cmp(i < a->nframes ? a->frames[i] : NULL,
			    i < b->nframes ? b->frames[i] : NULL);
	return d;
}

static void signature_free(struct cs_crash_signature *sig)
{
	free(sig->function);
	for (size_t i = 0; i < sig->nframes; i++)
		free(sig->frames[i]);
}

char *cs_crash_signature_text(const struct cs_crash_signature *sig)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	fprintf(out, "%s in %s", sig->kind,
		sig->function ? sig->function : "??");
	for (size_t i = 0; i < sig->nframes; i++)
		fprintf(out, " <- %s", sig->frames[i]);
	if (fclose(out) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The crash summary and the crashed thread's Ruby frames, as the text
 * report writes them. */
static char *stack_text(const struct cs_report *r)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	cs_render_crash_text(out, r);
	const struct cs_crash *c = r->crash;
	if (c->thread >= 0 && r->ruby) {
		const struct rv_thread *t = &r->ruby->threads[c->thread];
		size_t n = t->nframes < STACK_FRAMES ? t->nframes
						     : STACK_FRAMES;
		for (size_t i = 0; i < n; i++) {
			fputs("  ", out);
			cs_render_frame_text(out, r->ruby, &t->frames[i], 2);
		}
		if (t->nframes > n)
			fprintf(out, "  ... %zu more frames\n", t->nframes - n);
	}
	if (fclose(out) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static bool push_name(char ***list, size_t *n, const char *name)
{
	char *copy = strdup(name);
	char **grown = copy ? realloc(*list, (*n + 1) * sizeof(**list)) : NULL;
	if (!grown) {
		free(copy);
		return false;
	}
	grown[(*n)++] = copy;
	*list = grown;
	return true;
}

void cs_core_set_add(struct cs_core_set *s, const char *file,
		     const struct cs_report *r)
{
	if (!r->complete)
		s->partial++;
	if (!r->crash) {
		if (!push_name(&s->no_crash, &s->nno_crash, file))
			s->oom = true;
		return;
	}
	struct cs_crash_signature sig;
	signature_of(r, &sig, &s->oom);
	for (size_t i = 0; i < s->ngroups; i++) {
		struct cs_crash_group *g = &s->groups[i];
		if (signature_cmp(&g->sig, &sig) == 0) {
			signature_free(&sig);
			if (!push_name(&g->files, &g->nfiles, file))
				s->oom = true;
			return;
		}
	}
	struct cs_crash_group *grown =
		realloc(s->groups, (s->ngroups + 1) * sizeof(*grown));
	if (!grown) {
		signature_free(&sig);
		s->oom = true;
		return;
	}
	s->groups = grown;
	struct cs_crash_group *g = &s->groups[s->ngroups++];
	*g = (struct cs_crash_group){.sig = sig, .stack = stack_text(r)};
	if (!g->stack || !push_name(&g->files, &g->nfiles, file))
		s->oom = true;
}

void cs_core_set_add_broken(struct cs_core_set *s, const char *file,
			    const char *reason)
{
	struct cs_broken_core *grown =
		realloc(s->broken, (s->nbroken + 1) * sizeof(*grown));
	if (!grown) {
		s->oom = true;
		return;
	}
	s->broken = grown;
	struct cs_broken_core *b = &s->broken[s->nbroken++];
	b->file = dup_or_null(file, &s->oom);
	b->reason = dup_or_null(reason, &s->oom);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int group_cmp(const void *pa, const void *pb)
{
	const struct cs_crash_group *a = pa, *b = pb;
	if (a->nfiles != b->nfiles)
		return a->nfiles > b->nfiles ? -1 : 1;
	int d = signature_cmp(&a->sig, &b->sig);
	return d ? d : name_cmp(a->files, b->files);
}

static int broken_cmp(const void *pa, const void *pb)
{
	const struct cs_broken_core *a = pa, *b = pb;
	return str_cmp(a->file, b->file);
}

void cs_core_set_sort(struct cs_core_set *s)
{
	for (size_t i = 0; i < s->ngroups; i++)
		if (s->groups[i].nfiles > 1)
			qsort(s->groups[i].files, s->groups[i].nfiles,
			      sizeof(char *), name_cmp);
	if (s->ngroups > 1)
		qsort(s->groups, s->ngroups, sizeof(*s->groups), group_cmp);
	if (s->nno_crash > 1)
		qsort(s->no_crash, s->nno_crash, sizeof(char *), name_cmp);
	if (s->nbroken > 1)
		qsort(s->broken, s->nbroken, sizeof(*s->broken), broken_cmp);
}

static void free_names(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

void cs_core_set_free(struct cs_core_set *s)
{
	for (size_t i = 0; i < s->ngroups; i++) {
		signature_free(&s->groups[i].sig);
		free_names(s->groups[i].files, s->groups[i].nfiles);
		free(s->groups[i].stack);
	}
	free(s->groups);
	free_names(s->no_crash, s->nno_crash);
	for (size_t i = 0; i < s->nbroken; i++) {
		free(s->broken[i].file);
		free(s->broken[i].reason);
	}
	free(s->broken);
	memset(s, 0, sizeof(*s));
}

size_t cs_core_set_crashes(const struct cs_core_set *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->ngroups; i++)
		n += s->groups[i].nfiles;
	return n;
}

void cs_core_set_text(FILE *out, const struct cs_core_set *s)
{
	size_t crashes = cs_core_set_crashes(s);
	fprintf(out,
		"== Summary of %s: %zu crashed in %zu group%s, %zu no crash, "
		"%zu broken, %zu skipped (not cores)\n",
		s->name, crashes, s->ngroups, s->ngroups == 1 ? "" : "s",
		s->nno_crash, s->nbroken, s->skipped);
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct cs_crash_group *g = &s->groups[i];
		char *sig = cs_crash_signature_text(&g->sig);
		fprintf(out, "%6zu  %s\n", g->nfiles, sig ? sig : "?");
		free(sig);
		for (size_t k = 0; k < g->nfiles; k++)
			fprintf(out, "        %s\n", g->files[k]);
	}
	for (size_t i = 0; i < s->nno_crash; i++)
		fprintf(out, "no crash: %s\n", s->no_crash[i]);
	for (size_t i = 0; i < s->nbroken; i++)
		fprintf(out, "broken: %s: %s\n", s->broken[i].file,
			s->broken[i].reason);
	if (s->oom)
		fputs("out of memory: some cores may be missing here\n", out);
}

void cs_core_set_json(struct json *j, const struct cs_core_set *s)
{
	json_begin_array(j, "groups");
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct cs_crash_group *g = &s->groups[i];
		json_begin_object(j, NULL);
		char *sig = cs_crash_signature_text(&g->sig);
		json_string(j, "signature", sig);
		free(sig);
		json_string(j, "kind", g->sig.kind);
		json_string(j, "function", g->sig.function);
		json_begin_array(j, "ruby_frames");
		for (size_t k = 0; k < g->sig.nframes; k++)
			json_string(j, NULL, g->sig.frames[k]);
		json_end_array(j);
		json_int(j, "count", (int64_t)g->nfiles);
		json_begin_array(j, "cores");
		for (size_t k = 0; k < g->nfiles; k++)
			json_string(j, NULL, g->files[k]);
		json_end_array(j);
		json_string(j, "stack", g->stack);
		json_end_object(j);
	}
	json_end_array(j);
	json_begin_array(j, "no_crash");
	for (size_t i = 0; i < s->nno_crash; i++)
		json_string(j, NULL, s->no_crash[i]);
	json_end_array(j);
	json_begin_array(j, "broken");
	for (size_t i = 0; i < s->nbroken; i++) {
		json_begin_object(j, NULL);
		json_string(j, "file", s->broken[i].file);
		json_string(j, "error", s->broken[i].reason);
		json_end_object(j);
	}
	json_end_array(j);
	json_int(j, "skipped", (int64_t)s->skipped);
	json_bool(j, "summary_complete", !s->oom);
}
