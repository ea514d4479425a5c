/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: perf.data export of any snapshot the salvaging reader
 * accepts, build-id cache included.  Checked besides the sanitizers: a
 * failed export leaves nothing behind in its directory, and nothing it
 * writes is larger than the input allows (the bytes a snapshot's code and
 * trace can fill, plus headers: no multi-GiB file from a crafted offset).
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <btrace/export.h>
#include <btrace/snapshot.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Speed (tools/fuzz-long.sh): every input exports to disk, so the output
 * directory is on a tmpfs when there is one (/dev/shm; BT_FUZZ_TMPDIR or
 * TMPDIR override it): creating and removing files and directories on a
 * disk file system cost more than the export.  One walk of the directory
 * (raw getdents64 into a static buffer, no opendir allocation) measures
 * and removes what the export left.
 */
static char dir[256];
static uint64_t biggest, entries;

struct fz_dirent {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* Count, measure and remove everything below @fd (a directory). */
static void sweep(int fd, int depth)
{
	static char buf[16][4096];
	long n;

	if (depth >= 16)
		abort();       /* the cache is a few levels deep, never 16 */
	while ((n = syscall(SYS_getdents64, fd, buf[depth],
			    sizeof(buf[depth]))) > 0) {
		for (long pos = 0; pos < n;) {
			struct fz_dirent *d = (struct fz_dirent *)(buf[depth] + pos);
			struct stat st;

			pos += d->reclen;
			if (!strcmp(d->name, ".") || !strcmp(d->name, ".."))
				continue;
			entries++;
			if (fstatat(fd, d->name, &st, AT_SYMLINK_NOFOLLOW))
				continue;
			if (S_ISDIR(st.st_mode)) {
				int sub = openat(fd, d->name, O_RDONLY |
						 O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);

				if (sub >= 0) {
					sweep(sub, depth + 1);
					close(sub);
				}
				unlinkat(fd, d->name, AT_REMOVEDIR);
			} else {
				if (S_ISREG(st.st_mode) &&
				    (uint64_t)st.st_size > biggest)
					biggest = (uint64_t)st.st_size;
				unlinkat(fd, d->name, 0);
			}
		}
	}
}

static void cleanup(void)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		sweep(fd, 0);
		close(fd);
	}
	rmdir(dir);
}

static void setup(void)
{
	const char *t = getenv("BT_FUZZ_TMPDIR");
	struct stat st;

	if (!t || !*t)
		t = getenv("TMPDIR");
	if ((!t || !*t) && !stat("/dev/shm", &st) && S_ISDIR(st.st_mode) &&
	    !access("/dev/shm", W_OK))
		t = "/dev/shm";
	if (!t || !*t)
		t = "/tmp";
	snprintf(dir, sizeof(dir), "%.200s/bt-fuzz-export-XXXXXX", t);
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct btrace_export_opts o = { .sz = sizeof(o),
					.flags = BTRACE_EXPORT_FORCE };
	struct btrace_export_result *res;
	struct btrace_snapshot *s;
	struct btrace_error err;
	char out[300];
	int rc, fd;

	if (!dir[0])
		setup();
	if (btrace_snapshot_read_mem(data, size, BTRACE_READ_LENIENT, &s, &err))
		return 0;
	res = calloc(1, sizeof(*res));
	if (!res)
		abort();
	res->sz = sizeof(*res);
	snprintf(out, sizeof(out), "%s/out.data", dir);
	rc = btrace_export_perf_data(s, out, &o, res, &err);
	biggest = entries = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		abort();
	sweep(fd, 0);
	close(fd);
	if (rc && entries) {
		fprintf(stderr, "export failed (%s) but left %llu entries in %s\n",
			err.msg, (unsigned long long)entries, dir);
		abort();
	}
	/* 4 GiB: the reader's bound on where a code section may end */
	if (biggest > (4ull << 30) + (1u << 20)) {
		fprintf(stderr, "export wrote a %llu-byte file\n",
			(unsigned long long)biggest);
		abort();
	}
	free(res);
	btrace_snapshot_free(s);
	return 0;
}
