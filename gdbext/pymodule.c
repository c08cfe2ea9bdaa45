/* _corestack: the CPython extension gdb and lldb load (stable ABI, so one
 * build serves any Python 3.7+). It only converts between Python and the C
 * of backtrace.c, sample.c and args.c; the loaders ruby-gdb.py and
 * ruby-lldb.py only register commands and ask their debugger what it knows
 * (pid, core file, threads, memory); which way to read the inferior is
 * decided here (source_choice.h). Errors raise a subclass of
 * _corestack.Error per cs_error code, with one line. */
#define Py_LIMITED_API 0x03070000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../process/crash_signal.h"
#include "../process/target.h"
#include "../profile/profile.h"
#include "../profile/profile_format.h"
#include "args.h"
#include "backtrace.h"
#include "debugger_target.h"
#include "frames.h"
#include "sample.h"
#include "source_choice.h"
#include "source_list.h"

/* _corestack.Error, and under it a class per cs_error code, so that the
 * loaders act on what failed, never on the words that say it. */
static PyObject *corestack_error;

static const struct {
	const char *name; /* _corestack.NAME */
	const char *doc;
} error_classes[] = {
	[CS_ERR_NOMEM] = {"OutOfMemoryError", "an allocation failed"},
	[CS_ERR_OS] = {"SystemCallError", "a system call failed"},
	[CS_ERR_FORMAT] = {"FormatError", "a file is not what it claims to be"},
	[CS_ERR_FAULT] = {"FaultError",
			  "the inferior's memory could not be read; address: "
			  "the first address not read, or None"},
	[CS_ERR_LOOKUP] = {"NotFoundError", "a name or frame is absent"},
	[CS_ERR_NO_DEBUG] = {"NoDebugInfoError", "a module has no DWARF"},
	[CS_ERR_MISMATCH] = {"MismatchError",
			     "a file does not belong to the inferior"},
	[CS_ERR_NOT_RUBY] = {"NotRubyError", "the inferior runs no Ruby"},
	[CS_ERR_CORRUPT] = {"CorruptError", "the Ruby's data is damaged"},
	[CS_ERR_LIMIT] = {"LimitError", "a bound was reached"},
	[CS_ERR_USAGE] = {"UsageError", "a command was given bad arguments"},
	[CS_ERR_NO_THREAD] = {"NoRubyThreadError",
			      "the thread asked for runs no Ruby thread"},
};

#define NCLASSES (sizeof(error_classes) / sizeof(*error_classes))

static PyObject *error_class[NCLASSES];

/* Raise err as its code's class, with its message (and, for a fault,
 * its address); consumes err. NULL, for returning. */
static PyObject *raise(struct cs_error *err)
{
	size_t code = (size_t)err->code;
	PyObject *cls = code < NCLASSES && error_class[code] ? error_class[code]
							     : corestack_error;
	PyObject *exc = PyObject_CallFunction(cls, "s", err->message);
	PyObject *address = err->has_address
				    ? PyLong_FromUnsignedLongLong(err->address)
				    : (Py_INCREF(Py_None), Py_None);
	cs_error_destroy(err);
	if (exc && address &&
	    PyObject_SetAttrString(exc, "address", address) == 0)
		PyErr_SetObject(cls, exc);
	Py_XDECREF(address);
	Py_XDECREF(exc);
	return NULL;
}

/* --- memory and threads through the debugger ---------------------------- */

struct py_reader {
	PyObject *read; /* read(addr, len) -> bytes */
	const char *name;
};

static struct cs_error *py_read(void *priv, uint64_t addr, void *buf,
				size_t len)
{
	struct py_reader *r = priv;
	PyObject *res = PyObject_CallFunction(
		r->read, "Kn", (unsigned long long)addr, (Py_ssize_t)len);
	char *data;
	Py_ssize_t got = 0;
	if (res && PyBytes_AsStringAndSize(res, &data, &got) == 0 &&
	    (size_t)got == len) {
		memcpy(buf, data, len);
		Py_DECREF(res);
		return NULL;
	}
	Py_XDECREF(res);
	PyErr_Clear();
	return cs_error_fault(addr, "%s: cannot read %zu bytes at 0x%llx",
			      r->name, len, (unsigned long long)addr);
}

static int py_hints(void *ctx, struct gx_thread_hint **ret, size_t *count)
{
	PyObject *list = PyObject_CallObject(ctx, NULL);
	Py_ssize_t n = list ? PyList_Size(list) : -1;
	*ret = NULL;
	*count = 0;
	if (n < 0) {
		Py_XDECREF(list);
		PyErr_Clear();
		return 0;
	}
	struct gx_thread_hint *h = calloc((size_t)n + 1, sizeof(*h));
	for (Py_ssize_t i = 0; h && i < n; i++) {
		long long tid;
		unsigned long long fs_base, rsp = 0;
		if (!PyArg_ParseTuple(PyList_GetItem(list, i), "LK|K", &tid,
				      &fs_base, &rsp)) {
			PyErr_Clear();
			continue;
		}
		h[(*count)++] = (struct gx_thread_hint){tid, fs_base, rsp};
	}
	Py_DECREF(list);
	*ret = h;
	return h != NULL;
}

