/* Text output for people: a process header, then each thread with its
 * frames innermost first, in the shape of Ruby's own backtraces
 * ("path:line:in 'label'") followed by the class-qualified name. */
#include <string.h>

#include "report.h"

static void header(FILE *out, const struct cs_report *r)
{
	if (r->pid >= 0)
		fprintf(out, "Process %d%s: %s\n", r->pid,
			r->core_path ? "" : " (live)",
			r->command ? r->command : "?");
	fprintf(out, "Ruby %s  (%s)\n",
		r->ruby->ruby_version ? r->ruby->ruby_version : "version unknown",
		r->vm_module);
	const struct cs_core_siginfo *si = r->siginfo;
	if (si && si->present && si->signo) {
		const char *abbrev = sigabbrev_np(si->signo);
		fprintf(out, "Core written on signal SIG%s (%d), code %d",
			abbrev ? abbrev : "?", si->signo, si->code);
		const char *code = cs_signal_code_name(si->signo, si->code);
		if (code)
			fprintf(out, " (%s)", code);
		if (si->addr)
			fprintf(out, ", fault address 0x%llx",
				(unsigned long long)si->addr);
		fputc('\n', out);
	}
	for (size_t i = 0; i < r->nwarnings; i++)
		fprintf(out, "warning: %s\n", r->warnings[i]);
	if (r->ruby->error)
		fprintf(out, "warning: thread list incomplete: %s\n",
			r->ruby->error);
}

void cs_render_frame_text(FILE *out, const struct rv_frame *f,
			  const struct cs_native_frame *on)
{
	fprintf(out, "    %s:%d:in '%s'", f->path ? f->path : "?", f->lineno,
		f->label ? f->label : "?");
	if (f->qualified && (!f->label || strcmp(f->qualified, f->label)))
		fprintf(out, "  [%s]", f->qualified);
	if (f->kind == RV_FRAME_CFUNC)
		fputs("  (C)", out);
	if (on) { /* --native: the C function this C method runs */
		fprintf(out, "  = %s", on->function ? on->function : "??");
		if (on->file)
			fprintf(out, " at %s:%d", on->file, on->line);
	}
	if (f->error)
		fprintf(out, "  <unreliable: %s>", f->error);
	fputc('\n', out);
}

void cs_render_text(FILE *out, const struct cs_report *r)
{
	header(out, r);
	/* The thread that took the fatal signal first. */
	size_t first = 0;
	while (first < r->ruby->nthreads &&
	       !(r->crash_tid >= 0 && r->tids[first] == r->crash_tid))
		first++;
	for (size_t k = 0; k < r->ruby->nthreads; k++) {
		size_t i = first == r->ruby->nthreads ? k
			   : k == 0		      ? first
			   : k <= first		      ? k - 1
						      : k;
		const struct rv_thread *t = &r->ruby->threads[i];
		if (r->shown && !r->shown[i])
			continue;
		fprintf(out, "\nThread %zu", i + 1);
		if (t->name)
			fprintf(out, " \"%s\"", t->name);
		if (r->tids[i] >= 0)
			fprintf(out, " (tid %lld)", (long long)r->tids[i]);
		fprintf(out, " %s", rv_thread_status_name(t->status));
		if (t->is_main)
			fputs(", main", out);
		if (t->holds_gvl)
			fputs(", holds the GVL", out);
		if (r->crash_tid >= 0 && r->tids[i] == r->crash_tid)
			fputs(", received the signal", out);
		fputc('\n', out);
		if (t->error)
			fprintf(out, "    <stack incomplete: %s>\n", t->error);
		if (r->merged)
			cs_render_native_text(out, r, i);
		for (size_t j = 0; !r->merged && j < t->nframes; j++)
			cs_render_frame_text(out, &t->frames[j], NULL);
		if (t->truncated)
			fputs("    <more frames not shown: --max-frames>\n", out);
	}
	if (r->native_all)
		cs_render_native_only_text(out, r);
}
