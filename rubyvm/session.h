/* Internal state of the Ruby model and its read helpers (not for front ends).
 */
#ifndef CS_RUBYVM_SESSION_H
#define CS_RUBYVM_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "../util/u64map.h"
#include "layout.h"
#include "model.h"

struct rv_id_cache;

/* Which of the backtrace rules of backtrace_rules.c this Ruby follows. */
struct rv_bt_rules {
	bool owner_labels;      /* "Kernel#sleep", "block in Foo#bar" (3.4+) */
	bool definition_module; /* an alias is labelled by its body's module */
	bool rescue_as_method; /* a rescue/ensure frame stands for its method */
	bool c_trace;          /* :c_trace methods shown as C methods */
	bool internal_as_c;    /* <internal:...> frames as C methods (4.0) */
	bool backtick_quotes;  /* in `m' rather than in 'm' */
};

struct rv_session {
	struct cs_memory target;
	struct cs_prefetcher prefetcher; /* prefetch NULL when none */
	struct rv_layout layout;
	uint64_t load_bias;
	struct rv_options opts;
	size_t output_left;      /* of opts.max_output_bytes, this snapshot */
	struct rv_id_cache *ids; /* ID -> name, class -> path */
	struct rv_bt_rules rules;
	uint64_t classpath_id, tmp_classpath_id; /* IDs, 0 if unknown */
	struct u64map iseqs;  /* iseq -> struct rv_iseq_info (iseq_cache.c) */
	struct u64map lines;  /* pc -> line */
	struct u64map frames; /* cfp -> decoded frame (frame_cache.c) */
	/* iseq -> a Ruby frame's names by method entry, this snapshot's
	 * (frame_names.c), and how many */
	struct u64map frame_names;
	size_t nframe_names;
	struct u64map heap_pages; /* page body -> its page (heap_slot.c) */
	struct cached_frame *retired_frames; /* freed when a snapshot begins */
	uint64_t last_names_id; /* the last rv_frame.names_id handed out */
	uint8_t *cfp_chunk;     /* rv_walk_ec's buffer, kept between walks */
	/* A GC loaded from RUBY_GC_LIBRARY (rv_session_set_gc_module): the
	 * library's path, whether its GC_* items replaced libruby's in
	 * layout, else why not (NULL: not looked for). */
	char *gc_library, *gc_why;
	bool gc_layout;
	/* The C extensions whose EXT_* items came from their own module
	 * (rv_session_set_ext_module): each one's name (layout.def's) and
	 * load bias, what its variables' addresses are relative to. */
	struct rv_ext_module {
		const char *name;
		uint64_t bias;
	} * ext_modules;
	size_t next_modules;
	/* The C extensions the target loaded whose own module gave none of
	 * their items (rv_session_note_ext_unread): each one's name and
	 * why. */
	struct rv_ext_unread {
		const char *name;
		char *why;
	} * ext_unread;
	size_t next_unread;
	/* Where the memory scan looks (memory_scan.c); .next NULL: unknown. */
	struct cs_writable_regions regions;
	/* rb_zjit_entry as this snapshot read it (zjit_entry_known: it
	 * could), not 0 while ZJIT is on (jit_frames.c, jit.c); whether the
	 * snapshot reads ZJIT's JIT frame records, or why it cannot tell
	 * whether to (NULL when it can). */
	uint64_t zjit_entry;
	bool zjit_entry_known, zjit_records;
	const char *zjit_unknown;
};

#define RV_HAS(s, id) ((s)->layout.items[RVL_##id].source != RV_MISSING)
#define RV_VAL(s, id) ((s)->layout.items[RVL_##id].value)
#define RV_ITEM(s, id) (&(s)->layout.items[RVL_##id])

/* v shifted by a layout's shift count, which the debug info of a damaged
 * or hostile module can make 64 or more: 0 then, never undefined. */
static inline uint64_t rv_shr(uint64_t v, int64_t n)
{
	return n >= 0 && n < 64 ? v >> n : 0;
}
static inline uint64_t rv_shl(uint64_t v, int64_t n)
{
	return n >= 0 && n < 64 ? v << n : 0;
}
/* an arithmetic shift, done on the unsigned bits (a negative value's
 * right shift is the implementation's) */
static inline int64_t rv_sar(int64_t v, int64_t n)
{
	uint64_t u = (uint64_t)v, neg = v < 0;
	if (n < 0 || n >= 64)
		return neg ? -1 : 0;
	return (int64_t)(neg ? ~(~u >> n) : u >> n);
}

/* Longest string the model reads (labels, paths, names). */
#define RV_MAX_STRING 4096

struct cs_error *rv_read(struct rv_session *s, uint64_t addr, void *buf,
			 size_t len);
/* [addr, addr + len) will be read soon (rv_prefetcher). */
void rv_prefetch(struct rv_session *s, uint64_t addr, size_t len);
struct cs_error *rv_read_u64(struct rv_session *s, uint64_t addr,
			     uint64_t *ret);