/* mappings: [(start, end, offset, path)], auxv: {type: value} */
static int fill_image(struct gx_inferior *d, PyObject *maps, PyObject *auxv)
{
	Py_ssize_t n = PyList_Size(maps);
	if (n < 0)
		return 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		unsigned long long start, end, offset;
		const char *path;
		if (!PyArg_ParseTuple(PyList_GetItem(maps, i), "KKKs", &start,
				      &end, &offset, &path))
			return 0;
		if (!gx_inferior_add_mapping(d, start, end, offset, path)) {
			PyErr_NoMemory();
			return 0;
		}
	}
	gx_inferior_finish(d);
	PyObject *key, *value;
	Py_ssize_t pos = 0;
	while (auxv && PyDict_Next(auxv, &pos, &key, &value) &&
	       d->nauxv < GX_AUXV_MAX) {
		d->auxv[d->nauxv][0] = PyLong_AsUnsignedLongLong(key);
		d->auxv[d->nauxv][1] = PyLong_AsUnsignedLongLong(value);
		if (PyErr_Occurred())
			return 0;
		d->nauxv++;
	}
	return 1;
}

/* tids: a list of ints, or None for every thread. */
static int tid_list(PyObject *tids, int64_t **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	if (tids == Py_None)
		return 1;
	Py_ssize_t len = PyList_Size(tids);
	if (len < 0 || !(*ret = calloc((size_t)len + 1, sizeof(**ret))))
		return 0;
	for (Py_ssize_t i = 0; i < len; i++) {
		(*ret)[i] = PyLong_AsLongLong(PyList_GetItem(tids, i));
		if (PyErr_Occurred())
			return 0;
	}
	*n = (size_t)len;
	return 1;
}

/* "dir1:dir2" (a debugger's debug-file-directory) as a NULL-terminated
 * array in *ret (one allocation: free *ret only); NULL when dirs is. */
static int split_dirs(const char *dirs, char ***ret)
{
	*ret = NULL;
	if (!dirs)
		return 1;
	size_t n = 1, len = strlen(dirs);
	for (const char *c = dirs; *c; c++)
		n += *c == ':';
	char **list = malloc((n + 1) * sizeof(*list) + len + 1);
	if (!list) {
		PyErr_NoMemory();
		return 0;
	}
	char *copy = memcpy((char *)(list + n + 1), dirs, len + 1);
	size_t k = 0;
	char *rest = NULL;
	for (char *dir = strtok_r(copy, ":", &rest); dir;
	     dir = strtok_r(NULL, ":", &rest))
		list[k++] = dir;
	list[k] = NULL;
	*ret = list;
	return 1;
}

/* How to read the inferior one way: a gx_source and what it points to. */
struct py_source {
	struct gx_source src;
	struct gx_inferior dbg;
	struct py_reader reader;
	/* GX_SOURCE_LIVE: the thread stopped at a fatal signal, and it */
	struct cs_thread stopped;
	struct cs_siginfo stop_signal;
	/* GX_SOURCE_LIVE without one: every thread's registers, or NULL */
	struct cs_thread *threads;
};

static void source_free(struct py_source *ps)
{
	gx_inferior_free(&ps->dbg);
	free(ps->threads);
}

/* What the loader says of the inferior, for every way of reading it. */
struct py_facts {
	struct gx_facts f;
	const char *executable, *name, *advice, *sysroot, *search;
	PyObject *read, *maps, *auxv, *sig, *hints, *stop, *threads;
	char **debug_dirs;
};

/* The facts from keywords: is_core, core (its path), pid, local (the OS
 * can read its memory), via_debugger; executable, name; read(addr, len),
 * mappings, auxv and signal, each a value or a function called only when
 * the debugger is the way read; hints; debug_dirs (the debugger's, "a:b"),
 * debug_dir_advice (how its user adds one, for the no-debug message),
 * sysroot and lib_search_path ("a:b": where a core's files are when not
 * at the paths it names, the debugger's settings); stop (a live process:
 * the thread the debugger holds stopped at a fatal signal, or a function
 * giving it, called only when the process is read directly); threads (a
 * live process with no such thread: every thread's registers, or a
 * function giving them, called only then). 0 with a Python error set; pf
 * is always safe to free. */
static int facts_from(PyObject *kw, struct py_facts *pf)
{
	static char *names[] = {"is_core",
				"core",
				"pid",
				"local",
				"via_debugger",
				"executable",
				"name",
				"read",
				"mappings",
				"auxv",
				"signal",
				"hints",
				"debug_dirs",
				"debug_dir_advice",
				"sysroot",
				"lib_search_path",
				"stop",
				"threads",
				NULL};
	const char *dirs = NULL;
	int is_core = 0, local = 0, via = 0;
	PyObject *empty = PyTuple_New(0);
	memset(pf, 0, sizeof(*pf));
	pf->f.pid = -1;
	pf->name = "the debugger's inferior";
	pf->read = pf->maps = pf->auxv = pf->sig = pf->hints = Py_None;
	pf->stop = pf->threads = Py_None;
	int ok = empty &&
		 PyArg_ParseTupleAndKeywords(
			 empty, kw, "|pzippzzOOOOOzzzzOO", names, &is_core,
			 &pf->f.core_path, &pf->f.pid, &local, &via,
			 &pf->executable, &pf->name, &pf->read, &pf->maps,
			 &pf->auxv, &pf->sig, &pf->hints, &dirs, &pf->advice,
			 &pf->sysroot, &pf->search, &pf->stop, &pf->threads);
	Py_XDECREF(empty);
	pf->f.is_core = is_core;
	pf->f.local = local;
	pf->f.via_debugger = via;
	return ok && split_dirs(dirs, &pf->debug_dirs);
}

