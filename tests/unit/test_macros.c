/* The macro expression evaluator on the shapes CRuby's macros take. */
#include <stdlib.h>

#include "../../dwarf/macros.h"
#include "check.h"

static void expect(const char *text, int64_t want)
{
	int64_t got = 0;
	struct cs_error *err = dw_macro_eval_text(NULL, text, &got);
	CHECK(!err && got == want, "'%s' = %lld (%s), want %lld", text,
	      (long long)got, err ? err->message : "ok", (long long)want);
	cs_error_destroy(err);
}

static void expect_error(const char *text)
{
	int64_t got = 0;
	struct cs_error *err = dw_macro_eval_text(NULL, text, &got);
	CHECK(err != NULL, "'%s' should not evaluate, got %lld", text,
	      (long long)got);
	cs_error_destroy(err);
}

int main(void)
{
	expect("54", 54);
	expect("(-2)", -2);
	expect("( 3)", 3);
	expect("0x0f", 15);
	expect("0x03UL", 3);
	expect("~0x03", ~(int64_t)3);
	expect("((void *)(((VALUE)(-1)) & ~0x03))", ~(int64_t)3);
	expect("(1 << 12) | 0x8", 4104);
	expect("10 - 2 - 3", 5);
	expect("2 + 3 * 4", 14);
	expect("(2 + 3) * 4", 20);
	expect("1 ? 7 : 9", 7);
	expect("0 ? 7 : 9", 9);
	expect("5 >= 5 && 3 < 4", 1);
	expect("017", 15);
	expect("!0", 1);
	expect_error("");
	expect_error("foo"); /* no such macro, no index */
	expect_error("1 +");
	expect_error("(1");
	expect_error("1 / 0");
	expect_error("sizeof(int)");
	expect_error(
		"((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))");
	return check_summary("macros");
}
