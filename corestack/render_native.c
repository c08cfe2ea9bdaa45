/* The output --native adds: merged stacks, native frames, threads that
 * run no Ruby, and signal code names. Formatting only. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../util/json.h"
#include "report.h"

/* t[code] of a table of n names, NULL outside it or for no name. */
static const char *pick(const char *const *t, size_t n, int code)
{
	return code > 0 && (size_t)code < n ? t[code] : NULL;
}

const char *cs_signal_code_name(int signo, int code)
{
	switch (code) {
	case SI_USER: return "SI_USER";
	case SI_KERNEL: return "SI_KERNEL";
	case SI_QUEUE: return "SI_QUEUE";
	case SI_TKILL: return "SI_TKILL";
	default: break;
	}
	static const char *const segv[] = {NULL, "SEGV_MAPERR", "SEGV_ACCERR",
					   "SEGV_BNDERR", "SEGV_PKUERR"};
	static const char *const bus[] = {NULL, "BUS_ADRALN", "BUS_ADRERR",
					  "BUS_OBJERR"};
	static const char *const ill[] = {NULL, "ILL_ILLOPC", "ILL_ILLOPN",
					  "ILL_ILLADR", "ILL_ILLTRP",
					  "ILL_PRVOPC", "ILL_PRVREG",
					  "ILL_COPROC", "ILL_BADSTK"};
	static const char *const fpe[] = {NULL, "FPE_INTDIV", "FPE_INTOVF",
					  "FPE_FLTDIV", "FPE_FLTOVF",
					  "FPE_FLTUND", "FPE_FLTRES",
					  "FPE_FLTINV", "FPE_FLTSUB"};
#define PICK(t) pick((t), sizeof(t) / sizeof(*(t)), code)
	switch (signo) {
	case SIGSEGV: return PICK(segv);
	case SIGBUS: return PICK(bus);
	case SIGILL: return PICK(ill);
	case SIGFPE: return PICK(fpe);
	default: return NULL;
	}
#undef PICK
}

int cs_report_is_ruby_tid(const struct cs_report *r, int64_t tid)
{
	for (size_t i = 0; i < r->ruby->nthreads; i++)
		if (r->tids[i] == tid)
			return 1;
	return 0;
}

static void native_frame_text(FILE *out, const struct cs_native_frame *f)
{
	fprintf(out, "    [native%s%s] %s", f->inlined ? ", inlined" : "",
		f->handler ? ", handler" : "",
		f->function ? f->function : "??");
	if (f->file)
		fprintf(out, " at %s:%d", f->file, f->line);
	fprintf(out, "  (%s, 0x%llx)\n", f->module ? f->module : "?",
		(unsigned long long)f->pc);
}

/* Ruby thread i's native stack: none when its tid is not believed. */
static const struct cs_native_thread *native_of(const struct cs_report *r,
						size_t i)
{
	if (r->tid_errors && r->tid_errors[i])
		return NULL;
	return cs_native_thread_of(r->native, r->tids[i]);
}

/* Thread i's stack: merged, or the reason and the Ruby stack alone. */
void cs_render_native_text(FILE *out, const struct cs_report *r, size_t i)
{
	const struct rv_thread *t = &r->ruby->threads[i];
	const struct cs_merged_stack *m = &r->merged[i];
	const struct cs_native_thread *nt = native_of(r, i);
	if (nt && nt->cut)
		fprintf(out, "    <native unwind %s>\n", nt->error);
	if (m->off_native) {
		fputs("    <parked on no native thread (M:N scheduler): no "
		      "native frames>\n", out);
		for (size_t j = 0; j < t->nframes; j++)
			cs_render_frame_text(out, r->ruby, &t->frames[j], NULL);
		return;
	}
	if (m->error) {
		fprintf(out, "    <native frames not merged: %s; Ruby stack "
			     "alone>\n", m->error);
		for (size_t j = 0; j < t->nframes; j++)
			cs_render_frame_text(out, r->ruby, &t->frames[j], NULL);
		return;
	}
	for (size_t j = 0; j < m->nframes; j++) {
		const struct cs_merged_frame *f = &m->frames[j];
		if (f->native && (!f->ruby || f->native->inlined))
			native_frame_text(out, f->native);
		if (f->ruby)
			cs_render_frame_text(out, r->ruby, f->ruby, f->native);
	}
}

