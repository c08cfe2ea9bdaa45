/* Text output for people: a process header, then each thread with its
 * frames innermost first, in the shape of Ruby's own backtraces
 * ("path:line:in 'label'") followed by the class-qualified name. */
#include <stdbool.h>
#include <string.h>

#include "../process/crash_signal.h"
#include "render.h"

/* "Module M: found by build-id in DIR as NAME", NAME the file's path
 * under DIR, else the whole path. */
static void module_found(FILE *out, const struct cs_module_found *f)
{
	const char *dir = f->dir ? f->dir : "?";
	size_t len = strlen(dir);
	const char *name = f->file;
	if (strncmp(name, dir, len) == 0 && name[len] == '/')
		name += len + 1;
	fprintf(out, "Module %s: found by build-id in %s as %s\n", f->mapped,
		dir, name);
}

static void header(FILE *out, const struct cs_report *r)
{
	if (r->pid >= 0)
		fprintf(out, "Process %d%s: %s\n", r->pid,
			r->core_path ? "" : " (live)",
			r->command ? r->command : "?");
	fprintf(out, "Ruby %s  (%s)\n",
		r->ruby->ruby_version ? r->ruby->ruby_version
				      : "version unknown",
		r->vm_module);
	if (r->bundle)
		fprintf(out,
			"Bundle %s: core %s and %zu files it needs, read from "
			"the bundle\n",
			r->bundle->source, r->core_path, r->bundle->n - 1);
	for (size_t i = 0; i < r->nmodules_found; i++)
		module_found(out, &r->modules_found[i]);
	const struct cs_siginfo *si = r->siginfo;
	if (si && si->present && si->signo) {
		const char *abbrev = sigabbrev_np(si->signo);
		fprintf(out, "%s on signal SIG%s (%d), code %d",
			r->core_path ? "Core written" : "Stopped",
			abbrev ? abbrev : "?", si->signo, si->code);
		const char *code = cs_signal_code_name(si->signo, si->code);
		if (code)
			fprintf(out, " (%s)", code);
		if (si->addr)
			fprintf(out, ", fault address 0x%llx",
				(unsigned long long)si->addr);
		fputc('\n', out);
	}
	cs_render_gc_text(out, r);
	cs_render_crash_text(out, r);
	for (size_t i = 0; i < r->nwarnings; i++)
		fprintf(out, "warning: %s\n", r->warnings[i]);
	if (r->ruby->error)
		fprintf(out, "warning: thread list incomplete: %s\n",
			r->ruby->error);
	if (r->ruby->fibers_found_by == RV_FIBERS_MEMORY_SCAN)
		fprintf(out,
			"Fibers: found by a memory scan of %llu MiB of "
			"writable memory (%s)\n",
			(unsigned long long)(r->ruby->heap_bytes >> 20),
			r->ruby->fibers_note ? r->ruby->fibers_note : "?");
	if (r->ruby->fibers_error)
		fprintf(out, "warning: fibers incomplete: %s\n",
			r->ruby->fibers_error);
}

/* Frames are most of a report of thousands of fibers: they are written
 * piece by piece, without printf's formatting. */
static void put_int(FILE *out, int v)
{
	char text[16], *p = text + sizeof(text);
	unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	fwrite(p, 1, (size_t)(text + sizeof(text) - p), out);
}

/* Ruby up to 3.3 quotes a label `m', 3.4 and later 'm' (rv_process).
 * The frame's locals go under its text, at column under. */
