/* What one heap object refers to, as the GC marks it, for the types whose
 * references the model decodes, and how each is held: an ivar, an
 * element, a Hash's key or value, a Struct member, a constant, an imemo's
 * member, a T_DATA's listed VALUE (rubyvm/heap_refs.c; docs/heap.md
 * "What keeps an object alive"). */
#ifndef CS_RUBYVM_HEAP_REFS_H
#define CS_RUBYVM_HEAP_REFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

struct rv_session;

enum rv_ref_kind {
	RV_REF_IVAR,       /* index: of the ivar, in rb_ivar_foreach order */
	RV_REF_ELEMENT,    /* an Array's, index its index */
	RV_REF_HASH_KEY,   /* a Hash's entry index (in its order) */
	RV_REF_HASH_VALUE, /* the value of entry index */
	RV_REF_IFNONE,     /* a Hash's default value or proc */
	RV_REF_MEMBER,     /* a Struct's, index its index */
	RV_REF_CONSTANT,   /* a class's or module's; index the ID's serial */
	RV_REF_SELF,       /* a Proc's block's self */
	RV_REF_ENV,        /* a Proc's captured environment (an imemo_env) */
	RV_REF_LOCAL,      /* an environment's local, index in its iseq's
			    * local table */
	RV_REF_OUTER,      /* an environment's outer one */
	RV_REF_FIELD,      /* an imemo's member, index the layout item
			    * (enum rv_item_id) it was read by */
	RV_REF_DATA,       /* a T_DATA's VALUE its type's declarative
			    * marking lists, index its offset in the data */
};

struct rv_ref {
	uint64_t value; /* a VALUE that is no special constant */
	enum rv_ref_kind kind;
	uint64_t index;
};

struct rv_refs {
	struct rv_ref *items;
	size_t n, cap;
};

/* The references of obj, a live object whose flags are flags, appended
 * to out: of a T_OBJECT its ivars, of a class or module its constants
 * and ivars, of an Array its elements, of a Hash its keys, values and
 * default, of a Struct its members, of a Proc of a Ruby block its self
 * and environment, of an environment its locals and the environment
 * around it, of a fields object its owner and fields, of another imemo
 * and a declaratively marked T_DATA what the GC marks; special
 * constants left out. *decoded
 * false: obj's type is none of these (its references are not followed).
 * An error when they cannot be read (out keeps what was). */
struct cs_error *rv_object_refs(struct rv_session *s, uint64_t obj,
				uint64_t flags, struct rv_refs *out,
				bool *decoded);
void rv_refs_free(struct rv_refs *r);
/* Append v held as kind, index to out unless v is 0 or a special
 * constant; false when out of memory. */
bool rv_refs_add(struct rv_session *s, struct rv_refs *out, uint64_t v,
		 enum rv_ref_kind kind, uint64_t index);

/* heap_refs_imemo.c: what an imemo of obj marks, by its type (docs/heap.md
 * "What keeps an object alive"); *decoded false for a type not decoded
 * (an iseq, a tmpbuf, ...) or one whose layout this Ruby's DWARF lacks. */
struct cs_error *rv_imemo_refs(struct rv_session *s, uint64_t obj,
			       struct rv_refs *out, bool *decoded);
/* heap_refs_data.c: the VALUEs a typed T_DATA whose type marks
 * declaratively (RUBY_TYPED_DECL_MARKING) lists; *decoded false for any
 * other T_DATA. */
struct cs_error *rv_decl_marked_refs(struct rv_session *s, uint64_t obj,
				     uint64_t flags, struct rv_refs *out,
				     bool *decoded);

/* How obj holds r, for people and JSON: kind "ivar" (name "@items"),
 * "element" (index), "key" or "value" (key: the entry's key shown as
 * inspect would, for a value), "default", "member" (index), "constant"
 * (name), "self", "env", "local" (name), "outer", "field" (an imemo's
 * member, name its C name: "owner", "body.iseq.cref"), "data" (index the
 * offset in a T_DATA's data). */
struct rv_ref_label {
	const char *kind;
	char *name;    /* NULL when none or unknown */
	char *key;     /* a Hash value's key, shown; NULL otherwise */
	int64_t index; /* -1 when none */
};
struct cs_error *rv_ref_describe(struct rv_session *s, uint64_t obj,
				 uint64_t flags, const struct rv_ref *r,
				 struct rv_ref_label *ret);
void rv_ref_label_free(struct rv_ref_label *l);
/* The label kind of a reference kind ("ivar", "element", ...). */
const char *rv_ref_kind_name(enum rv_ref_kind kind);

#endif
