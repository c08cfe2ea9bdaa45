/* The functions in which CRuby writes its bug report ("[BUG] ...") before
 * it aborts: rb_bug and its variants, the report of a fatal signal, a
 * failed RUBY_ASSERT. A thread inside one of them is crashing, with no
 * signal yet while the report is being written. */
#ifndef CS_ENGINE_BUG_REPORTERS_H
#define CS_ENGINE_BUG_REPORTERS_H

#include <stdbool.h>
#include <stddef.h>

/* Their names, every one any Ruby has used: a binary has some of them. */
extern const char *const cs_bug_reporters[];
extern const size_t cs_nbug_reporters;

/* Whether function (a symbol's or DWARF's name; a compiler's suffix such
 * as ".cold" ignored) is one of them. */
bool cs_is_bug_reporter(const char *function);

#endif
