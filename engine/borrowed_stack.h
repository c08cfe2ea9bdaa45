/* A kernel thread that runs on a Ruby thread's machine stack though it is
 * not that thread's own (borrowed_stack.c). */
#ifndef CS_CORESTACK_BORROWED_STACK_H
#define CS_CORESTACK_BORROWED_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "../process/target.h"
#include "../rubyvm/model.h"

/* The tid of the kernel thread that runs Ruby thread t's code: the one
 * kernel thread among natives (n of them) whose stack pointer lies in the
 * machine stack Ruby records for t and that runs no Ruby thread of its
 * own (its tid none of ruby_tids, nruby of them: each Ruby thread's
 * believed tid, -1 when unknown); else tid, t's own kernel thread. */
int64_t cs_borrowed_stack_runner(const struct rv_thread *t, int64_t tid,
				 const int64_t *ruby_tids, size_t nruby,
				 const struct cs_thread *const *natives,
				 size_t n);

#endif
