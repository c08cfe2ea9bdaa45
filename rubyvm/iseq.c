/* Instruction sequences: label, path, type and the line of a pc.
 *
 * Follows calc_lineno/calc_pos of vm_backtrace.c and get_insn_info of
 * iseq.c: the pc points after the instruction being run, so the position
 * looked up is one before it; the entry is found through the succinct
 * index table (release builds free the plain positions array). */
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
#include "session.h"

void rv_iseq_info_free(struct rv_iseq_info *info)
{
	free(info->label);
	free(info->base_label);
	free(info->path);
	free(info->realpath);
	memset(info, 0, sizeof(*info));
}

/* location.pathobj: a String (path and realpath alike), or an Array
 * [path, realpath]; entry: PATHOBJ_PATH or PATHOBJ_REALPATH. nil gives
 * NULL. */
static struct cs_error *pathobj_path(struct rv_session *s, uint64_t pathobj,
				     int64_t entry, char **ret)
{
	uint64_t type;
	struct cs_error *err = rv_builtin_type(s, pathobj, &type, NULL);
	if (err)
		return err;
	if (type == (uint64_t)RV_VAL(s, t_array)) {
		uint64_t str;
		if ((err = rv_array_entry(s, pathobj, (uint64_t)entry, &str)))
			return err;
		pathobj = str;
	}
	if (rv_is_nil(s, pathobj))
		return NULL;
	return rv_string(s, pathobj, ret);
}

struct cs_error *rv_iseq_info(struct rv_session *s, uint64_t iseq,
			      struct rv_iseq_info *info)
{
	memset(info, 0, sizeof(*info));
	int64_t imemo;
	struct cs_error *err = rv_imemo_type(s, iseq, &imemo);
	if (err)
		return err;
	if (imemo != RV_VAL(s, imemo_iseq))
		return cs_error_create(
			CS_ERR_CORRUPT,
			"0x%llx is not an iseq (imemo type %lld)",
			(unsigned long long)iseq, (long long)imemo);
	uint64_t body, label, base_label, pathobj, type, first;
	if ((err = rv_read_member(s, iseq, RVL_iseq_body, &body)) ||
	    (err = rv_read_member(s, body, RVL_body_label, &label)) ||
	    (err = rv_read_member(s, body, RVL_body_pathobj, &pathobj)) ||
	    (err = rv_string(s, label, &info->label)) ||
	    (err = pathobj_path(s, pathobj, RV_VAL(s, pathobj_path),
				&info->path)))
		goto fail;
	if (!info->path) {
		err = cs_error_create(CS_ERR_CORRUPT, "iseq 0x%llx has no path",
				      (unsigned long long)iseq);
		goto fail;
	}
	/* optional: a Ruby that could not say leaves it unknown */
	if (RV_HAS(s, pathobj_realpath) &&
	    !rv_failed(pathobj_path(s, pathobj, RV_VAL(s, pathobj_realpath),
				    &info->realpath)) &&
	    info->realpath)
		utf8_scrub(info->realpath);
	info->body = body;
	info->label_clean = utf8_scrub(info->label);
	info->path_clean = utf8_scrub(info->path);
	if (RV_HAS(s, body_base_label) &&
	    rv_try_member(s, body, RVL_body_base_label, &base_label) &&
	    rv_failed(rv_string(s, base_label, &info->base_label)))
		info->base_label = NULL;
	if (info->base_label)
		utf8_scrub(info->base_label);
	info->type = info->local_type = -1;
	if (RV_HAS(s, body_type) &&
	    rv_try_member(s, body, RVL_body_type, &type))
		info->type = (int64_t)type;
	uint64_t local, local_body;
	if (RV_HAS(s, body_parent_iseq))
		rv_try_member(s, body, RVL_body_parent_iseq,
			      &info->parent_iseq);
	if (RV_HAS(s, body_local_iseq))
		rv_try_member(s, body, RVL_body_local_iseq, &info->local_iseq);
	if (RV_HAS(s, body_builtin_attrs))
		rv_try_member(s, body, RVL_body_builtin_attrs,
			      &info->builtin_attrs);
	if (RV_HAS(s, body_local_iseq) && RV_HAS(s, body_type) &&
	    rv_try_member(s, body, RVL_body_local_iseq, &local) && local &&
	    rv_try_member(s, local, RVL_iseq_body, &local_body) &&
	    rv_try_member(s, local_body, RVL_body_type, &type))
		info->local_type = (int64_t)type;
	if (RV_HAS(s, body_first_lineno) &&
	    rv_try_member(s, body, RVL_body_first_lineno, &first)) {
		/* A Fixnum VALUE before 3.2, a plain int after: the member's
		 * size tells which. */
		if (RV_ITEM(s, body_first_lineno)->size == 8)
			info->first_lineno = (int)rv_sar(
				(int64_t)first, ffsll(RV_VAL(s, fixnum_flag)));
		else
			info->first_lineno = (int)(int32_t)first;
	}
	uint64_t beg, end;
	if (RV_HAS(s, body_code_first_line) && RV_HAS(s, body_code_last_line) &&
	    rv_try_member(s, body, RVL_body_code_first_line, &beg) &&
	    rv_try_member(s, body, RVL_body_code_last_line, &end)) {
		info->code_first_line = (int)(int32_t)beg;
		info->code_last_line = (int)(int32_t)end;
	}
	return NULL;
fail:
	rv_iseq_info_free(info);
	return err;
}

