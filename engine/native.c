/* Native stacks through libdwfl. See native.h.
 *
 * Modules are reported from the image's file mappings (each file opened
 * where --sysroot / --lib-search-path say, loaded where its segments
 * agree with the mappings); threads, registers and memory come from our
 * target through Dwfl_Thread_Callbacks, so libdwfl never reads the core
 * itself. */
#include "native.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../process/signal_frame.h"
#include "../util/u64map.h"
#include "past_jit.h"
#include "vm_module.h"
#include "../util/hex.h"
#include "../util/open_regular.h"

struct native_session {
	const struct cs_memory *mem;
	const struct cs_thread *const *threads;
	size_t nthreads, cursor;
	/* A thread's registers where the unwind resumes past JIT code:
	 * what get_thread hands libdwfl for its tid, else NULL. */
	const struct cs_thread *resume;
};

/* ---- thread callbacks ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct native_session *ns = arg;
	if (!*thread_argp)
		ns->cursor = 0;
	while (ns->cursor < ns->nthreads && ns->threads[ns->cursor]->tid <= 0)
		ns->cursor++;
	if (ns->cursor >= ns->nthreads)
		return 0;
	const struct cs_thread *t = ns->threads[ns->cursor++];
	*thread_argp = (void *)t;
	return t->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct native_session *ns = arg;
	if (ns->resume && ns->resume->tid == tid) {
		*thread_argp = (void *)ns->resume;
		return true;
	}
	for (size_t i = 0; i < ns->nthreads; i++)
		if (ns->threads[i]->tid == tid) {
			*thread_argp = (void *)ns->threads[i];
			return true;
		}
	return false;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	(void)dwfl;
	struct native_session *ns = arg;
	uint64_t v;
	struct cs_error *err = ns->mem->read(ns->mem->priv, addr, &v, 8);
	if (err) {
		cs_error_destroy(err);
		return false;
	}
	*result = v;
	return true;
}

/* x86-64 DWARF register numbers 0..16 in user_regs_struct order. */
#define DWARF_X86_64_REGS 17
#define DWARF_X86_64_RBP 6
#define DWARF_X86_64_RSP 7
#define DWARF_X86_64_RIP 16
static const enum cs_reg dwarf_order[DWARF_X86_64_REGS] = {
	CS_REG_RAX, CS_REG_RDX, CS_REG_RCX, CS_REG_RBX, CS_REG_RSI, CS_REG_RDI,
	CS_REG_RBP, CS_REG_RSP, CS_REG_R8,  CS_REG_R9,  CS_REG_R10, CS_REG_R11,
	CS_REG_R12, CS_REG_R13, CS_REG_R14, CS_REG_R15, CS_REG_RIP,
};

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct cs_thread *t = thread_arg;
	Dwarf_Word regs[DWARF_X86_64_REGS];
	for (size_t i = 0; i < DWARF_X86_64_REGS; i++)
		regs[i] = t->regs[dwarf_order[i]];
	return dwfl_thread_state_registers(thread, 0, DWARF_X86_64_REGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- modules ---- */

/* Same build-id in the file as in the target's memory? Unknown (the
 * target lacks those bytes) counts as yes, as for the core reader. */
static int same_build_id(const struct cs_target *img, Elf *elf, uint64_t start)
{
	const void *have;
	ssize_t have_len = dwelf_elf_gnu_build_id(elf, &have);
	uint8_t id[DW_BUILD_ID_MAX];
	size_t len;
	struct cs_error *why;
	int same = cs_image_build_id_match(img, have,
					   have_len > 0 ? (size_t)have_len : 0,
					   start, id, &len, &why);
	cs_error_destroy(why);
	return same != 0;
}

/* What became of a file offered as the module mapped at m. */
enum offered {
	REPORTED,
	NOT_LOADED_THERE, /* the module is not loaded at m (a file mapped
			   * whole to be read: Ruby's crash reporter) */
	UNUSABLE,         /* no such ELF file, or another build */
};

/* Report the file at host as the module mapped at m, named name, if it
 * is an ELF module loaded there with the build-id in memory (unknown
 * there passes, as for the core reader, unless checked says the caller
 * compared them). */
static enum offered report_file(Dwfl *dwfl, const struct cs_target *img,
				const struct cs_mapping *m, const char *host,
				const char *name, bool checked)
{
	/* Only a regular file: NT_FILE may name a FIFO or a device. */
	int fd = cs_open_regular(host);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	GElf_Ehdr eh;
	enum offered what = UNUSABLE;
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh) &&
	    (eh.e_type == ET_DYN || eh.e_type == ET_EXEC)) {
		uint64_t start = cs_image_module_start(img, elf, m->path);
		if (start != m->start)
			what = NOT_LOADED_THERE;
		else if (checked || same_build_id(img, elf, start)) {
			int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			/* dwfl takes dfd; the base is the load bias */
			if (dfd >= 0 &&
			    dwfl_report_elf(dwfl, name, host, dfd,
					    cs_image_module_bias(elf, start),
					    true))
				what = REPORTED;
			else if (dfd >= 0)
				close(dfd);
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return what;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Keep a copy of found in out->found. */
static void keep_found(struct cs_native_stacks *out,
		       const struct cs_module_found *found)
{
	void *p =
		reallocarray(out->found, out->nfound + 1, sizeof(*out->found));
	if (!p)
		return;
	out->found = p;
	struct cs_module_found *f = &out->found[out->nfound];
	*f = (struct cs_module_found){.mapped = strdup(found->mapped),
				      .file = strdup(found->file),
				      .dir = found->dir ? strdup(found->dir)
							: NULL};
	memcpy(f->build_id, found->build_id, sizeof(f->build_id));
	if (f->mapped && f->file && (f->dir || !found->dir)) {
		out->nfound++;
		return;
	}
	free(f->mapped);
	free(f->file);
	free(f->dir);
}

/* Report one file mapped at offset 0, if it is an ELF module loaded
 * there and not reported yet: its file where the target says, or the
 * one found by its build-id when that cannot be used (module_search.h). */
static void report_module(Dwfl *dwfl, const struct cs_target *img,
			  const struct cs_mapping *m,
			  struct cs_module_search *search,
			  struct cs_native_stacks *out)
{
	if (dwfl_addrmodule(dwfl, m->start))
		return; /* already reported (one module, several mappings) */
	const struct cs_module_found *found =
		cs_target_module_found(img, search, m);
	char *host = found ? strdup(found->file)
			   : cs_target_host_path(img, m->path);
	if (!host)
		return;
	if (report_file(dwfl, img, m, host, base_name(found ? host : m->path),
			found != NULL) == REPORTED &&
	    found)
		keep_found(out, found);
	free(host);
}

/* ---- symbols ---- */

struct frame_list {
	struct cs_native_frame *frames;
	size_t n, cap, max;
	bool cut; /* frames were left out at max */
};

static struct cs_native_frame *frame_push(struct frame_list *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		void *p = reallocarray(l->frames, cap, sizeof(*l->frames));
		if (!p)
			return NULL;
		l->frames = p;
		l->cap = cap;
	}
	struct cs_native_frame *f = &l->frames[l->n++];
	memset(f, 0, sizeof(*f));
	return f;
}

static char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n =
		dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return n ? strdup(n) : NULL;
}