/* v, or what v() returns when it is a function (a new reference). */
static PyObject *value_of(PyObject *v)
{
	if (PyCallable_Check(v))
		return PyObject_CallObject(v, NULL);
	Py_INCREF(v);
	return v;
}

/* The debugger's own reading of the inferior: its memory, mappings,
 * auxiliary vector and, for a core, the signal. 0 with a Python error. */
static int debugger_source(const struct py_facts *pf, struct py_source *ps)
{
	struct gx_inferior *dbg = &ps->dbg;
	PyObject *maps = NULL, *auxv = NULL, *sig = NULL;
	int ok = 0;
	if (!PyCallable_Check(pf->read)) {
		PyErr_SetString(PyExc_ValueError, "read= is not a function");
		return 0;
	}
	if (!(maps = value_of(pf->maps)) || !(auxv = value_of(pf->auxv)) ||
	    !(sig = value_of(pf->sig)))
		goto out;
	/* signal: (signo, code, the first word of siginfo's union: a fault
	 * address or a sender's pid, tid that took it) */
	if (sig != Py_None) {
		int signo = 0, code = 0;
		unsigned long long union_word = 0;
		long long crash_tid = -1;
		if (!PyArg_ParseTuple(sig, "iiKL", &signo, &code, &union_word,
				      &crash_tid))
			goto out;
		cs_siginfo_set(&dbg->siginfo, signo, 0, code, union_word);
		dbg->crash_tid = crash_tid;
	}
	ps->reader = (struct py_reader){pf->read, pf->name};
	dbg->mem = (struct cs_memory){py_read, &ps->reader};
	dbg->name = pf->name;
	dbg->is_core = pf->f.is_core;
	/* As the mappings name it: where the executable is loaded is found
	 * from them when the debugger shows no auxiliary vector (lldb). */
	char *real = pf->executable ? realpath(pf->executable, NULL) : NULL;
	if (pf->executable &&
	    !(dbg->executable = real ? real : strdup(pf->executable))) {
		PyErr_NoMemory();
		goto out;
	}
	ps->src.executable = dbg->executable;
	ps->src.debugger = dbg;
	ok = fill_image(dbg, maps, auxv == Py_None ? NULL : auxv);
out:
	Py_XDECREF(maps);
	Py_XDECREF(auxv);
	Py_XDECREF(sig);
	return ok;
}

/* t's 27 registers (user_regs_struct order) from the tuple regs, and
 * the fields copied from them. 0 with a Python error set. */
static int registers_from(PyObject *regs, struct cs_thread *t)
{
	size_t n = sizeof(t->regs) / sizeof(*t->regs);
	if (!PyTuple_Check(regs) || PyTuple_Size(regs) != (Py_ssize_t)n) {
		PyErr_SetString(PyExc_ValueError,
				"registers are not a tuple of 27");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		t->regs[i] = PyLong_AsUnsignedLongLongMask(
			PyTuple_GetItem(regs, (Py_ssize_t)i));
		if (PyErr_Occurred())
			return 0;
	}
	t->rip = t->regs[CS_REG_RIP];
	t->rsp = t->regs[CS_REG_RSP];
	t->rbp = t->regs[CS_REG_RBP];
	t->fs_base = t->regs[CS_REG_FS_BASE];
	return 1;
}

/* Every thread's registers from threads: [(tid, registers)], or None.
 * 0 with a Python error set. */
static int all_registers(const struct py_facts *pf, struct py_source *ps)
{
	PyObject *list = value_of(pf->threads);
	int ok = 0;
	if (!list)
		return 0;
	if (list == Py_None) {
		Py_DECREF(list);
		return 1;
	}
	Py_ssize_t n = PyList_Check(list) ? PyList_Size(list) : -1;
	if (n < 0 || (size_t)n > CS_TARGET_MAX_THREADS) {
		PyErr_SetString(PyExc_ValueError,
				"threads: not a list of (tid, registers)");
		goto out;
	}
	if (!(ps->threads = calloc((size_t)n + 1, sizeof(*ps->threads)))) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		int tid = 0;
		PyObject *regs = NULL;
		if (!PyArg_ParseTuple(PyList_GetItem(list, i), "iO", &tid,
				      &regs) ||
		    !registers_from(regs, &ps->threads[i]))
			goto out;
		ps->threads[i].tid = tid;
	}
	ps->src.threads = ps->threads;
	ps->src.nthreads = (size_t)n;
	ok = 1;
out:
	Py_DECREF(list);
	return ok;
}

/* The thread a live inferior is stopped at a fatal signal on, from
 * stop: (signo, code, the first word of siginfo's union, tid, the 27
 * registers in user_regs_struct order), or None. 0 with a Python error
 * set. */
