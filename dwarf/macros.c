#include "macros.h"

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

/* One table per unit: macro name -> definition text ("NAME(p) body"). */
struct dw_macros {
	struct dw_index *idx;
	struct def_slot *defs; /* open addressing; strings owned by libdw */
	size_t nslots, count;
};

/* A unit of Ruby's holds 5,000 to 7,500 macros: room for them at once. */
#define FIRST_SLOTS 16384

static size_t name_len(const char *def)
{
	size_t n = 0;
	while (def[n] && (isalnum((unsigned char)def[n]) || def[n] == '_'))
		n++;
	return n;
}

static uint32_t hash_n(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static size_t slot_of(const struct dw_macros *m, const char *name, size_t n,
		      uint32_t hash)
{
	size_t i = hash & (m->nslots - 1);
	while (m->defs[i].def &&
	       !(m->defs[i].hash == hash && m->defs[i].len == n &&
		 memcmp(m->defs[i].def, name, n) == 0))
		i = (i + 1) & (m->nslots - 1);
	return i;
}

static int grow(struct dw_macros *m)
{
	size_t nslots = m->nslots ? m->nslots * 2 : FIRST_SLOTS;
	struct def_slot *old = m->defs;
	size_t oldn = m->nslots;
	m->defs = calloc(nslots, sizeof(*m->defs));
	if (!m->defs) {
		m->defs = old;
		return 0;
	}
	m->nslots = nslots;
	for (size_t i = 0; i < oldn; i++) {
		if (!old[i].def)
			continue;
		size_t j = old[i].hash & (nslots - 1);
		while (m->defs[j].def)
			j = (j + 1) & (nslots - 1);
		m->defs[j] = old[i];
	}
	free(old);
	return 1;
}

/* Header macros sit in shared units the CU imports (DW_MACRO_import):
 * their offsets are queued and read after the unit itself. */
#define MAX_IMPORTS 4096

/* What one macro entry means here: a definition or #undef (def, its
 * text), an import (def NULL, the unit's offset), or nothing to keep. */
struct macro_event {
	const char *def;
	Dwarf_Off import;
	uint32_t hash, len; /* of a definition's name */
};

/* The events of one imported macro unit, in order, as libdw gave them.
 * The units of a library import mostly the same headers' units: each is
 * read from .debug_macro once and replayed for every unit importing it. */
struct imported {
	Dwarf_Off off;
	struct macro_event *events;
	size_t count, cap;
};

struct dw_macro_cache {
	struct imported *units;
	size_t count, cap;
};

struct collect {
	struct dw_macros *m;
	int failed;
	Dwarf_Off imports[MAX_IMPORTS];
	size_t nimports;
};

/* 1 with *ev set for an entry to keep, 0 for one to skip (also a
 * definition without a name). */
static int macro_event(Dwarf_Macro *macro, struct macro_event *ev)
{
	unsigned int opcode;
	const char *str;
	if (dwarf_macro_opcode(macro, &opcode) != 0)
		return 0;
	if (opcode == DW_MACRO_import || opcode == DW_MACRO_import_sup) {
		Dwarf_Attribute attr;
		Dwarf_Word off;
		if (dwarf_macro_param(macro, 0, &attr) != 0 ||
		    dwarf_formudata(&attr, &off) != 0)
			return 0;
		*ev = (struct macro_event){NULL, off, 0, 0};
		return 1;
	}
	if (opcode != DW_MACRO_define && opcode != DW_MACRO_define_strp &&
	    opcode != DW_MACRO_define_strx && opcode != DW_MACRO_define_sup &&
	    opcode != DW_MACRO_undef && opcode != DW_MACRO_undef_strp &&
	    opcode != DW_MACRO_undef_strx && opcode != DW_MACRO_undef_sup)
		return 0;
	if (dwarf_macro_param2(macro, NULL, &str) != 0 || !str)
		return 0;
	size_t n = name_len(str);
	if (!n || n > UINT32_MAX)
		return 0;
	*ev = (struct macro_event){str, 0, hash_n(str, n), (uint32_t)n};
	return 1;
}

/* Last definition wins; #undef removes by leaving a tombstone-free gap is
 * not possible with linear probing, so an undef stores the bare name, which
 * the evaluator treats as undefined (no body). */
static int apply_event(struct collect *c, const struct macro_event *ev)
{
	if (!ev->def) {
		for (size_t i = 0; i < c->nimports; i++)
			if (c->imports[i] == ev->import)
				return 1;
		if (c->nimports < MAX_IMPORTS)
			c->imports[c->nimports++] = ev->import;
		return 1;
	}
	struct dw_macros *m = c->m;
	if ((m->count + 1) * 2 > m->nslots && !grow(m)) {
		c->failed = 1;
		return 0;
	}
	size_t i = slot_of(m, ev->def, ev->len, ev->hash);
	if (!m->defs[i].def)
		m->count++;
	m->defs[i] = (struct def_slot){ev->def, ev->hash, ev->len};
	return 1;
}

static int collect_macro(Dwarf_Macro *macro, void *arg)
{
	struct macro_event ev;
	if (!macro_event(macro, &ev))
		return DWARF_CB_OK;
	return apply_event(arg, &ev) ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* Recording an imported unit: -1 in cap when out of memory. */
static int record_macro(Dwarf_Macro *macro, void *arg)
{
	struct imported *u = arg;
	struct macro_event ev;
	if (!macro_event(macro, &ev))
		return DWARF_CB_OK;
	if (u->count == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 256;
		struct macro_event *e = realloc(u->events, cap * sizeof(*e));
		if (!e) {
			u->cap = (size_t)-1;
			return DWARF_CB_ABORT;
		}
		u->events = e;
		u->cap = cap;
	}
	u->events[u->count++] = ev;
	return DWARF_CB_OK;
}

struct dw_macro_cache *dw_macro_cache_create(void)
{
	return calloc(1, sizeof(struct dw_macro_cache));
}

void dw_macro_cache_destroy(struct dw_macro_cache *cache)
{
	if (!cache)
		return;
	for (size_t i = 0; i < cache->count; i++)
		free(cache->units[i].events);
	free(cache->units);
	free(cache);
}

/* The events of the imported unit at off, read on first use; NULL when
 * out of memory. */
static const struct imported *imported_unit(struct dw_macro_cache *cache,
					    Dwarf *dwarf, Dwarf_Off off)
{
	for (size_t i = 0; i < cache->count; i++)
		if (cache->units[i].off == off)
			return &cache->units[i];
	if (cache->count == cache->cap) {
		size_t cap = cache->cap ? cache->cap * 2 : 512;
		struct imported *u = realloc(cache->units, cap * sizeof(*u));
		if (!u)
			return NULL;
		cache->units = u;
		cache->cap = cap;
	}
	struct imported *u = &cache->units[cache->count];
	*u = (struct imported){.off = off};
	ptrdiff_t t = DWARF_GETMACROS_START;
	do {
		t = dwarf_getmacros_off(dwarf, off, record_macro, u, t);
	} while (t > 0);
	if (u->cap == (size_t)-1) {
		free(u->events);
		return NULL;
	}
	cache->count++;
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

struct cs_error *dw_macros_load(struct dw_index *idx, const char *unit,
				struct dw_macros **ret)
{
	struct dw_macro_cache *cache = dw_macro_cache_create();
	if (!cache)
		return &cs_error_nomem;
	struct cs_error *err = dw_macros_load_cached(idx, cache, unit, ret);
	dw_macro_cache_destroy(cache);
	return err;
}

struct cs_error *dw_macros_load_cached(struct dw_index *idx,
				       struct dw_macro_cache *cache,
				       const char *unit, struct dw_macros **ret)
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
	if (!m || !grow(m)) {
		free(m);
		return &cs_error_nomem;
	}
	m->idx = idx;
	struct collect *c = calloc(1, sizeof(*c));
	if (!c) {
		dw_macros_destroy(m);
		return &cs_error_nomem;
	}
	c->m = m;
	/* START: accept GNU/DWARF 5 .debug_macro, not just .debug_macinfo. */
	ptrdiff_t token = DWARF_GETMACROS_START;
	do {
		token = dwarf_getmacros(&cudie, collect_macro, c, token);
	} while (token > 0);
	for (size_t i = 0; token == 0 && !c->failed && i < c->nimports; i++) {
		if (!macro_unit_safe(dwarf, c->imports[i]))
			continue;
		const struct imported *u =
			imported_unit(cache, dwarf, c->imports[i]);
		if (!u) {
			c->failed = 1;
			break;
		}
		for (size_t e = 0; e < u->count && !c->failed; e++)
			apply_event(c, &u->events[e]);
	}
	int failed = c->failed;
	free(c);
	if (failed) {
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
	free(m->defs);
	free(m);
}

static const char *lookup_def(const struct dw_macros *m, const char *name,
			      size_t n)
{
	if (!m)
		return NULL;
	if (n > UINT32_MAX)
		return NULL;
	const char *d = m->defs[slot_of(m, name, n, hash_n(name, n))].def;
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
