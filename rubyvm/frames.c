/* Walking the control frames of one execution context.
 *
 * Frames run from ec->cfp (innermost) towards the end of the VM stack; the
 * last one is the dummy frame rb_ec_initialize_vm_stack pushes, which
 * Ruby's own backtraces skip too (backtrace_each in 2.7,
 * rb_ec_partial_backtrace_object in 3.x). A frame with an iseq and a pc is
 * a Ruby frame; a frame whose type is CFUNC is a C method; everything else
 * (ifunc, dummy, a frame still being pushed) is skipped, as Ruby does. A C
 * frame shows the path and line of the nearest older Ruby frame. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
#include "session.h"

/* How many environments a method-entry search climbs before giving up. */
#define MAX_EP_DEPTH 4096

void rv_frame_free(struct rv_frame *f)
{
	for (size_t i = 0; i < f->nlocals; i++) {
		free(f->locals[i].name);
		free(f->locals[i].value);
		free(f->locals[i].class_name);
	}
	free(f->locals);
	free(f->locals_error);
	free(f->self_value);
	free(f->self_class);
	if (f->borrowed)
		return;
	free(f->label);
	free(f->path);
	free(f->realpath);
	free(f->qualified);
	free(f->stable);
	free(f->error);
}

static struct cs_error *read_ep(struct rv_session *s, uint64_t ep,
				int64_t index, uint64_t *ret)
{
	return rv_read_u64(s, ep + (uint64_t)(index * RV_VAL(s, value_size)),
			   ret);
}

/* The slots of the frame data beside an env's ep that the frame walk
 * reads (its flags, method entry or cref, specval), read in one span; a
 * slot the span does not hold (it could not be read whole) is read on its
 * own, so what fails is what the slot reads fail on. */
#define ENV_SPAN 33 /* the indexes lie in [-16, 16] (check_layout) */
struct env_data {
	uint64_t ep;
	int64_t lo; /* the index of slots[0] */
	int64_t n;  /* slots read; 0: none */
	uint64_t slots[ENV_SPAN];
};

static void env_read(struct rv_session *s, uint64_t ep, struct env_data *e)
{
	const int64_t idx[] = {RV_VAL(s, env_index_flags),
			       RV_VAL(s, env_index_me_cref),
			       RV_VAL(s, env_index_specval)};
	int64_t lo = idx[0], hi = idx[0];
	for (size_t i = 1; i < sizeof(idx) / sizeof(*idx); i++) {
		lo = idx[i] < lo ? idx[i] : lo;
		hi = idx[i] > hi ? idx[i] : hi;
	}
	e->ep = ep;
	e->lo = lo;
	e->n = 0;
	if (hi - lo < ENV_SPAN &&
	    rv_try_read(s, ep + (uint64_t)(lo * RV_VAL(s, value_size)),
			e->slots, (size_t)(hi - lo + 1) * sizeof(*e->slots)))
		e->n = hi - lo + 1;
}

static struct cs_error *env_slot(struct rv_session *s, const struct env_data *e,
				 int64_t index, uint64_t *ret)
{
	if (index < e->lo || index - e->lo >= e->n)
		return read_ep(s, e->ep, index, ret);
	*ret = e->slots[index - e->lo];
	return NULL;
}

/* What decoding a control frame reads through its env, each read once:
 * the env's slots, the method entry rb_vm_frame_method_entry finds from
 * it, and that method's owner (a failed read is not kept: each asking
 * reads again, and fails as it did). */
struct frame_env {
	struct env_data env;
	bool me_known, owner_known;
	uint64_t me, owner;
};

/* A method entry if v is one (imemo_ment), following vm_svar at the local
 * env; 0 for none. */
static struct cs_error *check_me(struct rv_session *s, uint64_t v, bool local,
				 uint64_t *ret)
{
	*ret = 0;
	if (!v || rv_special_const(s, v))
		return NULL;
	int64_t type;
	struct cs_error *err = rv_imemo_type(s, v, &type);
	if (err)
		return err;
	if (type == RV_VAL(s, imemo_ment)) {
		*ret = v;
	} else if (type == RV_VAL(s, imemo_svar) && local &&
		   RV_HAS(s, svar_cref_or_me)) {
		uint64_t inner;
		if ((err = rv_read_member(s, v, RVL_svar_cref_or_me, &inner)))
			return err;
		return check_me(s, inner, false, ret);
	}
	return NULL;
}