/* Read a MEMBER item of the struct at base: 1/2/4/8-byte integers and
 * pointers, bitfields included, zero-extended. */
struct cs_error *rv_read_member(struct rv_session *s, uint64_t base,
				enum rv_item_id id, uint64_t *ret);
/* The same where a failed read only means "not known": true on success;
 * a missing item or unreadable memory gives false (the error is dropped). */
bool rv_try_member(struct rv_session *s, uint64_t base, enum rv_item_id id,
		   uint64_t *ret);
bool rv_try_read(struct rv_session *s, uint64_t addr, void *buf, size_t len);
/* The NUL-terminated string at addr, at most max bytes of it into dst;
 * *n bytes copied, *whole when its NUL was met. Read page by page: a
 * string may end right before unreadable memory. */
struct cs_error *rv_read_cstring(struct rv_session *s, uint64_t addr, char *dst,
				 size_t max, size_t *n, bool *whole);
/* A struct of the target whose members a reader takes several of: the
 * span of those members is read once (rv_view_read), and each member is
 * then taken from it as rv_read_member would read it. A member the span
 * does not hold (the span could not be read whole, it is wider than
 * RV_VIEW_MAX, the member was not named) is read on its own, so a struct
 * straddling into memory that cannot be read yields what it can and fails
 * where the member reads fail. */
#define RV_VIEW_MAX 1024
struct rv_view {
	uint64_t base;   /* the struct's address */
	uint64_t lo, hi; /* bytes[0, hi - lo) are those at base + lo */
	uint8_t bytes[RV_VIEW_MAX];
};
/* Read the span of the n MEMBER items ids of the struct at base (missing
 * items and those outside RV_VIEW_MAX are left to their own reads). */
void rv_view_read(struct rv_session *s, uint64_t base,
		  const enum rv_item_id *ids, size_t n, struct rv_view *v);
/* rv_read_member and rv_try_member on the struct v holds. */
struct cs_error *rv_view_member(struct rv_session *s, const struct rv_view *v,
				enum rv_item_id id, uint64_t *ret);
bool rv_view_try(struct rv_session *s, const struct rv_view *v,
		 enum rv_item_id id, uint64_t *ret);
/* Where the variable a VAR item names is in the target: its link-time
 * address plus the load bias of its module (libruby's, or for an EXT_VAR
 * item the extension's module's, when its items came from there). */
uint64_t rv_var_address(const struct rv_session *s, enum rv_item_id id);
/* The value of a VAR item, size bytes (1 to 8) at the variable's address in
 * the target, zero-extended; false (*ret untouched) when the Ruby has no
 * such variable or it cannot be read. */
bool rv_try_var(struct rv_session *s, enum rv_item_id id, size_t size,
		uint64_t *ret);
/* Drop an error, telling whether there was one (for optional values). */
bool rv_failed(struct cs_error *err);
/* Missing-item error naming it, for when the model cannot go on. */
struct cs_error *rv_missing(enum rv_item_id id);

/* value.c */
bool rv_special_const(struct rv_session *s, uint64_t v);
bool rv_is_nil(struct rv_session *s, uint64_t v);
struct cs_error *rv_builtin_type(struct rv_session *s, uint64_t v,
				 uint64_t *type, uint64_t *flags);
struct cs_error *rv_imemo_type(struct rv_session *s, uint64_t v, int64_t *ret);
struct cs_error *rv_string(struct rv_session *s, uint64_t v, char **ret);
/* At most max of a String's bytes (NULs and all) into *ret (malloc'd,
 * NUL-terminated), *got of them; *len is what the String claims. */
struct cs_error *rv_string_bytes(struct rv_session *s, uint64_t v, size_t max,
				 char **ret, size_t *got, uint64_t *len);
/* value_show.c: a Symbol's name, malloc'd: an ID's for a static Symbol,
 * its String fstr (up to 200 bytes) for a T_SYMBOL; *n its length in
 * bytes. */
struct cs_error *rv_symbol_name(struct rv_session *s, uint64_t v, char **name,
				size_t *n);
/* The same, the whole name (up to RV_MAX_STRING bytes), or an error. */
struct cs_error *rv_symbol_name_whole(struct rv_session *s, uint64_t v,
				      char **name, size_t *n);
/* Where a String of these flags keeps its length: the item of the field
 * that holds it (3.3+ one for both kinds; a heap String's; a
 * variable-width embedded one's), or RVL_rstring_embed_len_mask when the
 * flags hold it (rv_string_flags_len). The one place the kinds are told
 * apart, for a String read from memory and for a slot the heap walk read. */
enum rv_item_id rv_string_len_item(struct rv_session *s, uint64_t flags);
uint64_t rv_string_flags_len(struct rv_session *s, uint64_t flags);
/* An Array's length when its flags hold it (embedded): false when it is
 * in its as.heap.len. */
