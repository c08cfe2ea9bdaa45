/* The roots of the GC heap the model can read, in a fixed order: the
 * global variables (those a box set, in its gvar_tbl, where the VM has
 * boxes; then rb_global_tbl: a variable's data is the value itself, or
 * for one C code defined, where the value is), the top-level constants
 * (Object's), then of every thread, and of every fiber not running, the
 * locals of each Ruby frame (its own scope's and those around a block),
 * each frame's self, and the words of its VM stack up to the innermost
 * frame's sp, as the GC marks them; last, as the GC scans them
 * conservatively, each thread's registers and the words of its machine
 * stack from its stack pointer up to where Ruby records the stack's
 * start (any word that is a live object's address: a C local of an
 * extension, a stale copy); then the machine stack each suspended
 * fiber left (cont.machine, scanned by the GC as long as the fiber is not
 * terminated), the C globals rb_gc_register_address registered, the
 * objects rb_gc_register_mark_object registered (vm->mark_object_ary),
 * and the procs of every finalizer (the objspace's finalizer_table). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_roots.h"
#include "session.h"

struct roots_walk {
	struct rv_session *s;
	rv_root_fn *fn;
	void *ctx;
	char **error;
	bool nomem;
};

static void emit(struct roots_walk *w, enum rv_root_kind kind, const char *name,
		 const char *frame, uint64_t thread, uint64_t fiber,
		 size_t thread_index, uint64_t v)
{
	if (w->nomem || !v || rv_special_const(w->s, v))
		return;
	const struct rv_root r = {kind,   (char *)name, (char *)frame,
				  thread, fiber,        thread_index};
	if (!w->fn(w->ctx, &r, v))
		w->nomem = true;
}

/* The first problem, in *w->error, as "what: why". */
static void note(struct roots_walk *w, struct cs_error *err, const char *what)
{
	if (!*w->error && err) {
		size_t n = strlen(what) + strlen(err->message) + 3;
		*w->error = malloc(n);
		if (*w->error)
			snprintf(*w->error, n, "%s: %s", what, err->message);
	}
	cs_error_destroy(err);
}

/* A global variable: its data is the value (a variable Ruby code set),
 * or where C code keeps it. A live object's slot is never where a C
 * global is, so the two are told apart by what data points to. */
static struct cs_error *global_root(struct rv_session *s, uint64_t serial,
				    uint64_t entry, void *ctx)
{
	struct roots_walk *w = ctx;
	uint64_t var = 0, data = 0, size, v = 0;
	char why[128];
	struct cs_error *err =
		rv_read_member(s, entry, RVL_global_entry_var, &var);
	if (!err)
		err = rv_read_member(s, var, RVL_global_variable_data, &data);
	if (err)
		return err;
	if (!data || rv_special_const(s, data))
		return NULL;
	if (rv_heap_slot(s, data, &size, why, sizeof(why)) == RV_SLOT_LIVE)
		v = data;
	else if (!rv_try_read(s, data, &v, sizeof(v)))
		return NULL;
	char *name = NULL;
	if (rv_failed(rv_id_serial_name(s, serial, &name)))
		name = NULL;
	emit(w, RV_ROOT_GLOBAL, name, NULL, 0, 0, 0, v);
	free(name);
	return NULL;
}

static struct cs_error *constant_root(struct rv_session *s, uint64_t serial,
				      uint64_t entry, void *ctx)
{
	struct roots_walk *w = ctx;
	uint64_t v = 0;
	char *name = NULL;
	struct cs_error *err =
		rv_read_member(s, entry, RVL_const_entry_value, &v);
	if (err)
		return err;
	if (rv_failed(rv_id_serial_name(s, serial, &name)))
		name = NULL;
	emit(w, RV_ROOT_CONSTANT, name, NULL, 0, 0, 0, v);
	free(name);
	return NULL;
}