static void frame(FILE *out, const struct rv_process *p,
		  const struct rv_frame *f, const struct cs_native_frame *on,
		  int indent, int under)
{
	bool backtick = p->backtick_quotes;
	static const char spaces[] = "        ";
	fwrite(spaces, 1,
	       (size_t)indent < sizeof(spaces) - 1 ? (size_t)indent
						   : sizeof(spaces) - 1,
	       out);
	if (f->path)
		fputs(f->path, out);
	else /* $0 where Ruby prints it */
		fputs(f->progname_path && p->progname ? p->progname : "?", out);
	if (f->lineno) { /* as location_format: no line, no number */
		putc(':', out);
		put_int(out, f->lineno);
	}
	fputs(backtick ? ":in `" : ":in '", out);
	fputs(f->label ? f->label : "?", out);
	putc('\'', out);
	/* the class-qualified name, with no address in it */
	if (f->stable && (!f->label || strcmp(f->stable, f->label) != 0)) {
		fputs("  [", out);
		fputs(f->stable, out);
		putc(']', out);
	}
	if (f->kind == RV_FRAME_CFUNC)
		fputs("  (C)", out);
	if (on) { /* --native: the C function this C method runs */
		fprintf(out, "  = %s", on->function ? on->function : "??");
		if (on->file)
			fprintf(out, " at %s:%d", on->file, on->line);
	}
	if (f->pc_stale)
		fputs("  <stale pc: line of the method's start>", out);
	if (f->error)
		fprintf(out, "  <unreliable: %s>", f->error);
	fputc('\n', out);
	cs_render_locals_text(out, f, under);
}

void cs_render_locals_text(FILE *out, const struct rv_frame *f, int indent)
{
	if (f->locals_error)
		fprintf(out, "%*s<locals incomplete: %s>\n", indent, "",
			f->locals_error);
	if (f->self_value)
		fprintf(out, "%*sself = %s\n", indent, "", f->self_value);
	for (size_t i = 0; i < f->nlocals; i++) {
		const struct rv_local *l = &f->locals[i];
		fprintf(out, "%*s%s = %s", indent, "", l->name, l->value);
		if (l->argument)
			fputs("  (argument)", out);
		if (l->outer == 1)
			fputs("  (outer scope)", out);
		else if (l->outer > 1)
			fprintf(out, "  (outer scope %d)", l->outer);
		fputc('\n', out);
	}
}

void cs_render_frame_text(FILE *out, const struct rv_process *p,
			  const struct rv_frame *f, int under)
{
	frame(out, p, f, NULL, 0, under);
}

/* The line that ends a stack cut by --max-frames: how many frames Ruby
 * would show past it, when they could be counted. */