bool rv_array_flags_len(struct rv_session *s, uint64_t flags, uint64_t *len);
/* Where an Array's elements are and how many it claims. */
struct cs_error *rv_array_span(struct rv_session *s, uint64_t ary,
			       uint64_t *ptr, uint64_t *len);
struct cs_error *rv_array_entry(struct rv_session *s, uint64_t ary, uint64_t i,
				uint64_t *ret);
/* Whether the layout tells how a Hash keeps its entries. */
bool rv_hash_layout_known(struct rv_session *s);
/* Up to max live entries of a Hash whose flags are flags, in its order,
 * looking at no more than 4 * max entry slots (a deleted entry keeps
 * Qundef as its key); *size is how many it claims. */
struct cs_error *rv_hash_entries(struct rv_session *s, uint64_t v,
				 uint64_t flags, uint64_t *keys, uint64_t *vals,
				 size_t max, size_t *n, uint64_t *size);
/* A T_STRUCT's fields: in the object when its flags count them, else
 * behind as.heap. */
struct cs_error *rv_struct_fields(struct rv_session *s, uint64_t v,
				  uint64_t flags, uint64_t *ptr, uint64_t *len);
/* The data pointer of a T_DATA object: where an embedded one keeps its
 * data (in the object), else what its data member holds. */
struct cs_error *rv_typed_data_ptr(struct rv_session *s, uint64_t obj,
				   uint64_t *ret);
/* The data of obj when it is a T_DATA of the data type the VAR item
 * type_var names (mutex_data_type, ...), else 0. */
uint64_t rv_typed_data_of(struct rv_session *s, uint64_t obj,
			  enum rv_item_id type_var);

/* st_table.c: the record of key in the st_table at tbl; *found false
 * when it has none. */
#define RV_MAX_ST_ENTRIES 65536
struct cs_error *rv_st_lookup(struct rv_session *s, uint64_t tbl, uint64_t key,
			      uint64_t *record, bool *found);
/* fn on each key and record of the st_table at tbl, in its order. */
typedef struct cs_error *rv_st_each_fn(struct rv_session *s, uint64_t key,
				       uint64_t record, void *ctx);
struct cs_error *rv_st_each(struct rv_session *s, uint64_t tbl,
			    rv_st_each_fn *fn, void *ctx);
/* The same of a table of up to max entries (RV_MAX_ST_ENTRIES bounds
 * the tables of names and ivars; one keyed by object is larger). */
struct cs_error *rv_st_each_max(struct rv_session *s, uint64_t tbl,
				uint64_t max, rv_st_each_fn *fn, void *ctx);

/* id_table.c: fn on each entry of the rb_id_table at tbl: the ID's serial and the
 * value; at most RV_MAX_ST_ENTRIES of them. */
typedef struct cs_error *rv_id_table_fn(struct rv_session *s, uint64_t serial,
					uint64_t value, void *ctx);
struct cs_error *rv_id_table_each(struct rv_session *s, uint64_t tbl,
				  rv_id_table_fn *fn, void *ctx);
/* The name of the ID whose serial is serial. */
struct cs_error *rv_id_serial_name(struct rv_session *s, uint64_t serial,
				   char **ret);

/* ivars.c: the shape id of obj (3.2+), whose flags are flags, and its
 * width in bits: RBasic.shape_id, or the top bits of the flags. */
struct cs_error *rv_shape_id(struct rv_session *s, uint64_t obj, uint64_t flags,
			     uint64_t *sid, unsigned *bits);
/* The instance variable id of obj, a T_OBJECT whose flags are
 * flags, in *ret; *found false when it has none. */
struct cs_error *rv_object_ivar(struct rv_session *s, uint64_t obj,
				uint64_t flags, uint64_t id, uint64_t *ret,
				bool *found);
/* Whether fields, the fields object owner keeps (4.0+: a class's
 * fields_obj, a generic fields table's entry), is an imemo_fields, which is
 * read as a T_OBJECT is; *flags its flags. */
struct cs_error *rv_fields_object(struct rv_session *s, uint64_t owner,
				  uint64_t fields, uint64_t *flags);
/* The object id obj, a T_OBJECT whose flags are flags and whose shape
 * has an object id (4.0+), keeps among its fields: the field its shape's
 * SHAPE_OBJ_ID transition added. */
struct cs_error *rv_object_id_field(struct rv_session *s, uint64_t obj,
				    uint64_t flags, uint64_t *ret);
/* The ivars of obj, a T_OBJECT whose flags are flags, in the order
 * rb_ivar_foreach gives them (their indexes): the first max in ids[] and
 * vals[], *n of them; *total how many it has. */
/* Whether a T_OBJECT's shape is too complex (its ivars in a hash table:
 * 3.2+; false without shapes), and how many fields it has: the table's
 * entries, else those its shape gives it (next_field_index: its ivars,
 * and its object id where 4.0+ keeps it among them). */
struct cs_error *rv_object_complex(struct rv_session *s, uint64_t obj,
				   uint64_t flags, bool *complex,
				   uint64_t *count);