void cs_render_native_only_text(FILE *out, const struct cs_report *r)
{
	for (size_t i = 0; r->native && i < r->native->nthreads; i++) {
		const struct cs_native_thread *t = &r->native->threads[i];
		if (cs_report_is_ruby_tid(r, t->tid))
			continue;
		fprintf(out, "\nThread (tid %d) runs no Ruby%s\n", t->tid,
			t->tid == r->crash_tid ? ", received the signal" : "");
		if (t->error)
			fprintf(out, "    <native unwind stopped: %s>\n", t->error);
		for (size_t j = 0; j < t->nframes; j++)
			native_frame_text(out, &t->frames[j]);
		if (t->truncated)
			fputs("    <more native frames not shown>\n", out);
	}
}

static void native_frame_json(struct json *j, const struct cs_native_frame *f)
{
	char pc[32];
	snprintf(pc, sizeof(pc), "0x%llx", (unsigned long long)f->pc);
	json_string(j, "function", f->function);
	json_string(j, "file", f->file);
	json_int(j, "line", f->line);
	json_string(j, "module", f->module);
	json_string(j, "pc", pc);
	json_bool(j, "inlined", f->inlined);
	json_bool(j, "handler", f->handler);
}

static void native_frames_json(struct json *j, const char *key,
			       const struct cs_native_thread *t)
{
	json_begin_array(j, key);
	for (size_t k = 0; t && k < t->nframes; k++) {
		json_begin_object(j, NULL);
		native_frame_json(j, &t->frames[k]);
		json_end_object(j);
	}
	json_end_array(j);
}

/* Inside thread i's object: "native", "native_error", "merged",
 * "merge_error". */
void cs_render_native_json(struct json *j, const struct cs_report *r, size_t i)
{
	const struct rv_thread *t = &r->ruby->threads[i];
	const struct cs_merged_stack *m = &r->merged[i];
	const struct cs_native_thread *nt = native_of(r, i);
	native_frames_json(j, "native", nt);
	json_string(j, "native_error", nt ? nt->error : NULL);
	json_begin_array(j, "merged");
	for (size_t k = 0; k < m->nframes; k++) {
		const struct cs_merged_frame *f = &m->frames[k];
		json_begin_object(j, NULL);
		const char *kind = !f->ruby				? "native"
				   : f->ruby->kind == RV_FRAME_CFUNC ? "cfunc"
								     : "ruby";
		json_string(j, "kind", kind);
		if (f->ruby) {
			/* the frame's index in "frames" */
			json_int(j, "frame", (long long)(f->ruby - t->frames));
			json_string(j, "label", f->ruby->label);
		}
		if (f->native)
			native_frame_json(j, f->native);
		json_end_object(j);
	}
	json_end_array(j);
	json_string(j, "merge_error", m->error);
	json_bool(j, "off_native", m->off_native);
}

void cs_render_native_only_json(struct json *j, const struct cs_report *r)
{
	json_begin_array(j, "native_threads");
	for (size_t i = 0; r->native_all && r->native && i < r->native->nthreads;
	     i++) {
		const struct cs_native_thread *t = &r->native->threads[i];
		if (cs_report_is_ruby_tid(r, t->tid))
			continue;
		json_begin_object(j, NULL);
		json_int(j, "tid", t->tid);
		json_bool(j, "crashed", t->tid == r->crash_tid);
		native_frames_json(j, "native", t);
		json_string(j, "error", t->error);
		json_end_object(j);
	}
	json_end_array(j);
}