/* Where the VM has boxes (Ruby::Box), the global variables a box set:
 * the main box's, then the root box's gvar_tbl, each a Hash of the
 * variable's Symbol to its value. */
static void box_global_roots(struct roots_walk *w)
{
	struct rv_session *s = w->s;
	enum rv_item_id boxes[] = {RVL_vm_main_box, RVL_vm_root_box};
	uint64_t vm = 0;
	if (!RV_HAS(s, box_gvar_tbl) || !rv_hash_layout_known(s) ||
	    !rv_try_var(s, RVL_vm_ptr, 8, &vm) || !vm)
		return;
	for (size_t b = 0; b < sizeof(boxes) / sizeof(*boxes); b++) {
		uint64_t box = 0, hash = 0, type = 0, flags = 0, size = 0;
		size_t n = 0;
		if (!rv_try_member(s, vm, boxes[b], &box) || !box ||
		    !rv_try_member(s, box, RVL_box_gvar_tbl, &hash) || !hash ||
		    rv_failed(rv_builtin_type(s, hash, &type, &flags)) ||
		    type != (uint64_t)RV_VAL(s, t_hash))
			continue;
		struct cs_error *err = rv_hash_entries(s, hash, flags, NULL,
						       NULL, 0, &n, &size);
		uint64_t *keys = NULL, *vals = NULL;
		if (!err && size > RV_MAX_ST_ENTRIES)
			err = cs_error_create(
				CS_ERR_CORRUPT,
				"a box's gvar_tbl of %llu entries",
				(unsigned long long)size);
		if (!err && size) {
			keys = malloc(size * sizeof(*keys));
			vals = malloc(size * sizeof(*vals));
			err = keys && vals
				      ? rv_hash_entries(s, hash, flags, keys,
							vals, size, &n, &size)
				      : &cs_error_nomem;
		}
		for (size_t i = 0; !err && keys && vals && i < n; i++) {
			char *name = NULL, *cls = NULL;
			/* the key is the Symbol :$name */
			if (rv_failed(rv_value_show(s, keys[i], &name, &cls)))
				name = NULL;
			emit(w, RV_ROOT_GLOBAL,
			     name && name[0] == ':' ? name + 1 : name, NULL, 0,
			     0, 0, vals[i]);
			free(name);
			free(cls);
		}
		free(keys);
		free(vals);
		if (err == &cs_error_nomem)
			w->nomem = true;
		else
			note(w, err, "a box's global variables not read");
	}
}

static void global_roots(struct roots_walk *w)
{
	struct rv_session *s = w->s;
	uint64_t tbl = 0, object = 0, ext = 0, consts = 0;
	struct cs_error *err = NULL;
	box_global_roots(w);
	if (!RV_HAS(s, var_global_tbl) || !RV_HAS(s, global_entry_var) ||
	    !RV_HAS(s, global_variable_data))
		err = rv_missing(RVL_var_global_tbl);
	else if (!rv_try_var(s, RVL_var_global_tbl, 8, &tbl) || !tbl)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "rb_global_tbl unreadable");
	else
		err = rv_id_table_each(s, tbl, global_root, w);
	note(w, err, "global variables not read");
	err = NULL;
	if (!RV_HAS(s, var_cobject) || !RV_HAS(s, classext_const_tbl) ||
	    !RV_HAS(s, const_entry_value))
		err = rv_missing(RVL_classext_const_tbl);
	else if (!rv_try_var(s, RVL_var_cobject, 8, &object) || !object)
		err = cs_error_create(CS_ERR_CORRUPT, "rb_cObject unreadable");
	else {
		/* the main box's first: where a program's own constants are */
		uint64_t main = rv_main_box_classext(s, object), tbl = 0;
		if (main &&
		    !(err = rv_read_member(s, main, RVL_classext_const_tbl,
					   &tbl)) &&
		    tbl)
			err = rv_id_table_each(s, tbl, constant_root, w);
		if (!err && !(err = rv_classext(s, object, &ext)) &&
		    !(err = rv_read_member(s, ext, RVL_classext_const_tbl,
					   &consts)) &&
		    consts && consts != tbl)
			err = rv_id_table_each(s, consts, constant_root, w);
	}
	note(w, err, "top-level constants not read");
}

