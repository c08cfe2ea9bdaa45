/* The crash summary (crash.h) in text, at the top of the report, and in
 * JSON. Formatting only. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../process/crash_signal.h"
#include "../util/json.h"
#include "../engine/report.h"

static const char *signal_name(int signo, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(signo);
	snprintf(buf, size, "SIG%s", abbrev ? abbrev : "?");
	return buf;
}

/* "SIGSEGV (SEGV_MAPERR)" */
static void signal_text(FILE *out, const struct cs_siginfo *si)
{
	char name[32];
	const char *code = cs_signal_code_name(si->signo, si->code);
	fprintf(out, "%s", signal_name(si->signo, name, sizeof(name)));
	if (code)
		fprintf(out, " (%s)", code);
	else
		fprintf(out, " (code %d)", si->code);
}

/* "in crashtest.so: ct_segv at crashtest.c:35", "in yjit code" */
static void where_text(FILE *out, const struct cs_native_frame *at,
		       const struct cs_native_frame *function)
{
	if (at->jit) {
		fprintf(out, "%s code", at->jit);
		return;
	}
	fprintf(out, "%s: %s", function->module ? function->module : "?",
		at->function ? at->function : "??");
	if (at->file)
		fprintf(out, " at %s:%d", at->file, at->line);
	if (function != at && function->function)
		fprintf(out, " (inlined into %s)", function->function);
}

