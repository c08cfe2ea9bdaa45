/* The layout cache's enum lists (rubyvm/layout_cache.c): a layout of
 * dwarf_sample.so is resolved and cached in a fresh directory, then its
 * file is edited. A list written into the cache comes back whole, names
 * and values, one no layout.def line names included; a list whose count
 * is past its room, or a name without its NUL, makes the entry refused and
 * the layout resolved again, never read. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../dwarf/module.h"
#include "../../rubyvm/layout.h"
#include "check.h"

static char dir[] = "/tmp/cs-layout-cache-XXXXXX";

/* The one entry in dir, its enum lists being the file's last bytes. */
static int entry(char *path, size_t size, off_t *lists)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;
	while (d && !found && (de = readdir(d)))
		found = strstr(de->d_name, ".layout") != NULL &&
			snprintf(path, size, "%s/%s", dir, de->d_name) <
				(int)size;
	if (d)
		closedir(d);
	struct stat st;
	if (!found || stat(path, &st) != 0)
		return 0;
	*lists = st.st_size - (off_t)sizeof(((struct rv_layout *)0)->enums);
	return 1;
}

static int put_lists(const char *path, off_t at,
		     const struct rv_enum_list *lists)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return 0;
	size_t n = sizeof(((struct rv_layout *)0)->enums);
	int ok = pwrite(fd, lists, n, at) == (ssize_t)n;
	return close(fd) == 0 && ok;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s dwarf_sample.so\n", argv[0]);
		return 2;
	}
	struct dw_module *mod;
	struct cs_error *err = dw_module_open(argv[1], NULL, &mod);
	CHECK(!err, "open %s: %s", argv[1], err ? err->message : "");
	if (err || !mkdtemp(dir))
		return check_summary("layout_cache");
	static struct rv_layout l;
	int cached = -1;
	err = rv_layout_for_module(mod, dir, &l, &cached);
	CHECK(!err && !cached, "first layout: %s, cached %d",
	      err ? err->message : "", cached);
	cs_error_destroy(err);

	char path[512];
	off_t at = 0;
	CHECK(entry(path, sizeof(path), &at), "no cache entry in %s", dir);
	static struct rv_enum_list lists[RVE_COUNT];
	lists[RVE_imemo_types].count = 2;
	lists[RVE_imemo_types].e[0] = (struct rv_enumerator){0, "imemo_env"};
	lists[RVE_imemo_types].e[1] =
		(struct rv_enumerator){16, "imemo_added_later"};
	CHECK(put_lists(path, at, lists), "cannot write %s", path);
	err = rv_layout_for_module(mod, dir, &l, &cached);
	const struct rv_enum_list *got = &l.enums[RVE_imemo_types];
	CHECK(!err && cached && got->count == 2 &&
		      strcmp(got->e[1].name, "imemo_added_later") == 0 &&
		      got->e[1].value == 16,
	      "the list from the cache: %s, cached %d, %u enumerators",
	      err ? err->message : "", cached, got->count);
	cs_error_destroy(err);

	/* past the room, then a name without its end */
	for (int bad = 0; bad < 2; bad++) {
		memset(lists, 0, sizeof(lists));
		lists[RVE_imemo_types].count = bad ? 1 : RV_ENUM_MAX + 1;
		memset(lists[RVE_imemo_types].e[0].name, 'x',
		       bad ? RV_ENUM_NAME_MAX : 1);
		CHECK(put_lists(path, at, lists), "cannot write %s", path);
		err = rv_layout_for_module(mod, dir, &l, &cached);
		CHECK(!err && !cached && l.enums[RVE_imemo_types].count == 0,
		      "damaged list %d: %s, cached %d, %u enumerators", bad,
		      err ? err->message : "", cached,
		      l.enums[RVE_imemo_types].count);
		cs_error_destroy(err);
	}

	unlink(path);
	rmdir(dir);
	dw_module_close(mod);
	return check_summary("layout_cache");
}
