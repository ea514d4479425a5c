/* SPDX-License-Identifier: MIT */
/* /proc helpers for the capture engine. */
#include "capture-internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static char *status_line(pid_t pid, const char *key, char **buf)
{
	char path[64];
	size_t klen = strlen(key);
	char *p;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	if (bt_read_file(path, buf, NULL, 1 << 16) < 0)
		return NULL;
	for (p = *buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return p + klen + 1;
	return NULL;
}

/* PROC_USER_INIT_INO (include/linux/proc_ns.h): the inode number of the
 * initial user namespace, fixed by the kernel. */
#define BT_USER_INIT_INO 0xEFFFFFFDu

bool bt_in_initial_userns(void)
{
	struct stat st;

	/* no namespace files (before 3.8): no user namespaces either */
	if (stat("/proc/self/ns/user", &st) < 0)
		return errno == ENOENT;
	return st.st_ino == BT_USER_INIT_INO;
}

/*
 * The perf checks ask capable() / perfmon_capable(), i.e.
 * ns_capable(&init_user_ns, cap) (kernel/capability.c): a capability held
 * in a user namespace of a container (CapEff shows it) does not count.
 */
bool bt_cap_effective(uint64_t capeff, bool initial_userns, int cap)
{
	return initial_userns && ((capeff >> cap) & 1);
}

bool bt_has_cap(int cap)
{
	char *buf = NULL, *v = status_line(0, "CapEff", &buf);
	unsigned long long caps = v ? strtoull(v, NULL, 16) : 0;

	free(buf);
	return bt_cap_effective(caps, bt_in_initial_userns(), cap);
}

uint64_t bt_proc_status_kb(pid_t pid, const char *key)
{
	char *buf = NULL, *v = status_line(pid, key, &buf);
	uint64_t n = v ? strtoull(v, NULL, 10) : 0;

	free(buf);
	return n;
}

long bt_proc_status_long(pid_t pid, const char *key)
{
	char *buf = NULL, *v = status_line(pid, key, &buf);
	long n = v ? strtol(v, NULL, 10) : -1;

	free(buf);
	return n;
}

uint64_t bt_proc_starttime(pid_t pid)
{
	char path[64], *buf, *p;
	unsigned long long st = 0;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (bt_read_file(path, &buf, NULL, 1 << 16) < 0)
		return 0;
	p = strrchr(buf, ')');
	if (p) {
		p++;
		while (*p && field < 22) {
			if (*p == ' ')
				field++;
			p++;
		}
		if (field == 22)
			st = strtoull(p, NULL, 10);
	}
	free(buf);
	return st;
}

void bt_proc_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64], *data;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid,
		 (int)tid);
	buf[0] = '\0';
	if (bt_read_file(path, &data, &n, 4096) < 0)
		return;
	if (n && data[n - 1] == '\n')
		data[n - 1] = '\0';
	snprintf(buf, len, "%s", data);
	free(data);
}

static int cmp_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

int bt_proc_tids(pid_t pid, pid_t **tids)
{
	char path[64];
	struct dirent *de;
	size_t n = 0, cap = 0;
	pid_t *arr = NULL;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (bt_grow((void **)&arr, &cap, n, sizeof(*arr)) < 0) {
			closedir(d);
			free(arr);
			return -ENOMEM;
		}
		arr[n++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	if (n)   /* qsort(NULL, 0, ...) is undefined */
		qsort(arr, n, sizeof(*arr), cmp_pid);
	*tids = arr;
	return (int)n;
}

uint64_t bt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int bt_online_cpus(int **cpus)
{
	char *buf, *s;
	int *ids = NULL, n = 0;
	size_t cap = 0;

	if (bt_read_file("/sys/devices/system/cpu/online", &buf, NULL, 65536) < 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		ids = calloc((size_t)(c > 0 ? c : 1), sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		for (n = 0; n < (c > 0 ? c : 1); n++)
			ids[n] = n;
		*cpus = ids;
		return n;
	}
	for (s = buf; *s && *s != '\n';) {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;

		if (end == s)
			break;
		s = end;
		if (*s == '-') {
			hi = strtol(s + 1, &end, 10);
			s = end;
		}
		for (long c = lo; c <= hi; c++) {
			if (bt_grow((void **)&ids, &cap, (size_t)n, sizeof(*ids)) < 0) {
				free(buf);
				free(ids);
				return -ENOMEM;
			}
			ids[n++] = (int)c;
		}
		if (*s == ',')
			s++;
	}
	free(buf);
	*cpus = ids;
	return n;
}
