/* Showing any VALUE safely, as the #inspect of the Ruby that ran would
 * where that is cheap: nil, true, false, Integers (Bignums up to a bound of
 * digits), Floats, Symbols, Strings up to a bound (escaped by their
 * encoding), Arrays and Hashes with their sizes and first elements (a
 * Hash's Symbol keys as "key: " where hash.c has symbol_key_needs_quote),
 * Ranges, Structs and Data objects, classes by path, the top self as
 * "main", a T_OBJECT as Kernel#inspect shows it ("#<Foo:0x... @a=1>"),
 * and anything else as Kernel#to_s shows it ("#<Foo:0x...>").
 *
 * The VALUE may be garbage: every read is checked, a value that cannot be
 * read shows as "<unreadable: why>", and the work per value is bounded
 * (objects visited, nesting, elements, bytes of text). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
#include "session.h"

#define SHOW_MAX_TEXT 1024  /* bytes of text per value */
#define SHOW_MAX_OBJECTS 64 /* heap objects read per value */
#define SHOW_MAX_DEPTH 3    /* containers inside containers */

struct show {
	struct rv_session *s;
	/* the objects whose ivars are being shown, outermost first */
	uint64_t open[SHOW_MAX_DEPTH + 1];
	int nopen;
	char text[SHOW_MAX_TEXT + 1];
	size_t len;
	bool full; /* text reached its bound */
	int objects_left;
};

static void put(struct show *sh, const char *t, size_t n)
{
	if (sh->full)
		return;
	if (n > SHOW_MAX_TEXT - sh->len) {
		n = SHOW_MAX_TEXT - sh->len;
		sh->full = true;
	}
	memcpy(sh->text + sh->len, t, n);
	sh->len += n;
	sh->text[sh->len] = '\0';
}

static void puts_(struct show *sh, const char *t)
{
	put(sh, t, strlen(t));
}

__attribute__((format(printf, 2, 3))) static void putf(struct show *sh,
						       const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (n > 0)
		put(sh, buf, (size_t)n);
}