static int live_stop(const struct py_facts *pf, struct py_source *ps)
{
	PyObject *stop = value_of(pf->stop), *regs = NULL;
	int ok = 0;
	if (!stop)
		return 0;
	if (stop == Py_None) {
		Py_DECREF(stop);
		return all_registers(pf, ps);
	}
	int signo = 0, code = 0, tid = 0;
	unsigned long long union_word = 0;
	struct cs_thread *t = &ps->stopped;
	if (!PyArg_ParseTuple(stop, "iiKiO", &signo, &code, &union_word, &tid,
			      &regs) ||
	    !registers_from(regs, t))
		goto out;
	t->tid = tid;
	t->cursig = signo;
	cs_siginfo_set(&ps->stop_signal, signo, 0, code, union_word);
	ps->src.stopped = t;
	ps->src.stop_signal = &ps->stop_signal;
	ok = 1;
out:
	Py_DECREF(stop);
	return ok;
}

/* The inferior read the way kind says. 0 with a Python error set; ps is
 * always safe to free. */
static int source_for(const struct py_facts *pf, enum gx_source_kind kind,
		      struct py_source *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->dbg = (struct gx_inferior){
		.fd = -1, .pid = pf->f.pid, .crash_tid = -1};
	ps->src = (struct gx_source){
		.kind = kind,
		.pid = pf->f.pid,
		.executable = pf->executable,
		.debug_dirs = (const char *const *)pf->debug_dirs,
		.debug_dir_advice = pf->advice,
	};
	if (kind == GX_SOURCE_CORE) {
		ps->src.core_path = pf->f.core_path;
		ps->src.sysroot = pf->sysroot;
		ps->src.lib_search_path = pf->search;
	}
	if (kind == GX_SOURCE_LIVE)
		return live_stop(pf, ps);
	return kind != GX_SOURCE_DEBUGGER || debugger_source(pf, ps);
}

/* One command's work on one way of reading the inferior. */
typedef struct cs_error *(*source_work)(const struct gx_source *src,
					struct gx_backtrace_request *req,
					void *ctx);

/* work on each way of reading the inferior (gx_source_order) until one
 * succeeds: 1, or 0 with a Python error set (the first error when no way
 * did, or the one that says every way would fail alike). */
static int on_sources(const struct py_facts *pf,
		      struct gx_backtrace_request *req, source_work work,
		      void *ctx)
{
	enum gx_source_kind order[GX_SOURCES_MAX];
	size_t n = gx_source_order(&pf->f, order);
	struct cs_error *first = NULL;
	if (PyCallable_Check(pf->hints)) {
		/* the debugger's threads, for Ruby threads that keep only a
		 * pthread_t */
		req->hints = py_hints;
		req->hints_ctx = pf->hints;
	}
	struct py_source ps;
	for (size_t i = 0; i < n; i++) {
		if (!source_for(pf, order[i], &ps)) {
			source_free(&ps);
			cs_error_destroy(first);
			return 0;
		}
		struct cs_error *err = work(&ps.src, req, ctx);
		source_free(&ps);
		if (!err) {
			cs_error_destroy(first);
			return 1;
		}
		if (!gx_source_retry(err)) {
			cs_error_destroy(first);
			first = err;
			break;
		}
		if (first)
			cs_error_destroy(err);
		else
			first = err;
	}
	raise(first ? first
		    : cs_error_create(CS_ERR_USAGE, "no way to read it"));
	return 0;
}

static void facts_free(struct py_facts *pf)
{
	free(pf->debug_dirs);
	pf->debug_dirs = NULL;
}

/* The facts from kw without the keywords a command takes for itself,
 * those in taken[i] (borrowed, NULL when absent). 0 with a Python error
 * set; pf is always safe to free. */
static int command_facts(PyObject *kw, const char *const *own, PyObject **taken,
			 struct py_facts *pf)
{
	memset(pf, 0, sizeof(*pf));
	for (size_t i = 0; own[i]; i++)
		taken[i] = NULL;
	PyObject *rest = kw ? PyDict_Copy(kw) : PyDict_New();
	for (size_t i = 0; rest && own[i]; i++) {
		taken[i] = kw ? PyDict_GetItemString(kw, own[i]) : NULL;
		if (taken[i] && PyDict_DelItemString(rest, own[i]) < 0) {
			Py_DECREF(rest);
			return 0;
		}
	}
	int ok = rest && facts_from(rest, pf);
	Py_XDECREF(rest);
	return ok;
}

/* names: [(tid, name)], the debugger's name of each kernel thread, into
 * tids[] and strs[] (names borrowed from the list). */
static int tid_names(PyObject *names, int64_t **tids, const char ***strs,
		     size_t *n)
{
	*tids = NULL;
	*strs = NULL;
	*n = 0;
	if (names == NULL || names == Py_None)
		return 1;
	Py_ssize_t len = PyList_Size(names);
	if (len < 0)
		return 0;
	*tids = calloc((size_t)len + 1, sizeof(**tids));
	*strs = calloc((size_t)len + 1, sizeof(**strs));
	if (!*tids || !*strs) {
		PyErr_NoMemory();
		return 0;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		long long tid;
		if (!PyArg_ParseTuple(PyList_GetItem(names, i), "Ls", &tid,
				      &(*strs)[i]))
			return 0;
		(*tids)[i] = tid;
	}
	*n = (size_t)len;
	return 1;
}

struct backtrace_work {
	char *text;
	int complete;
};

static struct cs_error *backtrace_work(const struct gx_source *src,
				       struct gx_backtrace_request *req,
				       void *ctx)
{
	struct backtrace_work *w = ctx;
	return gx_backtrace(src, req, &w->text, &w->complete);
}