/* rb_vm_frame_method_entry: climb the env chain to the local env. */
static struct cs_error *climb_method_entry(struct rv_session *s,
					   const struct env_data *first,
					   uint64_t *ret)
{
	uint64_t local = (uint64_t)RV_VAL(s, env_flag_local);
	struct env_data outer;
	const struct env_data *e = first;
	for (int depth = 0; depth < MAX_EP_DEPTH; depth++) {
		uint64_t flags, me_cref, specval, ep;
		struct cs_error *err;
		if ((err = env_slot(s, e, RV_VAL(s, env_index_flags),
				    &flags)) ||
		    (err = env_slot(s, e, RV_VAL(s, env_index_me_cref),
				    &me_cref)))
			return err;
		bool is_local = flags & local;
		if ((err = check_me(s, me_cref, is_local, ret)))
			return err;
		if (*ret || is_local)
			return NULL;
		if ((err = env_slot(s, e, RV_VAL(s, env_index_specval),
				    &specval)))
			return err;
		ep = specval & (uint64_t)RV_VAL(s, guarded_ptr_mask);
		/* a non-local env always names the env it is nested in */
		if (!ep)
			return cs_error_create(CS_ERR_CORRUPT,
					       "environment chain ends before "
					       "its local env");
		env_read(s, ep, &outer);
		e = &outer;
	}
	return cs_error_create(CS_ERR_LIMIT, "environment chain too long");
}

static struct cs_error *frame_method_entry(struct rv_session *s,
					   struct frame_env *fe, uint64_t *ret)
{
	if (fe->me_known) {
		*ret = fe->me;
		return NULL;
	}
	struct cs_error *err = climb_method_entry(s, &fe->env, ret);
	if (!err) {
		fe->me_known = true;
		fe->me = *ret;
	}
	return err;
}

/* The method entry of the control frame at cfp, as frame decoding finds
 * it (rb_vm_frame_method_entry); 0 for none. */
struct cs_error *rv_frame_method_entry(struct rv_session *s, uint64_t cfp,
				       uint64_t *ret)
{
	uint64_t ep;
	struct env_data env;
	struct cs_error *err = rv_read_member(s, cfp, RVL_cfp_ep, &ep);
	if (err)
		return err;
	env_read(s, ep, &env);
	return climb_method_entry(s, &env, ret);
}

/* The owner of the frame's method entry me (frame_method_entry's). */
static struct cs_error *frame_owner(struct rv_session *s, struct frame_env *fe,
				    uint64_t me, uint64_t *ret)
{
	if (fe->owner_known) {
		*ret = fe->owner;
		return NULL;
	}
	struct cs_error *err = rv_read_member(s, me, RVL_me_owner, ret);
	if (!err) {
		fe->owner_known = true;
		fe->owner = *ret;
	}
	return err;
}

/* a[0..alen) b c in a new string: a frame's names are built thousands of
 * times per report, and asprintf's formatting was a large share of it. */
char *rv_join3(const char *a, size_t alen, const char *b, const char *c)
{
	size_t bl = strlen(b), cl = strlen(c);
	char *out = malloc(alen + bl + cl + 1);
	if (!out)
		return NULL;
	/* the last copy brings the terminator */
	memcpy(out, a, alen);
	// NOLINTNEXTLINE(bugprone-not-null-terminated-result)
	memcpy(out + alen, b, bl);
	memcpy(out + alen + bl, c, cl + 1);
	return out;
}

/* "Owner#name" or "Owner.name" for the method entry me, the owner named
 * in style (qualified or stable). */
static struct cs_error *method_qualified(struct rv_session *s,
					 struct frame_env *fe, uint64_t me,
					 const char *name,
					 enum rv_name_style style, char **ret)
{
	uint64_t owner;
	char *owner_name = NULL;
	bool dot = false;
	struct cs_error *err;
	if ((err = frame_owner(s, fe, me, &owner)) ||
	    (err = style == RV_NAME_STABLE
			   ? rv_stable_owner_name(s, owner, me, &owner_name,
						  &dot)
			   : rv_owner_name(s, owner, &owner_name, &dot)))
		return err;
	*ret = rv_join3(owner_name, strlen(owner_name), dot ? "." : "#", name);
	free(owner_name);
	return *ret ? NULL : &cs_error_nomem;
}

/* The qualified (or stable) name of a Ruby frame, as Ruby 3.4 builds
 * labels (calculate_iseq_label): when the frame's local iseq is a method,
 * the method name in the label becomes Owner#method, keeping the block
 * prefix ("block (2 levels) in Worker#run"). Frames whose local iseq is
 * not a method (<main>, class bodies, define_method bodies) keep the
 * label. */
