/* A sampling profile as tables: the functions seen, the frames (a function
 * at a line), the stacks (lists of frames), the threads, and the samples
 * (a thread seen in a stack, from when, for how many snapshots in a row).
 * Every id is an index into its table. The formats (profile_format.h)
 * are written from the tables; none of them is stored.
 *
 * Beside the tables the profile keeps the collapsed lines: the samples
 * summed by thread label and frame names ("label;outer;...;inner"), in
 * the order every format that lists them has always listed them. */
#ifndef CS_CORESTACK_PROFILE_H
#define CS_CORESTACK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../rubyvm/model.h"

enum cs_profile_kind {
	CS_PROFILE_RUBY,   /* a Ruby method, block or script body */
	CS_PROFILE_CFUNC,  /* a method written in C */
	CS_PROFILE_NATIVE, /* a native frame (not recorded yet) */
};

/* A name as collapsed stacks write it: ';' separates their frames, so it
 * is written ':' inside a name. Interned: equal names have equal ids. */
struct cs_profile_names {
	char **text;
	size_t count;
};

struct cs_profile_function {
	char *name;     /* qualified name, else the label, else "?" */
	char *file;     /* its Ruby file; NULL for C functions or unknown */
	size_t display; /* name, in the profile's names */
};

struct cs_profile_frame {
	size_t function;
	int line; /* 0: none (C functions) */
	enum cs_profile_kind kind;
};

struct cs_profile_stack {
	size_t *frames; /* outermost first */
	size_t nframes;
};

struct cs_profile_thread {
	char *name;      /* Thread#name, NULL for none */
	int64_t tid;     /* -1: unknown */
	int64_t pid;     /* its process when several are followed, else 0 */
	size_t label;    /* in names: its name (63 bytes at most), else
			* "thread TID", else "thread N" (N: its place in
			* the thread list); with a pid, after "process PID: " */
	uint32_t ractor; /* Ractor#inspect's number; 0: no ractors (2.7) */
	uint64_t addr;   /* its Ruby thread's address when first seen */
	size_t last;     /* its latest sample + 1; 0: none yet */
	size_t seen;     /* its process's snapshot of that sample's last look */
};

/* What a thread was doing in a snapshot (profile_state.c). */
enum cs_profile_state {
	CS_PROFILE_RUNNING,     /* holds the GVL, runs Ruby */
	CS_PROFILE_WAITING_GVL, /* runnable, waits for the GVL */
	CS_PROFILE_BLOCKED,     /* sleep, I/O, a lock, a queue, a join */
	CS_PROFILE_GC,          /* holds the GVL while the VM is in GC */
	CS_PROFILE_NSTATES,
};

/* A set of states (1u << state); 0 in cs_profile_add: every state. */
#define CS_PROFILE_ALL_STATES ((1u << CS_PROFILE_NSTATES) - 1)

/* "running", "waiting for GVL", "blocked", "gc": for people. */
const char *cs_profile_state_name(enum cs_profile_state st);
/* "running", "waiting", "blocked", "gc": what --state takes and pprof's
 * label holds. */
const char *cs_profile_state_key(enum cs_profile_state st);
/* Thread t of snapshot proc: holding the GVL it runs (or collects
 * garbage, when the VM is in GC); else asleep it is blocked, and
 * otherwise it waits for the GVL. */
enum cs_profile_state cs_profile_state_of(const struct rv_process *proc,
					  const struct rv_thread *t);
/* A comma list of keys into a set; false, with a one-line message in why,
 * when a key is unknown or the list empty. */
bool cs_profile_states_parse(const char *list, unsigned *set, char *why,
			     size_t whylen);

struct cs_profile_sample {
	size_t stack, thread;
	uint64_t time_ns; /* when first seen (CLOCK_MONOTONIC) */
	uint64_t last_ns; /* when last seen */
	uint64_t weight;  /* snapshots in a row of this thread that saw it */
	size_t snapshot;  /* the first of them: its process's count then */
	enum cs_profile_state state; /* the same in every one of them */
	enum rv_wait_kind wait;      /* blocked: on what (RV_WAIT_NONE) */
};

/* Samples summed by the thread's label and the frames' names. */
struct cs_profile_line {
	size_t thread, stack; /* the first sample's */
	size_t count;         /* 0: an empty slot */
	uint64_t hash;        /* of its text */
};

/* A hash index of one table's ids (profile.c). */
struct cs_profile_index {
	struct cs_profile_slot *slots;
	size_t nslots, count;
};

/* One frame of a memo: its names_id, its path (the address, compared,
 * never read: the frame cache lends the same string to every frame of
 * one entry), the profile's frame at that line, and the hash of the
 * collapsed line up to it (from the label down). */