/* Whether the shape of obj (whose flags are flags: a T_OBJECT, a class, a
 * fields object) is too complex, its fields then in a hash table. */
struct cs_error *rv_shape_too_complex(struct rv_session *s, uint64_t obj,
				      uint64_t flags, bool *complex);
/* Whether a T_OBJECT keeps its fields in its slot, as its flags
 * (ROBJECT_EMBED, ROBJECT_HEAP clear in 4.0) or its shape id's layout bits
 * say. */
struct cs_error *rv_object_embedded(struct rv_session *s, uint64_t obj,
				    uint64_t flags, bool *embedded);
struct cs_error *rv_object_ivars(struct rv_session *s, uint64_t obj,
				 uint64_t flags, uint64_t *ids, uint64_t *vals,
				 size_t max, size_t *n, uint64_t *total);
/* The ivars of klass, a class or module, as rv_object_ivars gives an
 * object's (up to 3.1 in its table's order). */
struct cs_error *rv_class_ivars(struct rv_session *s, uint64_t klass,
				uint64_t *ids, uint64_t *vals, size_t max,
				size_t *n, uint64_t *total);
/* The instance variable id of klass, a class or module, in *ret; *found
 * false (and *ret 0) when it has none. */
struct cs_error *rv_class_ivar(struct rv_session *s, uint64_t klass,
			       uint64_t id, uint64_t *ret, bool *found);

/* names.c */
/* Where klass's rb_classext_t is: in place (after the RClass, or in an
 * RClass_and_rb_classext_t) or behind RClass.ptr. */
struct cs_error *rv_classext(struct rv_session *s, uint64_t klass,
			     uint64_t *ret);
/* Where the VM has boxes (Ruby::Box), the classext a builtin class has in
 * the main box (its box_classext_tbl's entry for the main box's
 * box_object), which holds what the program set on it (Object's: the
 * top-level constants); 0 when it has none there, or no boxes. */
uint64_t rv_main_box_classext(struct rv_session *s, uint64_t klass);
struct cs_error *rv_id_name(struct rv_session *s, uint64_t id, char **ret);
struct cs_error *rv_class_path(struct rv_session *s, uint64_t klass,
			       char **ret);
/* Name of a method owner; *singleton when it is a singleton class, and
 * then the name is the attached class's path ("Foo" for Foo.bar). */
struct cs_error *rv_owner_name(struct rv_session *s, uint64_t owner, char **ret,
			       bool *singleton);
/* The class path of klass when it is permanent (rb_mod_name0's permanent:
 * every enclosing module named), else NULL: what Ruby 3.4's backtrace
 * labels name a method's owner by. */
struct cs_error *rv_permanent_path(struct rv_session *s, uint64_t klass,
				   char **ret);
/* The class path of klass when it is permanent, never one holding an
 * address; NULL when anonymous. */
struct cs_error *rv_stable_path(struct rv_session *s, uint64_t klass,
				char **ret);
/* rb_class_real: klass itself, or when it is an include class (or, with
 * skip_singletons, a singleton class) the first superclass that is not;
 * 0 when the ancestry ends first. */
struct cs_error *rv_real_class(struct rv_session *s, uint64_t klass,
			       bool skip_singletons, uint64_t *ret);
/* RCLASS_SUPER: the next class or iclass up the ancestry, 0 at the top. */
struct cs_error *rv_superclass(struct rv_session *s, uint64_t klass,
			       uint64_t *ret);
/* Whether an object of this builtin type and flags is a singleton class:
 * a T_CLASS with FL_SINGLETON (the same bit marks a refinement module on
 * some Rubies, so the type counts too). */
bool rv_singleton_class_p(struct rv_session *s, uint64_t type, uint64_t flags);
/* The object a singleton class is attached to. */
struct cs_error *rv_attached_object(struct rv_session *s, uint64_t klass,
				    uint64_t *ret);
/* stable_names.c: the owner of a method as stable names name it (no
 * address in it); *dot when the method is "X.m" (a singleton class's
 * method of a class or module X). me: the method entry, 0 if unknown. */
struct cs_error *rv_stable_owner_name(struct rv_session *s, uint64_t owner,
				      uint64_t me, char **ret, bool *dot);
/* A class or module as stable names name it ("Foo::Bar", "#<anonymous
 * subclass of Foo>", "#<singleton of Foo>"). */
struct cs_error *rv_stable_class_name(struct rv_session *s, uint64_t klass,
				      char **ret);
struct cs_error *rv_names_init(struct rv_session *s);
void rv_names_destroy(struct rv_session *s);

/* iseq.c */
struct rv_iseq_info {
	char *label, *base_label, *path;
	char *realpath; /* Location#absolute_path; NULL: none (eval) or unknown */
	int64_t type;   /* this iseq's type, -1 if unknown */
	int64_t local_type; /* type of its local iseq (the method of a block) */
	uint64_t parent_iseq, local_iseq; /* 0 when none or unknown */
	uint64_t builtin_attrs;           /* Primitive.attr! bits (3.1+) */
	int first_lineno;
	int code_first_line, code_last_line; /* 0, 0 when unknown */
	uint64_t body;
	/* label and path were valid UTF-8 (they are scrubbed once here, not
	 * for every frame that shows them) */
	bool label_clean, path_clean;
};
struct cs_error *rv_iseq_info(struct rv_session *s, uint64_t iseq,
			      struct rv_iseq_info *ret);