static char *ruby_qualified(struct rv_session *s,
			    const struct rv_iseq_info *info,
			    struct frame_env *fe, enum rv_name_style style,
			    bool *built)
{
	uint64_t me = 0;
	char *method = NULL, *out = NULL;
	const char *label = info->label, *base = info->base_label;
	if (info->local_type != RV_VAL(s, iseq_type_method) || !base)
		return strdup(label);
	size_t ll = strlen(label), bl = strlen(base);
	struct cs_error *err = frame_method_entry(s, fe, &me);
	if (err || !me || bl > ll || strcmp(label + ll - bl, base) != 0 ||
	    (err = method_qualified(s, fe, me, base, style, &method))) {
		if (err)
			*built = false; /* the label stands in for it */
		cs_error_destroy(err);
		return strdup(label);
	}
	out = rv_join3(label, ll - bl, method, "");
	free(method);
	return out;
}

static int set_error(struct rv_frame *f, struct cs_error *err)
{
	if (!f->error)
		f->error = strdup(err->message);
	cs_error_destroy(err);
	return 0;
}

/* The innermost frame may be running JIT code, which saves cfp->pc only
 * before calls that can look at it (YJIT's jit_save_pc, 4.0's ZJIT): its
 * pc can be left over from an older frame in the same slot. Such a pc is
 * read as no pc at all, as calc_pos in vm_backtrace.c reads a NULL one:
 * line 0 for a top-level iseq, else the iseq's first line. A pc from
 * ZJIT's JIT frame record (jit_frames.c) is always current: one outside
 * its iseq is an error (the line lookup says so). */
static bool stale_pc(struct rv_session *s, const struct rv_iseq_info *info,
		     uint64_t pc, bool innermost, bool jit_record)
{
	return innermost && !jit_record && !rv_iseq_pc_inside(s, info, pc);
}

/* Text from target memory that is not valid UTF-8 is not believed: the
 * frame says so, and the bad bytes never reach the output. */
static void check_text(struct rv_frame *f, const char *what, char *text)
{
	if (!text || utf8_scrub(text) || f->error)
		return;
	if (asprintf(&f->error, "%s is not valid UTF-8", what) < 0)
		f->error = NULL;
}

/* The iseq whose code_location bounds the lines iseq's instructions may
 * carry: a rescue or ensure clause's spans only the clause's body, yet its
 * instructions can carry the line of the begin that holds it (an ensure
 * clause running a begin/rescue of its own reports the begin's line), so
 * the method's or block's it belongs to bounds it. */
static const struct rv_iseq_info *line_bounds(struct rv_session *s,
					      const struct rv_iseq_info *info)
{
	for (int depth = 0;
	     depth < 64 && info->parent_iseq && rv_bt_rescue_or_ensure(s, info);
	     depth++) {
		const struct rv_iseq_info *parent;
		if (rv_failed(rv_iseq_lookup(s, info->parent_iseq, &parent)))
			break;
		info = parent;
	}
	return info;
}

/* A line outside the lines the iseq spans comes from a corrupt line table
 * or a pc that is not what it seems. */
static bool line_outside(const struct rv_iseq_info *info, int line)
{
	int first = info->code_first_line, last = info->code_last_line;
	if (line == 0 || (first <= 0 && last <= 0))
		return false;
	return line < first || line > last || line < 0;
}

static void check_line(struct rv_frame *f, const struct rv_iseq_info *info)
{
	if (f->error || !line_outside(info, f->lineno))
		return;
	if (asprintf(&f->error, "line %d outside the iseq's lines %d-%d",
		     f->lineno, info->code_first_line,
		     info->code_last_line) < 0)
		f->error = NULL;
}

/* The label of a Ruby frame as this Ruby builds it (backtrace_rules.c):
 * the iseq's label field, or (3.4+) calculate_iseq_label's with the
 * method's owner; a frame shown as a C method is named by its method. */
static struct cs_error *ruby_label(struct rv_session *s, uint64_t iseq,
				   const struct rv_iseq_info *info,
				   struct frame_env *fe, struct rv_frame *f)
{
	uint64_t me = 0, owner = 0, def, id;
	struct cs_error *err;
	if (!s->rules.owner_labels && !f->c_like) {
		f->label = strdup(info->label);
		return f->label ? NULL : &cs_error_nomem;
	}
	if ((err = frame_method_entry(s, fe, &me)) ||
	    (me && (err = frame_owner(s, fe, me, &owner))))
		return err;
	if (f->c_like) {
		char *name = NULL;
		if (!me)
			return cs_error_create(CS_ERR_CORRUPT,
					       "a frame shown as a C method "
					       "without a method entry");
		if ((err = rv_read_member(s, me, RVL_me_def, &def)) ||
		    (err = rv_read_member(s, def, RVL_def_original_id, &id)) ||
		    (err = rv_id_name(s, id, &name)))
			return err;
		if (!s->rules.owner_labels) {
			f->label = name;
			return NULL;
		}
		uint64_t label_owner;
		if (!(err = rv_bt_label_owner(s, me, owner, &label_owner)))
			err = rv_bt_method_name(s, label_owner, name,
						&f->label);
		free(name);
		return err;
	}
	uint64_t label_owner;
	if ((err = rv_bt_label_owner(s, me, owner, &label_owner)) ||
	    (err = rv_bt_iseq_label(s, me, label_owner, iseq, RV_NAME_RUBY,
				    &f->label)))
		return err;
	/* the qualified and stable names follow the same iseqs (an eval's
	 * label field can read "<compiled>" where its method is meant) */
	char *qualified, *stable;
	if ((err = rv_bt_iseq_label(s, me, owner, iseq, RV_NAME_QUALIFIED,
				    &qualified)))
		return err;
	free(f->qualified);
	f->qualified = qualified;
	if ((err = rv_bt_iseq_label(s, me, owner, iseq, RV_NAME_STABLE,
				    &stable)))
		return err;
	free(f->stable);
	f->stable = stable;
	return NULL;
}