void cs_render_crash_text(FILE *out, const struct cs_report *r)
{
	const struct cs_crash *c = r->crash;
	if (!c)
		return;
	fputs("Crash: ", out);
	if (c->thread >= 0) {
		const char *name = r->ruby->threads[c->thread].name;
		fprintf(out, "thread %ld", c->thread + 1);
		/* as the thread's own header names it */
		if (name)
			fprintf(out, " \"%s\"", name);
		fprintf(out, " (tid %lld)", (long long)c->tid);
		if (c->fiber)
			fprintf(out, " in fiber 0x%llx",
				(unsigned long long)(c->fiber->object
							     ? c->fiber->object
							     : c->fiber->addr));
	} else
		fprintf(out, "tid %lld, which runs no Ruby", (long long)c->tid);
	uint64_t addr = c->fault.si.addr;
	if (c->kind == CS_CRASH_BUG) {
		fputs(", Ruby is writing a bug report, no signal yet", out);
	} else if (c->sent) {
		fputs(c->kind == CS_CRASH_SENT ? ", no fault: " : ", ", out);
		signal_text(out, &c->fault.si);
		if (c->fault.si.pid > 0 && c->fault.si.pid != r->pid)
			fprintf(out, " sent by process %d", c->fault.si.pid);
		else
			fputs(" sent by the process itself", out);
		if (c->kind == CS_CRASH_UNKNOWN)
			fputs("; the original fault is unknown", out);
	} else {
		fputs(", ", out);
		signal_text(out, &c->fault.si);
		fprintf(out, " at address 0x%llx", (unsigned long long)addr);
		if (c->kind == CS_CRASH_STACK_OVERFLOW)
			fprintf(out,
				": stack overflow, %llu bytes below the "
				"thread's stack 0x%llx-0x%llx",
				(unsigned long long)(c->stack_start - addr),
				(unsigned long long)c->stack_start,
				(unsigned long long)c->stack_end);
	}
	if (c->from_signal_frame)
		fputs(" (from the signal frame on its stack)", out);
	fputc('\n', out);
	if (c->kind == CS_CRASH_EXECUTE) {
		fprintf(out, "    executed 0x%llx, which is not code, ",
			(unsigned long long)(c->at ? c->at->pc : addr));
		if (c->called_from) {
			fputs("called from ", out);
			where_text(out, c->called_from,
				   c->called_from_function);
			fprintf(out, ", return address 0x%llx\n",
				(unsigned long long)c->called_from->pc);
		} else {
			fputs("called from an unknown caller\n", out);
		}
	} else if (c->kind == CS_CRASH_BUG) {
		if (c->at) {
			fputs("    in ", out);
			where_text(out, c->at, c->at_function);
			fputc('\n', out);
		}
		if (c->called_from) {
			fputs("    called from ", out);
			where_text(out, c->called_from,
				   c->called_from_function);
			fputc('\n', out);
		}
	} else if (c->at) {
		fprintf(out, "    %s ", c->sent ? "sent from" : "faulted in");
		where_text(out, c->at, c->at_function);
		if (c->regs_known)
			fprintf(out, ", pc 0x%llx",
				(unsigned long long)c->fault.regs[CS_REG_RIP]);
		fputc('\n', out);
		if (c->entered_from) {
			fprintf(out, "    called into %s from ", c->at->module);
			where_text(out, c->entered_from,
				   c->entered_from_function);
			fputc('\n', out);
		}
	}
	if (c->abort_message)
		fprintf(out, "    abort message: %s\n", c->abort_message);
	else if (c->abort_message_error)
		fprintf(out, "    abort message not read: %s\n",
			c->abort_message_error);
	if (c->ruby) {
		const struct rv_frame *f = c->ruby;
		const char *q = r->ruby->backtick_quotes ? "`" : "'";
		fprintf(out, "    called from Ruby: %s:%d:in %s%s'",
			f->path ? f->path : "?", f->lineno, q,
			f->label ? f->label : "?");
		if (f->stable && f->label && strcmp(f->stable, f->label) != 0)
			fprintf(out, "  [%s]", f->stable);
		fputc('\n', out);
	}
	if (c->thread >= 0 && r->ruby->threads[c->thread].exception) {
		fputs("    exception ($!): ", out);
		cs_render_exception_text(out, &r->ruby->threads[c->thread]);
		fputc('\n', out);
	}
	const struct rv_gc_state *g = &r->ruby->gc;
	if (g->known)
		fprintf(out, "    %s\n",
			!g->during_gc                  ? "GC not running"
			: g->phase == RV_GC_MARKING    ? "during GC, marking"
			: g->phase == RV_GC_SWEEPING   ? "during GC, sweeping"
			: g->phase == RV_GC_COMPACTING ? "during GC, compacting"
						       : "during GC");
	if (c->core_signal) {
		/* a live process a debugger holds at the signal: no core */
		const char *whose = r->core_path
					    ? "the core's signal"
					    : "the signal it is stopped at";
		fputs("    then ", out);
		signal_text(out, c->core_signal);
		if (c->resent_by) {
			fprintf(out, ", %s, sent by the handler from ", whose);
			where_text(out, c->resent_by, c->resent_by);
		} else {
			fprintf(out, ", %s", whose);
		}
		fputc('\n', out);
	}
	/* a core gcore took of a crashing process: not ended then */
	const char *until = r->core_path ? " when the core was taken"
					 : ": the process has not ended";
	if (c->handler_running)
		fprintf(out, "    the handler %s still running%s\n",
			r->core_path ? "was" : "is", until);
	if (c->reporting_bug)
		fprintf(out, "    the report %s still being written%s\n",
			r->core_path ? "was" : "is", until);
	if (c->error)
		fprintf(out, "    <crash summary incomplete: %s>\n", c->error);
}

void cs_render_signal_json(struct json *j, const char *key,
			   const struct cs_siginfo *si)
{
	char name[32];
	json_begin_object(j, key);
	json_int(j, "number", si->signo);
	json_string(j, "name", signal_name(si->signo, name, sizeof(name)));
	json_int(j, "code", si->code);
	json_string(j, "code_name", cs_signal_code_name(si->signo, si->code));
	json_hex_string(j, "fault_address", si->addr);
	json_end_object(j);
}

static void where_json(struct json *j, const char *key,
		       const struct cs_native_frame *at,
		       const struct cs_native_frame *function)
{
	if (!at) {
		json_null(j, key);
		return;
	}
	json_begin_object(j, key);
	json_string(j, "function", at->function);
	json_string(j, "file", at->file);
	json_int(j, "line", at->line);
	json_string(j, "module", function->module);
	json_string(j, "outer_function", function->function);
	json_hex_string(j, "pc", at->pc);
	json_string(j, "jit", at->jit);
	json_end_object(j);
}