/* backtrace(json=False, tids=None, thread_name=None, locals=False,
 * frame=None, value=None, thread_names=None, locks=False, heap=False,
 * top=30, retainers=None, dump=None, **facts) -> (text, complete). thread_name: the debugger's name of the one thread in tids
 * ("gdb thread 3"), which the text then shows alone; thread_names:
 * [(tid, name)], the debugger's name of each thread, which the text
 * shows next to each Ruby thread's tid; locals: every Ruby frame's locals (ruby-bt full);
 * locks: who holds what alone, no stacks (ruby-locks);
 * heap: the heap census instead, top class rows (ruby-heap), or with
 * retainers (an address "0x..." or a class name) what keeps that object,
 * or the top largest instances of that class, alive; with dump (a path)
 * every object into that file as ObjectSpace.dump_all writes it, and
 * what was written as the text;
 * frame: only that frame of the thread (-1: the innermost Ruby one) with
 * its locals (ruby-locals); value: only that VALUE (ruby-print). */
static PyObject *py_backtrace(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	static const char *const own[] = {
		"json",        "tids",         "locals", "frame", "value",
		"thread_name", "thread_names", "locks",  "heap",  "top",
		"retainers",   "dump",         NULL};
	PyObject *taken[12];
	if (PyTuple_Size(args) != 0) {
		PyErr_SetString(PyExc_TypeError, "backtrace: keywords only");
		return NULL;
	}
	struct py_facts pf;
	int ok = command_facts(kw, own, taken, &pf);
	int json = taken[0] ? PyObject_IsTrue(taken[0]) : 0;
	int locals = taken[2] ? PyObject_IsTrue(taken[2]) : 0;
	int locks = taken[7] ? PyObject_IsTrue(taken[7]) : 0;
	int heap = taken[8] ? PyObject_IsTrue(taken[8]) : 0;
	struct gx_backtrace_request req = {.format = json > 0 ? "json" : "text",
					   .locals = locals > 0,
					   .locks_only = locks > 0,
					   .heap = heap > 0,
					   .heap_top = GX_HEAP_DEFAULT_TOP,
					   .frame = GX_FRAME_NONE};
	if (ok && taken[3] && taken[3] != Py_None &&
	    (req.frame = PyLong_AsLong(taken[3])) == -1 && PyErr_Occurred())
		ok = 0;
	long top;
	if (ok && taken[9] && taken[9] != Py_None) {
		if ((top = PyLong_AsLong(taken[9])) <= 0) {
			if (!PyErr_Occurred())
				PyErr_SetString(
					PyExc_ValueError,
					"backtrace: top must be above 0");
			ok = 0;
		} else {
			req.heap_top = (size_t)top;
		}
	}
	if (ok && taken[4] && taken[4] != Py_None) {
		req.show_value = 1;
		/* a VALUE as the debugger gives it, masked to 64 bits */
		req.value = PyLong_AsUnsignedLongLongMask(taken[4]);
		if (PyErr_Occurred())
			ok = 0;
	}
	if (ok && taken[5] && taken[5] != Py_None &&
	    !PyArg_Parse(taken[5], "s", &req.thread_name))
		ok = 0;
	if (ok && taken[10] && taken[10] != Py_None &&
	    !PyArg_Parse(taken[10], "s", &req.heap_retainers))
		ok = 0;
	if (ok && taken[11] && taken[11] != Py_None &&
	    !PyArg_Parse(taken[11], "s", &req.heap_dump))
		ok = 0;
	int64_t *only = NULL, *name_tids = NULL;
	const char **names = NULL;
	struct backtrace_work w = {0};
	if (ok && json >= 0 && locals >= 0 && locks >= 0 && heap >= 0 &&
	    tid_list(taken[1] ? taken[1] : Py_None, &only, &req.nonly) &&
	    tid_names(taken[6], &name_tids, &names, &req.nnames)) {
		req.only_tids = only;
		req.name_tids = name_tids;
		req.tid_names = names;
		ok = on_sources(&pf, &req, backtrace_work, &w);
	} else {
		ok = 0;
	}
	free(only);
	free(name_tids);
	free(names);
	facts_free(&pf);
	PyObject *res = ok ? Py_BuildValue("(sO)", w.text,
					   w.complete ? Py_True : Py_False)
			   : NULL;
	free(w.text);
	return res;
}

/* --- ruby-frame, ruby-list --------------------------------------------- */

/* native: [(function or None, entry address, inlined)], the debugger's
 * frames innermost first, into *ret (function names borrowed from list). */
static int native_list(PyObject *list, struct cs_native_frame **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	if (list == NULL || list == Py_None)
		return 1;
	Py_ssize_t len = PyList_Size(list);
	if (len < 0 || !(*ret = calloc((size_t)len + 1, sizeof(**ret))))
		return 0;
	for (Py_ssize_t i = 0; i < len; i++) {
		const char *function;
		unsigned long long start;
		int inlined;
		if (!PyArg_ParseTuple(PyList_GetItem(list, i), "zKp", &function,
				      &start, &inlined))
			return 0;
		(*ret)[i] =
			(struct cs_native_frame){.function = (char *)function,
						 .func_start = start,
						 .inlined = inlined};
	}
	*n = (size_t)len;
	return 1;
}

