/* See crash.h. Which frame faulted comes from the native unwinder, which
 * marks the frame a signal interrupted; the kernel's record of the
 * signal sits where the trampoline's stack pointer points. */
#include "crash.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../process/crash_signal.h"
#include "bug_reporters.h"

/* The frames of frames[i]'s pc: from the first frame with that pc (the
 * innermost inlined call) to the function holding them. */
static void group_of(const struct cs_native_thread *nt, size_t i,
		     const struct cs_native_frame **first,
		     const struct cs_native_frame **function)
{
	size_t a = i, b = i;
	while (a > 0 && nt->frames[a - 1].pc == nt->frames[i].pc &&
	       nt->frames[a - 1].inlined)
		a--;
	while (b + 1 < nt->nframes && nt->frames[b].inlined)
		b++;
	*first = &nt->frames[a];
	*function = &nt->frames[b];
}

/* The C library sends a signal for its caller (abort, raise). */
static bool in_libc(const struct cs_native_frame *f)
{
	return f->module && (strncmp(f->module, "libc.so", 7) == 0 ||
			     strncmp(f->module, "libc-", 5) == 0 ||
			     strncmp(f->module, "libpthread", 10) == 0);
}

/* Who sent a signal, from the frames [from, to): the first frame outside
 * the C library. */
static void sender_of(const struct cs_native_thread *nt, size_t from, size_t to,
		      const struct cs_native_frame **first,
		      const struct cs_native_frame **function)
{
	for (size_t i = from; i < to; i++)
		if (!in_libc(&nt->frames[i])) {
			group_of(nt, i, first, function);
			return;
		}
}

/* c->entered_from, from the frames of nt past the faulting function. */
static void entered_from(struct cs_crash *c, const struct cs_native_thread *nt)
{
	if (c->thread >= 0 || c->called_from || !c->at || !c->at->module ||
	    !c->at_function)
		return;
	for (size_t i = (size_t)(c->at_function - nt->frames) + 1;
	     i < nt->nframes && nt->frames[i].module; i++) {
		const struct cs_native_frame *f = &nt->frames[i];
		if (strcmp(f->module, c->at->module) != 0 && !in_libc(f)) {
			group_of(nt, i, &c->entered_from,
				 &c->entered_from_function);
			return;
		}
	}
}

static bool is_sent(const struct cs_siginfo *si)
{
	return si->code <= 0; /* SI_USER, SI_QUEUE, SI_TKILL...: a process */
}

/* The frame the outermost signal interrupted (the one before it is the
 * trampoline), or nt->nframes: none. */
static size_t outer_interrupted(const struct cs_native_thread *nt)
{
	size_t k = nt->nframes;
	for (size_t i = 1; i < nt->nframes; i++)
		if (nt->frames[i].interrupted && !nt->frames[i - 1].interrupted)
			k = i;
	return k;
}

bool cs_crash_in_handler(const struct cs_native_thread *nt,
			 const struct cs_memory *mem)
{
	size_t k = nt ? outer_interrupted(nt) : 0;
	if (!nt || k == nt->nframes || !nt->frames[k - 1].sp)
		return false;
	struct cs_signal_frame f;
	struct cs_error *err =
		cs_signal_frame_read(mem, nt->frames[k - 1].sp, &f);
	bool yes = !err && f.regs[CS_REG_RIP] == nt->frames[k].pc &&
		   cs_crash_handler_signal(f.si.signo);
	cs_error_destroy(err);
	return yes;
}

/* The outermost frame of nt that runs a bug reporter, or nt->nframes. */
static size_t outer_bug_reporter(const struct cs_native_thread *nt)
{
	for (size_t i = nt->nframes; i-- > 0;)
		if (cs_is_bug_reporter(nt->frames[i].function))
			return i;
	return nt->nframes;
}

bool cs_crash_in_bug_report(const struct cs_native_thread *nt)
{
	return nt && outer_bug_reporter(nt) < nt->nframes;
}

/* c as a bug report being written on nt: in its outermost bug reporter,
 * called from the frame past it. false: nt runs none. */
static bool from_bug_report(struct cs_crash *c,
			    const struct cs_native_thread *nt)
{
	size_t i = outer_bug_reporter(nt);
	if (i == nt->nframes)
		return false;
	c->kind = CS_CRASH_BUG;
	c->reporting_bug = true;
	group_of(nt, i, &c->at, &c->at_function);
	size_t next = (size_t)(c->at_function - nt->frames) + 1;
	if (next < nt->nframes)
		group_of(nt, next, &c->called_from, &c->called_from_function);
	return true;
}

