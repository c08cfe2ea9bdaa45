/* A target: the process corestack reads, whatever holds it — an ELF core,
 * a live process, the debugger's inferior.
 *
 * Everything above this layer (finding the Ruby module, the Ruby model,
 * native stacks, the report) sees a target only through this interface.
 * A target is the tables every kind fills alike (struct cs_target_tables:
 * mappings, threads, auxiliary vector, regions, the process's facts),
 * looked up here once for all kinds, and the few operations that differ
 * between them (struct cs_target_ops). A new kind of target is one file
 * filling the tables and implementing the operations, and one entry in
 * the table of process/open.c (or, for a target only a debugger can make,
 * a constructor in gdbext/).
 *
 * Operations marked "may be NULL" have the default the accessor below
 * names; the others are required. */
#ifndef CS_TARGET_TARGET_H
#define CS_TARGET_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"
#include "memory.h"
#include "module_search.h"

/* Most threads a target is read with: a live process with more is
 * refused, as a snapshot reads no more. */
#define CS_TARGET_MAX_THREADS 100000

/* A kernel thread with its registers (x86-64). Targets without registers
 * (a live process read without pausing it) give the tid only. */
struct cs_thread {
	int tid;
	int cursig; /* signal it stopped with / took, or 0 */
	uint64_t rip, rsp, rbp, fs_base;
	uint64_t regs[27]; /* x86-64 user_regs_struct order */
};

/* Indexes into cs_thread.regs (order of struct user_regs_struct). */
enum cs_reg {
	CS_REG_R15,
	CS_REG_R14,
	CS_REG_R13,
	CS_REG_R12,
	CS_REG_RBP,
	CS_REG_RBX,
	CS_REG_R11,
	CS_REG_R10,
	CS_REG_R9,
	CS_REG_R8,
	CS_REG_RAX,
	CS_REG_RCX,
	CS_REG_RDX,
	CS_REG_RSI,
	CS_REG_RDI,
	CS_REG_ORIG_RAX,
	CS_REG_RIP,
	CS_REG_CS,
	CS_REG_EFLAGS,
	CS_REG_RSP,
	CS_REG_SS,
	CS_REG_FS_BASE,
	CS_REG_GS_BASE,
	CS_REG_DS,
	CS_REG_ES,
	CS_REG_FS,
	CS_REG_GS,
};

/* A file mapped into the target; file_offset in bytes. path is the path
 * in the target (kernel d_path: may end in " (deleted)"), without any
 * sysroot. */
struct cs_mapping {
	uint64_t start, end, file_offset;
	const char *path;
};

/* A mapped region of the target's memory. */
struct cs_region {
	uint64_t start, end;
	bool write, exec;
};

/* The signal a core was written on (NT_SIGINFO, or what a debugger
 * reports). */
struct cs_siginfo {
	int present;
	int signo, code, err;
	uint64_t addr; /* si_addr for SIGSEGV/SIGBUS/SIGILL/SIGFPE */
	int pid;       /* si_pid of a signal a process sent, else 0 */
};

/* What a target knows of its process, in one shape for every kind: each
 * kind fills the tables when it opens, owns what they point to, and keeps
 * them current (a live process replaces its threads at each pause and its
 * regions in update_regions). The lookups below are the same for all. */
struct cs_target_tables {
	/* File mappings, sorted by start. */
	struct cs_mapping *maps;
	size_t nmaps;
	/* Kernel threads; thread 0 is the main or crashed thread. None
	 * known for the debugger's inferior. */
	struct cs_thread *threads;
	size_t nthreads;
	bool has_registers; /* the threads carry registers */
	/* The auxiliary vector: nauxv (type, value) pairs, in host order;
	 * an AT_NULL type ends it early. */
	const uint64_t *auxv;
	size_t nauxv;
	/* Memory regions, sorted by start and disjoint. knows_regions
	 * false: regions unknown, the native unwinder checks nothing and
	 * nothing searches the target's memory. */
	struct cs_region *regions;
	size_t nregions;
	bool knows_regions;
	/* The executable's path in the target, or NULL. */
	const char *executable;

	/* The process, for the report's header: -1 or NULL when unknown. */
	int pid;
	const char *command;
	/* The working directory, where the target knows it (a live process);
	 * the path of a Ruby frame run from a relative path is from here. */
	const char *cwd;
	/* The signal the target was dumped on, as recorded. */
	const struct cs_siginfo *siginfo;
	/* The thread that took a fatal siginfo, or -1. */
	int64_t crash_tid;
};

