/* The Ruby model's public face: what a snapshot of a Ruby process is.
 *
 * Plain C data, no I/O: front ends render it. Errors are data: a frame that
 * cannot be decoded carries a reason, a thread that cannot be walked carries
 * one too, and the snapshot goes on. */
#ifndef CS_RUBYVM_MODEL_H
#define CS_RUBYVM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../dwarf/index.h"
#include "../util/error.h"
#include "target.h"

enum rv_frame_kind { RV_FRAME_RUBY, RV_FRAME_CFUNC };

struct rv_frame {
	enum rv_frame_kind kind;
	char *label;     /* as Ruby's Thread::Backtrace::Location#label */
	char *path;      /* #path (the caller's for C frames, as Ruby does) */
	int lineno;      /* #lineno, 0 when Ruby has none */
	char *qualified; /* "Outer::Inner#meth", "block in Foo.bar" */
	uint64_t cfp, iseq, pc, cfunc; /* target addresses, 0 if none */
	bool vm_finish;  /* VM_FRAME_FLAG_FINISH: the first frame a vm_exec()
			  * call ran (only with rv_options.frame_flags) */
	char *error;     /* NULL, or why this frame is unreliable */
};

enum rv_thread_status {
	RV_STATUS_UNKNOWN,
	RV_STATUS_RUN,
	RV_STATUS_SLEEP,
	RV_STATUS_ABORTING,
	RV_STATUS_DEAD,
};

struct rv_thread {
	uint64_t addr;       /* rb_thread_t * */
	int64_t tid;         /* kernel thread id, -1 when unknown */
	uint64_t pthread_id; /* pthread_t when Ruby keeps one, else 0 */
	char *name;          /* Thread#name, NULL when nil */
	bool is_main, holds_gvl;
	enum rv_thread_status status;
	struct rv_frame *frames; /* innermost first */
	size_t nframes;
	bool truncated; /* stopped at max_frames or max_output_bytes */
	char *error;    /* NULL, or why the walk stopped early */
};

struct rv_process {
	char *ruby_version;
	struct rv_thread *threads;
	size_t nthreads;
	char *error; /* NULL, or why the thread list is incomplete */
};

struct rv_options {
	size_t max_frames;  /* per stack; default 100000 */
	size_t max_threads; /* default 100000 */
	/* Bytes of frames (and their text) one snapshot may build, all
	 * stacks together; default 1 GiB. Front ends tie it to the size of
	 * their input, so that no input makes the model allocate, or work,
	 * more than a bounded multiple of it. */
	size_t max_output_bytes;
	bool frame_flags;   /* read each frame's VM_FRAME_FLAG_FINISH */
};

struct rv_session;

struct rv_layout;

/* The Ruby model over a target. layout is that of the module holding the VM
 * (libruby.so, or the executable when Ruby is linked statically; see
 * rv_layout_for_module), module_path names it in messages, load_bias is
 * where it is loaded in the target. */
struct cs_error *rv_session_create(const struct rv_target *target,
				   const struct rv_layout *layout,
				   const char *module_path, uint64_t load_bias,
				   const struct rv_options *opts,
				   struct rv_session **ret);
void rv_session_destroy(struct rv_session *s);
/* Read through another target from now on (a sampler re-attaching to the
 * same process); the layout and the name caches stay. */
void rv_session_set_target(struct rv_session *s, const struct rv_target *t);

/* Every thread of every ractor with its Ruby stack. Fails only when there
 * is no VM at all (CS_ERR_NOT_RUBY) or it cannot be read. */
struct cs_error *rv_snapshot(struct rv_session *s, struct rv_process **ret);
void rv_process_destroy(struct rv_process *p);

const char *rv_thread_status_name(enum rv_thread_status st);
bool rv_process_complete(const struct rv_process *p);

#endif