/* 4.0 shows a dummy frame that has an iseq at its iseq's first line, as a
 * frame without a pc (rb_ec_partial_backtrace_object). */
static bool dummy_frame(struct rv_session *s, const struct frame_env *fe)
{
	uint64_t flags;
	return s->rules.internal_as_c && RV_HAS(s, frame_magic_dummy) &&
	       !rv_failed(env_slot(s, &fe->env, RV_VAL(s, env_index_flags),
				   &flags)) &&
	       (flags & (uint64_t)RV_VAL(s, frame_magic_mask)) ==
		       (uint64_t)RV_VAL(s, frame_magic_dummy);
}

static void ruby_frame(struct rv_session *s, uint64_t iseq, uint64_t pc,
		       struct frame_env *fe, bool innermost, bool jit_record,
		       struct rv_frame *f)
{
	const struct rv_iseq_info *info;
	struct cs_error *err = rv_iseq_lookup(s, iseq, &info);
	f->kind = RV_FRAME_RUBY;
	f->iseq = iseq;
	f->pc = pc;
	if (err) {
		f->label = strdup("?");
		set_error(f, err);
		return;
	}
	f->pc_stale = stale_pc(s, info, pc, innermost, jit_record);
	bool no_pc = f->pc_stale || dummy_frame(s, fe);
	if ((err = rv_line_lookup(s, iseq, info, no_pc ? 0 : pc, &f->lineno)))
		set_error(f, err);
	f->c_like = rv_bt_c_like(s, info);
	f->rescue_or_ensure = rv_bt_rescue_or_ensure(s, info);
	uint64_t me = 0;
	bool memo = !rv_failed(frame_method_entry(s, fe, &me));
	bool named = memo && rv_frame_names_get(s, iseq, me, f);
	if (!named && (err = ruby_label(s, iseq, info, fe, f))) {
		memo = false;
		set_error(f, err);
		if (!f->label)
			f->label = strdup(info->label);
	}
	/* 3.4+ labels built the qualified and stable names with the label */
	if (!f->qualified)
		f->qualified =
			ruby_qualified(s, info, fe, RV_NAME_QUALIFIED, &memo);
	if (!f->stable)
		f->stable = ruby_qualified(s, info, fe, RV_NAME_STABLE, &memo);
	/* kept before the checks below, which each frame makes of its own */
	if (!named && memo && f->label && f->qualified && f->stable)
		rv_frame_names_put(s, iseq, me, f);
	f->path = strdup(info->path);
	f->realpath = info->realpath ? strdup(info->realpath) : NULL;
	check_line(f, line_bounds(s, info));
	/* label and path were checked (and scrubbed) with the iseq */
	if (!f->error && (!info->label_clean || !info->path_clean))
		f->error = strdup(!info->label_clean
					  ? "label is not valid UTF-8"
					  : "path is not valid UTF-8");
	check_text(f, "qualified name", f->qualified);
	check_text(f, "stable name", f->stable);
}

static void cfunc_frame(struct rv_session *s, struct frame_env *fe,
			struct rv_frame *f)
{
	uint64_t me = 0, def, id;
	f->kind = RV_FRAME_CFUNC;
	struct cs_error *err = frame_method_entry(s, fe, &me);
	if (!err && !me)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "C frame without a method entry");
	if (!err && !(err = rv_read_member(s, me, RVL_me_def, &def)) &&
	    !(err = rv_read_member(s, def, RVL_def_original_id, &id)))
		err = rv_id_name(s, id, &f->label);
	if (err) {
		set_error(f, err);
		if (!f->label)
			f->label = strdup("?");
		return;
	}
	if (RV_HAS(s, def_cfunc_func))
		rv_try_member(s, def, RVL_def_cfunc_func, &f->cfunc);
	/* The label is the method's name: only the owner is left to read. */
	if ((err = method_qualified(s, fe, me, f->label, RV_NAME_QUALIFIED,
				    &f->qualified)) ||
	    (err = method_qualified(s, fe, me, f->label, RV_NAME_STABLE,
				    &f->stable)))
		set_error(f, err);
	uint64_t owner;
	char *label;
	if (s->rules.owner_labels) {
		if ((err = frame_owner(s, fe, me, &owner)) ||
		    (err = rv_bt_label_owner(s, me, owner, &owner)) ||
		    (err = rv_bt_method_name(s, owner, f->label, &label))) {
			set_error(f, err);
		} else {
			free(f->label);
			f->label = label;
		}
	}
	check_text(f, "label", f->label);
	check_text(f, "qualified name", f->qualified);
	check_text(f, "stable name", f->stable);
}

