/* The value of a method's block parameter that the method has not read.
 *
 * A method's &blk slot holds nil until the method reads blk
 * (getblockparam) or a binding asks for it: the block stays the method
 * env's block handler (its specval slot), and the first read makes a Proc
 * of it, stores it in the slot and sets VM_FRAME_FLAG_MODIFIED_BLOCK_PARAM
 * in the env's flags. binding.local_variable_get reads it so, and that is
 * the value shown: no block is nil, a Proc the caller passed is that
 * Proc, and a block literal (or a C block, or &:sym) is the Proc Ruby
 * would make of it, which does not exist yet: "#<Proc:(not made yet)
 * PATH:LINE>", where the block is, as Proc#inspect says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

bool rv_block_param_unread(struct rv_session *s, uint64_t iseq,
			   const struct rv_iseq_info *info, uint64_t env_flags,
			   uint64_t *index)
{
	uint64_t has_block = 0;
	/* only a method's (its local iseq's) own env holds its block */
	if (!RV_HAS(s, frame_flag_modified_block_param) ||
	    !RV_HAS(s, block_handler_none) || info->local_iseq != iseq ||
	    env_flags & (uint64_t)RV_VAL(s, frame_flag_modified_block_param))
		return false;
	return rv_try_member(s, info->body, RVL_body_param_has_block,
			     &has_block) &&
	       has_block &&
	       rv_try_member(s, info->body, RVL_body_param_block_start, index);
}

static struct cs_error *unmade(char **text, char **class_name,
			       const char *where)
{
	size_t n = strlen("#<Proc:(not made yet)>") + strlen(where) + 1;
	*text = malloc(n);
	*class_name = strdup("Proc");
	if (!*text || !*class_name) {
		free(*text);
		free(*class_name);
		return &cs_error_nomem;
	}
	snprintf(*text, n, "#<Proc:(not made yet)%s>", where);
	return NULL;
}

/* A block literal's handler: its captured block's address, tagged in its
 * low bits. VM_BH_TO_ISEQ_BLOCK and VM_BH_TO_IFUNC_BLOCK untag it with
 * VM_TAGGED_PTR_REF(bh, 0x03), as GC_GUARDED_PTR_REF does a previous ep. */
static struct cs_error *captured_show(struct rv_session *s, uint64_t handler,
				      char **text, char **class_name)
{
	uint64_t block = handler & (uint64_t)RV_VAL(s, guarded_ptr_mask);
	uint64_t code = 0;
	int64_t type = -1;
	const struct rv_iseq_info *info;
	struct cs_error *err =
		rv_read_member(s, block, RVL_captured_block_code, &code);
	if (!err)
		err = rv_imemo_type(s, code, &type);
	if (!err && RV_HAS(s, imemo_ifunc) && type == RV_VAL(s, imemo_ifunc))
		return unmade(text, class_name, ""); /* a C block: no place */
	if (!err)
		err = rv_iseq_lookup(s, code, &info);
	if (err) {
		size_t n = strlen(err->message) + 64;
		*text = malloc(n);
		*class_name = NULL;
		if (*text)
			snprintf(*text, n,
				 "<unreadable: block handler 0x%llx: %s>",
				 (unsigned long long)handler, err->message);
		cs_error_destroy(err);
		return *text ? NULL : &cs_error_nomem;
	}
	size_t n = strlen(info->path) + 32;
	char *where = malloc(n);
	if (!where)
		return &cs_error_nomem;
	snprintf(where, n, " %s:%d", info->path, info->first_lineno);
	err = unmade(text, class_name, where);
	free(where);
	return err;
}

struct cs_error *rv_block_param_show(struct rv_session *s, uint64_t handler,
				     char **text, char **class_name)
{
	if (handler == (uint64_t)RV_VAL(s, block_handler_none))
		return rv_value_show(s, (uint64_t)RV_VAL(s, qnil), text,
				     class_name);
	struct cs_error *err = rv_value_show(s, handler, text, class_name);
	if (err)
		return err;
	bool symbol = *class_name && strcmp(*class_name, "Symbol") == 0;
	if (!symbol && handler % (uint64_t)RV_VAL(s, value_size) == 0)
		return NULL; /* an object: the Proc the caller passed */
	char *shown = *text;
	free(*class_name);
	*text = *class_name = NULL;
	if (symbol) { /* &:sym: the Proc of Symbol#to_proc */
		size_t n = strlen(shown) + 4;
		char *where = malloc(n);
		if (!where) {
			free(shown);
			return &cs_error_nomem;
		}
		snprintf(where, n, "(&%s)", shown);
		err = unmade(text, class_name, where);
		free(where);
	} else {
		err = captured_show(s, handler, text, class_name);
	}
	free(shown);
	return err;
}