static PyObject *frames_tuple(const struct gx_thread_frames *f)
{
	PyObject *list = PyList_New((Py_ssize_t)f->nframes);
	for (size_t j = 0; list && j < f->nframes; j++) {
		const struct gx_ruby_frame *g = &f->frames[j];
		PyObject *native = g->native >= 0
					   ? PyLong_FromLong(g->native)
					   : (Py_INCREF(Py_None), Py_None);
		PyObject *item = native ? Py_BuildValue("(sziN)", g->text,
							g->path, g->lineno,
							native)
					: NULL;
		if (!item) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SetItem(list, (Py_ssize_t)j, item);
	}
	return list ? Py_BuildValue("(Nz)", list, f->native_error) : NULL;
}

struct frames_work {
	int64_t tid;
	const struct cs_native_frame *native;
	size_t nnative;
	struct gx_thread_frames f;
};

static struct cs_error *frames_work(const struct gx_source *src,
				    struct gx_backtrace_request *req, void *ctx)
{
	struct frames_work *w = ctx;
	return gx_thread_frames(src, req, w->tid, w->native, w->nnative, &w->f);
}

/* thread_frames(tid, native=None, **facts) -> ([(text, path, lineno,
 * native index or None)], why no native frames or None) */
static PyObject *py_thread_frames(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	static const char *const own[] = {"native", NULL};
	PyObject *taken[1];
	long long tid;
	if (!PyArg_ParseTuple(args, "L", &tid))
		return NULL;
	struct py_facts pf;
	int ok = command_facts(kw, own, taken, &pf);
	struct cs_native_frame *native = NULL;
	size_t nnative = 0;
	struct frames_work w = {.tid = tid};
	if (ok && native_list(taken[0], &native, &nnative)) {
		struct gx_backtrace_request req = {.format = "text"};
		w.native = taken[0] && taken[0] != Py_None ? native : NULL;
		w.nnative = nnative;
		ok = on_sources(&pf, &req, frames_work, &w);
	} else {
		ok = 0;
	}
	free(native);
	facts_free(&pf);
	PyObject *res = ok ? frames_tuple(&w.f) : NULL;
	gx_thread_frames_free(&w.f);
	return res;
}

/* frame_select(command, line, current, nframes) -> the frame number */
static PyObject *py_frame_select(PyObject *self, PyObject *args)
{
	(void)self;
	const char *command, *line;
	Py_ssize_t current, nframes;
	if (!PyArg_ParseTuple(args, "ssnn", &command, &line, &current,
			      &nframes))
		return NULL;
	size_t selected;
	struct cs_error *err = gx_frame_select(
		command, line, current < 0 ? 0 : (size_t)current,
		nframes < 0 ? 0 : (size_t)nframes, &selected);
	if (err)
		return raise(err);
	return PyLong_FromSize_t(selected);
}

/* list_source(path, line, first, last, sysroot=None, cwd=None, core=None,
 * pid=0) -> (text, last line shown) */
static PyObject *py_list_source(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	static char *names[] = {"path", "line", "first", "last", "sysroot",
				"cwd",  "core", "pid",   NULL};
	struct gx_list_request req = {0};
	if (!PyArg_ParseTupleAndKeywords(args, kw, "ziii|zzzi", names,
					 &req.path, &req.line, &req.first,
					 &req.last, &req.sysroot, &req.cwd,
					 &req.core_path, &req.pid))
		return NULL;
	char *text;
	int last;
	struct cs_error *err = gx_list_source(&req, &text, &last);
	if (err)
		return raise(err);
	PyObject *res = Py_BuildValue("(si)", text, last);
	free(text);
	return res;
}

/* --- ruby-sample ---------------------------------------------------------- */

static const char sampler_capsule[] = "corestack.sampler";

static PyObject *py_sample_start(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	static char *names[] = {
		"pid",        "seconds",          "rate",
		"executable", "interrupt_signal", "out",
		"format",     "debug_dirs",       "debug_dir_advice",
		"states",     "is_core",          "local",
		NULL};
	struct gx_sample_request req = {0};
	const char *dirs = NULL;
	int is_core = 0, local = 1;
	if (!PyArg_ParseTupleAndKeywords(
		    args, kw, "idd|zizzzzIpp", names, &req.pid, &req.seconds,
		    &req.rate, &req.executable, &req.interrupt_signal,
		    &req.out_path, &req.format, &dirs, &req.debug_dir_advice,
		    &req.states, &is_core, &local))
		return NULL;
	struct gx_facts facts = {
		.is_core = is_core, .pid = req.pid, .local = local};
	struct cs_error *refused = gx_sample_check(&facts);
	if (refused)
		return raise(refused);
	char **debug_dirs;
	if (!split_dirs(dirs, &debug_dirs))
		return NULL;
	req.debug_dirs = (const char *const *)debug_dirs;
	struct gx_sampler *s;
	struct cs_error *err = gx_sampler_start(&req, &s);
	free(debug_dirs);
	if (err)
		return raise(err);
	return PyCapsule_New(s, sampler_capsule, NULL);
}