static void truncation(FILE *out, bool truncated, size_t cut, int indent)
{
	if (!truncated)
		return;
	if (cut)
		fprintf(out, "%*s<%zu more frame%s not shown: --max-frames>\n",
			indent, "", cut, cut == 1 ? "" : "s");
	else
		fprintf(out, "%*s<more frames not shown: --max-frames>\n",
			indent, "");
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Two frames the text shows as the same line, with nothing under them. */
static bool same_line(const struct rv_frame *a, const struct rv_frame *b)
{
	return a->kind == b->kind && a->lineno == b->lineno &&
	       a->pc_stale == b->pc_stale && !a->nlocals && !b->nlocals &&
	       !a->locals_error && !b->locals_error && !a->self_value &&
	       !b->self_value && same_text(a->label, b->label) &&
	       same_text(a->path, b->path) && same_text(a->stable, b->stable) &&
	       same_text(a->error, b->error);
}

/* A recursion repeats a block of at most this many frames... */
#define FOLD_PERIOD 8
/* ...and is folded when at least this many frames would be left out. */
#define FOLD_LEVELS 4

/* How many times the block of *period frames at f repeats back to back,
 * for the period that covers the most frames (the shortest on a tie). */
static size_t repeats(const struct rv_frame *f, size_t n, size_t *period)
{
	size_t best = 1, best_reps = 1;
	for (size_t p = 1; p <= FOLD_PERIOD && 2 * p <= n; p++) {
		size_t k = p;
		while (k < n && same_line(&f[k], &f[k - p]))
			k++;
		size_t reps = k / p;
		if (reps >= 2 && reps * p > best * best_reps) {
			best = p;
			best_reps = reps;
		}
	}
	*period = best;
	return best_reps;
}

/* numbered: "#N " after the indent, padded as gdb pads its frames. A
 * recursion is shown once, then "... N levels..." for the frames left out,
 * as Ruby prints a SystemStackError's backtrace. */
static void stack(FILE *out, const struct rv_process *p, const char *error,
		  const struct rv_frame *frames, size_t n, bool truncated,
		  size_t cut, int indent, bool numbered)
{
	if (error)
		fprintf(out, "%*s<stack incomplete: %s>\n", indent, "", error);
	for (size_t j = 0; j < n;) {
		size_t period, reps = repeats(&frames[j], n - j, &period);
		size_t shown = period, left_out = (reps - 1) * period;
		if (left_out < FOLD_LEVELS) {
			shown = 1;
			left_out = 0;
		}
		for (size_t k = j; k < j + shown; k++) {
			if (numbered) {
				/* the locals under the frame's text, not its
				 * number */
				int w = fprintf(out, "%*s#%-2zu ", indent, "",
						k);
				frame(out, p, &frames[k], NULL, 0,
				      (w > 0 ? w : indent) + 4);
			} else {
				frame(out, p, &frames[k], NULL, indent,
				      indent + 4);
			}
		}
		if (left_out && period == 1)
			fprintf(out, "%*s... %zu levels...\n", indent, "",
				left_out);
		else if (left_out)
			fprintf(out,
				"%*s... %zu levels... (the %zu frames above, "
				"%zu more times)\n",
				indent, "", left_out, period, reps - 1);
		j += shown + left_out;
	}
	truncation(out, truncated, cut, indent);
}

/* --native: native frames, merged stacks, threads that run no Ruby. */
static void native_frame(FILE *out, const struct cs_native_frame *f)
{
	/* past JIT code, which has no CFI: found another way */
	const char *found = f->found_by == CS_FOUND_BY_FRAME_POINTER
				    ? ", found by frame pointer"
			    : f->found_by == CS_FOUND_BY_SCAN
				    ? ", found by stack scan"
			    : f->found_by == CS_FOUND_BY_RETURN_ADDRESS
				    ? ", found by return address"
				    : "";
	if (f->jit) {
		fprintf(out,
			"    [JIT%s] %s code  (0x%llx, in 0x%llx-0x%llx)\n",
			found, f->jit, (unsigned long long)f->pc,
			(unsigned long long)f->jit_start,
			(unsigned long long)f->jit_end);
		return;
	}
	fprintf(out, "    [native%s%s%s] %s", f->inlined ? ", inlined" : "",
		f->handler ? ", handler" : "", found,
		f->function ? f->function : "??");
	if (f->file)
		fprintf(out, " at %s:%d", f->file, f->line);
	fprintf(out, "  (%s, 0x%llx)\n", f->module ? f->module : "?",
		(unsigned long long)f->pc);
}

/* Thread i's stack: merged, or the reason and the Ruby stack alone. */
static void native_stack(FILE *out, const struct cs_report *r, size_t i)
{
	const struct rv_thread *t = &r->ruby->threads[i];
	const struct cs_merged_stack *m = &r->merged[i];
	const struct cs_native_thread *nt = cs_report_native_of(r, i);
	if (nt && nt->tid != r->tids[i])
		fprintf(out,
			"    <its code runs on tid %d, on this thread's "
			"stack: that thread's native frames>\n",
			nt->tid);
	if (nt && nt->cut)
		fprintf(out, "    <native unwind %s>\n", nt->error);
	if (m->off_native) {
		fputs("    <parked on no native thread (M:N scheduler): no "
		      "native frames>\n",
		      out);
		for (size_t j = 0; j < t->nframes; j++)
			frame(out, r->ruby, &t->frames[j], NULL, 4, 8);
		return;
	}
	if (m->error) {
		fprintf(out,
			"    <native frames not merged: %s; Ruby stack "
			"alone>\n",
			m->error);
		for (size_t j = 0; j < t->nframes; j++)
			frame(out, r->ruby, &t->frames[j], NULL, 4, 8);
		return;
	}
	for (size_t j = 0; j < m->nframes; j++) {
		const struct cs_merged_frame *f = &m->frames[j];
		if (m->cut && j == m->cut_at)
			fputs("    <more native frames not shown: the frame "
			      "limit; the Ruby frames outside them follow>\n",
			      out);
		if (f->native && (!f->ruby || f->native->inlined))
			native_frame(out, f->native);
		if (f->ruby)
			frame(out, r->ruby, f->ruby, f->native, 4, 8);
	}
	if (m->cut && m->cut_at == m->nframes)
		fputs("    <more native frames not shown: the frame limit>\n",
		      out);
}

/* What the crashed thread's header says of it. */
static const char *crash_mark(const struct cs_report *r)
{
	return r->crash && r->crash->kind == CS_CRASH_BUG
		       ? ", writing a bug report"
		       : ", received the signal";
}

static void native_only(FILE *out, const struct cs_report *r)
{
	for (size_t i = 0; r->native && i < r->native->nthreads; i++) {
		const struct cs_native_thread *t = &r->native->threads[i];
		if (cs_report_is_ruby_tid(r, t->tid))
			continue;
		fprintf(out, "\nThread (tid %d) runs no Ruby%s\n", t->tid,
			t->tid == r->crash_tid ? crash_mark(r) : "");
		if (t->error)
			fprintf(out, "    <native unwind stopped: %s>\n",
				t->error);
		for (size_t j = 0; j < t->nframes; j++)
			native_frame(out, &t->frames[j]);
		if (t->truncated)
			fputs("    <more native frames not shown>\n", out);
	}
}

/* Fibers under their thread t (NULL: orphans); the current one's stack
 * is the thread's. */
static void fibers(FILE *out, const struct rv_process *p,
		   const struct rv_thread *t, const struct rv_fiber *list,
		   size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct rv_fiber *f = &list[i];
		fprintf(out, "  Fiber 0x%llx%s %s",
			(unsigned long long)(f->object ? f->object : f->addr),
			f->is_root ? " (root)" : "",
			rv_fiber_status_name(f->status));
		if (f->blocking == 0)
			fputs(", non-blocking", out);
		if (f->is_current)
			fputs(", current: the thread's stack above", out);
		cs_render_fiber_wait_text(out, p, f);
		cs_render_fiber_locks_text(out, p, t, f);
		fputc('\n', out);
		stack(out, p, f->error, f->frames, f->nframes, f->truncated,
		      f->frames_cut, 6, false);
	}
}