/* A method's frame holds its method entry (vm_push_frame's cref_or_me),
 * itself or in an svar: without one, the frame's env is damaged, and its
 * owner, which 3.4+ labels show, cannot be told. */
static struct cs_error *method_frame_check(struct rv_session *s, uint64_t flags,
					   struct frame_env *fe)
{
	uint64_t me = 0;
	if (!rv_frame_is_method(s, flags))
		return NULL;
	struct cs_error *err = frame_method_entry(s, fe, &me);
	if (!err && !me)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "method frame without a method entry");
	return err;
}

/* Decode one control frame into f; false for frames Ruby's backtraces
 * skip (ifunc, dummy, an iseq frame without a pc). A frame whose type does
 * not fit what it holds is kept, marked (frame_checks.c). */
static bool decode_uncached(struct rv_session *s, const struct rv_frame_key *k,
			    const struct env_data *env, struct rv_frame *f)
{
	uint64_t pc = k->pc, iseq = k->iseq;
	struct frame_env fe = {.env = *env};
	f->jit_record = k->jit_record;
	uint64_t flags;
	struct cs_error *err =
		env_slot(s, &fe.env, RV_VAL(s, env_index_flags), &flags);
	if (iseq && pc) {
		ruby_frame(s, iseq, pc, &fe, k->innermost, k->jit_record, f);
		if (err || (err = rv_frame_type_check(s, flags, true)) ||
		    (err = method_frame_check(s, flags, &fe)))
			set_error(f, err);
		return true;
	}
	bool cfunc = !err && rv_frame_is_cfunc(s, flags);
	if (cfunc && !iseq) {
		cfunc_frame(s, &fe, f);
		return true;
	}
	/* An ifunc frame, a dummy, a frame not running yet: Ruby shows none.
	 * A C method's flags with an iseq say one of the two is damaged. */
	if (cfunc)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "control frame has an iseq but its env "
				      "flags 0x%llx say C method",
				      (unsigned long long)flags);
	else if (!err && !(err = rv_frame_type_check(s, flags, false))) {
		/* only C methods and dummy frames have no iseq at all */
		if (iseq || rv_frame_is_dummy(s, flags))
			return false;
		err = cs_error_create(CS_ERR_CORRUPT,
				      "control frame has no iseq but its env "
				      "flags 0x%llx say Ruby frame",
				      (unsigned long long)flags);
	}
	f->kind = RV_FRAME_CFUNC;
	f->opaque = true;
	f->label = strdup("?");
	set_error(f, err);
	return true;
}

static size_t text_size(const char *t)
{
	return t ? strlen(t) + 1 : 0;
}

static size_t frame_text_size(const struct rv_frame *f)
{
	return text_size(f->label) + text_size(f->path) +
	       text_size(f->realpath) + text_size(f->qualified) +
	       text_size(f->stable) + text_size(f->error);
}

/* The cached frame at addr moved to a new pc (see rv_frame_cache_moved):
 * only the line is looked up again. A line outside the iseq's is left to
 * decode_uncached, which says so. */
static bool moved_frame(struct rv_session *s, uint64_t addr,
			const struct rv_frame_key *key, struct rv_frame *f,
			size_t *text_bytes)
{
	struct cached_frame *c = rv_frame_cache_moved(s, addr, key);
	const struct rv_iseq_info *info;
	int line;
	if (!c || !key->pc || !(info = rv_iseq_known(s, key->iseq)))
		return false;
	bool stale =
		stale_pc(s, info, key->pc, key->innermost, key->jit_record);
	if (rv_failed(rv_line_lookup(s, key->iseq, info, stale ? 0 : key->pc,
				     &line)) ||
	    line_outside(line_bounds(s, info), line))
		return false;
	rv_frame_cache_move(c, key, line, stale, f, text_bytes);
	return true;
}

/* A frame that cannot be believed as a whole (its env, its JIT frame
 * record): kept as "?" with the reason. */