/* sample_finish(sampler) -> (summary, interrupted, quit_signal) */
static PyObject *py_sample_finish(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *capsule;
	if (!PyArg_ParseTuple(args, "O", &capsule))
		return NULL;
	struct gx_sampler *s = PyCapsule_GetPointer(capsule, sampler_capsule);
	if (!s)
		return NULL;
	/* Finished once: the capsule no longer points at it. */
	PyCapsule_SetName(capsule, "corestack.sampler.finished");
	char *summary;
	struct gx_sample_end end = {0};
	struct cs_error *err;
	Py_BEGIN_ALLOW_THREADS err = gx_sampler_finish(s, &summary, &end);
	Py_END_ALLOW_THREADS if (err) return raise(err);
	PyObject *res = Py_BuildValue("(sOi)", summary,
				      end.interrupted ? Py_True : Py_False,
				      end.quit_signal);
	free(summary);
	return res;
}

/* --- arguments ------------------------------------------------------------ */

/* bt_args(line) -> (json, via_debugger, which, out, full) with which None
 * (the selected thread), "all" or a thread number, out None or --out's
 * path, full whether to show locals. */
static PyObject *py_bt_args(PyObject *self, PyObject *args)
{
	(void)self;
	const char *line;
	if (!PyArg_ParseTuple(args, "s", &line))
		return NULL;
	struct gx_bt_args a;
	struct cs_error *err = gx_parse_bt_args(line, &a);
	if (err)
		return raise(err);
	PyObject *which = a.which == GX_BT_ALL ? PyUnicode_FromString("all")
			  : a.which == GX_BT_NUMBER
				  ? PyLong_FromLong(a.number)
				  : (Py_INCREF(Py_None), Py_None);
	if (!which) {
		gx_bt_args_free(&a);
		return NULL;
	}
	PyObject *res = Py_BuildValue("(OONzO)", a.json ? Py_True : Py_False,
				      a.via_debugger ? Py_True : Py_False,
				      which, a.out,
				      a.full ? Py_True : Py_False);
	gx_bt_args_free(&a);
	return res;
}

/* locks_args(line) -> (via_debugger, out) with out None or --out's path */
static PyObject *py_locks_args(PyObject *self, PyObject *args)
{
	(void)self;
	const char *line;
	if (!PyArg_ParseTuple(args, "s", &line))
		return NULL;
	struct gx_bt_args a;
	struct cs_error *err = gx_parse_locks_args(line, &a);
	if (err)
		return raise(err);
	PyObject *res = Py_BuildValue(
		"(Oz)", a.via_debugger ? Py_True : Py_False, a.out);
	gx_bt_args_free(&a);
	return res;
}

/* heap_args(line) -> (via_debugger, out, json, top, retainers, dump) with
 * out None or --out's path, retainers None or what --retainers names, dump
 * None or --dump's path */
static PyObject *py_heap_args(PyObject *self, PyObject *args)
{
	(void)self;
	const char *line;
	if (!PyArg_ParseTuple(args, "s", &line))
		return NULL;
	struct gx_bt_args a;
	struct gx_heap_args h;
	struct cs_error *err = gx_parse_heap_args(line, &a, &h);
	if (err)
		return raise(err);
	PyObject *res = Py_BuildValue("(OzOlzz)",
				      a.via_debugger ? Py_True : Py_False,
				      a.out, a.json ? Py_True : Py_False, h.top,
				      h.retainers, h.dump);
	gx_bt_args_free(&a);
	gx_heap_args_free(&h);
	return res;
}

/* locals_args(line) -> the frame number, -1 when none is given */
static PyObject *py_locals_args(PyObject *self, PyObject *args)
{
	(void)self;
	const char *line;
	long frame;
	if (!PyArg_ParseTuple(args, "s", &line))
		return NULL;
	struct cs_error *err = gx_parse_locals_args(line, &frame);
	if (err)
		return raise(err);
	return PyLong_FromLong(frame);
}

/* sample_args(line) -> (seconds, rate, out or None, format or None,
 * states: 0 for all) */
static PyObject *py_sample_args(PyObject *self, PyObject *args)
{
	(void)self;
	const char *line;
	if (!PyArg_ParseTuple(args, "s", &line))
		return NULL;
	struct gx_sample_args a;
	struct cs_error *err = gx_parse_sample_args(line, &a);
	if (err)
		return raise(err);
	PyObject *res = Py_BuildValue("(ddzzI)", a.seconds, a.rate, a.out,
				      a.format, a.states);
	free(a.out);
	return res;
}

/* sample_choices() -> (formats, states): what --format and --state take,
 * for completion. */
static PyObject *py_sample_choices(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	size_t n = 0;
	while (cs_profile_formats[n].name)
		n++;
	PyObject *formats = PyTuple_New((Py_ssize_t)n);
	PyObject *states = PyTuple_New(CS_PROFILE_NSTATES);
	for (size_t i = 0; formats && i < n; i++)
		PyTuple_SetItem(
			formats, (Py_ssize_t)i,
			PyUnicode_FromString(cs_profile_formats[i].name));
	for (int i = 0; states && i < CS_PROFILE_NSTATES; i++)
		PyTuple_SetItem(states, i,
				PyUnicode_FromString(cs_profile_state_key(i)));
	if (!formats || !states || PyErr_Occurred()) {
		Py_XDECREF(formats);
		Py_XDECREF(states);
		return NULL;
	}
	return Py_BuildValue("(NN)", formats, states);
}

