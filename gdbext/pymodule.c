/* _corestack: the CPython extension gdb and lldb load (stable ABI, so one
 * build serves any Python 3.7+). It only converts between Python and the C
 * of backtrace.c, sample.c and args.c; the loaders ruby-gdb.py and
 * ruby-lldb.py only register commands and ask their debugger what it knows
 * (pid, core file, threads, memory). Errors raise _corestack.Error with
 * one line. */
#define Py_LIMITED_API 0x03070000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "backtrace.h"
#include "debugger_target.h"
#include "sample.h"

static PyObject *corestack_error;

static PyObject *raise(struct cs_error *err)
{
	PyErr_SetString(corestack_error, err->message);
	cs_error_destroy(err);
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
	return cs_error_create(CS_ERR_FAULT,
			       "%s: cannot read %zu bytes at 0x%llx", r->name,
			       len, (unsigned long long)addr);
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
		unsigned long long fs_base;
		if (!PyArg_ParseTuple(PyList_GetItem(list, i), "LK", &tid,
				      &fs_base)) {
			PyErr_Clear();
			continue;
		}
		h[(*count)++] = (struct gx_thread_hint){tid, fs_base};
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

/* backtrace(kind, ...) -> (text, complete). kind: "core", "live" or
 * "debugger". debug_dirs: the debugger's debug directories ("a:b");
 * debug_dir_advice: how its user adds one (for the no-debug message).
 * locals: every Ruby frame's locals (ruby-bt full); frame: only that frame
 * of the thread (-1: the innermost Ruby one) with its locals (ruby-locals);
 * value: only that VALUE (ruby-print). */
static PyObject *py_backtrace(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	static char *names[] = {"kind",       "core",       "pid",
				"executable", "read",       "mappings",
				"auxv",       "is_core",    "name",
				"json",       "tids",       "hints",
				"signal",     "debug_dirs", "debug_dir_advice",
				"locals",     "frame",      "value",
				NULL};
	const char *kind, *core = NULL, *executable = NULL,
			  *name = "the debugger's inferior", *dirs = NULL,
			  *advice = NULL;
	int pid = -1, is_core = 0, json = 0, locals = 0;
	PyObject *read = Py_None, *maps = Py_None, *auxv = Py_None,
		 *tids = Py_None, *hints = Py_None, *sig = Py_None,
		 *frame = Py_None, *value = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zizOOOpzpOOOzzpOO", names,
					 &kind, &core, &pid, &executable, &read,
					 &maps, &auxv, &is_core, &name, &json,
					 &tids, &hints, &sig, &dirs, &advice,
					 &locals, &frame, &value))
		return NULL;
	struct gx_backtrace_request req = {.format = json ? "json" : "text",
					   .locals = locals,
					   .frame = GX_FRAME_NONE};
	if (frame != Py_None &&
	    ((req.frame = PyLong_AsLong(frame)) == -1 && PyErr_Occurred()))
		return NULL;
	if (value != Py_None) {
		req.show_value = 1;
		/* a VALUE as the debugger gives it, masked to 64 bits */
		req.value = PyLong_AsUnsignedLongLongMask(value);
		if (PyErr_Occurred())
			return NULL;
	}
	struct gx_source src = {.pid = pid,
				.executable = executable,
				.debug_dir_advice = advice};
	struct gx_inferior dbg = {.fd = -1, .pid = pid, .crash_tid = -1};
	/* signal: (signo, code, fault address, tid that took it) the debugger
	 * reports */
	if (sig != Py_None) {
		unsigned long long fault = 0;
		long long crash_tid = -1;
		if (!PyArg_ParseTuple(sig, "iiKL", &dbg.siginfo.signo,
				      &dbg.siginfo.code, &fault, &crash_tid))
			return NULL;
		dbg.siginfo.present = 1;
		dbg.siginfo.addr = fault;
		dbg.crash_tid = crash_tid;
	}
	struct py_reader reader = {read, name};
	if (strcmp(kind, "core") == 0 && core) {
		src.kind = GX_SOURCE_CORE;
		src.core_path = core;
	} else if (strcmp(kind, "live") == 0 && pid > 0) {
		src.kind = GX_SOURCE_LIVE;
	} else if (strcmp(kind, "debugger") == 0 && PyCallable_Check(read) &&
		   maps != Py_None) {
		src.kind = GX_SOURCE_DEBUGGER;
		dbg.mem = (struct cs_memory){py_read, &reader};
		dbg.name = name;
		/* Where the executable is loaded is found from its mappings
		 * when the debugger shows no auxiliary vector (lldb). */
		if (executable && !(dbg.executable = strdup(executable)))
			return PyErr_NoMemory();
		src.debugger = &dbg;
		dbg.is_core = is_core;
		if (!fill_image(&dbg, maps, auxv == Py_None ? NULL : auxv)) {
			gx_inferior_free(&dbg);
			return NULL;
		}
	} else {
		PyErr_SetString(PyExc_ValueError,
				"backtrace: kind core needs core=, live pid=, "
				"debugger read= and mappings=");
		return NULL;
	}
	int64_t *only = NULL;
	if (!tid_list(tids, &only, &req.nonly)) {
		free(only);
		gx_inferior_free(&dbg);
		return NULL;
	}
	req.only_tids = only;
	if (PyCallable_Check(hints)) {
		req.hints = py_hints;
		req.hints_ctx = hints;
	}
	char **debug_dirs;
	if (!split_dirs(dirs, &debug_dirs)) {
		free(only);
		gx_inferior_free(&dbg);
		return NULL;
	}
	src.debug_dirs = (const char *const *)debug_dirs;
	char *text = NULL;
	int complete = 0;
	struct cs_error *err = gx_backtrace(&src, &req, &text, &complete);
	gx_inferior_free(&dbg);
	free(only);
	free(debug_dirs);
	if (err)
		return raise(err);
	PyObject *res =
		Py_BuildValue("(sO)", text, complete ? Py_True : Py_False);
	free(text);
	return res;
}

