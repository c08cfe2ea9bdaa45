/* The arguments of ruby-bt and ruby-sample, parsed in C so that the gdb
 * and lldb loaders stay thin and agree. */
#ifndef CS_GDBEXT_ARGS_H
#define CS_GDBEXT_ARGS_H

#include "../util/error.h"

#define GX_BT_USAGE                                                     \
	"usage: ruby-bt [--json] [--out FILE] [--via-debugger] [full] " \
	"[all | N]"
#define GX_LOCKS_USAGE "usage: ruby-locks [--out FILE] [--via-debugger]"
#define GX_LOCALS_USAGE "usage: ruby-locals [N]"
#define GX_HEAP_USAGE                                                      \
	"usage: ruby-heap [--json] [--top N] [--retainers ADDRESS|CLASS] " \
	"[--dump FILE] [--out FILE] [--via-debugger]"
#define GX_HEAP_DEFAULT_TOP 30
#define GX_RETAINERS_DEFAULT_TOP 3
#define GX_SAMPLE_USAGE                                            \
	"usage: ruby-sample [SECONDS] [--rate HZ] [--state LIST] " \
	"[--out FILE [--format F]]"
#define GX_SAMPLE_MAX_RATE 10000
#define GX_SAMPLE_MAX_SECONDS 86400

enum gx_bt_which { GX_BT_SELECTED, GX_BT_ALL, GX_BT_NUMBER };

struct gx_bt_args {
	int json;
	int via_debugger; /* read memory through the debugger, not directly */
	int full;         /* every Ruby frame's locals too */
	enum gx_bt_which which;
	long number; /* GX_BT_NUMBER: the debugger's thread number */
	char *out;   /* --out FILE: malloc'd, NULL for the console */
};

struct gx_sample_args {
	double seconds; /* default 5 */
	double rate;    /* default 100 */
	char *out;      /* malloc'd, NULL for none */
	/* --format: how out is written, a name of profile_format.h's table
	 * (static); NULL: collapsed */
	const char *format;
	unsigned states; /* --state: the states kept (profile.h); 0: all */
};

/* CS_ERR_USAGE with the usage line on bad arguments (and why, for a
 * number out of range). */
void gx_bt_args_free(struct gx_bt_args *a);
struct cs_error *gx_parse_bt_args(const char *line, struct gx_bt_args *ret);
/* ruby-locks [--out FILE] [--via-debugger]: ruby-bt's words, but for the
 * thread, --json and full, which it does not take. */
struct cs_error *gx_parse_locks_args(const char *line, struct gx_bt_args *ret);
/* What ruby-heap takes besides ruby-bt's --json, --out and
 * --via-debugger. */
struct gx_heap_args {
	long top;        /* class rows, or instances with retainers */
	char *retainers; /* --retainers: malloc'd, NULL when not given */
	char *dump;      /* --dump FILE: malloc'd, NULL when not given */
};
/* ruby-heap [--json] [--top N] [--retainers ADDRESS|CLASS] [--dump FILE]
 * [--out FILE] [--via-debugger]: ruby-bt's words but a thread and full;
 * --top defaults to GX_HEAP_DEFAULT_TOP, or GX_RETAINERS_DEFAULT_TOP with
 * --retainers; --retainers and --dump exclude each other. */
struct cs_error *gx_parse_heap_args(const char *line, struct gx_bt_args *ret,
				    struct gx_heap_args *heap);
void gx_heap_args_free(struct gx_heap_args *a);
/* ruby-locals [N]: *frame N, or -1 when not given. */
struct cs_error *gx_parse_locals_args(const char *line, long *frame);
struct cs_error *gx_parse_sample_args(const char *line,
				      struct gx_sample_args *ret);

#endif
