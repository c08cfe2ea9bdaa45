#include "open_regular.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int refuse(const struct stat *st)
{
	errno = S_ISDIR(st->st_mode) ? EISDIR : ENODEV;
	return -1;
}

int cs_open_regular(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	if (!S_ISREG(st.st_mode))
		return refuse(&st);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(&st);
	}
	return fd;
}
