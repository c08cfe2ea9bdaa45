/* Native and Ruby frames merged. See merge.h.
 *
 * Both stacks are walked from the outermost frame in. Ruby frames are cut
 * into groups, one per vm_exec() invocation, at the frames flagged
 * VM_FRAME_FLAG_FINISH; the native stack must hold exactly one vm_exec()
 * frame per group (rb_vm_exec, as its macro names it), or else exactly
 * one interpreter-loop frame. A group's Ruby frames are shown where its
 * interpreter loop is; when JIT code runs them without the loop (vm_exec()
 * called the JIT entry itself), where the group's outermost JIT frame is,
 * just outside it. A group's C-method frames (a C method called from Ruby
 * or JIT code, or from it by rb_funcall) must appear, in order, as the
 * native frames of their C functions between that vm_exec() frame and the
 * next one.
 *
 * A native stack cut at the frame limit holds the innermost frames only:
 * the groups whose vm_exec() frames it holds are merged as above, and the
 * Ruby frames of the groups outside them follow, unmatched (a deep C
 * recursion: every Ruby frame is outside the cut). */
#include "merge.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_loop(const struct cs_native_frame *f, const char *name)
{
	return f->function && strcmp(f->function, name) == 0;
}

/* What calls a C method's function: the VM, from the interpreter
 * (vm_call_cfunc_with_frame) or from rb_funcall (vm_call0_*), and JIT code,
 * which calls it itself. */