/* Where an inlined subroutine was called from (its caller's location). */
static char *call_site(Dwarf_Die *cu, Dwarf_Die *inl, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word idx, ln = 0;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &idx) != 0)
		return NULL;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &ln) == 0)
		*line = (int)ln;
	Dwarf_Files *files;
	size_t nfiles;
	if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	const char *f = dwarf_filesrc(files, idx, NULL, NULL);
	return f ? strdup(f) : NULL;
}

/* at's frames: the inlined calls innermost first, then the function. */
static void symbolize_at(Dwfl *dwfl, uint64_t pc, uint64_t at,
			 struct frame_list *l)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, at);
	char *modname = NULL, *file = NULL, *elf_name = NULL;
	int line = 0;
	uint64_t func_start = 0;
	if (mod) {
		const char *name = dwfl_module_info(mod, NULL, NULL, NULL, NULL,
						    NULL, NULL, NULL);
		modname = name ? strdup(name) : NULL;
		GElf_Off off;
		GElf_Sym sym;
		const char *s = dwfl_module_addrinfo(mod, at, &off, &sym, NULL,
						     NULL, NULL);
		if (s) {
			elf_name = strdup(s);
			func_start = at - off;
		}
		Dwfl_Line *dl = dwfl_module_getsrc(mod, at);
		const char *src =
			dl ? dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL)
			   : NULL;
		file = src ? strdup(src) : NULL;
	}
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = mod ? dwfl_module_addrdie(mod, at, &bias) : NULL;
	Dwarf_Die *scopes = NULL;
	int nscopes = cu ? dwarf_getscopes(cu, at - bias, &scopes) : 0;
	int done = 0;
	for (int i = 0; i < nscopes && !done && l->n < l->max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_subprogram)
			continue;
		struct cs_native_frame *f = frame_push(l);
		if (!f)
			break;
		f->pc = pc;
		f->function = die_name(&scopes[i]);
		f->file = file;
		f->line = line;
		f->module = modname ? strdup(modname) : NULL;
		if (tag == DW_TAG_inlined_subroutine) {
			f->inlined = 1;
			file = call_site(cu, &scopes[i], &line);
		} else {
			f->func_start = func_start;
			if (!f->function) {
				f->function = elf_name;
				elf_name = NULL;
			}
			file = NULL;
			done = 1;
		}
	}
	free(scopes);
	if (!done && l->n < l->max) {
		struct cs_native_frame *f = frame_push(l);
		if (f) {
			f->pc = pc;
			f->function = elf_name;
			elf_name = NULL;
			f->file = file;
			file = NULL;
			f->line = line;
			f->module = modname ? strdup(modname) : NULL;
			f->func_start = func_start;
		}
	}
	free(file);
	free(elf_name);
	free(modname);
}

