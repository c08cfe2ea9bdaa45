/* The kinds of target the CLI can open, in one table: a new kind is a
 * file implementing struct cs_target_ops and one line here. */
#include "open.h"

#include "core_target.h"
#include "live_target.h"

static const struct {
	const char *name;
	bool (*wanted)(const struct cs_target_request *req);
	struct cs_error *(*open)(const struct cs_target_request *req,
				 struct cs_target **ret);
} kinds[] = {
	{"process", cs_live_target_wanted, cs_live_target_open},
	{"core", cs_core_target_wanted, cs_core_target_open},
};

struct cs_error *cs_target_open(const struct cs_target_request *req,
				struct cs_target **ret)
{
	*ret = NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].wanted(req))
			return kinds[i].open(req, ret);
	return cs_error_create(CS_ERR_USAGE, "no core file or process named");
}