/* stops_on_crash(signo) -> cs_stop_signal_is_crash(signo) */
static PyObject *py_stops_on_crash(PyObject *self, PyObject *args)
{
	(void)self;
	int signo = 0;
	if (!PyArg_ParseTuple(args, "i", &signo))
		return NULL;
	return PyBool_FromLong(cs_stop_signal_is_crash(signo));
}

/* The registers of struct user_regs_struct (cs_thread.regs), in its
 * order, by the names gdb and lldb give them on x86-64: what
 * backtrace(stop=...) takes. */
static const char *const user_regs[] = {
	"r15",     "r14",      "r13", "r12", "rbp",    "rbx", "r11",
	"r10",     "r9",       "r8",  "rax", "rcx",    "rdx", "rsi",
	"rdi",     "orig_rax", "rip", "cs",  "eflags", "rsp", "ss",
	"fs_base", "gs_base",  "ds",  "es",  "fs",     "gs"};

static PyMethodDef methods[] = {
	{"stops_on_crash", py_stops_on_crash, METH_VARARGS,
	 "stops_on_crash(signo) -> whether a stop on signo is on a fatal "
	 "signal (not SIGTRAP)"},
	{"backtrace", (PyCFunction)(void (*)(void))py_backtrace,
	 METH_VARARGS | METH_KEYWORDS,
	 "backtrace(kind, ...) -> (text, complete): the Ruby stacks"},
	{"thread_frames", (PyCFunction)(void (*)(void))py_thread_frames,
	 METH_VARARGS | METH_KEYWORDS,
	 "thread_frames(tid, native=None, **source) -> (frames, "
	 "native_error): one thread's Ruby frames"},
	{"frame_select", py_frame_select, METH_VARARGS,
	 "frame_select(command, line, current, nframes) -> frame number"},
	{"list_source", (PyCFunction)(void (*)(void))py_list_source,
	 METH_VARARGS | METH_KEYWORDS,
	 "list_source(path, line, first, last, sysroot=None, cwd=None, "
	 "core=None, pid=0) -> (text, last)"},
	{"sample_start", (PyCFunction)(void (*)(void))py_sample_start,
	 METH_VARARGS | METH_KEYWORDS,
	 "sample_start(pid, seconds, rate, executable=None, "
	 "interrupt_signal=0, out=None, format=None, debug_dirs=None, "
	 "debug_dir_advice=None, states=0, is_core=False, local=True) -> "
	 "sampler"},
	{"sample_finish", py_sample_finish, METH_VARARGS,
	 "sample_finish(sampler) -> (summary, interrupted, quit_signal)"},
	{"bt_args", py_bt_args, METH_VARARGS,
	 "bt_args(line) -> (json, via_debugger, which, out, full)"},
	{"locks_args", py_locks_args, METH_VARARGS,
	 "locks_args(line) -> (via_debugger, out)"},
	{"heap_args", py_heap_args, METH_VARARGS,
	 "heap_args(line) -> (via_debugger, out, json, top, retainers, dump)"},
	{"locals_args", py_locals_args, METH_VARARGS,
	 "locals_args(line) -> frame number, -1 for the innermost Ruby frame"},
	{"sample_args", py_sample_args, METH_VARARGS,
	 "sample_args(line) -> (seconds, rate, out, format, states)"},
	{"sample_choices", py_sample_choices, METH_NOARGS,
	 "sample_choices() -> (formats, states): what --format and --state "
	 "take"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	"_corestack",
	"Ruby stacks for gdb and lldb, on the corestack engine.",
	-1,
	methods,
	NULL,
	NULL,
	NULL,
	NULL,
};

PyMODINIT_FUNC PyInit__corestack(void)
{
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	corestack_error = PyErr_NewException("_corestack.Error", NULL, NULL);
	if (!corestack_error ||
	    PyModule_AddObject(m, "Error", corestack_error) < 0) {
		Py_XDECREF(corestack_error);
		Py_DECREF(m);
		return NULL;
	}
	Py_INCREF(corestack_error);
	for (size_t i = 0; i < NCLASSES; i++) {
		char name[64];
		if (!error_classes[i].name)
			continue;
		snprintf(name, sizeof(name), "_corestack.%s",
			 error_classes[i].name);
		PyObject *cls = PyErr_NewExceptionWithDoc(
			name, error_classes[i].doc, corestack_error, NULL);
		if (!cls ||
		    PyModule_AddObject(m, error_classes[i].name, cls) < 0) {
			Py_XDECREF(cls);
			Py_DECREF(m);
			return NULL;
		}
		Py_INCREF(cls);
		error_class[i] = cls;
	}
	_Static_assert(sizeof(user_regs) / sizeof(*user_regs) ==
			       sizeof(((struct cs_thread *)0)->regs) /
				       sizeof(uint64_t),
		       "a name for each register of a thread");
	PyObject *regs = PyTuple_New(sizeof(user_regs) / sizeof(*user_regs));
	for (size_t i = 0; regs && i < sizeof(user_regs) / sizeof(*user_regs);
	     i++) {
		PyObject *name = PyUnicode_FromString(user_regs[i]);
		if (!name || PyTuple_SetItem(regs, (Py_ssize_t)i, name) < 0) {
			Py_CLEAR(regs);
			break;
		}
	}
	if (!regs || PyModule_AddObject(m, "USER_REGS", regs) < 0) {
		Py_XDECREF(regs);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