void rv_iseq_info_free(struct rv_iseq_info *info);
struct cs_error *rv_iseq_lineno(struct rv_session *s,
				const struct rv_iseq_info *info, uint64_t pc,
				int *ret);

/* Whether pc lies within the iseq's encoded instructions (true when that
 * cannot be read: the line lookup then reports why). */
bool rv_iseq_pc_inside(struct rv_session *s, const struct rv_iseq_info *info,
		       uint64_t pc);

/* block_param.c: whether the scope of iseq (info), whose env has
 * env_flags, has a block parameter the method has not read (its local
 * number in *index), its value still the env's block handler; and that
 * handler shown as binding.local_variable_get would give it (a Proc, or
 * nil). */
bool rv_block_param_unread(struct rv_session *s, uint64_t iseq,
			   const struct rv_iseq_info *info, uint64_t env_flags,
			   uint64_t *index);
struct cs_error *rv_block_param_show(struct rv_session *s, uint64_t handler,
				     char **text, char **class_name);

/* locals.c: ep[index], a slot of the frame data beside an env's ep
 * (VM_ENV_DATA_INDEX_*). */
struct cs_error *rv_ep_slot(struct rv_session *s, uint64_t ep, int64_t index,
			    uint64_t *ret);
/* The local table of one scope, iseq (info), and the values
 * of its env at ep: *n IDs in *ids (malloc'd), local i's value at
 * (*ids)[*n + i]; *ids NULL when *n is 0 or on failure. */
struct cs_error *rv_scope_slots(struct rv_session *s, uint64_t iseq,
				const struct rv_iseq_info *info, uint64_t ep,
				uint64_t **ids, uint64_t *n);

/* iseq_cache.c: the same, decoded once per iseq (and per pc) and kept. The
 * info belongs to the cache: copy what outlives the next lookup. */
struct cs_error *rv_iseq_lookup(struct rv_session *s, uint64_t iseq,
				const struct rv_iseq_info **ret);
/* The info decoded for iseq before, without reading the target to check
 * that the iseq still has that body; NULL if none. For a frame whose
 * cache entry vouches for the iseq already (rv_frame_cache_moved). */
const struct rv_iseq_info *rv_iseq_known(struct rv_session *s, uint64_t iseq);
struct cs_error *rv_line_lookup(struct rv_session *s, uint64_t iseq,
				const struct rv_iseq_info *info, uint64_t pc,
				int *ret);
void rv_iseq_cache_destroy(struct rv_session *s);

/* frame_cache.c: what a control frame decoded to, reused while what it
 * was decoded from reads the same. A frame it serves borrows its strings
 * (rv_frame.borrowed) until the session's next snapshot begins. */
struct rv_frame_key {
	uint64_t iseq, pc, ep, flags, me_cref, specval;
	uint64_t innermost;  /* only there may a pc be stale */
	uint64_t jit_record; /* pc and iseq from a JIT frame record */
};
/* A frame served from the cache borrows its strings, whose size (with
 * their NULs) comes back in text_bytes. */
bool rv_frame_cache_get(struct rv_session *s, uint64_t cfp,
			const struct rv_frame_key *key, struct rv_frame *f,
			bool *shown, size_t *text_bytes);
/* Returns the names_id the cached copy has (rv_frame.names_id), or 0 when
 * it could not be cached. */
uint64_t rv_frame_cache_put(struct rv_session *s, uint64_t cfp,
			    const struct rv_frame_key *key,
			    const struct rv_frame *f, bool shown,
			    size_t text_bytes);
/* The innermost frame of a running thread moves on at every sample; its
 * names do not. The Ruby frame cached at cfp, if it has no error and key
 * differs from its key only in the pc and in being innermost; else NULL.
 * rv_frame_cache_move then takes key and the new pc's line, and lends the
 * frame as rv_frame_cache_get does. */
struct cached_frame;
struct cached_frame *rv_frame_cache_moved(struct rv_session *s, uint64_t cfp,
					  const struct rv_frame_key *key);
void rv_frame_cache_move(struct cached_frame *c, const struct rv_frame_key *key,
			 int lineno, bool pc_stale, struct rv_frame *f,
			 size_t *text_bytes);
void rv_frame_cache_begin_snapshot(struct rv_session *s);
/* A copy of t, NULL for NULL; *failed set when out of memory. */
char *rv_dup_or_null(const char *t, bool *failed);
/* Make f own copies of the strings it borrows; false when out of memory
 * (f is then emptied). */
bool rv_frame_own_strings(struct rv_frame *f);
void rv_frame_cache_destroy(struct rv_session *s);

