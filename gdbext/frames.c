#include "frames.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/merge.h"
#include "../render/render.h"

struct wanted {
	int64_t tid;
	const struct cs_native_frame *native;
	size_t nnative;
	struct gx_thread_frames *ret;
};

static char *frame_text(const struct rv_process *p, const struct rv_frame *f)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	cs_render_frame_text(out, p, f, 4);
	if (fclose(out) != 0) {
		free(text);
		return NULL;
	}
	if (size && text[size - 1] == '\n')
		text[size - 1] = '\0';
	return text;
}

/* Each Ruby frame's native one: the C function of a C method, else the
 * interpreter loop (or the frame in place of a tail-called function). */
static struct cs_error *match_native(const struct rv_thread *rt,
				     const struct wanted *w)
{
	struct cs_native_thread nt = {
		.tid = (int)w->tid,
		/* only read by the merge */
		.frames = (struct cs_native_frame *)w->native,
		.nframes = w->nnative,
	};
	struct cs_merged_stack m;
	struct cs_error *err = cs_merge_stacks(rt, &nt, &m);
	if (err)
		return err;
	if (m.error || m.off_native) {
		int rc = asprintf(&w->ret->native_error,
				  "the debugger's native frames do not match "
				  "the Ruby stack: %s",
				  m.error ? m.error
					  : "the thread runs on no native "
					    "thread now (M:N)");
		if (rc < 0)
			w->ret->native_error = NULL;
	}
	for (size_t k = 0; k < m.nframes; k++) {
		const struct cs_merged_frame *f = &m.frames[k];
		const struct cs_native_frame *on = f->native ? f->native
							     : f->runs_on;
		if (!f->ruby || !on || f->ruby < rt->frames ||
		    f->ruby >= rt->frames + rt->nframes)
			continue;
		w->ret->frames[f->ruby - rt->frames].native = on - w->native;
	}
	cs_merged_stack_free(&m);
	return NULL;
}

static struct cs_error *thread_frames(void *ctx, struct cs_snapshot *s)
{
	struct wanted *w = ctx;
	const struct rv_process *p = s->proc;
	const struct rv_thread *rt = NULL;
	for (size_t i = 0; i < p->nthreads && !rt; i++)
		if (s->tids.tids[i] == w->tid)
			rt = &p->threads[i];
	if (!rt)
		return cs_error_create(
			p->error ? CS_ERR_FAULT : CS_ERR_NO_THREAD,
			"LWP %lld runs no Ruby thread%s%s%s", (long long)w->tid,
			p->error ? " read (the thread list is incomplete: "
				 : "; 'ruby-bt all' shows every Ruby thread",
			p->error ? p->error : "", p->error ? ")" : "");
	struct gx_thread_frames *ret = w->ret;
	ret->frames = calloc(rt->nframes + 1, sizeof(*ret->frames));
	if (!ret->frames)
		return &cs_error_nomem;
	ret->nframes = rt->nframes;
	for (size_t j = 0; j < rt->nframes; j++) {
		const struct rv_frame *f = &rt->frames[j];
		struct gx_ruby_frame *g = &ret->frames[j];
		g->native = -1;
		g->lineno = f->lineno;
		g->text = frame_text(p, f);
		/* the file to list, from any directory where Ruby knows it */
		const char *path = f->realpath ? f->realpath : f->path;
		g->path = path ? strdup(path) : NULL;
		if (!g->text || (path && !g->path))
			return &cs_error_nomem;
	}
	return w->native ? match_native(rt, w) : NULL;
}

struct cs_error *gx_thread_frames(const struct gx_source *src,
				  const struct gx_backtrace_request *req,
				  int64_t tid,
				  const struct cs_native_frame *native,
				  size_t nnative, struct gx_thread_frames *ret)
{
	memset(ret, 0, sizeof(*ret));
	struct wanted w = {tid, native, nnative, ret};
	struct gx_backtrace_request r = *req;
	r.frame_flags = native != NULL;
	r.frame = GX_FRAME_NONE;
	struct cs_error *err = gx_with_snapshot(src, &r, thread_frames, &w);
	if (err)
		gx_thread_frames_free(ret);
	return err;
}

void gx_thread_frames_free(struct gx_thread_frames *f)
{
	for (size_t j = 0; f->frames && j < f->nframes; j++) {
		free(f->frames[j].text);
		free(f->frames[j].path);
	}
	free(f->frames);
	free(f->native_error);
	memset(f, 0, sizeof(*f));
}

struct cs_error *gx_frame_select(const char *command, const char *line,
				 size_t current, size_t nframes, size_t *ret)
{
	char *end;
	const char *arg = line + strspn(line, " \t");
	long n = strtol(arg, &end, 10);
	bool given = *arg != '\0';
	end += strspn(end, " \t");
	if (given && (*end || n < 0 || !(*arg >= '0' && *arg <= '9')))
		return cs_error_create(CS_ERR_USAGE, "usage: %s [N]", command);
	if (!nframes)
		return cs_error_create(CS_ERR_LOOKUP,
				       "this thread has no Ruby frames");
	if (current >= nframes)
		current = 0;
	size_t last = nframes - 1, count = given ? (size_t)n : 1;
	if (strcmp(command, "ruby-up") == 0) {
		if (current == last && count)
			return cs_error_create(CS_ERR_LOOKUP,
					       "Initial frame selected; you "
					       "cannot go up.");
		*ret = count > last - current ? last : current + count;
	} else if (strcmp(command, "ruby-down") == 0) {
		if (current == 0 && count)
			return cs_error_create(CS_ERR_LOOKUP,
					       "Bottom (innermost) frame "
					       "selected; you cannot go down.");
		*ret = count > current ? 0 : current - count;
	} else if (!given) {
		*ret = current;
	} else if ((size_t)n > last) {
		return cs_error_create(CS_ERR_LOOKUP,
				       "no Ruby frame #%ld: this thread's are "
				       "#0 to #%zu",
				       n, last);
	} else {
		*ret = (size_t)n;
	}
	return NULL;
}