/* An identifier for people: "sleeping_forever" -> "sleeping forever". */
static void words(FILE *out, const char *id)
{
	for (; *id; id++)
		fputc(*id == '_' ? ' ' : *id, out);
}

/* "; ractor 2 "name"; sleeping forever, waiting on queue (Thread::Queue#pop)" */
static void thread_detail(FILE *out, const struct cs_report *r, size_t i)
{
	const struct rv_process *p = r->ruby;
	const struct rv_thread *t = &p->threads[i];
	if (t->ractor.present && t->ractor.id != 1) {
		fprintf(out, "; ractor %u", t->ractor.id);
		if (t->ractor.name)
			fprintf(out, " \"%s\"", t->ractor.name);
	}
	if (t->state == RV_STATE_UNKNOWN)
		return;
	fputs("; ", out);
	words(out, rv_thread_state_name(t->state));
	if (t->wait.blocking_region)
		fputs(" in a blocking call (GVL released)", out);
	cs_render_wait_head_text(out, &t->wait);
	cs_render_wait_target_text(out, r, i);
	cs_render_locks_text(out, p, i);
}

/* "Thread 2 "name" (tid 4242) sleep, main; ...", with its newline. */
static void thread_line(FILE *out, const struct cs_report *r,
			const struct cs_render_options *o, size_t i)
{
	const struct rv_thread *t = &r->ruby->threads[i];
	fprintf(out, "Thread %zu", i + 1);
	if (t->name)
		fprintf(out, " \"%s\"", t->name);
	if (r->tids[i] >= 0 && o->thread_names && o->thread_names[i])
		fprintf(out, " (tid %lld, %s)", (long long)r->tids[i],
			o->thread_names[i]);
	else if (r->tids[i] >= 0)
		fprintf(out, " (tid %lld)", (long long)r->tids[i]);
	fprintf(out, " %s", rv_thread_status_name(t->status));
	if (t->is_main)
		fputs(", main", out);
	if (t->holds_gvl)
		fputs(", holds the GVL", out);
	if (r->crash_tid >= 0 && r->tids[i] == r->crash_tid)
		fputs(crash_mark(r), out);
	thread_detail(out, r, i);
	if (t->exception) {
		fputs("; exception ", out);
		cs_render_exception_text(out, t);
	}
	fputc('\n', out);
}

