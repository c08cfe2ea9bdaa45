/* The kinds of target the CLI can open, in one table: a new kind is a
 * file implementing struct cs_target_ops that defines its struct
 * cs_target_kind, and one line here. */
#include "open.h"

#include <elf.h>
#include <string.h>

#include "decompress.h"

extern const struct cs_target_kind cs_live_target_kind;
extern const struct cs_target_kind cs_core_target_kind;

static const struct cs_target_kind *const kinds[] = {
	&cs_live_target_kind,
	&cs_core_target_kind,
};

struct cs_error *cs_target_open(const struct cs_target_request *req,
				struct cs_target **ret)
{
	*ret = NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i]->wanted(req))
			return kinds[i]->open(req, ret);
	return cs_error_create(CS_ERR_USAGE, "no core file or process named");
}

bool cs_looks_like_core(const uint8_t *head, size_t size)
{
	if (size >= 18 && memcmp(head, ELFMAG, SELFMAG) == 0) {
		/* e_type, in the file's byte order */
		unsigned type = head[EI_DATA] == ELFDATA2MSB
					? (unsigned)head[16] << 8 | head[17]
					: (unsigned)head[17] << 8 | head[16];
		return type == ET_CORE;
	}
	return cs_compression_of(head, size) != NULL;
}