/* What differs between kinds: how memory is read, where the files are,
 * what the input lacks, and how the target is let go. */
struct cs_target_ops {
	/* Memory (memory.h): exactly len bytes or CS_ERR_FAULT. */
	struct cs_error *(*read)(void *priv, uint64_t addr, void *buf,
				 size_t len);
	/* A hint that a range will be read soon. May be NULL. */
	void (*prefetch)(void *priv, uint64_t addr, size_t len);

	/* GNU build-id of the module loaded at start, from the target's own
	 * bytes (never a file on disk: it proves the file matches). */
	struct cs_error *(*module_build_id)(void *priv, uint64_t start,
					    uint8_t *buf, size_t bufsize,
					    size_t *len);
	/* Where a file the target mapped is on this machine (a module's
	 * file found by its build-id, if it was); malloc'd, NULL on
	 * ENOMEM. May be NULL: at its path. */
	char *(*host_path)(void *priv, const char *path);
	/* Look for a module's file with s (module_search.h) when the one
	 * the target names cannot be used, and read the bytes the target
	 * lacks of it from the file found; NULL: stop (s is about to be
	 * freed). May be NULL: the kind reads no file. */
	void (*use_module_search)(void *priv, struct cs_module_search *s);
	/* The module mapped at m found so, or NULL. May be NULL: the
	 * default, which looks with the search the caller gives. */
	const struct cs_module_found *(*module_found)(
		void *priv, const struct cs_mapping *m);
	/* One line on why the mappings may lack a module. May be NULL:
	 * they are complete. */
	const char *(*mapping_gap)(const void *priv);
	/* The system call kernel thread tid is blocked in, as the kernel
	 * tells without the thread's registers (/proc/PID/task/TID/syscall):
	 * its number in nr_args[0], its six arguments after it, and its pc;
	 * false when it runs, is in none, or cannot be told. May be NULL. */
	bool (*thread_syscall)(void *priv, int tid, uint64_t nr_args[7],
			       uint64_t *pc);
	/* What file descriptor fd of the process is, as /proc names it
	 * ("pipe:[1234]", "socket:[5678]", a path); malloc'd, NULL when
	 * unknown. May be NULL: the kind cannot tell (a core). */
	char *(*describe_fd)(void *priv, int fd);
	/* The signals kernel thread tid blocks (bit signo - 1), asked
	 * while it is stopped (a handler runs with its own signal blocked:
	 * the crash summary of a live process); false when unknown. May be
	 * NULL: the kind cannot tell. */
	bool (*thread_blocked)(void *priv, int tid, uint64_t *mask);
	/* Bring the region table up to date before a lookup; false when
	 * it cannot be read (no region is then known). May be NULL: the
	 * table is always current. */
	bool (*update_regions)(void *priv);

	/* Problems with the input found by reading it: one line each.
	 * check_files makes every warning known now rather than on first
	 * read. Each may be NULL: none. */
	void (*check_files)(void *priv);
	size_t (*warning_count)(const void *priv);
	const char *(*warning_at)(const void *priv, size_t i);
	/* NULL, or why the target lacks bytes it should have (a truncated
	 * core); the caller destroys it. */
	struct cs_error *(*truncation)(const void *priv);

	/* The snapshot is taken: let a stopped process run again. May be
	 * NULL: nothing is stopped. */
	void (*release)(void *priv);
	/* Free priv and everything the target holds. May be NULL: the
	 * target does not own priv. */
	void (*close)(void *priv);
};

struct cs_target {
	const struct cs_target_ops *ops;
	void *priv;
	/* The kind's tables, in priv: valid while the target is open. */
	const struct cs_target_tables *tables;
	const char *name; /* subject of messages: "core.1234", "process 1234" */
	const char *comm; /* process name, "" if unknown */
	const char *what; /* "core" or "process": "does not match the core" */
	bool dump;        /* memory of a process that no longer runs */
};

/* Lookups in a kind's tables, for the kind itself before its target is
 * made (and for its tests); the cs_target_ accessors below are these. */
const struct cs_thread *cs_tables_thread_at(const struct cs_target_tables *tt,
					    size_t i);
const struct cs_mapping *cs_tables_mapping_at(const struct cs_target_tables *tt,
					      size_t i);
/* The mapping containing addr, or NULL. */
const struct cs_mapping *cs_tables_mapping_of(const struct cs_target_tables *tt,
					      uint64_t addr);
/* Lowest mapping of a file whose basename starts with prefix
 * ("libruby.so"), i.e. where that module is loaded. */