/* The locals and selves of a stack's frames. */
static void frame_roots(struct roots_walk *w, const struct rv_frame *frames,
			size_t n, uint64_t thread, uint64_t fiber, size_t ti)
{
	for (size_t i = 0; i < n; i++) {
		const struct rv_frame *f = &frames[i];
		const char *label = f->qualified ? f->qualified : f->label;
		for (size_t j = 0; j < f->nlocals; j++) {
			const struct rv_local *l = &f->locals[j];
			emit(w, RV_ROOT_LOCAL, l->name, label, thread, fiber,
			     ti, l->object);
		}
		if (f->self_value)
			emit(w, RV_ROOT_SELF, NULL, label, thread, fiber, ti,
			     f->self);
	}
}

/* The words of the VM stack of the ec at ec, up to its innermost frame's
 * sp: temporaries and what no local names. */
static void stack_roots(struct roots_walk *w, uint64_t ec, uint64_t thread,
			uint64_t fiber, size_t ti)
{
	struct rv_session *s = w->s;
	uint64_t stack = 0, size = 0, cfp = 0, sp = 0;
	if (!RV_HAS(s, cfp_sp) ||
	    !rv_try_member(s, ec, RVL_ec_vm_stack, &stack) ||
	    !rv_try_member(s, ec, RVL_ec_vm_stack_size, &size) ||
	    !rv_try_member(s, ec, RVL_ec_cfp, &cfp) ||
	    !rv_try_member(s, cfp, RVL_cfp_sp, &sp)) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the VM stack of ec 0x%" PRIx64
				     " is unreadable",
				     ec),
		     "VM stack not read");
		return;
	}
	uint64_t vsize = (uint64_t)RV_VAL(s, value_size);
	if (sp < stack || (sp - stack) / vsize > size || size > (1 << 26)) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "sp 0x%" PRIx64 " outside the VM stack "
				     "at 0x%" PRIx64,
				     sp, stack),
		     "VM stack not read");
		return;
	}
	uint64_t n = (sp - stack) / vsize;
	uint64_t *words = malloc((n ? n : 1) * sizeof(*words));
	if (!words) {
		w->nomem = true;
		return;
	}
	if (!rv_try_read(s, stack, words, n * sizeof(*words)))
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the VM stack at 0x%" PRIx64
				     " is unreadable",
				     stack),
		     "VM stack not read");
	else
		for (uint64_t i = 0; i < n; i++)
			emit(w, RV_ROOT_VM_STACK, NULL, NULL, thread, fiber, ti,
			     words[i]);
	free(words);
}

static void thread_roots(struct roots_walk *w, const struct rv_process *p)
{
	struct rv_session *s = w->s;
	for (size_t i = 0; i < p->nthreads && !w->nomem; i++) {
		const struct rv_thread *t = &p->threads[i];
		frame_roots(w, t->frames, t->nframes, t->addr, 0, i);
		for (size_t j = 0; j < t->nfibers; j++) {
			const struct rv_fiber *f = &t->fibers[j];
			if (!f->is_current)
				frame_roots(w, f->frames, f->nframes, t->addr,
					    f->addr, i);
		}
	}
	for (size_t i = 0; i < p->nthreads && !w->nomem; i++) {
		const struct rv_thread *t = &p->threads[i];
		uint64_t ec = 0;
		if (rv_try_member(s, t->addr, RVL_th_ec, &ec) && ec)
			stack_roots(w, ec, t->addr, 0, i);
		for (size_t j = 0; j < t->nfibers; j++) {
			const struct rv_fiber *f = &t->fibers[j];
			if (!f->is_current && RV_HAS(s, fiber_saved_ec))
				stack_roots(w,
					    f->addr +
						    (uint64_t)RV_VAL(
							    s, fiber_saved_ec),
					    t->addr, f->addr, i);
		}
	}
}