static void opaque_frame(struct rv_frame *f, uint64_t addr,
			 struct cs_error *err)
{
	memset(f, 0, sizeof(*f));
	f->kind = RV_FRAME_CFUNC;
	f->opaque = true;
	f->cfp = addr;
	f->label = strdup("?");
	set_error(f, err);
}

/* The pc and iseq a control frame runs, as CFP_PC and CFP_ISEQ read them:
 * its own, or those of ZJIT's JIT frame record (jit_frames.c). */
static struct cs_error *frame_pc_iseq(struct rv_session *s, const uint8_t *c,
				      const struct rv_machine_stack *ms,
				      struct rv_frame_key *key)
{
	uint64_t jit_return = 0;
	memcpy(&key->pc, c + RV_VAL(s, cfp_pc), 8);
	memcpy(&key->iseq, c + RV_VAL(s, cfp_iseq), 8);
	if (!rv_jit_frames_apply(s))
		return NULL;
	memcpy(&jit_return, c + RV_VAL(s, cfp_jit_return), 8);
	if (!jit_return)
		return NULL;
	key->jit_record = 1;
	return rv_jit_frame(s, ms, jit_return, &key->pc, &key->iseq);
}

/* decode_uncached, served from the frame cache (rv_options.reuse_frames)
 * when the frame and its environment read as they did when it was decoded.
 * Being innermost is part of the key: whether a pc is stale depends on
 * that place. text_bytes is the size of the frame's strings. */
static bool decode_frame(struct rv_session *s, const uint8_t *c, uint64_t addr,
			 const struct rv_machine_stack *ms, bool innermost,
			 struct rv_frame *f, size_t *text_bytes)
{
	struct rv_frame_key key = {0};
	struct cs_error *err = frame_pc_iseq(s, c, ms, &key);
	if (err) {
		opaque_frame(f, addr, err);
		*text_bytes = frame_text_size(f);
		return true;
	}
	memcpy(&key.ep, c + RV_VAL(s, cfp_ep), 8);
	memset(f, 0, sizeof(*f));
	struct env_data env;
	env_read(s, key.ep, &env);
	bool have_flags =
		(s->opts.reuse_frames || s->opts.frame_flags) &&
		!rv_failed(env_slot(s, &env, RV_VAL(s, env_index_flags),
				    &key.flags));
	bool keyed = s->opts.reuse_frames && have_flags &&
		     !rv_failed(env_slot(s, &env, RV_VAL(s, env_index_me_cref),
					 &key.me_cref)) &&
		     !rv_failed(env_slot(s, &env, RV_VAL(s, env_index_specval),
					 &key.specval));
	key.innermost = innermost;
	bool shown;
	if (!keyed ||
	    !rv_frame_cache_get(s, addr, &key, f, &shown, text_bytes)) {
		if (keyed && moved_frame(s, addr, &key, f, text_bytes)) {
			shown = true;
		} else {
			shown = decode_uncached(s, &key, &env, f);
			*text_bytes = shown ? frame_text_size(f) : 0;
			if (keyed)
				f->names_id = rv_frame_cache_put(
					s, addr, &key, f, shown, *text_bytes);
		}
	}
	f->cfp = addr;
	/* Where a vm_exec() invocation began, for merging native stacks. */
	f->vm_finish = s->opts.frame_flags && have_flags &&
		       (key.flags & (uint64_t)RV_VAL(s, frame_flag_finish));
	return shown;
}

/* The snapshot's output budget (rv_options.max_output_bytes): every control
 * frame visited costs a frame, every frame kept its text too, so a corrupt
 * stack cannot make the walk work or allocate more than the budget. */
bool rv_charge(struct rv_session *s, size_t bytes)
{
	if (s->output_left < bytes) {
		s->output_left = 0;
		return false;
	}
	s->output_left -= bytes;
	return true;
}

static struct cs_error *budget_exhausted(const struct rv_session *s)
{
	return cs_error_create(CS_ERR_LIMIT,
			       "stopped: the snapshot's output budget of %zu "
			       "bytes is spent (a bound tied to the input's "
			       "size; corrupt stacks?)",
			       s->opts.max_output_bytes);
}

/* The frames array is first sized for the control frames the stack holds
 * (frames Ruby's backtraces skip leave a few slots unused), so that a
 * stack is not copied each time the array doubles; but for no more than
 * one chunk of them (CFP_CHUNK), which were read already, not for what a
 * damaged stack may claim: past that it grows as frames are decoded. */
static bool grow_frames(struct rv_thread *th, size_t *cap, size_t first)
{
	size_t n = *cap ? *cap * 2 : first;
	struct rv_frame *f = realloc(th->frames, n * sizeof(*f));
	if (!f)
		return false;
	memset(f + *cap, 0, (n - *cap) * sizeof(*f));
	th->frames = f;
	*cap = n;
	return true;
}

