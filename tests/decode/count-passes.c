/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim of decode-passes.py: every btrace_decode_thread() (the
 * listing's second decode of a thread) appends a line to the file
 * BT_PASSES names, then runs the library's.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <btrace/decode.h>

typedef int (*decode_thread_fn)(struct btrace_decode_result *, size_t,
				const struct btrace_decode_sink *,
				struct btrace_error *);

__attribute__((visibility("default")))
int btrace_decode_thread(struct btrace_decode_result *res, size_t i,
			 const struct btrace_decode_sink *sink,
			 struct btrace_error *err)
{
	decode_thread_fn next = (decode_thread_fn)dlsym(RTLD_NEXT,
						       "btrace_decode_thread");
	const char *path = getenv("BT_PASSES");
	FILE *f = path ? fopen(path, "a") : NULL;

	if (f) {
		fprintf(f, "thread %zu\n", i);
		fclose(f);
	}
	if (!next)
		abort();
	return next(res, i, sink, err);
}