/* The most of a machine stack read, and the piece read at a time. */
#define MAX_MACHINE_STACK ((uint64_t)64 << 20)
#define STACK_CHUNK 8192 /* words */

/* Where the words root_words reads go: each a root of kind (of thread and
 * fiber, thread_index), or handed to each when it is set. */
struct word_sink {
	enum rv_root_kind kind;
	uint64_t thread, fiber;
	size_t thread_index;
	void (*each)(struct roots_walk *w, uint64_t word);
};

/* The n words from at, read a piece at a time, to k. False with *bad the
 * address of the piece that could not be read (the words before it were
 * handed on); out of memory sets w->nomem. */
static bool root_words(struct roots_walk *w, uint64_t at, uint64_t n,
		       const struct word_sink *k, uint64_t *bad)
{
	uint64_t *words =
		n ? malloc((n < STACK_CHUNK ? n : STACK_CHUNK) * sizeof(*words))
		  : NULL;
	if (n && !words) {
		w->nomem = true;
		return true;
	}
	bool ok = true;
	for (uint64_t i = 0; i < n && !w->nomem;) {
		uint64_t m = n - i < STACK_CHUNK ? n - i : STACK_CHUNK;
		if (!rv_try_read(w->s, at + i * 8, words, m * 8)) {
			*bad = at + i * 8;
			ok = false;
			break;
		}
		for (uint64_t j = 0; j < m; j++) {
			if (k->each)
				k->each(w, words[j]);
			else
				emit(w, k->kind, NULL, NULL, k->thread,
				     k->fiber, k->thread_index, words[j]);
		}
		i += m;
	}
	free(words);
	return ok;
}

static void machine_roots(struct roots_walk *w, const struct rv_process *p,
			  const struct rv_native_stack *m)
{
	if (m->thread_index >= p->nthreads)
		return;
	const struct rv_thread *t = &p->threads[m->thread_index];
	for (size_t i = 0; i < m->nregs; i++)
		emit(w, RV_ROOT_REGISTER, m->regs[i].name, NULL, t->addr, 0,
		     m->thread_index, m->regs[i].value);
	uint64_t lo = m->sp & ~(uint64_t)7, hi = t->machine_stack_start;
	if (!hi || lo >= hi || hi - lo > MAX_MACHINE_STACK ||
	    (t->machine_stack_size && hi - lo > t->machine_stack_size)) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "thread 0x%" PRIx64 ": its stack pointer "
				     "0x%" PRIx64 " is not in its stack "
				     "(start 0x%" PRIx64 ")",
				     t->addr, m->sp, hi),
		     "machine stack not read");
		return;
	}
	struct word_sink k = {RV_ROOT_MACHINE_STACK, t->addr, 0,
			      m->thread_index, NULL};
	uint64_t bad = 0;
	if (!root_words(w, lo, (hi - lo) / 8, &k, &bad))
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "thread 0x%" PRIx64 ": its machine "
				     "stack at 0x%" PRIx64 " is unreadable",
				     t->addr, bad),
		     "machine stack not read");
}

/* A suspended fiber's machine stack, as it left it: stack_size words from
 * cont.machine.stack, as cont_mark scans it for a fiber not terminated.
 * The fiber running on its thread is the thread's stack (above). */