struct cs_profile_memo_frame {
	uint64_t names_id;
	const char *path;
	int line;
	size_t frame;
	uint64_t hash;
};

/* The stack last counted for one thread, by its frames' names_id. */
struct cs_profile_memo {
	uint64_t thread; /* rv_thread.addr */
	int64_t pid;     /* of its process (forked ones share addresses) */
	int64_t tid;
	size_t index; /* in the snapshot's thread list */
	char *name;   /* Thread#name then, NULL for none */
	struct cs_profile_memo_frame *frames; /* innermost first */
	size_t nframes, cap;
	bool valid;
	size_t slot; /* its line, while grown is the same */
	size_t grown;
	size_t thread_id, stack_id;
};

/* A followed process's title: its command line when a program changed it
 * (Ruby's $0=, as forking servers name their workers). */
struct cs_profile_title {
	int64_t pid;
	char *text;
};

/* The snapshots added of one process: a thread's next snapshot is its
 * process's next, whatever other processes were sampled in between. */
struct cs_profile_process {
	int64_t pid;
	size_t snapshots;
	/* of them, those that listed no Ruby thread (a Ruby that has not
	 * yet listed its main thread, or no longer does): no sample */
	size_t threadless;
};

struct cs_profile {
	struct cs_profile_names names;
	struct cs_profile_function *functions;
	struct cs_profile_frame *frames;
	struct cs_profile_stack *stacks;
	struct cs_profile_thread *threads;
	struct cs_profile_sample *samples;
	size_t nfunctions, nframes, nstacks, nthreads, nsamples;
	size_t snapshots; /* snapshots added, of every process */
	/* The process the next snapshots are of, when a recording follows
	 * several (its threads are told apart and labelled by it); 0: one
	 * process, not named. */
	int64_t pid;
	/* collapsed lines, open addressing by the hash of their text */
	struct cs_profile_line *lines;
	size_t nline_slots, nlines;
	size_t grown; /* times the lines were rehashed */
	/* what finds an entry of each table by its content */
	struct cs_profile_index name_index, function_index, frame_index,
		stack_index, thread_index;
	/* a stack's frame ids while it is looked up, and its line's hash
	 * after each */
	size_t *scratch;
	uint64_t *hashes;
	size_t scratch_cap;
	/* A thread whose frames have the names of its last sample's is
	 * counted again without its frames being looked up (only a line
	 * that moved is): in a deep stack, that touched every frame's
	 * strings, most of a sample's cost to the profile. When only its
	 * inner frames changed, only those are looked up. */
	struct cs_profile_memo *memos;
	size_t nmemos;
	/* each process's own count of snapshots added */
	struct cs_profile_process *procs;
	size_t nprocs;
	/* the latest title of each process that had one */
	struct cs_profile_title *titles;
	size_t ntitles;
};

void cs_profile_init(struct cs_profile *p);
/* Count every thread's stack of one snapshot taken at time_ns (with a
 * set of states, only the threads in one of them; 0: every thread); 0 on
 * allocation failure. */
int cs_profile_add(struct cs_profile *p, const struct rv_process *proc,
		   unsigned states, uint64_t time_ns);
/* Of process pid's snapshots added (0: the one process not named), how
 * many listed no Ruby thread. */
size_t cs_profile_threadless(const struct cs_profile *p, int64_t pid);
/* Process pid's title from now on (NULL: it has none); 0 on allocation
 * failure. */
int cs_profile_set_title(struct cs_profile *p, int64_t pid, const char *title);
/* After the last snapshot, before writing: a thread sampled before it was
 * named (or before its kernel thread started), then named, is one thread
 * under its name (it was two or three: "thread N", "thread TID", then the
 * name); a thread of a process with a title is labelled "process PID
 * (TITLE): ...", its latest title. 0 on allocation failure, the profile
 * unchanged but for the titles. */
int cs_profile_settle(struct cs_profile *p);
void cs_profile_free(struct cs_profile *p);

/* The samples' ids grouped by thread, each group in time order: thread
 * i's are (*ids)[(*first)[i]] .. (*ids)[(*first)[i + 1] - 1]. false on
 * allocation failure; the caller frees both either way. */
bool cs_profile_by_thread(const struct cs_profile *p, size_t **ids,
			  size_t **first);

/* The text of a name id (cs_profile_function.display, thread.label). */
static inline const char *cs_profile_display(const struct cs_profile *p,
					     size_t name)
{
	return p->names.text[name];
}

/* The name id of a frame's function. */
static inline size_t cs_profile_frame_name(const struct cs_profile *p,
					   size_t frame)
{
	return p->functions[p->frames[frame].function].display;
}

/* Its text. */
static inline const char *cs_profile_frame_text(const struct cs_profile *p,
						size_t frame)
{
	return p->names.text[cs_profile_frame_name(p, frame)];
}

#endif