/* frame_names.c: a Ruby frame's label, qualified and stable names by its
 * iseq and method entry, built once per snapshot. get copies them into f
 * (false: not known, or out of memory); put keeps f's, which must have
 * been built without an error; clear empties the memo
 * (when a snapshot begins, and at the session's end). */
bool rv_frame_names_get(struct rv_session *s, uint64_t iseq, uint64_t me,
			struct rv_frame *f);
void rv_frame_names_put(struct rv_session *s, uint64_t iseq, uint64_t me,
			const struct rv_frame *f);
void rv_frame_names_clear(struct rv_session *s);

/* lineno.c: the succinct index table lookup, on memory already read. */
struct rv_succ_geometry {
	uint64_t imm_count;  /* entries in imm_part[] */
	uint64_t imm_size;   /* IMMEDIATE_TABLE_SIZE */
	uint64_t bits_words; /* entries in succ_dict_block.bits[] */
};
struct cs_error *rv_succ_lookup(struct rv_session *s, uint64_t table,
				uint64_t pos, uint64_t *ret);
uint64_t rv_succ_block_rank(uint64_t rank, uint64_t small_block_ranks,
			    const uint64_t *bits, uint64_t i);

/* heap.c */
struct rv_heap_object {
	uint64_t object, data; /* the VALUE and its DATA_PTR */
};
struct rv_heap_scan {
	struct rv_heap_object *found;
	size_t count, capacity;
	uint64_t pages, bytes; /* read and scanned */
	uint64_t empty_pages;  /* in the pool of empty pages: no slots */
	uint64_t small_pages;  /* slots too small for the object sought */
	uint64_t slots;        /* in the pages read */
	/* pages that could not be read or were implausible (or past a
	 * bound), and the slots of those whose count was known */
	uint64_t skipped_pages, skipped_slots;
	char *error; /* NULL, or why objects may be missing */
	/* Nothing was read: the walk (or the memory scan) could not begin
	 * (error says why). unwalkable: because the layout of the GC's heap
	 * is not known, where a memory scan may still find the objects. */
	bool not_begun, unwalkable;
};
/* Every T_DATA object of the data type at address type, in the heap of
 * the VM at vm. Fails only when out of memory: a heap that cannot be
 * walked (completely) leaves its reason in scan->error. */
struct cs_error *rv_heap_find_typed_data(struct rv_session *s, uint64_t vm,
					 uint64_t type,
					 struct rv_heap_scan *scan);
/* One heap page read: total slots of stride bytes from start, their bytes
 * in slots. */
struct rv_heap_page {
	uint64_t start, stride, total;
	const uint8_t *slots;
	uint64_t page; /* its struct heap_page */
};
/* A walk of every page of the GC heap: visit is called for each page read
 * (false: out of memory, the walk ends with that error). A page whose
 * slots are a multiple of a VALUE, at least min_slot bytes but fewer than
 * need, is counted in small_pages and not visited; need is what a slot
 * must hold for the visitor to read it. */
struct rv_heap_walk {
	uint64_t need, min_slot;
	bool (*visit)(void *ctx, const struct rv_heap_page *page);
	void *ctx;
};
/* Walk the heap of the VM at vm, counting in scan (zeroed by the caller)
 * what was read and skipped; scan->error says why pages are missing, and
 * not_begun/unwalkable when none could be. Fails only when out of
 * memory. */
struct cs_error *rv_heap_walk(struct rv_session *s, uint64_t vm,
			      const struct rv_heap_walk *w,
			      struct rv_heap_scan *scan);
bool rv_heap_add_found(struct rv_heap_scan *scan, uint64_t object,
		       uint64_t data);
/* Set scan->error unless set: the first problem explains the rest. */
__attribute__((format(printf, 2, 3))) void
rv_heap_note(struct rv_heap_scan *scan, const char *fmt, ...);
void rv_heap_scan_free(struct rv_heap_scan *scan);
/* The object space of the GC the VM runs, 0 with *why when there is none
 * to read (a GC loaded from RUBY_GC_LIBRARY whose layout is not known, no
 * such member). */
uint64_t rv_objspace(struct rv_session *s, uint64_t vm, const char **why);
bool rv_modular_gc_loaded(struct rv_session *s);
/* Whether the GC_* items of the layout describe the GC the process runs
 * (libruby's own, or a GC library's layout was given). */
bool rv_gc_layout_known(struct rv_session *s);

/* How a T_DATA object of one data type is told in a slot's bytes: the
 * offsets and flags of RTypedData (heap.c, memory_scan.c). */
struct rv_typed_data_check {
	uint64_t flags_off, type_off, data_off, need;
	uint64_t min_slot;      /* an RBasic: flags and klass */
	int64_t typed_flag_off; /* -1: no typed_flag (4.0+) */
	uint64_t typed_fl;      /* RBasic flag for typed data, 0 if none */
	uint64_t t_mask, t_data, type, type_mask;
};
/* Fill c for objects of the data type at type; false when the layout
 * lacks what it takes: scan->error then says why, after what (which search
 * did not begin), and scan->not_begun is set. */