static bool utf8_continuation(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

static void unreadable(struct show *sh, struct cs_error *err)
{
	putf(sh, "<unreadable: %s>", err->message);
	cs_error_destroy(err);
}

/* Whether an object may be read: within the budget, aligned as every heap
 * slot is, and the start of a live slot where the heap's layout is known
 * (*slot_size: its size, else 0). */
static bool may_read(struct show *sh, uint64_t v, uint64_t *slot_size)
{
	char why[96];
	*slot_size = 0;
	if (v % (uint64_t)RV_VAL(sh->s, value_size)) {
		putf(sh, "<unreadable: 0x%" PRIx64 " is not an object>", v);
		return false;
	}
	if (rv_heap_slot(sh->s, v, slot_size, why, sizeof(why)) ==
	    RV_SLOT_NONE) {
		putf(sh, "<unreadable: 0x%" PRIx64 " is not a Ruby object: %s>",
		     v, why);
		return false;
	}
	if (sh->objects_left-- <= 0) {
		puts_(sh, "...");
		return false;
	}
	return true;
}

/* Float#inspect: the shortest digits that read back the same, in fixed
 * notation for exponents -4 to 15 and with ".0" where there is no
 * fraction, else as 1.0e+300. */
static void show_double(struct show *sh, double d)
{
	if (isnan(d)) {
		puts_(sh, "NaN");
		return;
	}
	if (isinf(d)) {
		puts_(sh, d < 0 ? "-Infinity" : "Infinity");
		return;
	}
	char e[40];
	for (int p = 1; p <= 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p - 1, d);
		if (strtod(e, NULL) == d)
			break;
	}
	/* e: [-]D[.DDD]e[+-]XX */
	char *x = strchr(e, 'e');
	if (!x)
		return;
	int exp = atoi(x + 1);
	*x = '\0';
	bool neg = e[0] == '-';
	char digits[24];
	size_t nd = 0;
	for (const char *c = e + neg; *c && nd < sizeof(digits) - 1; c++)
		if (*c != '.')
			digits[nd++] = *c;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	if (neg)
		puts_(sh, "-");
	if (exp < -4 || exp >= 16) {
		put(sh, digits, 1);
		puts_(sh, ".");
		puts_(sh, nd > 1 ? digits + 1 : "0");
		putf(sh, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
	} else if (exp < 0) {
		puts_(sh, "0.");
		for (int i = -1; i > exp; i--)
			puts_(sh, "0");
		puts_(sh, digits);
	} else {
		for (int i = 0; i <= exp; i++)
			put(sh, i < (int)nd ? &digits[i] : "0", 1);
		puts_(sh, ".");
		puts_(sh, (int)nd > exp + 1 ? digits + exp + 1 : "0");
	}
}

/* A flonum (rb_float_flonum_value): the double with its exponent's top
 * bits rotated into the tag. */
static double flonum_value(uint64_t v)
{
	if (v == 0x8000000000000002ULL) /* how 0.0 is encoded */
		return 0.0;
	uint64_t b63 = v >> 63;
	uint64_t t = (2 - b63) | (v & ~(uint64_t)0x03);
	t = (t >> 3) | (t << 61);
	double d;
	memcpy(&d, &t, sizeof(d));
	return d;
}

/* String#inspect's escapes: text taken as UTF-8, or, for a binary or
 * US-ASCII String (bytes), every byte that is no printable ASCII as \xNN,
 * as rb_str_buf_cat_escaped_char writes a code point outside Unicode. */
static void escape_bytes(struct show *sh, const char *b, size_t n, bool bytes)
{
	static const char *const named[32] = {
		[7] = "\\a",  [8] = "\\b",  [9] = "\\t",  [10] = "\\n",
		[11] = "\\v", [12] = "\\f", [13] = "\\r", [27] = "\\e",
	};
	for (size_t i = 0; i < n && !sh->full;) {
		unsigned char c = (unsigned char)b[i];
		if (c == '"' || c == '\\') {
			putf(sh, "\\%c", c);
			i++;
		} else if (c == '#' && i + 1 < n &&
			   (b[i + 1] == '{' || b[i + 1] == '$' ||
			    b[i + 1] == '@')) {
			puts_(sh, "\\#");
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			if (c < 32 && named[c])
				puts_(sh, named[c]);
			else
				putf(sh, bytes ? "\\x%02X" : "\\u%04X", c);
			i++;
		} else if (c < 0x80) {
			put(sh, (const char *)&c, 1);
			i++;
		} else {
			size_t k =
				bytes ? 0
				      : utf8_sequence_length(
						(const unsigned char *)b + i);
			if (k && i + k <= n) {
				put(sh, b + i, k);
				i += k;
			} else {
				putf(sh, "\\x%02X", c);
				i++;
			}
		}
	}
}

/* Text in double quotes with String#inspect's escapes. */
static void quoted(struct show *sh, const char *b, size_t n, bool bytes)
{
	puts_(sh, "\"");
	escape_bytes(sh, b, n, bytes);
	puts_(sh, "\"");
}

/* Whether a String's encoding (its index in the flags) is ASCII-8BIT
 * (2.7 calls it ASCII) or US-ASCII: String#inspect then escapes bytes,
 * not Unicode code points. */
static bool bytes_encoding(struct rv_session *s, uint64_t flags)
{
	if (!RV_HAS(s, encoding_mask) || !RV_HAS(s, encoding_shift))
		return false;
	uint64_t index = rv_shr(flags & (uint64_t)RV_VAL(s, encoding_mask),
				RV_VAL(s, encoding_shift));
	return (RV_HAS(s, encindex_ascii_8bit) &&
		index == (uint64_t)RV_VAL(s, encindex_ascii_8bit)) ||
	       (RV_HAS(s, encindex_ascii) &&
		index == (uint64_t)RV_VAL(s, encindex_ascii)) ||
	       (RV_HAS(s, encindex_us_ascii) &&
		index == (uint64_t)RV_VAL(s, encindex_us_ascii));
}

static void show_string(struct show *sh, uint64_t v, uint64_t flags, int depth)
{
	size_t max = depth ? 40 : 200, got = 0;
	uint64_t len = 0;
	char *b = NULL;
	struct cs_error *err = rv_string_bytes(sh->s, v, max, &b, &got, &len);
	if (err) {
		unreadable(sh, err);
		return;
	}
	quoted(sh, b, got, bytes_encoding(sh->s, flags));
	if (got < len)
		putf(sh, "...(%" PRIu64 " bytes)", len);
	free(b);
}

static void show_value(struct show *sh, uint64_t v, int depth);

/* After the first shown of a container's total elements: how many. */
static void more(struct show *sh, uint64_t shown, uint64_t total,
		 const char *what)
{
	if (total > shown)
		putf(sh, "%s...(%" PRIu64 " %s)", shown ? ", " : "", total,
		     what);
}

/* Whether a name is an identifier: what a local or a constant is called. */
static bool identifier(const char *name, size_t n)
{
	if (n == 0 || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (!(c == '_' || c >= 0x80 || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

/* Whether Symbol#inspect writes a name without quotes (a symname, as
 * rb_enc_symname_type tells): an operator, an identifier perhaps ending
 * in ?, ! or =, or an instance, class or global variable's name. */
static bool symname(const char *name, size_t n)
{
	static const char *const ops[] = {"+",  "-",   "*",   "/",  "%",   "**",
					  "==", "===", "=~",  "!",  "!=",  "!~",
					  "<",  "<=",  ">",   ">=", "<=>", "<<",
					  ">>", "&",   "|",   "^",  "~",   "+@",
					  "-@", "[]",  "[]=", "`"};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strlen(ops[i]) == n && memcmp(ops[i], name, n) == 0)
			return true;
	size_t skip = n > 2 && name[0] == '@' && name[1] == '@'     ? 2
		      : n > 1 && (name[0] == '@' || name[0] == '$') ? 1
								    : 0;
	if (skip)
		return identifier(name + skip, n - skip);
	bool suffix = n > 1 && (name[n - 1] == '?' || name[n - 1] == '!' ||
				name[n - 1] == '=');
	return identifier(name, n - suffix);
}

static void show_symbol_name(struct show *sh, const char *name, size_t n)
{
	puts_(sh, ":");
	if (symname(name, n))
		put(sh, name, n);
	else
		quoted(sh, name, n, false);
}

/* The name of the Symbol v, at most max bytes of a dynamic one's (*len
 * the bytes it has). */
static struct cs_error *symbol_bytes(struct rv_session *s, uint64_t v,
				     size_t max, char **name, size_t *n,
				     uint64_t *len)
{
	if (rv_special_const(s, v)) {
		struct cs_error *err = rv_id_name(
			s, rv_shr(v, RV_VAL(s, special_shift)), name);
		if (!err)
			*len = *n = strlen(*name);
		return err;
	}
	uint64_t fstr;
	struct cs_error *err = rv_read_member(s, v, RVL_rsymbol_fstr, &fstr);
	return err ? err : rv_string_bytes(s, fstr, max, name, n, len);
}

struct cs_error *rv_symbol_name(struct rv_session *s, uint64_t v, char **name,
				size_t *n)
{
	uint64_t len;
	return symbol_bytes(s, v, 200, name, n, &len);
}

struct cs_error *rv_symbol_name_whole(struct rv_session *s, uint64_t v,
				      char **name, size_t *n)
{
	uint64_t len = 0;
	struct cs_error *err = symbol_bytes(s, v, RV_MAX_STRING, name, n, &len);
	if (!err && *n != len) {
		free(*name);
		*name = NULL;
		err = cs_error_create(CS_ERR_LIMIT,
				      "Symbol 0x%llx's name of %llu bytes "
				      "not read whole",
				      (unsigned long long)v,
				      (unsigned long long)len);
	}
	return err;
}

static void show_symbol(struct show *sh, uint64_t v)
{
	char *name = NULL;
	size_t n = 0;
	struct cs_error *err = rv_symbol_name(sh->s, v, &name, &n);
	if (err) {
		unreadable(sh, err);
		return;
	}
	show_symbol_name(sh, name, n);
	free(name);
}

/* A Symbol key of a Hash that writes "key: value": the name as it is
 * when it needs no quotes (an identifier, perhaps ending in ? or !), else
 * as a String's inspect, as symbol_key_needs_quote decides. */
static void show_symbol_key(struct show *sh, uint64_t v)
{
	char *name = NULL;
	size_t n = 0;
	struct cs_error *err = rv_symbol_name(sh->s, v, &name, &n);
	if (err) {
		unreadable(sh, err);
		return;
	}
	bool suffix = n > 1 && (name[n - 1] == '?' || name[n - 1] == '!');
	if (identifier(name, n - suffix))
		put(sh, name, n);
	else
		quoted(sh, name, n, false);
	puts_(sh, ": ");
	free(name);
}

static const char *immediate_class(struct rv_session *s, uint64_t v);

/* Whether v is a Symbol: a static one, or a T_SYMBOL in the heap. */
static bool is_symbol(struct rv_session *s, uint64_t v)
{
	uint64_t type = 0, slot_size;
	char why[96];
	if (rv_special_const(s, v)) {
		const char *klass = immediate_class(s, v);
		return klass && strcmp(klass, "Symbol") == 0;
	}
	return v % (uint64_t)RV_VAL(s, value_size) == 0 &&
	       rv_heap_slot(s, v, &slot_size, why, sizeof(why)) !=
		       RV_SLOT_NONE &&
	       !rv_failed(rv_builtin_type(s, v, &type, NULL)) &&
	       type == (uint64_t)RV_VAL(s, t_symbol);
}

static void show_array(struct show *sh, uint64_t v, int depth)
{
	uint64_t ptr, len;
	struct cs_error *err = rv_array_span(sh->s, v, &ptr, &len);
	if (err) {
		unreadable(sh, err);
		return;
	}
	if (depth >= SHOW_MAX_DEPTH) {
		putf(sh, "[...(%" PRIu64 " elements)]", len);
		return;
	}
	uint64_t vsize = (uint64_t)RV_VAL(sh->s, value_size);
	uint64_t shown = depth ? 3 : 8, n = len < shown ? len : shown;
	uint64_t elems[8];
	puts_(sh, "[");
	if (n && (err = rv_read(sh->s, ptr, elems, n * vsize))) {
		unreadable(sh, err);
		n = 0;
	}
	for (uint64_t i = 0; i < n && !sh->full; i++) {
		if (i)
			puts_(sh, ", ");
		show_value(sh, elems[i], depth + 1);
	}
	more(sh, n, len, "elements");
	puts_(sh, "]");
}

static void show_hash(struct show *sh, uint64_t v, uint64_t flags, int depth)
{
	struct rv_session *s = sh->s;
	if (!rv_hash_layout_known(s)) {
		putf(sh, "#<Hash:0x%016" PRIx64 ">", v);
		return;
	}
	uint64_t keys[8], vals[8], size = 0;
	size_t n = 0;
	size_t max = depth >= SHOW_MAX_DEPTH ? 0 : depth ? 3 : 8;
	struct cs_error *err =
		rv_hash_entries(s, v, flags, keys, vals, max, &n, &size);
	if (err) {
		unreadable(sh, err);
		return;
	}
	/* Hash#inspect: "{a: 1, "b" => 2}" where hash.c decides how a
	 * Symbol key reads (symbol_key_needs_quote), else "{:a=>1, "b"=>2}". */
	bool key_colon = RV_HAS(s, fn_symbol_key_needs_quote);
	puts_(sh, "{");
	for (size_t i = 0; i < n && !sh->full; i++) {
		if (i)
			puts_(sh, ", ");
		if (key_colon && is_symbol(s, keys[i])) {
			show_symbol_key(sh, keys[i]);
		} else {
			show_value(sh, keys[i], depth + 1);
			puts_(sh, key_colon ? " => " : "=>");
		}
		show_value(sh, vals[i], depth + 1);
	}
	more(sh, n, size, "entries");
	puts_(sh, "}");
}

/* The class an object's #class names: past singleton classes and the
 * include classes of modules. */
static struct cs_error *real_class(struct rv_session *s, uint64_t v,
				   uint64_t *ret)
{
	uint64_t klass = 0, type = 0;
	struct cs_error *err = rv_read_member(s, v, RVL_basic_klass, &klass);
	if (!err)
		err = rv_real_class(s, klass, true, ret);
	if (!err && *ret)
		err = rv_builtin_type(s, *ret, &type, NULL);
	if (!err && (!*ret || type != (uint64_t)RV_VAL(s, t_class)))
		err = cs_error_create(CS_ERR_CORRUPT,
				      "0x%" PRIx64 " has no class", v);
	return err;
}

static const char *immediate_class(struct rv_session *s, uint64_t v)
{
	if (v & (uint64_t)RV_VAL(s, fixnum_flag))
		return "Integer";
	if ((v & (uint64_t)RV_VAL(s, flonum_mask)) ==
	    (uint64_t)RV_VAL(s, flonum_flag))
		return "Float";
	if (v == (uint64_t)RV_VAL(s, qnil))
		return "NilClass";
	if (v == (uint64_t)RV_VAL(s, qtrue))
		return "TrueClass";
	if (v == (uint64_t)RV_VAL(s, qfalse))
		return "FalseClass";
	uint64_t low = rv_shl(1, RV_VAL(s, special_shift)) - 1;
	if ((v & low) == (uint64_t)RV_VAL(s, symbol_flag))
		return "Symbol";
	return NULL;
}

static void show_immediate(struct show *sh, uint64_t v)
{
	struct rv_session *s = sh->s;
	const char *klass = immediate_class(s, v);
	if (!klass) {
		putf(sh, "<unreadable: 0x%" PRIx64 " is no known immediate>",
		     v);
	} else if (v & (uint64_t)RV_VAL(s, fixnum_flag)) {
		putf(sh, "%" PRId64,
		     rv_sar((int64_t)v, ffsll(RV_VAL(s, fixnum_flag))));
	} else if (strcmp(klass, "Float") == 0) {
		show_double(sh, flonum_value(v));
	} else if (strcmp(klass, "Symbol") == 0) {
		show_symbol(sh, v);
	} else {
		puts_(sh, v == (uint64_t)RV_VAL(s, qnil)    ? "nil"
			  : v == (uint64_t)RV_VAL(s, qtrue) ? "true"
							    : "false");
	}
}

static void show_class(struct show *sh, uint64_t v)
{
	char *path = NULL;
	struct cs_error *err = rv_class_path(sh->s, v, &path);
	if (err) {
		unreadable(sh, err);
		return;
	}
	puts_(sh, path);
	free(path);
}

/* The start both Kernel#to_s and Kernel#inspect write, "#<Foo:0x000055d5..."
 * (false: the class is unreadable, and that was said instead). */
static bool open_object(struct show *sh, uint64_t v)
{
	uint64_t klass = 0;
	char *path = NULL;
	struct cs_error *err = real_class(sh->s, v, &klass);
	if (!err)
		err = rv_class_path(sh->s, klass, &path);
	if (err) {
		unreadable(sh, err);
		return false;
	}
	putf(sh, "#<%s:0x%016" PRIx64, path, v);
	free(path);
	return true;
}

/* Kernel#to_s: "#<Foo:0x000055d5...>". */
static void show_object(struct show *sh, uint64_t v)
{
	if (open_object(sh, v))
		puts_(sh, ">");
}

/* One ivar of an object as rb_obj_inspect writes it, " @x=1", when its
 * name is an instance variable's (not "@@" nor an internal ID's). */
static bool show_ivar(struct show *sh, uint64_t id, uint64_t v, bool first,
		      bool show, int depth)
{
	char *name = NULL;
	bool ivar = !rv_failed(rv_id_name(sh->s, id, &name)) &&
		    name[0] == '@' && name[1] != '@';
	if (ivar && show) {
		puts_(sh, first ? " " : ", ");
		puts_(sh, name);
		puts_(sh, "=");
		show_value(sh, v, depth + 1);
	}
	free(name);
	return ivar;
}

#define MAX_IVARS_READ 32 /* ivars read per object */

/* Kernel#inspect (rb_obj_inspect) of a T_OBJECT: its Kernel#to_s with its
 * ivars in the order they were set, "#<Point:0x... @x=1, @y=2>", and
 * " ..." in place of them inside itself. */
static void show_ivars(struct show *sh, uint64_t v, uint64_t flags, int depth)
{
	uint64_t ids[MAX_IVARS_READ], vals[MAX_IVARS_READ];
	uint64_t total = 0, named = 0, shown = 0;
	uint64_t max = depth >= SHOW_MAX_DEPTH ? 0 : depth ? 3 : 8;
	size_t n = 0;
	if (!open_object(sh, v))
		return;
	for (int i = 0; i < sh->nopen; i++) {
		if (sh->open[i] == v) {
			puts_(sh, " ...>");
			return;
		}
	}
	struct cs_error *err = rv_object_ivars(sh->s, v, flags, ids, vals,
					       MAX_IVARS_READ, &n, &total);
	if (err) {
		puts_(sh, " ");
		unreadable(sh, err);
		puts_(sh, ">");
		return;
	}
	bool pushed = sh->nopen < SHOW_MAX_DEPTH + 1;
	if (pushed)
		sh->open[sh->nopen++] = v;
	else
		max = 0;
	for (size_t i = 0; i < n && !sh->full; i++) {
		bool show = shown < max;
		if (show_ivar(sh, ids[i], vals[i], shown == 0, show, depth)) {
			named++;
			shown += show;
		}
	}
	if (pushed)
		sh->nopen--;
	/* past those read, every ivar counted as one */
	named += total - n;
	if (!shown && named)
		puts_(sh, " ");
	more(sh, shown, named, "ivars");
	puts_(sh, ">");
}

/* The VALUE a global variable of libruby holds, 0 when it has none. */
static uint64_t global_value(struct rv_session *s, enum rv_item_id id)
{
	uint64_t v = 0;
	rv_try_var(s, id, sizeof(v), &v);
	return v;
}

/* Whether v is a top self, the self of the program's top level: the VM's,
 * or where the VM has boxes the root or main box's, or the main thread's
 * (under Ruby::Box the program's, which neither box keeps). */
static bool is_top_self(struct rv_session *s, uint64_t v)
{
	uint64_t vm = 0, self = 0, box = 0, th = 0;
	if (!rv_try_var(s, RVL_vm_ptr, sizeof(vm), &vm) || !vm)
		return false;
	if (RV_HAS(s, vm_top_self))
		return rv_try_member(s, vm, RVL_vm_top_self, &self) &&
		       self == v;
	if (!RV_HAS(s, box_top_self))
		return false;
	enum rv_item_id boxes[] = {RVL_vm_root_box, RVL_vm_main_box};
	for (size_t i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++)
		if (rv_try_member(s, vm, boxes[i], &box) && box &&
		    rv_try_member(s, box, RVL_box_top_self, &self) && self == v)
			return true;
	return RV_HAS(s, th_top_self) &&
	       rv_try_member(s, vm, RVL_vm_ractor_main_thread, &th) && th &&
	       rv_try_member(s, th, RVL_th_top_self, &self) && self == v;
}

#define MAX_SUPERCLASSES 64 /* classes walked up from a T_STRUCT's */

enum struct_kind { STRUCT_OTHER, STRUCT_RANGE, STRUCT_STRUCT, STRUCT_DATA };

/* What a T_STRUCT of class klass is, as its #inspect tells: a Range (a
 * subclass of rb_cRange), or a Struct or Data object, whose member names
 * (an Array of Symbols) the first class up from klass to keep them holds,
 * as struct_ivar_get finds them. */
static enum struct_kind struct_kind(struct rv_session *s, uint64_t klass,
				    uint64_t *members)
{
	uint64_t range = global_value(s, RVL_c_range);
	uint64_t st = global_value(s, RVL_c_struct);
	uint64_t data = global_value(s, RVL_c_data);
	uint64_t id = global_value(s, RVL_struct_id_members);
	*members = 0;
	for (int hops = 0; klass && hops < MAX_SUPERCLASSES; hops++) {
		if (klass == range)
			return STRUCT_RANGE;
		if (klass == st)
			return *members ? STRUCT_STRUCT : STRUCT_OTHER;
		if (klass == data)
			return *members ? STRUCT_DATA : STRUCT_OTHER;
		uint64_t v = 0;
		bool found = false;
		if (id && !*members &&
		    !rv_failed(rv_class_ivar(s, klass, id, &v, &found)) &&
		    found && !rv_is_nil(s, v))
			*members = v;
		if (rv_failed(rv_superclass(s, klass, &klass)))
			return STRUCT_OTHER;
	}
	return STRUCT_OTHER;
}

/* RANGE_FL_EXCL is FL_USER19, which fl_type.h casts through unsigned int;
 * the macro evaluator ignores casts and reads it sign-extended. */
static uint64_t range_excl_flag(struct rv_session *s)
{
	return (uint32_t)RV_VAL(s, range_fl_excl);
}

/* Range#inspect: "1..2", "1...", "..2", "nil..nil". Whether it excludes
 * its end: its third field, or a flag where it has two. */
static void show_range(struct show *sh, uint64_t flags, const uint64_t *f,
		       uint64_t n, int depth)
{
	struct rv_session *s = sh->s;
	if (!rv_is_nil(s, f[0]) || rv_is_nil(s, f[1]))
		show_value(sh, f[0], depth + 1);
	bool excl = n > 2 ? !rv_is_nil(s, f[2]) &&
				    f[2] != (uint64_t)RV_VAL(s, qfalse)
			  : (flags & range_excl_flag(s)) != 0;
	puts_(sh, excl ? "..." : "..");
	if (rv_is_nil(s, f[0]) || !rv_is_nil(s, f[1]))
		show_value(sh, f[1], depth + 1);
}

/* Struct#inspect, Data#inspect: "#<struct Point x=1, y=2>", the class
 * left out when it has no name; a member whose name is no identifier as
 * its Symbol's inspect. */
static void show_members(struct show *sh, uint64_t klass, bool data,
			 uint64_t members, const uint64_t *f, uint64_t n,
			 uint64_t len, int depth)
{
	struct rv_session *s = sh->s;
	char *path = NULL;
	puts_(sh, data ? "#<data" : "#<struct");
	if (!rv_failed(rv_class_path(s, klass, &path)) && path[0] != '#')
		putf(sh, " %s", path);
	free(path);
	for (uint64_t i = 0; i < n && !sh->full; i++) {
		uint64_t sym = 0;
		char *name = NULL;
		size_t nlen = 0;
		puts_(sh, i ? ", " : " ");
		struct cs_error *err = rv_array_entry(s, members, i, &sym);
		if (!err)
			err = rv_symbol_name(s, sym, &name, &nlen);
		if (err)
			unreadable(sh, err);
		else if (identifier(name, nlen))
			put(sh, name, nlen);
		else
			show_symbol_name(sh, name, nlen);
		free(name);
		puts_(sh, "=");
		show_value(sh, f[i], depth + 1);
	}
	more(sh, n, len, "members");
	puts_(sh, ">");
}

static void show_object(struct show *sh, uint64_t v);

static void show_struct(struct show *sh, uint64_t v, uint64_t flags, int depth)
{
	struct rv_session *s = sh->s;
	uint64_t klass = 0, members = 0, ptr = 0, len = 0, f[8] = {0};
	struct cs_error *err = real_class(s, v, &klass);
	enum struct_kind kind = err ? STRUCT_OTHER
				    : struct_kind(s, klass, &members);
	cs_error_destroy(err);
	if (kind == STRUCT_OTHER || depth >= SHOW_MAX_DEPTH) {
		show_object(sh, v);
		return;
	}
	if ((err = rv_struct_fields(s, v, flags, &ptr, &len))) {
		unreadable(sh, err);
		return;
	}
	uint64_t n = kind == STRUCT_RANGE ? 3 : depth ? 3 : 8;
	if (len < n)
		n = len;
	if (kind == STRUCT_RANGE &&
	    (n < 2 || (n == 2 && !RV_HAS(s, range_fl_excl))))
		err = cs_error_create(CS_ERR_CORRUPT,
				      "Range 0x%" PRIx64 " has %" PRIu64
				      " fields",
				      v, len);
	else if (n)
		err = rv_read(s, ptr, f, n * (uint64_t)RV_VAL(s, value_size));
	if (err) {
		unreadable(sh, err);
		return;
	}
	if (kind == STRUCT_RANGE)
		show_range(sh, flags, f, n, depth);
	else
		show_members(sh, klass, kind == STRUCT_DATA, members, f, n, len,
			     depth);
}

/* Integer#inspect of a Bignum; past max digits, the first of them and
 * how many there are. */
static void show_bignum(struct show *sh, uint64_t v, uint64_t flags,
			uint64_t slot_size, int depth)
{
	char *text = NULL;
	struct cs_error *err =
		rv_bignum_decimal(sh->s, v, flags, slot_size, &text);
	if (err && (err->code == CS_ERR_LOOKUP || err->code == CS_ERR_LIMIT)) {
		/* no layout to read it by, or too long to convert */
		putf(sh, "#<Integer:0x%016" PRIx64 " (%s)>", v,
		     err->code == CS_ERR_LIMIT ? err->message : "bignum");
		cs_error_destroy(err);
		return;
	}
	if (err) {
		unreadable(sh, err);
		return;
	}
	size_t max = depth ? 40 : 200, sign = text[0] == '-';
	size_t n = strlen(text + sign);
	if (n <= max) {
		puts_(sh, text);
	} else {
		put(sh, text, sign + max);
		putf(sh, "...(%zu digits)", n);
	}
	free(text);
}

static void show_heap(struct show *sh, uint64_t v, int depth)
{
	struct rv_session *s = sh->s;
	uint64_t type, flags, slot_size;
	if (!may_read(sh, v, &slot_size))
		return;
	struct cs_error *err = rv_builtin_type(s, v, &type, &flags);
	if (err) {
		unreadable(sh, err);
		return;
	}
	if (type == (uint64_t)RV_VAL(s, t_string)) {
		show_string(sh, v, flags, depth);
	} else if (type == (uint64_t)RV_VAL(s, t_array)) {
		show_array(sh, v, depth);
	} else if (type == (uint64_t)RV_VAL(s, t_hash)) {
		show_hash(sh, v, flags, depth);
	} else if (type == (uint64_t)RV_VAL(s, t_float)) {
		uint64_t bits;
		double d;
		if ((err = rv_read_member(s, v, RVL_rfloat_value, &bits))) {
			unreadable(sh, err);
			return;
		}
		memcpy(&d, &bits, sizeof(d));
		show_double(sh, d);
	} else if (type == (uint64_t)RV_VAL(s, t_symbol)) {
		show_symbol(sh, v);
	} else if (type == (uint64_t)RV_VAL(s, t_bignum)) {
		show_bignum(sh, v, flags, slot_size, depth);
	} else if (type == (uint64_t)RV_VAL(s, t_class) ||
		   type == (uint64_t)RV_VAL(s, t_module)) {
		show_class(sh, v);
	} else if (type == (uint64_t)RV_VAL(s, t_struct)) {
		show_struct(sh, v, flags, depth);
	} else if (type == (uint64_t)RV_VAL(s, t_object)) {
		/* a top self is a T_OBJECT: "main" is its singleton's to_s,
		 * inspect's alias */
		if (is_top_self(s, v))
			puts_(sh, "main");
		else
			show_ivars(sh, v, flags, depth);
	} else {
		show_object(sh, v);
	}
}

static void show_value(struct show *sh, uint64_t v, int depth)
{
	if (sh->full)
		return;
	if (rv_special_const(sh->s, v))
		show_immediate(sh, v);
	else
		show_heap(sh, v, depth);
}

/* The class of v by path, NULL when it cannot be told. */
static char *class_of(struct rv_session *s, uint64_t v)
{
	if (rv_special_const(s, v)) {
		const char *name = immediate_class(s, v);
		return name ? strdup(name) : NULL;
	}
	uint64_t klass = 0, slot_size;
	char *path = NULL;
	char why[96];
	if (v % (uint64_t)RV_VAL(s, value_size) ||
	    rv_heap_slot(s, v, &slot_size, why, sizeof(why)) == RV_SLOT_NONE ||
	    rv_failed(real_class(s, v, &klass)) ||
	    rv_failed(rv_class_path(s, klass, &path)))
		return NULL;
	return path;
}

struct cs_error *rv_value_show(struct rv_session *s, uint64_t v, char **text,
			       char **class_name)
{
	struct show *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return &cs_error_nomem;
	sh->s = s;
	sh->objects_left = SHOW_MAX_OBJECTS;
	show_value(sh, v, 0);
	if (sh->full) { /* end on a whole character, and say so */
		sh->len = SHOW_MAX_TEXT - 3;
		while (sh->len && utf8_continuation(sh->text[sh->len]))
			sh->len--;
		memcpy(sh->text + sh->len, "...", 4);
	}
	*text = strdup(sh->text);
	free(sh);
	if (!*text)
		return &cs_error_nomem;
	*class_name = class_of(s, v);
	return NULL;
}