static int calls_cfuncs(const struct cs_native_frame *f)
{
	static const char *const prefixes[] = {
		"vm_call_cfunc", "vm_call0_cfunc", "vm_call0_body"};
	if (f->jit)
		return 1;
	for (size_t i = 0; f->function && i < 3; i++)
		if (strncmp(f->function, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

/* The native frame of r's C function in frames (cursor, stop) searched
 * inward, or (*above = 1) when that function made a tail call and is gone,
 * the frame that took its place: the first called by a VM function that
 * calls C methods. nn (no frame) when neither. */
static size_t find_cfunc(const struct cs_native_thread *nt,
			 const struct rv_frame *r, size_t cursor, size_t stop,
			 int *above)
{
	*above = 0;
	for (size_t p = cursor; p-- > 0 && p != stop;) {
		const struct cs_native_frame *f = &nt->frames[p];
		if (!f->inlined && r->cfunc && f->func_start == r->cfunc)
			return p;
	}
	for (size_t p = cursor; p-- > 0 && p != stop;) {
		if (!nt->frames[p].inlined && p + 1 < nt->nframes &&
		    calls_cfuncs(&nt->frames[p + 1]) &&
		    !calls_cfuncs(&nt->frames[p])) {
			*above = 1;
			return p;
		}
	}
	return nt->nframes;
}

/* Indexes of the interpreter-loop frames, outermost first. vm_exec_core
 * is the loop; a build that inlined it away leaves vm_exec. */
static size_t loop_frames(const struct cs_native_thread *nt, size_t *idx)
{
	static const char *const names[] = {"vm_exec_core", "vm_exec"};
	for (size_t k = 0; k < 2; k++) {
		size_t n = 0;
		for (size_t i = nt->nframes; i-- > 0;)
			if (is_loop(&nt->frames[i], names[k]))
				idx[n++] = i;
		if (n)
			return n;
	}
	return 0;
}

/* Indexes of the vm_exec() frames, outermost first: the function that
 * runs a group, by the interpreter loop or by calling JIT code. */
static size_t exec_frames(const struct cs_native_thread *nt, size_t *idx)
{
	size_t n = 0;
	for (size_t i = nt->nframes; i-- > 0;)
		if (is_loop(&nt->frames[i], "rb_vm_exec") ||
		    is_loop(&nt->frames[i], "vm_exec"))
			idx[n++] = i;
	return n;
}

/* What runs a group's Ruby frames, where they are shown. */
enum runner_kind {
	RUN_LOOP,  /* the interpreter loop: shown in its place */
	RUN_JIT,   /* JIT code the vm_exec() frame called: just outside it */
	RUN_ENTRY, /* neither is on the stack: just inside vm_exec() */
};

/* The group's runner among frames (stop, entry), searched inward from
 * entry: its interpreter loop, else its outermost JIT frame, else the
 * vm_exec() frame itself. */
static size_t runner_of(const struct cs_native_thread *nt, size_t entry,
			size_t stop, enum runner_kind *kind)
{
	for (size_t p = entry; p-- > 0 && p != stop;)
		if (is_loop(&nt->frames[p], "vm_exec_core")) {
			*kind = RUN_LOOP;
			return p;
		}
	for (size_t p = entry; p-- > 0 && p != stop;)
		if (nt->frames[p].jit) {
			*kind = RUN_JIT;
			return p;
		}
	*kind = RUN_ENTRY;
	return entry;
}

static size_t jit_frames(const struct cs_native_thread *nt)
{
	size_t n = 0;
	for (size_t i = 0; i < nt->nframes; i++)
		n += nt->frames[i].jit != NULL;
	return n;
}

__attribute__((format(printf, 2, 3))) static struct cs_error *
fail(struct cs_merged_stack *out, const char *fmt, ...)
{
	free(out->frames);
	out->frames = NULL;
	out->nframes = 0;
	va_list ap;
	va_start(ap, fmt);
	int rc = vasprintf(&out->error, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		out->error = NULL;
		return &cs_error_nomem;
	}
	return NULL;
}

struct cs_error *cs_merge_stacks(const struct rv_thread *rt,
				 const struct cs_native_thread *nt,
				 struct cs_merged_stack *out)
{
	memset(out, 0, sizeof(*out));
	if (!nt && rt->off_native) {
		out->off_native = true;
		return NULL;
	}
	if (!nt || !nt->nframes)
		return fail(out, "no native stack for this thread");
	size_t nn = nt->nframes, nr = rt->nframes;
	/* anchors[g]: the native frame of group g's vm_exec() call (or of its
	 * interpreter loop); runners[g]: where its Ruby frames are shown */
	size_t *anchors = calloc(nn + 1, sizeof(*anchors));
	size_t *runners = calloc(nn + 1, sizeof(*runners));
	enum runner_kind *kinds = calloc(nn + 1, sizeof(*kinds));
	/* groups[g]: index of the group's outermost Ruby frame */
	size_t *groups = calloc(nr + 1, sizeof(*groups));
	/* attach[p]: the C-method frame on native frame p; above[p]: one
	 * whose function tail-called, shown just outside frame p */
	const struct rv_frame **attach = calloc(nn + 1, sizeof(*attach));
	const struct rv_frame **above = calloc(nn + 1, sizeof(*above));
	out->frames = calloc(nn + nr + 1, sizeof(*out->frames));
	struct cs_error *err = NULL;
	if (!anchors || !runners || !kinds || !groups || !attach || !above ||
	    !out->frames) {
		err = &cs_error_nomem;
		goto done;
	}
	size_t ngroups = 0;
	for (size_t j = nr; j-- > 0;)
		if (j == nr - 1 || rt->frames[j].vm_finish)
			groups[ngroups++] = j;
	if (rt->truncated) {
		err = fail(out, "a stack was cut at the frame limit");
		goto done;
	}
	/* Cut native stack: only the innermost groups have their vm_exec()
	 * (else interpreter-loop) frames in it; the outer ones are left out
	 * of the match and their frames follow it. */
	size_t outside = 0; /* Ruby frames of the groups left out */
	if (nt->truncated) {
		size_t held = exec_frames(nt, anchors);
		if (!held)
			held = loop_frames(nt, anchors);
		if (held > ngroups) {
			err = fail(out,
				   "%zu vm_exec() frames in the native frames "
				   "shown, %zu vm_exec() entries on the Ruby "
				   "stack",
				   held, ngroups);
			goto done;
		}
		size_t left = ngroups - held;
		if (left) {
			outside = left < ngroups ? nr - 1 - groups[left] : nr;
			memmove(groups, groups + left, held * sizeof(*groups));
		}
		ngroups = held;
	}
	size_t nexec = exec_frames(nt, anchors), nloops = 0;
	if (nexec == ngroups) {
		for (size_t g = 0; g < ngroups; g++)
			runners[g] = runner_of(nt, anchors[g],
					       g + 1 < ngroups ? anchors[g + 1]
							       : (size_t)-1,
					       &kinds[g]);
	} else if ((nloops = loop_frames(nt, anchors)) == ngroups) {
		memcpy(runners, anchors, ngroups * sizeof(*runners));
	} else {
		size_t njit = jit_frames(nt);
		char jit[64] = "";
		if (njit)
			snprintf(jit, sizeof(jit), ", %zu of JIT code", njit);
		err = fail(out,
			   "%zu interpreter-loop and %zu vm_exec() frames on "
			   "the native stack (%zu frames%s%s%s), %zu vm_exec() "
			   "entries on the Ruby stack",
			   nloops, nexec, nn, jit,
			   nt->error ? ", unwinding stopped: " : "",
			   nt->error ? nt->error : "", ngroups);
		goto done;
	}
	/* Each group's C-method frames onto native frames of their C
	 * functions, searched inward from the group's vm_exec() frame. */
	for (size_t g = 0; g < ngroups; g++) {
		size_t first = groups[g];
		size_t last = g + 1 < ngroups ? groups[g + 1] + 1 : 0;
		size_t stop = g + 1 < ngroups ? anchors[g + 1] : (size_t)-1;
		size_t cursor = anchors[g];
		for (size_t j = first + 1; j-- > last;) {
			const struct rv_frame *r = &rt->frames[j];
			if (r->kind != RV_FRAME_CFUNC)
				continue;
			int tail;
			size_t p = find_cfunc(nt, r, cursor, stop, &tail);
			if (p == nn || attach[p] || above[p]) {
				err = fail(out,
					   "the C method '%s' (function "
					   "0x%llx) is not on the native stack "
					   "where the Ruby stack calls it",
					   r->label ? r->label : "?",
					   (unsigned long long)r->cfunc);
				goto done;
			}
			if (tail)
				above[p] = r;
			else
				attach[p] = r;
			cursor = p;
		}
	}
	/* Outermost first into out, then reversed. */
	size_t n = 0, g = 0;
	for (size_t i = nn; i-- > 0;) {
		if (g < ngroups && i == runners[g]) {
			size_t last = g + 1 < ngroups ? groups[g + 1] + 1 : 0;
			if (kinds[g] == RUN_ENTRY)
				out->frames[n++].native = &nt->frames[i];
			for (size_t j = groups[g] + 1; j-- > last;) {
				if (rt->frames[j].kind == RV_FRAME_CFUNC)
					continue;
				out->frames[n].runs_on = &nt->frames[i];
				out->frames[n++].ruby = &rt->frames[j];
			}
			if (kinds[g++] == RUN_JIT)
				out->frames[n++].native = &nt->frames[i];
			continue;
		}
		if (above[i]) {
			out->frames[n].runs_on = &nt->frames[i];
			out->frames[n++].ruby = above[i];
		}
		out->frames[n].native = &nt->frames[i];
		out->frames[n++].ruby = attach[i];
	}
	for (size_t a = 0, b = n; a + 1 < b; a++, b--) {
		struct cs_merged_frame t = out->frames[a];
		out->frames[a] = out->frames[b - 1];
		out->frames[b - 1] = t;
	}
	if (nt->truncated) {
		out->cut = true;
		out->cut_at = n;
		for (size_t j = nr - outside; j < nr; j++)
			out->frames[n++].ruby = &rt->frames[j];
	}
	out->nframes = n;
done:
	free(anchors);
	free(runners);
	free(kinds);
	free(groups);
	free(attach);
	free(above);
	return err;
}

void cs_merged_stack_free(struct cs_merged_stack *m)
{
	free(m->frames);
	free(m->error);
	memset(m, 0, sizeof(*m));
}