bool rv_typed_data_check_init(struct rv_session *s, uint64_t type,
			      struct rv_typed_data_check *c,
			      struct rv_heap_scan *scan, const char *what);
/* Whether the slot at slot (c->need bytes) holds such an object; its
 * DATA_PTR in *data. */
bool rv_typed_data_match(const struct rv_typed_data_check *c,
			 const uint8_t *slot, uint64_t *data);

/* memory_scan.c: every T_DATA object of the data type at type found by
 * searching the target's writable memory for type in an object's type
 * word: for a GC whose heap cannot be walked. At most
 * opts.max_scan_bytes are read (scan->error says when that cut the
 * search short, or when memory could not be read); scan->bytes counts
 * what was. An object found so may be a stale copy: the caller checks
 * what its data points to. Fails only when out of memory. */
struct cs_error *rv_memory_find_typed_data(struct rv_session *s, uint64_t type,
					   struct rv_heap_scan *scan);

/* Whether v is the start of a live object's heap slot (*slot_size: its
 * size), is not (why: the reason, for "<unreadable: 0x... is not a Ruby
 * object: why>"), or cannot be told (the debug info lacks the heap's
 * layout, or a modular GC keeps the objects). */
enum rv_slot { RV_SLOT_LIVE, RV_SLOT_NONE, RV_SLOT_UNKNOWN };
enum rv_slot rv_heap_slot(struct rv_session *s, uint64_t v, uint64_t *slot_size,
			  char *why, size_t n);
void rv_heap_slots_destroy(struct rv_session *s);

/* A Bignum in decimal ("-123"), from its flags and its slot's size (0 if
 * unknown); CS_ERR_LIMIT past RV_MAX_BIGNUM_BYTES of digits. */
#define RV_MAX_BIGNUM_BYTES 4096
struct cs_error *rv_bignum_decimal(struct rv_session *s, uint64_t v,
				   uint64_t flags, uint64_t slot_size,
				   char **ret);

/* gc_state.c */
void rv_gc_state_read(struct rv_session *s, uint64_t vm, struct rv_gc_state *g);

/* fibers.c */
void rv_fibers_free(struct rv_fiber *fibers, size_t n);
bool rv_fibers_complete(const struct rv_fiber *fibers, size_t n);
/* thread_state.c: state and wait reason of a thread whose status and
 * frames are read. */
void rv_thread_state_read(struct rv_session *s, const struct rv_view *th,
			  struct rv_thread *t);

/* exception.c: the exception the thread of ec raises or handles, once
 * its frames are read. */
void rv_thread_exception_read(struct rv_session *s, const struct rv_view *ec,
			      struct rv_thread *t);

/* locks.c: the mutexes a thread holds and the holder of the one it waits
 * on (after rv_thread_state_read); then, once every thread is read, whom
 * each waits for and the deadlocks. */
void rv_thread_locks_read(struct rv_session *s, const struct rv_view *th,
			  struct rv_thread *t);
struct cs_error *rv_locks_resolve(struct rv_session *s, struct rv_process *p);
/* The holder of the mutex a fiber waits on through its scheduler (after
 * rv_fiber_wait_read); rv_locks_resolve, run again once the fibers are
 * read, finds whom it waits for. */
void rv_fiber_locks_read(struct rv_session *s, struct rv_fiber *f);

/* wait_graph.c: the deadlocks among threads and fibers and who is stuck
 * behind whom, once whom each waits for is known (rv_locks_resolve). */
struct cs_error *rv_wait_graph_resolve(struct rv_process *p);
void rv_deadlocks_free(struct rv_process *p);

/* wait_targets.c: the IO of an I/O wait and the child of a process wait,
 * where Ruby's structures say (after rv_thread_state_read). */
void rv_thread_wait_targets_read(struct rv_session *s, const struct rv_view *th,
				 struct rv_thread *t);
/* The IO of the I/O wait w whose method is frame w->frame of frames. */
void rv_wait_io_read(struct rv_session *s, const struct rv_frame *frames,
		     size_t nframes, struct rv_wait *w);
/* thread_state.c: what a suspended non-blocking fiber waits on through
 * its thread's fiber scheduler, once its frames are read. */
void rv_fiber_wait_read(struct rv_session *s, struct rv_fiber *f);

/* ractors.c: the ractor at r (an rb_ractor_t): its id and name; false
 * when r is NULL or its id unreadable (out zeroed). */
bool rv_ractor_read(struct rv_session *s, uint64_t r, struct rv_ractor *out);
/* The ractor a thread belongs to (3.x). */
void rv_thread_ractor_read(struct rv_session *s, const struct rv_view *th,
			   struct rv_thread *t);

