/* The JSON document of a run that could not read its input at all (exit 2):
 * the same schema numbers as a report, "complete": false and an "error"
 * instead of the process, so that a tool reading stdout learns why. */
#include <stdio.h>

#include "../util/json.h"
#include "render.h"

void cs_render_error_json(FILE *out, const struct cs_error *err,
			  const char *core, int pid)
{
	struct json j = {.out = out};
	json_begin_object(&j, NULL);
	json_int(&j, "corestack_schema", CS_JSON_SCHEMA);
	json_int(&j, "corestack_schema_minor", CS_JSON_SCHEMA_MINOR);
	json_bool(&j, "complete", false);
	json_begin_object(&j, "error");
	json_string(&j, "code", cs_error_code_name(err->code));
	json_string(&j, "message", err->message);
	json_string(&j, "file", core);
	if (pid > 0)
		json_int(&j, "pid", pid);
	else
		json_null(&j, "pid");
	json_end_object(&j);
	/* as in a report, for tools that read only these */
	json_begin_array(&j, "errors");
	json_string(&j, NULL, err->message);
	json_end_array(&j);
	json_end_object(&j);
}
