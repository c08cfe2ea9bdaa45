#include "macros.h"

#include "../util/fnv.h"

#include <ctype.h>
#include <stdio.h>
#include <dwarf.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A definition with its name's hash and length, kept so that probing and
 * growing never measure or hash a name again. */
struct def_slot {
	const char *def; /* NULL: empty */
	uint32_t hash;
	uint32_t len;
};

/* Macro name -> definition text ("NAME(p) body") of one macro unit, the
 * last definition winning; open addressing, strings owned by libdw. */
struct def_table {
	struct def_slot *defs;
	size_t nslots, count;
};

static size_t name_len(const char *def)
{
	size_t n = 0;
	while (def[n] && (isalnum((unsigned char)def[n]) || def[n] == '_'))
		n++;
	return n;
}

static uint32_t hash_n(const char *s, size_t n)
{
	return fnv1a32_bytes(FNV1A32_BASIS, s, n);
}

static size_t slot_of(const struct def_table *t, const char *name, size_t n,
		      uint32_t hash)
{
	size_t i = hash & (t->nslots - 1);
	while (t->defs[i].def &&
	       !(t->defs[i].hash == hash && t->defs[i].len == n &&
		 memcmp(t->defs[i].def, name, n) == 0))
		i = (i + 1) & (t->nslots - 1);
	return i;
}

static int grow(struct def_table *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 64;
	struct def_slot *defs = calloc(nslots, sizeof(*defs));
	if (!defs)
		return 0;
	for (size_t i = 0; i < t->nslots; i++) {
		if (!t->defs[i].def)
			continue;
		size_t j = t->defs[i].hash & (nslots - 1);
		while (defs[j].def)
			j = (j + 1) & (nslots - 1);
		defs[j] = t->defs[i];
	}
	free(t->defs);
	t->defs = defs;
	t->nslots = nslots;
	return 1;
}

/* Last definition wins; #undef removes by leaving a tombstone-free gap is
 * not possible with linear probing, so an undef stores the bare name, which
 * the evaluator treats as undefined (no body). */
static int table_put(struct def_table *t, const char *def, uint32_t hash,
		     uint32_t len)
{
	if ((t->count + 1) * 2 > t->nslots && !grow(t))
		return 0;
	size_t i = slot_of(t, def, len, hash);
	if (!t->defs[i].def)
		t->count++;
	t->defs[i] = (struct def_slot){def, hash, len};
	return 1;
}

/* The definition (or undef) of name in t, or NULL when t has none. */
static const char *table_get(const struct def_table *t, const char *name,
			     size_t n, uint32_t hash)
{
	return t->count ? t->defs[slot_of(t, name, n, hash)].def : NULL;
}

/* Header macros sit in shared units the CU imports (DW_MACRO_import):
 * their offsets are queued and read after the unit itself, the last
 * definition of a name in that order winning. */
#define MAX_IMPORTS 4096

/* An imported macro unit, read once for all the units importing it (the
 * units of a library import mostly the same headers' units): its own
 * definitions and the units it imports in turn, in order. */
struct imported {
	Dwarf_Off off;
	struct def_table table;
	Dwarf_Off *imports;
	size_t nimports;
};

struct dw_macro_cache {
	struct imported **units;
	size_t count, cap;
};

/* The macros of one unit: its own macro unit's definitions, then those of
 * the units it imports (directly or not), in the order they are applied;
 * a name's definition is the one in the last of them that has it. */
struct dw_macros {
	struct dw_index *idx;
	struct def_table own;
	const struct imported **sources;
	size_t nsources;
	size_t count; /* definitions (and undefs) in all of them */
};

/* Reading one macro unit: its table, and the units it imports in order
 * (each once), up to MAX_IMPORTS. */
struct collect {
	struct def_table *table;
	int failed;
	Dwarf_Off *imports;
	size_t nimports, cap;
};

static int queue_import(struct collect *c, Dwarf_Off off)
{
	for (size_t i = 0; i < c->nimports; i++)
		if (c->imports[i] == off)
			return 1;
	if (c->nimports >= MAX_IMPORTS)
		return 1;
	if (c->nimports == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		Dwarf_Off *n = realloc(c->imports, cap * sizeof(*n));
		if (!n)
			return 0;
		c->imports = n;
		c->cap = cap;
	}
	c->imports[c->nimports++] = off;
	return 1;
}