static void free_frames(struct cs_native_frame *frames, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		free(frames[j].function);
		free(frames[j].file);
		free(frames[j].module);
	}
	free(frames);
}

static void free_cached(void *p)
{
	struct frame_list *c = p;
	free_frames(c->frames, c->n);
	free(c);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* pc's frames onto l. Threads share most of their code paths, so each
 * address is symbolized once (DWARF scopes and lines are the costly part)
 * and copied from then on. */
static void symbolize(Dwfl *dwfl, struct u64map *cache, uint64_t pc,
		      int activation, struct frame_list *l)
{
	/* A return address may be past the call's function: look up the
	 * call instruction. */
	uint64_t at = activation ? pc : pc - 1;
	/* u64map reserves key 0: a return address of 0 (at = UINT64_MAX)
	 * is symbolized each time and not kept. */
	uint64_t key = at + 1;
	int found, kept = 0;
	struct frame_list *c = u64map_get(cache, key, &found);
	if (c) {
		kept = 1;
	} else if ((c = calloc(1, sizeof(*c)))) {
		c->max = 64; /* inlining depth at one address, at most */
		symbolize_at(dwfl, pc, at, c);
		kept = key && u64map_put(cache, key, c);
	}
	for (size_t i = 0; c && i < c->n; i++) {
		if (l->n == l->max) {
			l->cut = true;
			break;
		}
		struct cs_native_frame *f = frame_push(l);
		if (!f)
			break;
		*f = c->frames[i];
		f->pc = pc;
		f->function = dup_or_null(f->function);
		f->file = dup_or_null(f->file);
		f->module = dup_or_null(f->module);
	}
	if (c && !kept)
		free_cached(c);
}

/* ---- unwinding ---- */

struct raw_frame {
	uint64_t pc, sp;
	int activation;
	int jit; /* index of the JIT region its code lies in, or -1 */
	enum cs_native_found_by found_by;
	int not_code; /* see cs_native_frame */
};

struct unwind {
	Dwfl *dwfl;
	const struct cs_target *img;
	const struct cs_memory *mem;
	struct native_session *ns;
	struct cs_native_stacks *out;
	const struct cs_thread *const *threads;
	size_t max_frames;
	struct raw_frame *raw;
	size_t nraw;
	struct u64map cache; /* address -> struct frame_list */
	/* The stack being unwound (see left_stack) */
	struct cs_region stack;
	bool stack_known;
	uint64_t last_sp;
	char cut[128];    /* why the unwind was cut, when it was */
	bool stack_ended; /* ... or it met a return address of 0 */
	const struct cs_jit_region *jits;
	size_t njits;
	/* The registers of the frame the unwind stopped at: JIT code, or a
	 * pc that is not code */
	Dwarf_Word stop_regs[DWARF_X86_64_REGS];
	bool stop_known[DWARF_X86_64_REGS];
	/* The unwind resumed past JIT code: its first frame's pc is one
	 * byte into the call that entered JIT code (so that libdwfl takes
	 * the call's CFI), and it was found so. */
	bool segment_first;
	enum cs_native_found_by segment_how;
	struct cs_past_jit *past; /* the way past the last JIT frame */
};

#define CB_FRAME_LIMIT (DWARF_CB_ABORT + 1)
#define CB_CUT (DWARF_CB_ABORT + 2)
#define CB_STACK_END (DWARF_CB_ABORT + 3)
#define CB_JIT (DWARF_CB_ABORT + 4)
#define CB_NOT_CODE (DWARF_CB_ABORT + 6)

/* The JIT region holding code at addr, or -1. */
static int jit_at(const struct unwind *u, uint64_t addr)
{
	for (size_t i = 0; i < u->njits; i++) {
		if (addr < u->jits[i].start || addr >= u->jits[i].end)
			continue;
		struct cs_region r;
		const struct cs_target *img = u->img;
		if (cs_target_knows_regions(img) &&
		    (!cs_target_region_of(img, addr, &r) || !r.exec))
			return -1;
		return (int)i;
	}
	return -1;
}

/* Code of a module: in its range, and in a region that can run it where
 * the target knows one (a module's range holds its data too; gcore leaves
 * a module's text out of the core: no region then). */
static bool module_code(void *arg, uint64_t addr)
{
	const struct unwind *u = arg;
	const struct cs_target *img = u->img;
	struct cs_region r;
	return dwfl_addrmodule(u->dwfl, addr) &&
	       (!cs_target_knows_regions(img) ||
		!cs_target_region_of(img, addr, &r) || r.exec);
}

/* Code at all: a module's, JIT code, or in a region that can run it.
 * Without regions (the debugger's) only the first two are known. */
static bool is_code(struct unwind *u, uint64_t addr)
{
	struct cs_region r;
	if (module_code(u, addr) || jit_at(u, addr) >= 0)
		return true;
	return cs_target_knows_regions(u->img) &&
	       cs_target_region_of(u->img, addr, &r) && r.exec;
}

/* A frame the unwinder reached is believed only if it is code on the
 * stack its callee ran on: its return address in a module or an
 * executable region,
 * its stack pointer in the callee's region and not below the callee's.
 * The innermost frame, and a frame a signal interrupted, may be anywhere
 * (a jump through a bad pointer, a handler on its own stack); the latter
 * starts a new stack. Without regions (the debugger's), nothing is
 * checked. false, with u->cut saying why, when the frame is garbage. */
static bool believed(struct unwind *u, Dwfl_Frame *state, uint64_t pc,
		     bool activation)
{
	const struct cs_target *img = u->img;
	Dwarf_Word sp;
	struct cs_region r;
	if (!cs_target_knows_regions(img) ||
	    dwfl_frame_reg(state, DWARF_X86_64_RSP, &sp) != 0)
		return true;
	if (u->nraw == 0 || activation) {
		u->stack_known = cs_target_region_of(img, sp, &u->stack);
		/* a stack overflow: sp went into the guard below the stack,
		 * which its callers' frames are in */
		struct cs_region above;
		if (u->stack_known && !u->stack.write &&
		    cs_target_region_of(img, u->stack.end, &above) &&
		    above.write)
			u->stack.end = above.end;
		u->last_sp = sp;
		return true;
	}
	if (pc == 0) { /* the conventional end of a stack */
		u->stack_ended = true;
		return false;
	}
	/* code: a module's, or in an executable region (JIT code) */
	if (!module_code(u, pc - 1) &&
	    (!cs_target_region_of(img, pc - 1, &r) || !r.exec)) {
		snprintf(u->cut, sizeof(u->cut),
			 "return address 0x%llx is not in code",
			 (unsigned long long)pc);
		return false;
	}
	if (u->stack_known &&
	    (sp < u->last_sp || sp < u->stack.start || sp >= u->stack.end)) {
		snprintf(u->cut, sizeof(u->cut),
			 "stack pointer 0x%llx left the thread's stack",
			 (unsigned long long)sp);
		return false;
	}
	u->last_sp = sp;
	return true;
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	enum cs_native_found_by how = CS_FOUND_BY_CFI;
	if (u->segment_first) { /* a return address, see struct unwind */
		u->segment_first = false;
		pc++;
		activation = false;
		how = u->segment_how;
	}
	if (u->nraw == u->max_frames)
		return CB_FRAME_LIMIT; /* the limit, told apart below */
	if (!believed(u, state, pc, activation))
		return u->stack_ended ? CB_STACK_END : CB_CUT; /* u->cut: why */
	Dwarf_Word sp;
	struct raw_frame *f = &u->raw[u->nraw++];
	f->pc = pc;
	f->sp = dwfl_frame_reg(state, DWARF_X86_64_RSP, &sp) == 0 ? sp : 0;
	f->activation = activation;
	f->found_by = how;
	f->jit = jit_at(u, activation ? pc : pc - 1);
	f->not_code = 0;
	/* The innermost frame, or one a signal interrupted, at a pc that
	 * is not code: a call through a bad pointer. libdwfl has no CFI
	 * there (and would guess from %rbp, skipping the caller). */
	if (f->jit < 0 && activation && !is_code(u, pc))
		f->not_code = 1;
	else if (f->jit < 0)
		return DWARF_CB_OK;
	/* No CFI here: past_jit.h, or the return address, finds the way */
	for (unsigned r = 0; r < DWARF_X86_64_REGS; r++)
		u->stop_known[r] = dwfl_frame_reg(state, r, &u->stop_regs[r]) ==
				   0;
	u->stop_regs[DWARF_X86_64_RIP] = pc;
	u->stop_known[DWARF_X86_64_RIP] = true;
	return f->not_code ? CB_NOT_CODE : CB_JIT;
}

static int jit_code(void *arg, uint64_t addr)
{
	return jit_at(arg, addr);
}

/* Without regions, the stack a scan may read: this much above sp. */
#define STACK_WITHOUT_REGIONS (8u << 20)

/* The unwind stopped at a JIT frame (the last raw frame): find the code
 * that entered it (past_jit.h), add the JIT frames on the way and unwind
 * on from there. libdwfl's return code, or CB_JIT_STUCK with why. */
#define CB_JIT_STUCK (DWARF_CB_ABORT + 5)
static int resume_at(struct unwind *u, pid_t tid, uint64_t pc, uint64_t sp,
		     uint64_t fp, enum cs_native_found_by how);
static int go_past_jit(struct unwind *u, pid_t tid, char *why, size_t len)
{
	const struct raw_frame *j = &u->raw[u->nraw - 1];
	const struct cs_jit_region *region = &u->jits[j->jit];
	uint64_t sp = u->stop_regs[DWARF_X86_64_RSP];
	struct cs_region stack;
	const struct cs_target *img = u->img;
	if (!u->stop_known[DWARF_X86_64_RSP] || !cs_target_knows_regions(img) ||
	    !cs_target_region_of(img, sp, &stack))
		stack = (struct cs_region){.start = sp,
					   .end = sp + STACK_WITHOUT_REGIONS};
	struct cs_past_jit_env env = {
		.mem = u->mem,
		.module_code = module_code,
		.jit_code = jit_code,
		.ctx = u,
		.stack_lo = stack.start,
		.stack_hi = stack.end,
	};
	char reason[160] = "its stack pointer is not known";
	if (!u->stop_known[DWARF_X86_64_RSP] ||
	    !cs_past_jit_find(&env, sp, u->stop_regs[DWARF_X86_64_RBP],
			      u->stop_known[DWARF_X86_64_RBP], u->past, reason,
			      sizeof(reason))) {
		snprintf(why, len, "unwinding stopped in %s code at 0x%llx: %s",
			 region->jit, (unsigned long long)j->pc, reason);
		return CB_JIT_STUCK;
	}
	const struct cs_past_jit *p = u->past;
	for (size_t i = 0; i < p->nframes; i++) {
		if (u->nraw == u->max_frames)
			return CB_FRAME_LIMIT;
		u->raw[u->nraw++] = (struct raw_frame){
			.pc = p->frames[i].pc,
			.sp = p->frames[i].sp,
			.jit = p->frames[i].jit,
			.found_by = CS_FOUND_BY_FRAME_POINTER};
		u->last_sp = p->frames[i].sp;
	}
	return resume_at(u, tid, p->pc, p->sp, p->fp,
			 p->how == CS_PAST_JIT_FRAME_POINTER
				 ? CS_FOUND_BY_FRAME_POINTER
				 : CS_FOUND_BY_SCAN);
}

/* Unwind on from the caller of the frame the unwind stopped at: pc its
 * return address, sp and fp its %rsp and %rbp. The caller's registers:
 * those three as found, the others as the stopped frame has them (its
 * CFI needs only those three to find the frames past it). */
static int resume_at(struct unwind *u, pid_t tid, uint64_t pc, uint64_t sp,
		     uint64_t fp, enum cs_native_found_by how)
{
	struct cs_thread resume = {.tid = tid};
	for (size_t i = 0; i < u->out->nthreads; i++)
		if (u->threads[i]->tid == tid)
			resume = *u->threads[i];
	for (size_t r = 0; r < DWARF_X86_64_REGS; r++)
		resume.regs[dwarf_order[r]] = u->stop_known[r] ? u->stop_regs[r]
							       : 0;
	resume.regs[CS_REG_RIP] = pc - 1;
	resume.regs[CS_REG_RSP] = sp;
	resume.regs[CS_REG_RBP] = fp;
	u->ns->resume = &resume;
	u->segment_first = true;
	u->segment_how = how;
	int rc = dwfl_getthread_frames(u->dwfl, tid, on_frame, u);
	u->ns->resume = NULL;
	u->segment_first = false;
	return rc;
}

/* The unwind stopped at a pc that is not code (the last raw frame): a
 * call through a bad pointer, whose CPU faulted fetching the target
 * before it ran a single instruction. The call pushed its return
 * address at %rsp, and every other register is still the caller's: as
 * a debugger does, unwind on from there, once that word is a return
 * address (code, just after a call instruction). libdwfl's return code,
 * or CB_NOT_CODE_STUCK with why. */
#define CB_NOT_CODE_STUCK (DWARF_CB_ABORT + 7)
static int go_past_not_code(struct unwind *u, pid_t tid, char *why, size_t len)
{
	const struct raw_frame *f = &u->raw[u->nraw - 1];
	uint64_t sp = u->stop_regs[DWARF_X86_64_RSP], ret = 0;
	const char *problem = NULL;
	struct cs_error *err = NULL;
	if (!u->stop_known[DWARF_X86_64_RSP])
		problem = "its stack pointer is not known";
	else if ((err = cs_memory_read(u->mem, sp, &ret, sizeof(ret))))
		problem = "the word at its stack pointer is unreadable";
	else if (!is_code(u, ret - 1) ||
		 !cs_past_jit_after_call(u->mem, ret, true))
		problem = "the word at its stack pointer is no return address";
	cs_error_destroy(err);
	if (problem) {
		snprintf(why, len,
			 "unwinding stopped at 0x%llx, which is not code: %s",
			 (unsigned long long)f->pc, problem);
		return CB_NOT_CODE_STUCK;
	}
	return resume_at(u, tid, ret, sp + 8,
			 u->stop_known[DWARF_X86_64_RBP]
				 ? u->stop_regs[DWARF_X86_64_RBP]
				 : 0,
			 CS_FOUND_BY_RETURN_ADDRESS);
}

/* Is the code at addr a signal trampoline (its CFI says so: the frame
 * it returns to is a signal's saved context)? */
static bool signal_trampoline(Dwfl *dwfl, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Addr bias;
	Dwarf_CFI *cfis[2] = {
		mod ? dwfl_module_eh_cfi(mod, &bias) : NULL,
		mod ? dwfl_module_dwarf_cfi(mod, &bias) : NULL,
	};
	for (size_t i = 0; i < 2; i++) {
		Dwarf_Frame *frame;
		bool signalp = false;
		if (!cfis[i] ||
		    dwarf_cfi_addrframe(cfis[i], addr - bias, &frame) != 0)
			continue;
		dwarf_frame_info(frame, NULL, NULL, &signalp);
		free(frame);
		return signalp;
	}
	return false;
}

/* libdwfl ends an unwind at a pc of 0, also the pc a signal interrupted
 * (a call through a NULL pointer, under a handler): when the last frame
 * is the signal trampoline and the context it saved holds a pc that is
 * not code, add the interrupted frame from that context. Whether it did
 * (the caller then goes past it). */
static bool interrupted_not_code(struct unwind *u)
{
	if (u->nraw == 0 || u->nraw >= u->max_frames)
		return false;
	struct raw_frame *t = &u->raw[u->nraw - 1];
	struct cs_signal_frame sf;
	if (!t->sp || t->jit >= 0 ||
	    !signal_trampoline(u->dwfl, t->activation ? t->pc : t->pc - 1))
		return false;
	struct cs_error *err = cs_signal_frame_read(u->mem, t->sp, &sf);
	if (err || is_code(u, sf.regs[CS_REG_RIP])) {
		cs_error_destroy(err);
		return false;
	}
	t->activation = 1; /* the trampoline's pc is exact, as libdwfl has
			    * it when it goes on */
	uint64_t sp = sf.regs[CS_REG_RSP];
	u->raw[u->nraw++] = (struct raw_frame){.pc = sf.regs[CS_REG_RIP],
					       .sp = sp,
					       .activation = 1,
					       .jit = -1,
					       .not_code = 1};
	for (size_t r = 0; r < DWARF_X86_64_REGS; r++) {
		u->stop_regs[r] = sf.regs[dwarf_order[r]];
		u->stop_known[r] = true;
	}
	/* a frame a signal interrupted starts a new stack (believed()) */
	u->stack_known = cs_target_knows_regions(u->img) &&
			 cs_target_region_of(u->img, sp, &u->stack);
	u->last_sp = sp;
	return true;
}

/* Did the unwind reach a thread's first function (_start, clone3)? */
/* Whether the CFI at pc at of mod marks the outermost frame: the return
 * address "undefined", as glibc marks _start and clone3. It needs no
 * symbol: a libc without its debug info names neither. */
static bool cfi_outermost(Dwfl_Module *mod, uint64_t at)
{
	Dwarf_Addr bias;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, at - bias, &frame) != 0) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, at - bias, &frame) != 0)
			return false;
	}
	int ra = dwarf_frame_info(frame, NULL, NULL, NULL);
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 1;
	bool undefined = ra >= 0 &&
			 dwarf_frame_register(frame, ra, mem, &ops, &nops) ==
				 0 &&
			 nops == 0 && ops == mem;
	free(frame);
	return undefined;
}

