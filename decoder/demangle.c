/* SPDX-License-Identifier: MIT */
/*
 * C++ names demangled (symbols.c, plt.c).  Calls nothing else in the
 * decoder but the context's strings (ctx.c).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decode-internal.h"

/* C++ names demangled by the C++ runtime's own demangler, looked up at run
 * time: a program with C++ symbols brings libstdc++ with it, and the
 * decoder stays a C library without it.  NULL: not available. */
typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn cxa_demangle;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void demangle_init(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		cxa_demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

/* @name (@len bytes) demangled when it is a C++ name, else copied; owned
 * by the context.  BTRACE_DECODE_NO_DEMANGLE keeps names as in the file. */
const char *bt_demangle(struct bt_ctx *c, const char *name, size_t len)
{
	char *buf = strndup(name, len), *d = NULL;
	const char *r;
	int st = -1;

	if (!buf)
		return NULL;
	if (len >= 3 && !strncmp(name, "_Z", 2) &&
	    !(c->opts.flags & BTRACE_DECODE_NO_DEMANGLE)) {
		pthread_once(&demangle_once, demangle_init);
		if (cxa_demangle)
			d = cxa_demangle(buf, NULL, NULL, &st);
	}
	r = bt_ctx_strdup(c, st == 0 && d ? d : buf);
	free(d);
	free(buf);
	return r;
}