const struct cs_mapping *
cs_tables_find_mapping(const struct cs_target_tables *tt, const char *prefix);
/* auxv value, 0 if absent. */
uint64_t cs_tables_auxv(const struct cs_target_tables *tt, uint64_t type);
/* The region holding addr (false: none). */
bool cs_tables_region_of(const struct cs_target_tables *tt, uint64_t addr,
			 struct cs_region *ret);
/* The lowest writable region that ends above addr (false: none). */
bool cs_tables_writable_next(const struct cs_target_tables *tt, uint64_t addr,
			     uint64_t *start, uint64_t *end);

/* The target's memory, for the model and other readers. */
struct cs_memory cs_target_memory(const struct cs_target *t);
/* Its prefetch hint; .prefetch NULL when it takes none. */
struct cs_prefetcher cs_target_prefetcher(const struct cs_target *t);

size_t cs_target_thread_count(const struct cs_target *t);
const struct cs_thread *cs_target_thread_at(const struct cs_target *t,
					    size_t i);
bool cs_target_has_registers(const struct cs_target *t);
/* Every thread, as an array (malloc'd; NULL when out of memory). */
const struct cs_thread **cs_target_threads(const struct cs_target *t);

/* File mappings (sorted by start), the auxiliary vector and the
 * executable from the tables; the build-id of a module as the target's
 * kind reads it. */
size_t cs_target_mapping_count(const struct cs_target *t);
const struct cs_mapping *cs_target_mapping_at(const struct cs_target *t,
					      size_t i);
const struct cs_mapping *cs_target_mapping_of(const struct cs_target *t,
					      uint64_t addr);
const struct cs_mapping *cs_target_find_mapping(const struct cs_target *t,
						const char *prefix);
uint64_t cs_target_auxv(const struct cs_target *t, uint64_t type);
const char *cs_target_executable(const struct cs_target *t);
struct cs_error *cs_target_module_build_id(const struct cs_target *t,
					   uint64_t start, uint8_t *buf,
					   size_t bufsize, size_t *len);

/* See cs_target_ops.thread_blocked; false when the kind cannot tell. */
bool cs_target_thread_blocked(const struct cs_target *t, int tid,
			      uint64_t *mask);

char *cs_target_host_path(const struct cs_target *t, const char *path);
/* The system call thread tid is blocked in (thread_syscall); false when
 * unknown. */
bool cs_target_thread_syscall(const struct cs_target *t, int tid,
			      uint64_t nr_args[7], uint64_t *pc);
/* What descriptor fd is (describe_fd); NULL when unknown. */
char *cs_target_describe_fd(const struct cs_target *t, int fd);
/* Where a module whose file cannot be used is looked for by its
 * build-id (module_search.h), for every reader of the target: a core
 * reads the pages it left out of such a module from the file found. s
 * stays the caller's; cs_target_use_module_search(t, NULL) before it is
 * freed. */
void cs_target_use_module_search(const struct cs_target *t,
				 struct cs_module_search *s);
/* The file of the module mapped at m (file offset 0), when the one the
 * target names cannot be used (missing, another build) and one with the
 * module's build-id was found; NULL otherwise. s: the search a target
 * that reads no file looks with (may be NULL). */
const struct cs_module_found *
cs_target_module_found(const struct cs_target *t, struct cs_module_search *s,
		       const struct cs_mapping *m);
const char *cs_target_mapping_gap(const struct cs_target *t);
/* Whether the target knows its memory's regions: when not, the native
 * unwinder checks no address against them. */
bool cs_target_knows_regions(const struct cs_target *t);
bool cs_target_region_of(const struct cs_target *t, uint64_t addr,
			 struct cs_region *ret);
/* Its writable memory; .next NULL when the target does not know it.
 * Valid while t is. */
struct cs_writable_regions
cs_target_writable_regions(const struct cs_target *t);

int cs_target_pid(const struct cs_target *t);
const char *cs_target_command(const struct cs_target *t);
const char *cs_target_cwd(const struct cs_target *t);
const struct cs_siginfo *cs_target_siginfo(const struct cs_target *t);
int64_t cs_target_crash_tid(const struct cs_target *t);

void cs_target_check_files(const struct cs_target *t);
size_t cs_target_warning_count(const struct cs_target *t);
const char *cs_target_warning_at(const struct cs_target *t, size_t i);
struct cs_error *cs_target_truncation(const struct cs_target *t);

void cs_target_release(const struct cs_target *t);
/* Close what the target owns and free t (from cs_target_open). Safe on
 * NULL. */
void cs_target_close(struct cs_target *t);

#endif