static int ends_naturally(struct unwind *u, Dwfl_Thread *thread)
{
	if (u->nraw == 0)
		return 0;
	struct raw_frame *last = &u->raw[u->nraw - 1];
	uint64_t at = last->activation ? last->pc : last->pc - 1;
	Dwfl_Module *mod = dwfl_addrmodule(dwfl_thread_dwfl(thread), at);
	GElf_Off off;
	GElf_Sym sym;
	const char *name = mod ? dwfl_module_addrinfo(mod, at, &off, &sym, NULL,
						      NULL, NULL)
			       : NULL;
	return (name && (strcmp(name, "_start") == 0 ||
			 strncmp(name, "__clone", 7) == 0 ||
			 strcmp(name, "clone") == 0 ||
			 strcmp(name, "start_thread") == 0)) ||
	       (mod && cfi_outermost(mod, at));
}

static bool interrupted(const struct unwind *u, size_t i)
{
	return i >= 2 && u->raw[i].activation && u->raw[i - 1].activation;
}

static int on_thread(Dwfl_Thread *thread, void *arg)
{
	struct unwind *u = arg;
	pid_t tid = dwfl_thread_tid(thread);
	struct cs_native_thread *t = NULL;
	for (size_t i = 0; i < u->out->nthreads; i++)
		if (u->out->threads[i].tid == tid && !u->out->threads[i].frames)
			t = &u->out->threads[i];
	if (!t)
		return DWARF_CB_OK;
	u->nraw = 0;
	u->stack_known = false;
	u->stack_ended = false;
	int rc = dwfl_thread_getframes(thread, on_frame, u);
	char stuck[320];
	/* each time past JIT code or a pc that is not code adds a frame:
	 * bounded by max_frames */
	for (;;) {
		if (rc == CB_JIT)
			rc = go_past_jit(u, tid, stuck, sizeof(stuck));
		else if (rc == CB_NOT_CODE)
			rc = go_past_not_code(u, tid, stuck, sizeof(stuck));
		else if ((rc == 0 || rc == -1) && interrupted_not_code(u))
			rc = CB_NOT_CODE;
		else
			break;
	}
	bool natural = (rc == 0 || rc == -1) && ends_naturally(u, thread);
	t->whole = rc == CB_STACK_END || natural;
	if (rc == CB_FRAME_LIMIT)
		t->truncated = 1;
	else if (rc == CB_JIT_STUCK || rc == CB_NOT_CODE_STUCK) {
		if (!(t->error = strdup(stuck)))
			t->error = NULL;
	} else if (rc == CB_CUT) {
		t->cut = 1;
		if (asprintf(&t->error, "unwinding cut after %zu frames: %s",
			     u->nraw, u->cut) < 0)
			t->error = NULL;
	}
	/* libdwfl also ends a complete unwind with an error (no return
	 * address past _start or clone3); only an early end is reported. */
	else if (rc == -1 && !natural &&
		 asprintf(&t->error, "%s", dwfl_errmsg(-1)) < 0)
		t->error = NULL;
	struct frame_list l = {.max = u->max_frames};
	/* Frames inside the outermost one a signal interrupted run in a
	 * handler. libdwfl gives the interrupted frame and the trampoline
	 * (whose caller it is) an exact pc, "activation"; so is frame 0. */
	size_t handler_end = 0;
	for (size_t i = 2; i < u->nraw; i++)
		if (interrupted(u, i))
			handler_end = i;
	for (size_t i = 0; i < u->nraw; i++) {
		if (l.n == l.max) {
			l.cut = true;
			break;
		}
		size_t first = l.n;
		const struct raw_frame *r = &u->raw[i];
		if (r->jit >= 0) {
			struct cs_native_frame *f = frame_push(&l);
			if (!f)
				break;
			f->pc = r->pc;
			f->jit = u->jits[r->jit].jit;
			f->jit_start = u->jits[r->jit].start;
			f->jit_end = u->jits[r->jit].end;
		} else {
			symbolize(u->dwfl, &u->cache, r->pc, r->activation, &l);
		}
		for (size_t k = first; k < l.n; k++) {
			l.frames[k].sp = r->sp;
			l.frames[k].interrupted = interrupted(u, i);
			l.frames[k].handler = i < handler_end;
			l.frames[k].found_by = r->found_by;
			l.frames[k].not_code = r->not_code;
		}
	}
	t->frames = l.frames;
	t->nframes = l.n;
	/* inlined frames count toward the limit: a stack whose raw frames
	 * fit can still be cut when they are named */
	if (l.cut)
		t->truncated = 1;
	return DWARF_CB_OK;
}