static int collect_macro(Dwarf_Macro *macro, void *arg)
{
	struct collect *c = arg;
	unsigned int opcode;
	const char *str;
	if (dwarf_macro_opcode(macro, &opcode) != 0)
		return DWARF_CB_OK;
	if (opcode == DW_MACRO_import || opcode == DW_MACRO_import_sup) {
		Dwarf_Attribute attr;
		Dwarf_Word off;
		if (dwarf_macro_param(macro, 0, &attr) == 0 &&
		    dwarf_formudata(&attr, &off) == 0 &&
		    !queue_import(c, off)) {
			c->failed = 1;
			return DWARF_CB_ABORT;
		}
		return DWARF_CB_OK;
	}
	if (opcode != DW_MACRO_define && opcode != DW_MACRO_define_strp &&
	    opcode != DW_MACRO_define_strx && opcode != DW_MACRO_define_sup &&
	    opcode != DW_MACRO_undef && opcode != DW_MACRO_undef_strp &&
	    opcode != DW_MACRO_undef_strx && opcode != DW_MACRO_undef_sup)
		return DWARF_CB_OK;
	if (dwarf_macro_param2(macro, NULL, &str) != 0 || !str)
		return DWARF_CB_OK;
	size_t n = name_len(str);
	if (!n || n > UINT32_MAX)
		return DWARF_CB_OK;
	if (!table_put(c->table, str, hash_n(str, n), (uint32_t)n)) {
		c->failed = 1;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

struct dw_macro_cache *dw_macro_cache_create(void)
{
	return calloc(1, sizeof(struct dw_macro_cache));
}

static void imported_free(struct imported *u)
{
	if (!u)
		return;
	free(u->table.defs);
	free(u->imports);
	free(u);
}

void dw_macro_cache_destroy(struct dw_macro_cache *cache)
{
	if (!cache)
		return;
	for (size_t i = 0; i < cache->count; i++)
		imported_free(cache->units[i]);
	free(cache->units);
	free(cache);
}

/* The imported unit at off, read on first use; NULL when out of memory. */
static const struct imported *imported_unit(struct dw_macro_cache *cache,
					    Dwarf *dwarf, Dwarf_Off off)
{
	for (size_t i = 0; i < cache->count; i++)
		if (cache->units[i]->off == off)
			return cache->units[i];
	if (cache->count == cache->cap) {
		size_t cap = cache->cap ? cache->cap * 2 : 512;
		struct imported **n = realloc(cache->units, cap * sizeof(*n));
		if (!n)
			return NULL;
		cache->units = n;
		cache->cap = cap;
	}
	struct imported *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->off = off;
	struct collect c = {.table = &u->table};
	ptrdiff_t t = DWARF_GETMACROS_START;
	do {
		t = dwarf_getmacros_off(dwarf, off, collect_macro, &c, t);
	} while (t > 0);
	u->imports = c.imports;
	u->nimports = c.nimports;
	if (c.failed) {
		imported_free(u);
		return NULL;
	}
	cache->units[cache->count++] = u;
	return u;
}

/* The bytes of .debug_macro, or NULL. */
static Elf_Data *macro_section(Dwarf *dwarf)
{
	Elf *elf = dwarf_getelf(dwarf);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		const char *name;
		if (gelf_getshdr(scn, &shdr) &&
		    (name = elf_strptr(elf, shstrndx, shdr.sh_name)) &&
		    strcmp(name, ".debug_macro") == 0)
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

/* Whether libdw may be handed the macro unit at off. elfutils (0.188 at
 * least) trusts the unit header's opcode_operands_table: an entry for
 * opcode 0 makes it write before a stack array. Compilers never emit that
 * table, so a unit that has one, or whose header does not fit, is refused
 * before libdw sees it. */
static bool macro_unit_safe(Dwarf *dwarf, Dwarf_Off off)
{
	Elf_Data *data = macro_section(dwarf);
	if (!data || !data->d_buf || off > data->d_size ||
	    data->d_size - off < 3)
		return false;
	const uint8_t *p = (const uint8_t *)data->d_buf + off;
	unsigned version = (unsigned)p[0] | (unsigned)p[1] << 8;
	unsigned flags = p[2];
	return (version == 4 || version == 5) && !(flags & 0x4);
}

/* The CU's own macro unit offset (DW_AT_macros or DW_AT_GNU_macros). */
static bool unit_macro_offset(Dwarf_Die *cudie, Dwarf_Off *off)
{
	Dwarf_Attribute attr;
	Dwarf_Word w;
	if (!dwarf_attr(cudie, DW_AT_macros, &attr) &&
	    !dwarf_attr(cudie, DW_AT_GNU_macros, &attr))
		return false;
	if (dwarf_formudata(&attr, &w) != 0)
		return false;
	*off = w;
	return true;
}

struct cs_error *dw_macros_load(struct dw_index *idx,
				struct dw_macro_cache *cache, const char *unit,
				struct dw_macros **ret)
{
	*ret = NULL;
	Dwarf_Die cudie;
	if (!dw_index_unit(idx, unit, &cudie) ||
	    (!dwarf_hasattr(&cudie, DW_AT_macros) &&
	     !dwarf_hasattr(&cudie, DW_AT_GNU_macros)))
		return NULL;
	Dwarf *dwarf = dwarf_cu_getdwarf(cudie.cu);
	Dwarf_Off own;
	if (!unit_macro_offset(&cudie, &own) || !macro_unit_safe(dwarf, own))
		return NULL; /* as without macros: the fallback table applies */
	struct dw_macros *m = calloc(1, sizeof(*m));
	if (!m)
		return &cs_error_nomem;
	m->idx = idx;
	struct collect c = {.table = &m->own};
	/* START: accept GNU/DWARF 5 .debug_macro, not just .debug_macinfo. */
	ptrdiff_t token = DWARF_GETMACROS_START;
	do {
		token = dwarf_getmacros(&cudie, collect_macro, &c, token);
	} while (token > 0);
	m->count = m->own.count;
	/* The queue grows as imported units import others (each once). */
	for (size_t i = 0; token == 0 && !c.failed && i < c.nimports; i++) {
		if (!macro_unit_safe(dwarf, c.imports[i]))
			continue;
		const struct imported *u =
			imported_unit(cache, dwarf, c.imports[i]);
		if (!u) {
			c.failed = 1;
			break;
		}
		for (size_t j = 0; j < u->nimports && !c.failed; j++)
			if (!queue_import(&c, u->imports[j]))
				c.failed = 1;
		if (!u->table.count)
			continue;
		if (m->nsources % 64 == 0) {
			const struct imported **n = realloc(
				m->sources, (m->nsources + 64) * sizeof(*n));
			if (!n) {
				c.failed = 1;
				break;
			}
			m->sources = n;
		}
		m->sources[m->nsources++] = u;
		m->count += u->table.count;
	}
	free(c.imports);
	if (c.failed) {
		dw_macros_destroy(m);
		return &cs_error_nomem;
	}
	if (token < 0 || m->count == 0) {
		dw_macros_destroy(m);
		return NULL;
	}
	*ret = m;
	return NULL;
}

void dw_macros_destroy(struct dw_macros *m)
{
	if (!m)
		return;
	free(m->own.defs);
	free(m->sources);
	free(m);
}

static const char *lookup_def(const struct dw_macros *m, const char *name,
			      size_t n)
{
	if (!m || n > UINT32_MAX)
		return NULL;
	uint32_t hash = hash_n(name, n);
	const char *d = NULL;
	for (size_t i = m->nsources; !d && i > 0; i--)
		d = table_get(&m->sources[i - 1]->table, name, n, hash);
	if (!d)
		d = table_get(&m->own, name, n, hash);
	/* An undef entry holds just the name. */
	return d && d[n] != '\0' ? d : NULL;
}

/* ---- expression evaluator ---- */

#define MAX_PARAMS 8
#define MAX_DEPTH 32

struct parser {
	const char *p;
	const struct dw_macros *m;
	const char *params[MAX_PARAMS];
	size_t param_len[MAX_PARAMS];
	int64_t args[MAX_PARAMS];
	size_t nparams;
	int depth;
	int failed;
};

static int64_t parse_expr(struct parser *ps);
static struct cs_error *eval_macro(const struct dw_macros *m, const char *name,
				   size_t n, const int64_t *args, size_t nargs,
				   int depth, int64_t *ret);

static void skip_ws(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

static int accept(struct parser *ps, const char *tok)
{
	skip_ws(ps);
	size_t n = strlen(tok);
	if (strncmp(ps->p, tok, n) != 0)
		return 0;
	/* Don't take "<" from "<<" or "&" from "&&". */
	if (n == 1 &&
	    (tok[0] == '<' || tok[0] == '>' || tok[0] == '&' ||
	     tok[0] == '|') &&
	    ps->p[1] == tok[0])
		return 0;
	if (n == 1 &&
	    (tok[0] == '<' || tok[0] == '>' || tok[0] == '!' ||
	     tok[0] == '=') &&
	    ps->p[1] == '=')
		return 0;
	ps->p += n;
	return 1;
}

static int param_index(const struct parser *ps, const char *name, size_t n)
{
	for (size_t i = 0; i < ps->nparams; i++)
		if (ps->param_len[i] == n &&
		    memcmp(ps->params[i], name, n) == 0)
			return (int)i;
	return -1;
}

static int is_cast(struct parser *ps)
{
	/* "(" type-words and "*"s ")" followed by something to cast. */
	const char *q = ps->p;
	int words = 0;
	for (;;) {
		while (isspace((unsigned char)*q))
			q++;
		if (*q == ')')
			break;
		if (*q == '*') {
			q++;
			continue;
		}
		size_t n = name_len(q);
		if (!n || isdigit((unsigned char)*q) ||
		    param_index(ps, q, n) >= 0 || lookup_def(ps->m, q, n))
			return 0;
		q += n;
		words++;
	}
	if (!words)
		return 0;
	const char *after = q + 1;
	while (isspace((unsigned char)*after))
		after++;
	if (!*after || strchr(")|&^+*/%<>=?:,", *after))
		return 0; /* "(X) + 1": X is a value, not a type */
	ps->p = q + 1;
	return 1;
}

static int64_t parse_number(struct parser *ps)
{
	char *end;
	unsigned long long v = strtoull(ps->p, &end, 0);
	if (end == ps->p) {
		ps->failed = 1;
		return 0;
	}
	while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
		end++;
	ps->p = end;
	return (int64_t)v;
}

static int64_t parse_unary(struct parser *ps);

static int64_t parse_identifier(struct parser *ps)
{
	const char *name = ps->p;
	size_t n = name_len(name);
	ps->p += n;
	int pi = param_index(ps, name, n);
	if (pi >= 0)
		return ps->args[pi];
	int64_t args[MAX_PARAMS];
	size_t nargs = 0;
	skip_ws(ps);
	const char *def = lookup_def(ps->m, name, n);
	if (def && def[n] == '(' && *ps->p == '(') {
		ps->p++;
		if (!accept(ps, ")")) {
			do {
				if (nargs == MAX_PARAMS) {
					ps->failed = 1;
					return 0;
				}
				args[nargs++] = parse_expr(ps);
			} while (accept(ps, ","));
			if (!accept(ps, ")"))
				ps->failed = 1;
		}
	}
	int64_t v = 0;
	struct cs_error *err =
		eval_macro(ps->m, name, n, args, nargs, ps->depth + 1, &v);
	if (err) {
		/* Not a macro: maybe an enumerator named in the body. */
		cs_error_destroy(err);
		char buf[128];
		if (n < sizeof(buf) && ps->m) {
			memcpy(buf, name, n);
			buf[n] = '\0';
			if (dw_index_find(ps->m->idx, DW_NAME_ENUMERATOR, buf,
					  NULL, 1, NULL, &v))
				return v;
		}
		ps->failed = 1;
	}
	return v;
}

static int64_t parse_primary(struct parser *ps)
{
	skip_ws(ps);
	if (*ps->p == '(') {
		ps->p++;
		if (is_cast(ps))
			return parse_unary(ps);
		int64_t v = parse_expr(ps);
		if (!accept(ps, ")"))
			ps->failed = 1;
		return v;
	}
	if (isdigit((unsigned char)*ps->p))
		return parse_number(ps);
	if (isalpha((unsigned char)*ps->p) || *ps->p == '_')
		return parse_identifier(ps);
	ps->failed = 1;
	return 0;
}

static int64_t parse_unary(struct parser *ps)
{
	if (ps->failed)
		return 0;
	if (accept(ps, "-"))
		return (int64_t)(0 - (uint64_t)parse_unary(ps));
	if (accept(ps, "+"))
		return parse_unary(ps);
	if (accept(ps, "~"))
		return ~parse_unary(ps);
	if (accept(ps, "!"))
		return !parse_unary(ps);
	return parse_primary(ps);
}

/* Binary operators by precedence level, lowest first. */
static const char *const levels[][4] = {
	{"||"},
	{"&&"},
	{"|"},
	{"^"},
	{"&"},
	{"==", "!="},
	{"<=", ">=", "<", ">"},
	{"<<", ">>"},
	{"+", "-"},
	{"*", "/", "%"},
};
#define NLEVELS (sizeof(levels) / sizeof(levels[0]))

static int64_t apply(const char *op, int64_t a, int64_t b, int *failed)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	switch (op[0]) {
	case '|':
		return op[1] ? (a || b) : (int64_t)(ua | ub);
	case '&':
		return op[1] ? (a && b) : (int64_t)(ua & ub);
	case '^':
		return (int64_t)(ua ^ ub);
	case '=':
		return a == b;
	case '!':
		return a != b;
	case '<':
		if (op[1] == '<')
			return ub < 64 ? (int64_t)(ua << ub) : 0;
		return op[1] ? a <= b : a < b;
	case '>':
		if (op[1] == '>')
			/* arithmetic, spelled out: >> of a negative
			 * value is the compiler's choice in C */
			return ub >= 64 ? 0 : a < 0 ? ~(~a >> ub) : a >> ub;
		return op[1] ? a >= b : a > b;
	case '+':
		return (int64_t)(ua + ub);
	case '-':
		return (int64_t)(ua - ub);
	case '*':
		return (int64_t)(ua * ub);
	case '/':
	case '%':
		if (b == 0 || (a == INT64_MIN && b == -1)) {
			*failed = 1;
			return 0;
		}
		return op[0] == '/' ? a / b : a % b;
	}
	*failed = 1;
	return 0;
}

static int64_t parse_level(struct parser *ps, size_t level)
{
	if (level == NLEVELS)
		return parse_unary(ps);
	int64_t v = parse_level(ps, level + 1);
	for (;;) {
		if (ps->failed)
			return 0;
		const char *op = NULL;
		for (size_t i = 0; i < 4 && levels[level][i]; i++)
			if (accept(ps, levels[level][i])) {
				op = levels[level][i];
				break;
			}
		if (!op)
			return v;
		v = apply(op, v, parse_level(ps, level + 1), &ps->failed);
	}
}

static int64_t parse_expr(struct parser *ps)
{
	if (++ps->depth > MAX_DEPTH) {
		ps->failed = 1;
		return 0;
	}
	int64_t v = parse_level(ps, 0);
	if (accept(ps, "?")) {
		int64_t a = parse_expr(ps);
		if (!accept(ps, ":"))
			ps->failed = 1;
		int64_t b = parse_expr(ps);
		v = v ? a : b;
	}
	ps->depth--;
	return v;
}

static struct cs_error *eval_body(struct parser *ps, const char *what,
				  int64_t *ret)
{
	int64_t v = parse_expr(ps);
	skip_ws(ps);
	if (ps->failed || *ps->p)
		return cs_error_create(CS_ERR_FORMAT,
				       "macro %s: not an integer expression",
				       what);
	*ret = v;
	return NULL;
}

static struct cs_error *eval_macro(const struct dw_macros *m, const char *name,
				   size_t n, const int64_t *args, size_t nargs,
				   int depth, int64_t *ret)
{
	const char *def = lookup_def(m, name, n);
	if (!def || depth > MAX_DEPTH)
		return cs_error_create(CS_ERR_LOOKUP, "macro %.*s not defined",
				       (int)n, name);
	struct parser ps = {.m = m, .depth = depth};
	const char *p = def + n;
	if (*p == '(') {
		p++;
		while (*p && *p != ')') {
			while (*p == ' ' || *p == ',')
				p++;
			size_t len = name_len(p);
			if (!len || ps.nparams == MAX_PARAMS)
				break;
			ps.params[ps.nparams] = p;
			ps.param_len[ps.nparams] = len;
			ps.args[ps.nparams] =
				ps.nparams < nargs ? args[ps.nparams] : 0;
			ps.nparams++;
			p += len;
			while (*p == ' ')
				p++;
		}
		if (*p == ')')
			p++;
		if (ps.nparams != nargs)
			return cs_error_create(CS_ERR_FORMAT,
					       "macro %.*s takes %zu arguments",
					       (int)n, name, ps.nparams);
	}
	ps.p = p;
	char what[128];
	snprintf(what, sizeof(what), "%.*s", (int)(n < 100 ? n : 100), name);
	return eval_body(&ps, what, ret);
}

struct cs_error *dw_macros_eval(const struct dw_macros *m, const char *name,
				const int64_t *args, size_t nargs, int64_t *ret)
{
	return eval_macro(m, name, strlen(name), args, nargs, 0, ret);
}

struct cs_error *dw_macro_eval_text(const struct dw_macros *m, const char *text,
				    int64_t *ret)
{
	struct parser ps = {.p = text, .m = m};
	return eval_body(&ps, text, ret);
}