static void registers_json(struct json *j, const struct cs_crash *c)
{
	static const char *const names[] = {
		"r15", "r14", "r13", "r12", "rbp",    "rbx", "r11",
		"r10", "r9",  "r8",  "rax", "rcx",    "rdx", "rsi",
		"rdi", NULL,  "rip", NULL,  "eflags", "rsp",
	};
	if (!c->regs_known) {
		json_null(j, "registers");
		return;
	}
	json_begin_object(j, "registers");
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (names[i])
			json_hex_string(j, names[i], c->fault.regs[i]);
	json_end_object(j);
}

/* The crashed thread's index in the JSON "threads" array, which holds
 * only the threads shown; -1 when it is not there. */
static long shown_index(const bool *shown, long thread)
{
	if (thread < 0 || !shown)
		return thread;
	if (!shown[thread])
		return -1;
	long k = 0;
	for (long i = 0; i < thread; i++)
		k += shown[i];
	return k;
}

void cs_render_crash_json(struct json *j, const struct cs_report *r,
			  const bool *shown_threads)
{
	const struct cs_crash *c = r->crash;
	if (!c) {
		json_null(j, "crash");
		return;
	}
	json_begin_object(j, "crash");
	json_int(j, "tid", c->tid);
	long shown = shown_index(shown_threads, c->thread);
	if (shown >= 0)
		json_int(j, "thread_index", shown);
	else
		json_null(j, "thread_index");
	json_string(j, "thread_name",
		    c->thread >= 0 ? r->ruby->threads[c->thread].name : NULL);
	if (c->fiber && c->fiber->object)
		json_hex_string(j, "fiber", c->fiber->object);
	else
		json_null(j, "fiber");
	if (c->kind == CS_CRASH_UNKNOWN)
		json_null(j, "fault");
	else /* a bug report has no signal yet, and no fault */
		json_bool(j, "fault", !c->sent && c->kind != CS_CRASH_BUG);
	json_string(j, "kind", cs_crash_kind_name(c->kind));
	if (c->kind == CS_CRASH_BUG)
		json_null(j, "signal");
	else
		cs_render_signal_json(j, "signal", &c->fault.si);
	json_bool(j, "from_signal_frame", c->from_signal_frame);
	if (c->fault.si.pid > 0)
		json_int(j, "sender_pid", c->fault.si.pid);
	else
		json_null(j, "sender_pid");
	where_json(j, "at", c->at, c->at_function);
	where_json(j, "called_from", c->called_from, c->called_from_function);
	where_json(j, "entered_from", c->entered_from,
		   c->entered_from_function);
	if (c->kind == CS_CRASH_STACK_OVERFLOW) {
		json_begin_object(j, "stack");
		json_hex_string(j, "start", c->stack_start);
		json_hex_string(j, "end", c->stack_end);
		json_end_object(j);
	} else {
		json_null(j, "stack");
	}
	json_string(j, "abort_message", c->abort_message);
	json_string(j, "abort_message_error", c->abort_message_error);
	registers_json(j, c);
	if (c->ruby) {
		json_begin_object(j, "ruby_frame");
		json_string(j, "label", c->ruby->label);
		json_string(j, "path", c->ruby->path);
		json_int(j, "lineno", c->ruby->lineno);
		json_string(j, "qualified", c->ruby->qualified);
		json_string(j, "stable", c->ruby->stable);
		json_end_object(j);
	} else {
		json_null(j, "ruby_frame");
	}
	cs_render_exception_json(
		j, c->thread >= 0 ? &r->ruby->threads[c->thread] : NULL);
	if (r->ruby->gc.known)
		json_bool(j, "in_gc", r->ruby->gc.during_gc);
	else
		json_null(j, "in_gc");
	if (c->core_signal)
		cs_render_signal_json(j, "core_signal", c->core_signal);
	else
		json_null(j, "core_signal");
	where_json(j, "core_signal_sent_from", c->resent_by, c->resent_by);
	json_bool(j, "handler_running", c->handler_running);
	json_bool(j, "reporting_bug", c->reporting_bug);
	json_string(j, "error", c->error);
	json_end_object(j);
}