static void fiber_stack_roots(struct roots_walk *w, const struct rv_process *p)
{
	struct rv_session *s = w->s;
	if (!RV_HAS(s, fiber_machine_stack) ||
	    !RV_HAS(s, fiber_machine_stack_size))
		return;
	for (size_t i = 0; i < p->nthreads && !w->nomem; i++) {
		const struct rv_thread *t = &p->threads[i];
		for (size_t j = 0; j < t->nfibers && !w->nomem; j++) {
			const struct rv_fiber *f = &t->fibers[j];
			uint64_t at = 0, n = 0;
			if (f->is_current || f->status == RV_FIBER_TERMINATED)
				continue;
			if (!rv_try_member(s, f->addr, RVL_fiber_machine_stack,
					   &at) ||
			    !rv_try_member(s, f->addr,
					   RVL_fiber_machine_stack_size, &n) ||
			    n > MAX_MACHINE_STACK / 8 || (at & 7)) {
				note(w,
				     cs_error_create(CS_ERR_CORRUPT,
						     "fiber 0x%" PRIx64 ": its "
						     "saved machine stack is "
						     "unreadable or implausible",
						     f->addr),
				     "machine stack not read");
				continue;
			}
			if (!at || !n)
				continue; /* never switched away from */
			struct word_sink k = {RV_ROOT_FIBER_STACK, t->addr,
					      f->addr, i, NULL};
			uint64_t bad = 0;
			if (!root_words(w, at, n, &k, &bad))
				note(w,
				     cs_error_create(CS_ERR_CORRUPT,
						     "fiber 0x%" PRIx64 ": its "
						     "machine stack at "
						     "0x%" PRIx64
						     " is unreadable",
						     f->addr, bad),
				     "machine stack not read");
		}
	}
}

/* The most entries of a list or table of the VM's roots read: far above
 * any real process's. */
#define MAX_VM_ROOTS ((uint64_t)1 << 20)

/* What the C global at ptr holds, a root named by that address. */
static void registered_root(struct roots_walk *w, uint64_t ptr)
{
	uint64_t v = 0;
	char name[32];
	if (rv_try_read(w->s, ptr, &v, sizeof(v))) {
		snprintf(name, sizeof(name), "0x%" PRIx64, ptr);
		emit(w, RV_ROOT_REGISTERED, name, NULL, 0, 0, 0, v);
	} else {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the registered address 0x%" PRIx64
				     " is unreadable",
				     ptr),
		     "registered addresses not all read");
	}
}

/* The registered addresses kept in an array (4.1-dev):
 * vm->gc.registered_globals.addrs[addrs_cnt]. */
static void registered_array(struct roots_walk *w, uint64_t vm)
{
	uint64_t addrs = 0, n = 0, bad = 0;
	if (!rv_try_member(w->s, vm, RVL_vm_registered_addrs, &addrs) ||
	    !rv_try_member(w->s, vm, RVL_vm_registered_addrs_cnt, &n) ||
	    n > MAX_VM_ROOTS) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the registered addresses are "
				     "unreadable or implausible"),
		     "registered addresses not read");
		return;
	}
	struct word_sink k = {.each = registered_root};
	if (!root_words(w, addrs, n, &k, &bad))
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the registered addresses at "
				     "0x%" PRIx64 " are unreadable",
				     addrs),
		     "registered addresses not all read");
}

/* What each C global rb_gc_register_address registered holds (any word,
 * as rb_gc_mark_maybe marks it): the VM's global_object_list (3.4+), or
 * the objspace's global_list, each node {varptr, next}. */