static char *debuginfo_path_of(const char *const *debug_dirs)
{
	size_t len = sizeof(":.debug");
	for (size_t i = 0; debug_dirs && debug_dirs[i]; i++)
		len += strlen(debug_dirs[i]) + 1;
	char *p = malloc(len + sizeof(":/usr/lib/debug"));
	if (!p)
		return NULL;
	strcpy(p, ":.debug");
	for (size_t i = 0; debug_dirs && debug_dirs[i]; i++) {
		strcat(p, ":");
		strcat(p, debug_dirs[i]);
	}
	if (!debug_dirs)
		strcat(p, ":/usr/lib/debug");
	return p;
}

struct cs_error *
cs_native_unwind(const struct cs_target *img, const struct cs_memory *mem,
		 const struct cs_thread *const *threads, size_t nthreads,
		 const char *const *debug_dirs, size_t max_frames,
		 const struct cs_jit_region *jits, size_t njits,
		 struct cs_module_search *search, struct cs_native_stacks **ret)
{
	*ret = NULL;
	struct cs_native_stacks *out = calloc(1, sizeof(*out));
	char *debuginfo_path = debuginfo_path_of(debug_dirs);
	struct native_session ns = {
		.mem = mem, .threads = threads, .nthreads = nthreads};
	struct unwind u = {.img = img,
			   .mem = mem,
			   .ns = &ns,
			   .out = out,
			   .threads = threads,
			   .jits = jits,
			   .njits = jits ? njits : 0,
			   .max_frames = max_frames ? max_frames : 1};
	u.raw = calloc(u.max_frames, sizeof(*u.raw));
	u.past = malloc(sizeof(*u.past));
	if (out)
		out->threads = calloc(nthreads + 1, sizeof(*out->threads));
	if (!out || !debuginfo_path || !u.raw || !u.past || !out->threads) {
		free(debuginfo_path);
		free(u.raw);
		free(u.past);
		cs_native_destroy(out);
		return &cs_error_nomem;
	}
	out->nthreads = nthreads;
	for (size_t i = 0; i < nthreads; i++)
		out->threads[i].tid = threads[i]->tid;
	Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	struct cs_error *err = NULL;
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		err = cs_error_create(CS_ERR_OS, "native unwinder: %s",
				      dwfl_errmsg(-1));
		goto done;
	}
	u.dwfl = dwfl;
	dwfl_report_begin(dwfl);
	for (size_t i = 0; i < cs_target_mapping_count(img); i++) {
		const struct cs_mapping *m = cs_target_mapping_at(img, i);
		if (m->file_offset == 0)
			report_module(dwfl, img, m, search, out);
	}
	dwfl_report_end(dwfl, NULL, NULL);
	int pid = nthreads ? threads[0]->tid : 1;
	if (!dwfl_attach_state(dwfl, NULL, pid, &thread_callbacks, &ns)) {
		err = cs_error_create(CS_ERR_FORMAT, "%s: native unwinder: %s",
				      img->name, dwfl_errmsg(-1));
		goto done;
	}
	if (dwfl_getthreads(dwfl, on_thread, &u) == -1) {
		err = cs_error_create(CS_ERR_FORMAT, "%s: native unwinder: %s",
				      img->name, dwfl_errmsg(-1));
	}