/* The original fault from the outermost signal frame on nt's stack:
 * false when there is none, or (c->error says why) it is not believed. */
static bool from_signal_frame(struct cs_crash *c,
			      const struct cs_native_thread *nt,
			      const struct cs_memory *mem)
{
	size_t k = outer_interrupted(nt);
	if (k == nt->nframes)
		return false;
	c->from_signal_frame = true;
	const struct cs_native_frame *tramp = &nt->frames[k - 1];
	struct cs_error *err =
		tramp->sp ? cs_signal_frame_read(mem, tramp->sp, &c->fault)
			  : cs_error_create(CS_ERR_FAULT,
					    "the signal trampoline's "
					    "stack pointer is unknown");
	if (!err && c->fault.regs[CS_REG_RIP] != nt->frames[k].pc)
		err = cs_error_create(
			CS_ERR_CORRUPT,
			"the signal frame at 0x%llx saved pc "
			"0x%llx, but the interrupted frame is "
			"at 0x%llx",
			(unsigned long long)tramp->sp,
			(unsigned long long)c->fault.regs[CS_REG_RIP],
			(unsigned long long)nt->frames[k].pc);
	if (err) {
		if (asprintf(&c->error, "signal frame: %s", err->message) < 0)
			c->error = NULL;
		cs_error_destroy(err);
		/* not believed: the core's own signal stands */
		memset(&c->fault, 0, sizeof(c->fault));
		c->from_signal_frame = false;
		return false;
	}
	c->regs_known = true;
	c->sent = is_sent(&c->fault.si);
	/* a sent signal is named by its sender, as without a handler */
	if (c->sent)
		sender_of(nt, k, nt->nframes, &c->at, &c->at_function);
	else
		group_of(nt, k, &c->at, &c->at_function);
	return true;
}

/* How far below a stack a fault still hits its guard: Linux keeps a gap
 * of 256 pages below a growing stack (stack_guard_gap), glibc a guard
 * of a page or more below a thread's. */
#define GUARD_REACH (1u << 20)

/* A fault at addr with the stack pointer at sp that hit the guard below
 * the stack the thread ran on: addr is not writable, and the writable
 * region just above it, within GUARD_REACH, is that stack (sp in it,
 * or already past its bottom by less than GUARD_REACH). */
static bool stack_overflow(struct cs_crash *c, const struct cs_target *img,
			   uint64_t addr, uint64_t sp)
{
	struct cs_writable_regions w = img ? cs_target_writable_regions(img)
					   : (struct cs_writable_regions){0};
	uint64_t lo, hi;
	if (!w.next || !w.next(w.priv, addr, &lo, &hi) || addr >= lo ||
	    lo - addr > GUARD_REACH || sp >= hi || sp + GUARD_REACH < lo)
		return false;
	c->stack_start = lo;
	c->stack_end = hi;
	return true;
}

/* What kind of crash c is, once its signal and frames are known. */
static void classify(struct cs_crash *c, const struct cs_native_thread *nt,
		     const struct cs_target *img, bool frame_not_believed)
{
	const struct cs_siginfo *si = &c->fault.si;
	if (c->sent) {
		/* A handler that took a fault and then signalled (Ruby's
		 * re-raises it, or aborts) leaves the original only in its
		 * signal frame: a signal sent without one is believed sent
		 * only when the whole stack was unwound and held none. */
		bool whole = nt && nt->nframes && nt->whole;
		/* from another process: no handler here re-raised it */
		bool outside = si->pid > 0 && img &&
			       si->pid != cs_target_pid(img);
		if (c->from_signal_frame || outside ||
		    (!frame_not_believed && whole)) {
			c->kind = CS_CRASH_SENT;
			return;
		}
		c->kind = CS_CRASH_UNKNOWN;
		if (!c->error &&
		    asprintf(&c->error,
			     "SIG%s was sent by the process itself, and its "
			     "native stack, not unwound to the thread's start "
			     "(%s), may hold a handler's signal frame with an "
			     "original fault",
			     sigabbrev_np(si->signo) ? sigabbrev_np(si->signo)
						     : "?",
			     nt && nt->error ? nt->error
			     : nt && nt->nframes
				     ? "it ends where no caller is known"
				     : "it is unknown") < 0)
			c->error = NULL;
		return;
	}
	uint64_t pc = c->fault.regs[CS_REG_RIP];
	if ((c->at && c->at->not_code) ||
	    (si->signo == SIGSEGV && c->regs_known && si->addr == pc)) {
		c->kind = CS_CRASH_EXECUTE;
		size_t next =
			c->at_function && nt
				? (size_t)(c->at_function - nt->frames) + 1
				: SIZE_MAX;
		if (nt && next < nt->nframes &&
		    nt->frames[next].found_by == CS_FOUND_BY_RETURN_ADDRESS)
			group_of(nt, next, &c->called_from,
				 &c->called_from_function);
		return;
	}
	if (si->signo != SIGSEGV && si->signo != SIGBUS) {
		c->kind = CS_CRASH_FAULT;
		return;
	}
	c->kind = c->regs_known && stack_overflow(c, img, si->addr,
						  c->fault.regs[CS_REG_RSP])
			  ? CS_CRASH_STACK_OVERFLOW
			  : CS_CRASH_MEMORY_ACCESS;
}