/* backtrace_rules.c */
void rv_bt_rules_init(struct rv_session *s);
/* type is the value of the ISEQ_TYPE_* enumerator id (false if unknown) */
bool rv_bt_is_type(struct rv_session *s, int64_t type, enum rv_item_id id);
/* rb_gen_method_name: "Owner#name" / "Owner.name" when the owner's name
 * is permanent, else name. */
struct cs_error *rv_bt_method_name(struct rv_session *s, uint64_t owner,
				   const char *name, char **ret);
/* How a frame's name names its method's owner: as this Ruby's backtrace
 * labels do, always (the qualified name: an anonymous owner by its
 * address), or by the stable names' rules (stable_names.c). */
enum rv_name_style {
	RV_NAME_RUBY,
	RV_NAME_QUALIFIED,
	RV_NAME_STABLE,
};
/* The owner a label names for the method entry me whose owner is owner:
 * owner, or where the Ruby says so the module that defined its body. */
struct cs_error *rv_bt_label_owner(struct rv_session *s, uint64_t me,
				   uint64_t owner, uint64_t *ret);
/* calculate_iseq_label: the name of a frame running iseq, whose method
 * entry is me and its owner owner (both 0 when the frame has none). */
struct cs_error *rv_bt_iseq_label(struct rv_session *s, uint64_t me,
				  uint64_t owner, uint64_t iseq,
				  enum rv_name_style style, char **ret);
bool rv_bt_rescue_or_ensure(struct rv_session *s,
			    const struct rv_iseq_info *info);
bool rv_bt_internal(const struct rv_iseq_info *info);
enum rv_c_like rv_bt_c_like(struct rv_session *s,
			    const struct rv_iseq_info *info);
/* Drop the frames this Ruby's backtraces do not show (a rescue clause's
 * method, what an internal frame called), after the walk. */
void rv_bt_select_frames(struct rv_session *s, struct rv_thread *th);
/* The frames rv_bt_select_frames would keep, counted one decoded frame at a
 * time, for those past max_frames that are not kept. */
struct rv_bt_count {
	bool skip_next;
	size_t pending; /* C-like frames since the last Ruby frame */
	size_t n;
};
void rv_bt_count_frame(const struct rv_session *s, struct rv_bt_count *c,
		       const struct rv_frame *f);

/* frame_checks.c: a control frame's type and env against each other and
 * its VM stack. The env of the frame a walk saw last (the one it called)
 * bounds the next one's from above. */
struct rv_ep_bounds {
	uint64_t stack;    /* the VM stack's first VALUE */
	uint64_t inner_ep; /* the last on-stack ep seen; the end at first */
};
struct cs_error *rv_frame_type_check(struct rv_session *s, uint64_t flags,
				     bool has_iseq);
bool rv_frame_is_cfunc(struct rv_session *s, uint64_t flags);
bool rv_frame_is_dummy(struct rv_session *s, uint64_t flags);
bool rv_frame_is_method(struct rv_session *s, uint64_t flags);
struct cs_error *rv_frame_ep_check(struct rv_session *s, struct rv_ep_bounds *b,
				   uint64_t cfp, uint64_t ep);

/* jit_frames.c: ZJIT's JIT frame records. rv_jit_frames_begin reads
 * whether ZJIT is on, once per snapshot; rv_jit_frames_apply then says
 * whether a control frame's jit_return must be looked at, and
 * rv_jit_frame reads the pc and iseq of the frame whose jit_return it is
 * (an error marks the frame). ms: the execution context's machine stack,
 * where the record's slot lies ({0, 0} when unknown). */
struct rv_machine_stack {
	uint64_t top, size;
};
void rv_jit_frames_begin(struct rv_session *s);
bool rv_jit_frames_apply(const struct rv_session *s);
struct cs_error *rv_jit_frame(struct rv_session *s,
			      const struct rv_machine_stack *ms,
			      uint64_t jit_return, uint64_t *pc,
			      uint64_t *iseq);

/* frames.c */
/* a[0..alen) b c, in a new string (NULL when out of memory) */
char *rv_join3(const char *a, size_t alen, const char *b, const char *c);
/* Take bytes from the snapshot's output budget; false when it is spent. */
bool rv_charge(struct rv_session *s, size_t bytes);
/* The members of the execution context at ec that rv_walk_ec, a thread's
 * machine stack and its exception take. */
void rv_ec_view_read(struct rv_session *s, uint64_t ec, struct rv_view *v);
struct cs_error *rv_walk_ec(struct rv_session *s, const struct rv_view *ec,
			    struct rv_thread *th);
void rv_frame_free(struct rv_frame *f);
/* The method entry of the control frame at cfp; 0 for none. */
struct cs_error *rv_frame_method_entry(struct rv_session *s, uint64_t cfp,
				       uint64_t *ret);

/* method_definition.c: "Module#name" of the method frame f runs, by its
 * definition: the module that defined its body and the name it was
 * defined with, whatever alias or subclass it was called through; NULL
 * (and no error) for a frame without a method. */
struct cs_error *rv_frame_definition_name(struct rv_session *s,
					  const struct rv_frame *f, char **ret);

#endif