done:
	if (dwfl)
		dwfl_end(dwfl);
	free(debuginfo_path);
	free(u.raw);
	free(u.past);
	u64map_free(&u.cache, free_cached);
	if (err) {
		cs_native_destroy(out);
		return err;
	}
	*ret = out;
	return NULL;
}

void cs_native_destroy(struct cs_native_stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->threads && i < s->nthreads; i++) {
		struct cs_native_thread *t = &s->threads[i];
		free_frames(t->frames, t->nframes);
		free(t->error);
	}
	free(s->threads);
	for (size_t i = 0; i < s->nfound; i++) {
		free(s->found[i].mapped);
		free(s->found[i].file);
		free(s->found[i].dir);
	}
	free(s->found);
	free(s);
}

const char *cs_native_found_by_name(enum cs_native_found_by how)
{
	switch (how) {
	case CS_FOUND_BY_FRAME_POINTER:
		return "frame_pointer";
	case CS_FOUND_BY_SCAN:
		return "stack_scan";
	case CS_FOUND_BY_RETURN_ADDRESS:
		return "return_address";
	default:
		return "cfi";
	}
}

const struct cs_native_thread *
cs_native_thread_of(const struct cs_native_stacks *s, int64_t tid)
{
	for (size_t i = 0; s && i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}