/* ruby-locks: the line of each thread shown that waits on something or
 * holds a mutex, or a line saying none does. */
static void locks_lines(FILE *out, const struct cs_report *r,
			const struct cs_render_options *o)
{
	bool any = false;
	for (size_t i = 0; i < r->ruby->nthreads; i++) {
		const struct rv_thread *t = &r->ruby->threads[i];
		if ((o->shown && !o->shown[i]) ||
		    (t->wait.kind == RV_WAIT_NONE && !t->nheld &&
		     !t->locks_error))
			continue;
		if (!any)
			fputc('\n', out);
		any = true;
		thread_line(out, r, o, i);
	}
	if (!any)
		fputs("\nNo Ruby thread waits on anything or holds a mutex.\n",
		      out);
}

void cs_render_text(FILE *out, const struct cs_report *r,
		    const struct cs_render_options *o)
{
	static const struct cs_render_options whole;
	if (!o)
		o = &whole;
	if (!o->no_header && !o->locks_only)
		header(out, r);
	cs_render_deadlocks_text(out, r->ruby);
	if (o->locks_only) {
		locks_lines(out, r, o);
		return;
	}
	/* The thread that took the fatal signal first. */
	size_t first = 0;
	bool any = false;
	while (first < r->ruby->nthreads &&
	       !(r->crash_tid >= 0 && r->tids[first] == r->crash_tid))
		first++;
	for (size_t k = 0; k < r->ruby->nthreads; k++) {
		size_t i = first == r->ruby->nthreads ? k
			   : k == 0                   ? first
			   : k <= first               ? k - 1
						      : k;
		const struct rv_thread *t = &r->ruby->threads[i];
		if (o->shown && !o->shown[i])
			continue;
		/* without the header, the threads start at once */
		if (any || !o->no_header)
			fputc('\n', out);
		any = true;
		thread_line(out, r, o, i);
		if (r->tid_errors && r->tid_errors[i])
			fprintf(out, "    <unreliable: tid: %s>\n",
				r->tid_errors[i]);
		if (r->merged) {
			if (t->error)
				fprintf(out, "    <stack incomplete: %s>\n",
					t->error);
			native_stack(out, r, i);
			truncation(out, t->truncated, t->frames_cut, 4);
		} else {
			stack(out, r->ruby, t->error, t->frames, t->nframes,
			      t->truncated, t->frames_cut, 4, o->frame_numbers);
		}
		/* A lone running root fiber says nothing the thread did not. */
		if (t->nfibers > 1 ||
		    (t->nfibers == 1 && !t->fibers[0].is_current))
			fibers(out, r->ruby, t, t->fibers, t->nfibers);
	}
	if (r->ruby->norphan_fibers) {
		fputs("\nFibers of threads no longer listed\n", out);
		fibers(out, r->ruby, NULL, r->ruby->orphan_fibers,
		       r->ruby->norphan_fibers);
	}
	if (r->native_all)
		native_only(out, r);
}