const char *cs_crash_kind_name(enum cs_crash_kind kind)
{
	static const char *const names[] = {
		[CS_CRASH_UNKNOWN] = "unknown",
		[CS_CRASH_MEMORY_ACCESS] = "memory_access",
		[CS_CRASH_EXECUTE] = "execute",
		[CS_CRASH_STACK_OVERFLOW] = "stack_overflow",
		[CS_CRASH_FAULT] = "fault",
		[CS_CRASH_SENT] = "sent",
		[CS_CRASH_BUG] = "bug",
	};
	return names[kind];
}

struct cs_error *cs_crash_find(const struct cs_siginfo *si, int64_t crash_tid,
			       const struct cs_thread *kt,
			       const struct cs_native_thread *nt,
			       const struct cs_target *img,
			       const struct cs_memory *mem,
			       const struct rv_process *p, const int64_t *tids,
			       char *const *tid_errors, struct cs_crash **ret)
{
	struct cs_crash *c = calloc(1, sizeof(*c));
	*ret = c;
	if (!c)
		return &cs_error_nomem;
	c->tid = crash_tid;
	c->thread = -1;
	for (size_t i = 0; i < p->nthreads; i++)
		if (tids[i] == crash_tid && crash_tid >= 0 &&
		    !(tid_errors && tid_errors[i]))
			c->thread = (long)i;
	if (c->thread >= 0 && p->threads[c->thread].nframes)
		c->ruby = &p->threads[c->thread].frames[0];
	for (size_t i = 0; c->thread >= 0 && i < p->threads[c->thread].nfibers;
	     i++) {
		const struct rv_fiber *f = &p->threads[c->thread].fibers[i];
		if (f->is_current && !f->is_root)
			c->fiber = f;
	}
	if (nt && nt->nframes && from_signal_frame(c, nt, mem)) {
		/* no signal of its own: a live process still in the handler */
		c->handler_running = !si;
		/* the handler signalled again: what the core was written on,
		 * sent from inside the handler */
		c->core_signal = si;
		const struct cs_native_frame *function;
		if (si && is_sent(si) && c->at)
			sender_of(nt, 0, (size_t)(c->at - nt->frames),
				  &c->resent_by, &function);
		classify(c, nt, img, false);
		entered_from(c, nt);
		return NULL;
	}
	bool not_believed = c->error != NULL;
	/* no fatal signal: a believed signal frame or a bug reporter on the
	 * stack tells a crash in progress */
	if (!si && nt && from_bug_report(c, nt)) {
		free(c->error); /* a signal frame not believed: not this */
		c->error = NULL;
		return NULL;
	}
	if (!si) {
		cs_crash_free(c);
		*ret = NULL;
		return NULL;
	}
	c->fault.si = *si;
	c->sent = is_sent(si);
	if (kt) {
		memcpy(c->fault.regs, kt->regs, sizeof(c->fault.regs));
		c->regs_known = true;
	}
	if (!nt || !nt->nframes) {
		if (asprintf(&c->error,
			     "the thread's native stack is unknown%s%s",
			     nt && nt->error ? ": " : "",
			     nt && nt->error ? nt->error : "") < 0)
			c->error = NULL;
		classify(c, nt, img, not_believed);
		return NULL;
	}
	if (c->sent)
		sender_of(nt, 0, nt->nframes, &c->at, &c->at_function);
	else
		group_of(nt, 0, &c->at, &c->at_function);
	classify(c, nt, img, not_believed);
	entered_from(c, nt);
	return NULL;
}

void cs_crash_free(struct cs_crash *c)
{
	if (!c)
		return;
	free(c->error);
	free(c->abort_message);
	free(c->abort_message_error);
	free(c);
}