/* --- ruby-sample ---------------------------------------------------------- */

static const char sampler_capsule[] = "corestack.sampler";

static PyObject *py_sample_start(PyObject *self, PyObject *args, PyObject *kw)
{
	(void)self;
	static char *names[] = {"pid",        "seconds",          "rate",
				"executable", "interrupt_signal", NULL};
	int pid, sig = 0;
	double seconds, rate;
	const char *executable = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "idd|zi", names, &pid,
					 &seconds, &rate, &executable, &sig))
		return NULL;
	struct gx_sampler *s;
	struct cs_error *err =
		gx_sampler_start(pid, executable, seconds, rate, sig, &s);
	if (err)
		return raise(err);
	return PyCapsule_New(s, sampler_capsule, NULL);
}

static PyObject *py_sample_finish(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *capsule;
	const char *out = NULL;
	if (!PyArg_ParseTuple(args, "O|z", &capsule, &out))
		return NULL;
	struct gx_sampler *s = PyCapsule_GetPointer(capsule, sampler_capsule);
	if (!s)
		return NULL;
	/* Finished once: the capsule no longer points at it. */
	PyCapsule_SetName(capsule, "corestack.sampler.finished");
	char *summary;
	int interrupted;
	struct cs_error *err;
	Py_BEGIN_ALLOW_THREADS err =
		gx_sampler_finish(s, out, &summary, &interrupted);
	Py_END_ALLOW_THREADS if (err) return raise(err);
	PyObject *res = Py_BuildValue("(sO)", summary,
				      interrupted ? Py_True : Py_False);
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

/* sample_args(line) -> (seconds, rate, out or None) */
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
	PyObject *res = Py_BuildValue("(ddz)", a.seconds, a.rate, a.out);
	free(a.out);
	return res;
}

static PyMethodDef methods[] = {
	{"backtrace", (PyCFunction)(void (*)(void))py_backtrace,
	 METH_VARARGS | METH_KEYWORDS,
	 "backtrace(kind, ...) -> (text, complete): the Ruby stacks"},
	{"sample_start", (PyCFunction)(void (*)(void))py_sample_start,
	 METH_VARARGS | METH_KEYWORDS,
	 "sample_start(pid, seconds, rate, executable=None, "
	 "interrupt_signal=0) -> sampler"},
	{"sample_finish", py_sample_finish, METH_VARARGS,
	 "sample_finish(sampler, out=None) -> (summary, interrupted)"},
	{"bt_args", py_bt_args, METH_VARARGS,
	 "bt_args(line) -> (json, via_debugger, which, out, full)"},
	{"locals_args", py_locals_args, METH_VARARGS,
	 "locals_args(line) -> frame number, -1 for the innermost Ruby frame"},
	{"sample_args", py_sample_args, METH_VARARGS,
	 "sample_args(line) -> (seconds, rate, out)"},
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
	return m;
}