static void registered_roots(struct roots_walk *w, uint64_t vm,
			     uint64_t objspace)
{
	struct rv_session *s = w->s;
	enum rv_item_id varptr, next;
	uint64_t node = 0;
	bool head;
	if (RV_HAS(s, vm_registered_addrs) &&
	    RV_HAS(s, vm_registered_addrs_cnt)) {
		registered_array(w, vm);
		return;
	}
	if (RV_HAS(s, vm_global_object_list) &&
	    RV_HAS(s, global_object_list_varptr) &&
	    RV_HAS(s, global_object_list_next)) {
		varptr = RVL_global_object_list_varptr;
		next = RVL_global_object_list_next;
		head = rv_try_member(s, vm, RVL_vm_global_object_list, &node);
	} else if (RV_HAS(s, objspace_global_list) &&
		   RV_HAS(s, gc_list_varptr) && RV_HAS(s, gc_list_next)) {
		varptr = RVL_gc_list_varptr;
		next = RVL_gc_list_next;
		head = objspace &&
		       rv_try_member(s, objspace, RVL_objspace_global_list,
				     &node);
	} else {
		note(w, rv_missing(RVL_vm_global_object_list),
		     "registered addresses not read");
		return;
	}
	if (!head) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the list of registered addresses is "
				     "unreadable"),
		     "registered addresses not read");
		return;
	}
	for (uint64_t n = 0; node && !w->nomem; n++) {
		uint64_t ptr = 0, after = 0;
		if (n == MAX_VM_ROOTS ||
		    !rv_try_member(s, node, varptr, &ptr) ||
		    !rv_try_member(s, node, next, &after)) {
			note(w,
			     cs_error_create(CS_ERR_CORRUPT,
					     "a node of the registered "
					     "addresses at 0x%" PRIx64
					     " is unreadable (or past %" PRIu64
					     ")",
					     node, MAX_VM_ROOTS),
			     "registered addresses not all read");
			return;
		}
		registered_root(w, ptr);
		node = after;
	}
}

/* n words from at, each a mark object; false when unreadable. */
static bool mark_objects(struct roots_walk *w, uint64_t at, uint64_t n)
{
	struct word_sink k = {.kind = RV_ROOT_MARK_OBJECT};
	uint64_t bad = 0;
	return root_words(w, at, n, &k, &bad);
}

/* The objects rb_gc_register_mark_object registered: vm->mark_object_ary,
 * a chain of pin_array_lists (T_DATA, each {next, len, array}: 3.4+), or
 * an Array of Arrays of them. */
static struct cs_error *mark_object_roots(struct roots_walk *w, uint64_t vm)
{
	struct rv_session *s = w->s;
	uint64_t list = 0, ptr = 0, len = 0;
	struct cs_error *err;
	if (RV_HAS(s, ractor_registered_marks) &&
	    RV_HAS(s, ractor_registered_marks_cnt) &&
	    RV_HAS(s, vm_main_ractor)) {
		/* the main ractor's own array (4.1-dev) */
		uint64_t main = 0;
		if (!rv_try_member(s, vm, RVL_vm_main_ractor, &main) ||
		    !rv_try_member(s, main, RVL_ractor_registered_marks,
				   &ptr) ||
		    !rv_try_member(s, main, RVL_ractor_registered_marks_cnt,
				   &len) ||
		    len > MAX_VM_ROOTS || (len && !mark_objects(w, ptr, len)))
			return cs_error_create(CS_ERR_CORRUPT,
					       "the main ractor's registered "
					       "marks are unreadable");
		return NULL;
	}
	if (!RV_HAS(s, vm_mark_object_ary))
		return rv_missing(RVL_vm_mark_object_ary);
	if (!rv_try_member(s, vm, RVL_vm_mark_object_ary, &list))
		return cs_error_create(CS_ERR_CORRUPT,
				       "vm->mark_object_ary is unreadable");
	if (RV_HAS(s, pin_array_list_next) && RV_HAS(s, pin_array_list_len) &&
	    RV_HAS(s, pin_array_list_array)) {
		for (uint64_t n = 0;
		     list && !rv_special_const(s, list) && !w->nomem; n++) {
			uint64_t data = 0, array = 0;
			if (n == MAX_VM_ROOTS)
				return cs_error_create(CS_ERR_CORRUPT,
						       "more than %" PRIu64
						       " pin_array_lists",
						       MAX_VM_ROOTS);
			if ((err = rv_typed_data_ptr(s, list, &data)) ||
			    (err = rv_read_member(
				     s, data, RVL_pin_array_list_len, &len)) ||
			    (err = rv_read_member(s, data,
						  RVL_pin_array_list_array,
						  &array)) ||
			    (err = rv_read_member(
				     s, data, RVL_pin_array_list_next, &list)))
				return err;
			if (len > MAX_VM_ROOTS ||
			    (len && !mark_objects(w, array, len)))
				return cs_error_create(
					CS_ERR_CORRUPT,
					"a pin_array_list of %" PRIu64
					" objects at 0x%" PRIx64
					" is unreadable",
					len, array);
		}
		return NULL;
	}
	if ((err = rv_array_span(s, list, &ptr, &len)))
		return err;
	if (len > MAX_VM_ROOTS)
		return cs_error_create(CS_ERR_CORRUPT,
				       "mark_object_ary of %" PRIu64 " buckets",
				       len);
	for (uint64_t i = 0; i < len && !w->nomem; i++) {
		uint64_t bucket = 0, bptr = 0, blen = 0;
		if (!rv_try_read(s, ptr + i * 8, &bucket, sizeof(bucket)))
			return cs_error_create(CS_ERR_CORRUPT,
					       "mark_object_ary's elements at "
					       "0x%" PRIx64 " are unreadable",
					       ptr);
		if ((err = rv_array_span(s, bucket, &bptr, &blen)))
			return err;
		if (blen > MAX_VM_ROOTS || !mark_objects(w, bptr, blen))
			return cs_error_create(CS_ERR_CORRUPT,
					       "a bucket of mark_object_ary "
					       "at 0x%" PRIx64 " is unreadable",
					       bucket);
	}
	return NULL;
}