/* A control frame whose env is not where its VM stack says it must be:
 * kept in f as an unreliable frame, before anything is read through it. */
static bool bad_env(struct rv_session *s, struct rv_ep_bounds *bounds,
		    const uint8_t *c, uint64_t addr, struct rv_frame *f)
{
	uint64_t ep;
	memcpy(&ep, c + RV_VAL(s, cfp_ep), 8);
	struct cs_error *err = rv_frame_ep_check(s, bounds, addr, ep);
	if (!err)
		return false;
	opaque_frame(f, addr, err);
	return true;
}

/* Whether the last Ruby frame kept is a rescue or ensure clause's, which
 * stands for the method frame right past the cut. */
static bool ends_in_clause(const struct rv_thread *th)
{
	for (size_t i = th->nframes; i-- > 0;)
		if (th->frames[i].kind == RV_FRAME_RUBY)
			return th->frames[i].rescue_or_ensure;
	return false;
}

static char unreliable_caller[] = "location from an unreliable caller frame";

/* Control frames are read this many at a time: they are contiguous, and a
 * deep stack need not be copied whole. */
#define CFP_CHUNK 1024

/* The members of an execution context a thread's or fiber's snapshot
 * takes: its VM stack, its machine stack and the exception it raises. */
static const enum rv_item_id ec_members[] = {
	RVL_ec_vm_stack,
	RVL_ec_vm_stack_size,
	RVL_ec_cfp,
	RVL_ec_machine_stack_start,
	RVL_ec_machine_stack_maxsize,
	RVL_ec_errinfo,
};

void rv_ec_view_read(struct rv_session *s, uint64_t ec, struct rv_view *v)
{
	rv_view_read(s, ec, ec_members,
		     sizeof(ec_members) / sizeof(*ec_members), v);
}