/* Binary search in insns_info.positions (debug builds keep it). */
static struct cs_error *positions_lookup(struct rv_session *s,
					 uint64_t positions, uint64_t size,
					 uint64_t pos, uint64_t *ret)
{
	uint64_t esize = RV_ITEM(s, insns_position)->size;
	if (!RV_HAS(s, insns_position) || esize == 0 || esize > 8)
		return rv_missing(RVL_insns_position);
	uint64_t lo = 0, hi = size;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint64_t p = 0; /* little-endian: the low bytes */
		struct cs_error *err =
			rv_read(s, positions + mid * esize, &p, esize);
		if (err)
			return err;
		if (p <= pos)
			lo = mid;
		else
			hi = mid;
	}
	*ret = lo;
	return NULL;
}

bool rv_iseq_pc_inside(struct rv_session *s, const struct rv_iseq_info *info,
		       uint64_t pc)
{
	uint64_t encoded, iseq_size;
	if (!rv_try_member(s, info->body, RVL_body_iseq_encoded, &encoded) ||
	    !rv_try_member(s, info->body, RVL_body_iseq_size, &iseq_size))
		return true;
	uint64_t value_size = (uint64_t)RV_VAL(s, value_size);
	return pc >= encoded && (pc - encoded) / value_size <= iseq_size;
}

struct cs_error *rv_iseq_lineno(struct rv_session *s,
				const struct rv_iseq_info *info, uint64_t pc,
				int *ret)
{
	uint64_t body = info->body, encoded, iseq_size, size, entries, succ,
		 positions = 0;
	struct cs_error *err;
	if (!pc) {
		*ret = info->type == RV_VAL(s, iseq_type_top)
			       ? 0
			       : info->first_lineno;
		return NULL;
	}
	if ((err = rv_read_member(s, body, RVL_body_iseq_encoded, &encoded)) ||
	    (err = rv_read_member(s, body, RVL_body_iseq_size, &iseq_size)) ||
	    (err = rv_read_member(s, body, RVL_body_insns_size, &size)) ||
	    (err = rv_read_member(s, body, RVL_body_insns_body, &entries)))
		return err;
	/* Outside the iseq: corrupt, or a stale pc the caller did not expect
	 * (frames.c handles the innermost frame's, see rv_frame.pc_stale). */
	uint64_t value_size = (uint64_t)RV_VAL(s, value_size);
	if (!rv_iseq_pc_inside(s, info, pc))
		return cs_error_create(CS_ERR_CORRUPT,
				       "pc 0x%llx outside its iseq",
				       (unsigned long long)pc);
	uint64_t pos = (pc - encoded) / value_size, idx = 0;
	if (pos)
		pos--;
	if (size == 0) {
		*ret = 0;
		return NULL;
	}
	if (size == 1) {
		idx = 0;
	} else {
		if (RV_HAS(s, body_insns_positions) &&
		    (err = rv_read_member(s, body, RVL_body_insns_positions,
					  &positions)))
			return err;
		if (positions) {
			err = positions_lookup(s, positions, size, pos, &idx);
		} else {
			if ((err = rv_read_member(s, body, RVL_body_insns_succ,
						  &succ)))
				return err;
			err = rv_succ_lookup(s, succ, pos, &idx);
			idx--; /* the table counts entries at or before pos */
		}
		if (err)
			return err;
	}
	if (idx >= size)
		return cs_error_create(
			CS_ERR_CORRUPT,
			"line table index %llu past %llu entries",
			(unsigned long long)idx, (unsigned long long)size);
	uint64_t line;
	uint64_t entry = entries + idx * (uint64_t)RV_VAL(s, insn_info_size);
	if ((err = rv_read_member(s, entry, RVL_insn_info_line_no, &line)))
		return err;
	*ret = (int)(int32_t)line;
	return NULL;
}
