/* SPDX-License-Identifier: MIT */
/*
 * A small test harness in the spirit of libipt's ptunit.  Each test is a
 * function taking a struct bt_test; checks record the expression, the
 * expected and actual values and file:line, and the runner prints TAP so
 * meson (protocol: 'tap') shows every test as a subtest.
 *
 *	static void test_roundtrip(struct bt_test *t)
 *	{
 *		BT_EQ_INT(t, 3, add(1, 2));
 *	}
 *	BT_TESTS(test_roundtrip)
 *
 * A failed check marks the test failed and continues with the next check;
 * BT_REQUIRE* return from the test function on failure.
 */
#ifndef BT_TEST_H
#define BT_TEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct bt_test {
	const char *name;
	int failed;
	int checks;
	const char *skip;       /* set by BT_SKIP */
};

void bt_test_fail(struct bt_test *t, const char *file, int line,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void bt_test_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define BT_CHECK_(t, cond, ...)                                               \
	((t)->checks++, (cond) ? 1 : (bt_test_fail((t), __FILE__, __LINE__,   \
						   __VA_ARGS__), 0))

#define BT_CHECK(t, expr)                                                     \
	BT_CHECK_(t, (expr), "%s: expected true, got false", #expr)

#define BT_EQ_INT(t, expected, actual)                                        \
	do {                                                                  \
		long long e_ = (long long)(expected);                         \
		long long a_ = (long long)(actual);                           \
		BT_CHECK_(t, e_ == a_, "%s: expected %lld, actual %lld",       \
			  #actual, e_, a_);                                   \
	} while (0)

#define BT_EQ_U64(t, expected, actual)                                        \
	do {                                                                  \
		uint64_t e_ = (uint64_t)(expected);                           \
		uint64_t a_ = (uint64_t)(actual);                             \
		BT_CHECK_(t, e_ == a_,                                        \
			  "%s: expected 0x%" PRIx64 ", actual 0x%" PRIx64,    \
			  #actual, e_, a_);                                   \
	} while (0)

#define BT_EQ_STR(t, expected, actual)                                        \
	do {                                                                  \
		const char *e_ = (expected);                                  \
		const char *a_ = (actual);                                    \
		BT_CHECK_(t, e_ && a_ && !strcmp(e_, a_),                     \
			  "%s: expected \"%s\", actual \"%s\"", #actual,      \
			  e_ ? e_ : "(null)", a_ ? a_ : "(null)");            \
	} while (0)

#define BT_EQ_MEM(t, expected, actual, len)                                   \
	BT_CHECK_(t, !memcmp((expected), (actual), (len)),                     \
		  "%s: %zu bytes differ from %s", #actual, (size_t)(len),     \
		  #expected)

/* Substring check: @needle occurs in @haystack. */
#define BT_CONTAINS(t, haystack, needle)                                      \
	do {                                                                  \
		const char *h_ = (haystack);                                  \
		const char *n_ = (needle);                                    \
		BT_CHECK_(t, h_ && n_ && strstr(h_, n_),                      \
			  "%s: \"%s\" does not contain \"%s\"", #haystack,    \
			  h_ ? h_ : "(null)", n_ ? n_ : "(null)");            \
	} while (0)

#define BT_REQUIRE(t, expr)                                                   \
	do {                                                                  \
		if (!BT_CHECK(t, expr))                                       \
			return;                                               \
	} while (0)

#define BT_SKIP(t, reason)                                                    \
	do {                                                                  \
		(t)->skip = (reason);                                         \
		return;                                                       \
	} while (0)

typedef void (*bt_test_fn)(struct bt_test *);

struct bt_test_case {
	const char *name;
	bt_test_fn fn;
};

int bt_test_run(const struct bt_test_case *cases, int n);

/*
 * Skip the whole program: prints the TAP plan "1..0 # SKIP reason" and
 * exits 0, e.g. without Intel PT.  (meson 1.0 counts exit status 77 under
 * protocol 'tap' as an error, so 77 is never used.)  Decide a skip from the
 * machine (a file in /sys, a tool on the PATH), never from the code under
 * test: a regression in that code must fail, not skip.
 */
_Noreturn void bt_test_skip_all(const char *reason);

/*
 * Copy the file @src to the new file @dst with mode @mode (whatever the
 * umask): for a program another user must run, which cannot be run where
 * it was built when the build tree is in a private directory (a clone in
 * a 0700 home or a mktemp -d directory).  @dst is created anew (O_EXCL,
 * O_NOFOLLOW): put it in a directory made for the test (mkdtemp, then
 * mode 0711 so others may enter it).  Returns 0, or -errno.
 */
int bt_test_copy_file(const char *src, const char *dst, unsigned mode);

#define BT_TEST_CASE(fn) { #fn, fn }
#define BT_TESTS(...)                                                         \
	int main(void)                                                        \
	{                                                                     \
		static const struct bt_test_case cases_[] = {                 \
			BT_TEST_CASES_(__VA_ARGS__)                           \
		};                                                            \
		return bt_test_run(cases_, sizeof(cases_) / sizeof(cases_[0])); \
	}

/* Map BT_TESTS(a, b, c) to { "a", a }, ... for up to 40 tests. */
#define BT_TC_(x) BT_TEST_CASE(x),
#define BT_FE_1(m, x) m(x)
#define BT_FE_2(m, x, ...) m(x) BT_FE_1(m, __VA_ARGS__)
#define BT_FE_3(m, x, ...) m(x) BT_FE_2(m, __VA_ARGS__)
#define BT_FE_4(m, x, ...) m(x) BT_FE_3(m, __VA_ARGS__)
#define BT_FE_5(m, x, ...) m(x) BT_FE_4(m, __VA_ARGS__)
#define BT_FE_6(m, x, ...) m(x) BT_FE_5(m, __VA_ARGS__)
#define BT_FE_7(m, x, ...) m(x) BT_FE_6(m, __VA_ARGS__)
#define BT_FE_8(m, x, ...) m(x) BT_FE_7(m, __VA_ARGS__)
#define BT_FE_9(m, x, ...) m(x) BT_FE_8(m, __VA_ARGS__)
#define BT_FE_10(m, x, ...) m(x) BT_FE_9(m, __VA_ARGS__)
#define BT_FE_11(m, x, ...) m(x) BT_FE_10(m, __VA_ARGS__)
#define BT_FE_12(m, x, ...) m(x) BT_FE_11(m, __VA_ARGS__)
#define BT_FE_13(m, x, ...) m(x) BT_FE_12(m, __VA_ARGS__)
#define BT_FE_14(m, x, ...) m(x) BT_FE_13(m, __VA_ARGS__)
#define BT_FE_15(m, x, ...) m(x) BT_FE_14(m, __VA_ARGS__)
#define BT_FE_16(m, x, ...) m(x) BT_FE_15(m, __VA_ARGS__)
#define BT_FE_17(m, x, ...) m(x) BT_FE_16(m, __VA_ARGS__)
#define BT_FE_18(m, x, ...) m(x) BT_FE_17(m, __VA_ARGS__)
#define BT_FE_19(m, x, ...) m(x) BT_FE_18(m, __VA_ARGS__)
#define BT_FE_20(m, x, ...) m(x) BT_FE_19(m, __VA_ARGS__)
#define BT_FE_21(m, x, ...) m(x) BT_FE_20(m, __VA_ARGS__)
#define BT_FE_22(m, x, ...) m(x) BT_FE_21(m, __VA_ARGS__)
#define BT_FE_23(m, x, ...) m(x) BT_FE_22(m, __VA_ARGS__)
#define BT_FE_24(m, x, ...) m(x) BT_FE_23(m, __VA_ARGS__)
#define BT_FE_25(m, x, ...) m(x) BT_FE_24(m, __VA_ARGS__)
#define BT_FE_26(m, x, ...) m(x) BT_FE_25(m, __VA_ARGS__)
#define BT_FE_27(m, x, ...) m(x) BT_FE_26(m, __VA_ARGS__)
#define BT_FE_28(m, x, ...) m(x) BT_FE_27(m, __VA_ARGS__)
#define BT_FE_29(m, x, ...) m(x) BT_FE_28(m, __VA_ARGS__)
#define BT_FE_30(m, x, ...) m(x) BT_FE_29(m, __VA_ARGS__)
#define BT_FE_31(m, x, ...) m(x) BT_FE_30(m, __VA_ARGS__)
#define BT_FE_32(m, x, ...) m(x) BT_FE_31(m, __VA_ARGS__)
#define BT_FE_33(m, x, ...) m(x) BT_FE_32(m, __VA_ARGS__)
#define BT_FE_34(m, x, ...) m(x) BT_FE_33(m, __VA_ARGS__)
#define BT_FE_35(m, x, ...) m(x) BT_FE_34(m, __VA_ARGS__)
#define BT_FE_36(m, x, ...) m(x) BT_FE_35(m, __VA_ARGS__)
#define BT_FE_37(m, x, ...) m(x) BT_FE_36(m, __VA_ARGS__)
#define BT_FE_38(m, x, ...) m(x) BT_FE_37(m, __VA_ARGS__)
#define BT_FE_39(m, x, ...) m(x) BT_FE_38(m, __VA_ARGS__)
#define BT_FE_40(m, x, ...) m(x) BT_FE_39(m, __VA_ARGS__)
#define BT_NARG_(...) BT_NARG_N_(__VA_ARGS__, 40, 39, 38, 37, 36, 35, 34, 33,  \
	32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16,   \
	15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define BT_NARG_N_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13,    \
	_14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, \
	_28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40, N,   \
	...) N
#define BT_CAT_(a, b) a##b
#define BT_CAT(a, b) BT_CAT_(a, b)
#define BT_TEST_CASES_(...)                                                   \
	BT_CAT(BT_FE_, BT_NARG_(__VA_ARGS__))(BT_TC_, __VA_ARGS__)

#endif /* BT_TEST_H */