struct cs_error *rv_walk_ec(struct rv_session *s, const struct rv_view *ec,
			    struct rv_thread *th)
{
	uint64_t stack, stack_size, cfp;
	struct cs_error *err;
	if ((err = rv_view_member(s, ec, RVL_ec_vm_stack, &stack)) ||
	    (err = rv_view_member(s, ec, RVL_ec_vm_stack_size, &stack_size)) ||
	    (err = rv_view_member(s, ec, RVL_ec_cfp, &cfp)))
		return err;
	if (!stack)
		return NULL; /* no VM stack yet: no frames, as in Ruby */
	uint64_t cfp_size = (uint64_t)RV_VAL(s, cfp_size);
	uint64_t value_size = (uint64_t)RV_VAL(s, value_size);
	if (stack_size > (UINT64_MAX - stack) / value_size || cfp_size == 0)
		return cs_error_create(CS_ERR_CORRUPT, "VM stack size %llu",
				       (unsigned long long)stack_size);
	uint64_t end = stack + stack_size * value_size; /* size in VALUEs */
	if (cfp < stack || cfp > end || (end - cfp) % cfp_size)
		return cs_error_create(CS_ERR_CORRUPT,
				       "cfp 0x%llx outside its VM stack",
				       (unsigned long long)cfp);
	uint64_t count = (end - cfp) / cfp_size;
	count = count >= 1 ? count - 1 : 0; /* the dummy top frame */
	if (!count)
		return NULL;
	size_t max = s->opts.max_frames, cap = 0;
	size_t first_frames = count < CFP_CHUNK ? (size_t)count : CFP_CHUNK;
	if (first_frames > max)
		first_frames = max;
	/* Kept for the session: a sampler walks many times a second, and
	 * allocating it each time made malloc consolidate its free lists. */
	if (!s->cfp_chunk && !(s->cfp_chunk = malloc(CFP_CHUNK * cfp_size)))
		return &cs_error_nomem;
	uint8_t *chunk = s->cfp_chunk;
	/* Past the limit, frames are decoded only to be counted, and the
	 * first Ruby frame kept: the C frames just above the cut take its
	 * location. */
	struct rv_frame beyond = {0};
	bool have_beyond = false;
	struct rv_bt_count cut = {0};
	/* where the JIT frame records' slots lie */
	struct rv_machine_stack ms = {0};
	if (rv_jit_frames_apply(s) && RV_HAS(s, ec_machine_stack_start) &&
	    RV_HAS(s, ec_machine_stack_maxsize) &&
	    !(rv_view_try(s, ec, RVL_ec_machine_stack_start, &ms.top) &&
	      rv_view_try(s, ec, RVL_ec_machine_stack_maxsize, &ms.size)))
		ms.top = ms.size = 0;
	struct rv_ep_bounds bounds = {.stack = stack, .inner_ep = UINT64_MAX};
	struct cs_error *spent = NULL; /* the budget ran out */
	bool done = false, uncounted = false;
	for (uint64_t i = 0; i < count && !done; i += CFP_CHUNK) {
		uint64_t n = count - i < CFP_CHUNK ? count - i : CFP_CHUNK;
		uint64_t at = cfp + i * cfp_size;
		if ((err = rv_read(s, at, chunk, n * cfp_size))) {
			if (th->nframes < max)
				return cs_error_wrap(err, "control frames");
			/* only counting: the count is unknown */
			cs_error_destroy(err);
			uncounted = true;
			break;
		}
		for (uint64_t j = 0; j < n && !done; j++) {
			const uint8_t *c = chunk + j * cfp_size;
			if (th->nframes < max &&
			    !rv_charge(s, sizeof(struct rv_frame))) {
				th->truncated = done = true;
				spent = budget_exhausted(s);
				break;
			}
			if (th->nframes < max) {
				if (th->nframes == cap &&
				    !grow_frames(th, &cap, first_frames))
					return &cs_error_nomem;
				struct rv_frame *f = &th->frames[th->nframes];
				size_t text;
				if (bad_env(s, &bounds, c, at + j * cfp_size,
					    f)) {
					th->nframes++;
					rv_charge(s, frame_text_size(f));
					continue;
				}
				if (decode_frame(s, c, at + j * cfp_size, &ms,
						 at + j * cfp_size == cfp, f,
						 &text)) {
					th->nframes++;
					rv_charge(s, text);
				} else if (f->vm_finish && th->nframes) {
					/* a skipped frame began a vm_exec: the
					 * next inner one starts it */
					th->frames[th->nframes - 1].vm_finish =
						true;
				}
				continue;
			}
			size_t text;
			struct rv_frame other = {0};
			struct rv_frame *f = have_beyond ? &other : &beyond;
			if (!decode_frame(s, c, at + j * cfp_size, &ms, false,
					  f, &text))
				continue;
			if (!th->truncated)
				cut.skip_next = ends_in_clause(th);
			th->truncated = true;
			rv_bt_count_frame(s, &cut, f);
			if (f == &beyond && beyond.kind == RV_FRAME_RUBY &&
			    !beyond.c_like)
				have_beyond = true;
			else
				rv_frame_free(f);
		}
	}
	/* The slots the stack's claim left unused go back: what every stack
	 * keeps stays bounded by the frames it charged to the budget. */
	if (cap > th->nframes && th->nframes > 0) {
		struct rv_frame *fit =
			realloc(th->frames, th->nframes * sizeof(*fit));
		if (fit)
			th->frames = fit;
	}
	th->frames_cut = spent || uncounted ? 0 : cut.n;
	rv_bt_select_frames(s, th);
	/* C frames, and the Ruby frames this Ruby shows as C methods, take
	 * the location of the nearest older Ruby frame. A borrowed frame
	 * borrows it too: the caller is freed with it. */
	const struct rv_frame *caller = have_beyond ? &beyond : NULL;
	for (size_t i = th->nframes; i-- > 0;) {
		struct rv_frame *f = &th->frames[i];
		if ((f->kind == RV_FRAME_RUBY && !f->c_like) || f->opaque) {
			caller = f;
			continue;
		}
		f->progname_path = !caller && f->kind == RV_FRAME_CFUNC;
		if (!caller && f->c_like && th->truncated) {
			/* its caller was cut off: Ruby shows the caller's
			 * location, which was not read, never the frame's
			 * own (an <internal:...> line) */
			if (!f->borrowed) {
				free(f->path);
				free(f->realpath);
			}
			f->path = f->realpath = NULL;
			f->lineno = 0;
		}
		if (!caller)
			continue;
		/* beyond dies with this walk: nothing may borrow from it */
		if (f->borrowed && caller == &beyond && !beyond.borrowed &&
		    !rv_frame_own_strings(f))
			return &cs_error_nomem;
		if (caller->path && f->c_like && f->path) {
			if (!f->borrowed) {
				free(f->path);
				free(f->realpath);
			}
			/* its own: the caller's replace them */
			f->path = f->realpath = NULL;
		}
		if (caller->path && !f->path) {
			f->path = f->borrowed ? caller->path
					      : strdup(caller->path);
			f->lineno = caller->lineno;
			f->realpath = f->borrowed || !caller->realpath
					      ? caller->realpath
					      : strdup(caller->realpath);
		}
		/* The location is the caller's: no better than the caller. */
		if (caller->error && !f->error)
			f->error = f->borrowed ? unreliable_caller
					       : strdup(unreliable_caller);
	}
	if (have_beyond)
		rv_frame_free(&beyond);
	return spent;
}
