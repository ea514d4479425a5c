/* SPDX-License-Identifier: MIT */
/*
 * Replay fuzz inputs through a target's LLVMFuzzerTestOneInput without
 * libFuzzer, so that every crash found becomes a regression test of the
 * plain build (suite unit).  Prints TAP: one test per file.
 *   fuzz-replay-TARGET DIR_OR_FILE...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char **files;
static size_t nfiles, cfiles;

static int add(const char *path)
{
	if (nfiles == cfiles) {
		char **n = realloc(files, (cfiles = cfiles ? 2 * cfiles : 64) *
				   sizeof(*files));
		if (!n)
			return -1;
		files = n;
	}
	files[nfiles] = strdup(path);
	return files[nfiles++] ? 0 : -1;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct dirent *de;
		DIR *d;

		if (stat(argv[i], &st)) {
			continue;     /* an absent regress/ folder: nothing yet */
		}
		if (!S_ISDIR(st.st_mode)) {
			if (add(argv[i]))
				return 1;
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d))) {
			char p[4096];

			if (de->d_name[0] == '.' || !strcmp(de->d_name, "README.md"))
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], de->d_name);
			if (add(p))
				return 1;
		}
		closedir(d);
	}
	if (!nfiles) {
		printf("1..0 # SKIP no inputs in the given folders\n");
		return 0;
	}
	qsort(files, nfiles, sizeof(*files), cmp);
	printf("1..%zu\n", nfiles);
	for (size_t i = 0; i < nfiles; i++) {
		FILE *f = fopen(files[i], "rb");
		uint8_t *buf = NULL;
		long n;

		if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET)) {
			printf("not ok %zu - %s: cannot read\n", i + 1, files[i]);
			if (f)
				fclose(f);
			continue;
		}
		/* An exact-size heap copy: ASan sees any read past the end. */
		buf = malloc(n ? (size_t)n : 1);
		if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
			printf("not ok %zu - %s: cannot read\n", i + 1, files[i]);
			free(buf);
			fclose(f);
			continue;
		}
		fclose(f);
		fflush(stdout);
		LLVMFuzzerTestOneInput(buf, (size_t)n);
		free(buf);
		/* A crash kills the process before this line: meson reports
		 * the missing results and the signal. */
		printf("ok %zu - %s (%ld bytes)\n", i + 1, files[i], n);
	}
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	return 0;
}