static struct cs_error *finalizer_root(struct rv_session *s, uint64_t key,
				       uint64_t record, void *ctx)
{
	struct roots_walk *w = ctx;
	char name[32];
	(void)s;
	snprintf(name, sizeof(name), "0x%" PRIx64, key);
	emit(w, RV_ROOT_FINALIZER, name, NULL, 0, 0, 0, record);
	return w->nomem ? &cs_error_nomem : NULL;
}

/* The roots the VM keeps for C code, and the finalizers' procs. */
static void vm_table_roots(struct roots_walk *w)
{
	struct rv_session *s = w->s;
	uint64_t vm = 0, objspace = 0, tbl = 0;
	const char *why = NULL;
	if (!rv_try_var(s, RVL_vm_ptr, 8, &vm) || !vm) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "ruby_current_vm_ptr unreadable"),
		     "the VM's roots not read");
		return;
	}
	objspace = rv_objspace(s, vm, &why);
	registered_roots(w, vm, objspace);
	if (!w->nomem)
		note(w, mark_object_roots(w, vm), "mark objects not read");
	if (w->nomem)
		return;
	struct cs_error *err = NULL;
	if (why)
		err = cs_error_create(CS_ERR_NO_DEBUG, "%s", why);
	else if (!RV_HAS(s, objspace_finalizer_table))
		err = rv_missing(RVL_objspace_finalizer_table);
	else if (!objspace ||
		 !rv_try_member(s, objspace, RVL_objspace_finalizer_table,
				&tbl))
		err = cs_error_create(CS_ERR_CORRUPT,
				      "the finalizer table is unreadable");
	else if (tbl)
		err = rv_st_each(s, tbl, finalizer_root, w);
	if (err == &cs_error_nomem)
		w->nomem = true;
	else
		note(w, err, "finalizers not read");
}

struct cs_error *rv_heap_roots(struct rv_session *s,
			       const struct rv_root_stacks *stacks,
			       rv_root_fn *fn, void *ctx, char **error)
{
	struct roots_walk w = {s, fn, ctx, error, false};
	const struct rv_process *p = stacks ? stacks->process : NULL;
	global_roots(&w);
	if (p && !w.nomem)
		thread_roots(&w, p);
	for (size_t i = 0; p && i < stacks->nmachine && !w.nomem; i++)
		machine_roots(&w, p, &stacks->machine[i]);
	if (p && !w.nomem)
		fiber_stack_roots(&w, p);
	if (!w.nomem)
		vm_table_roots(&w);
	return w.nomem ? &cs_error_nomem : NULL;
}
