/* SPDX-License-Identifier: MIT */
/*
 * Sideband: the tasks and executable mappings of the traced process.
 * Synthesized from /proc/PID/maps (with build IDs read from the files) when
 * the recording starts, then kept current from the MMAP2/COMM/FORK/EXIT
 * records of dummy events.
 */
#ifndef BT_CAPTURE_SIDEBAND_H
#define BT_CAPTURE_SIDEBAND_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <btrace/snapshot.h>

#include "aux-ring.h"

/* A parsed sideband record. */
struct bt_sb_event {
	uint32_t type;          /* PERF_RECORD_* */
	uint16_t misc;
	int32_t pid, tid;
	int32_t ppid, ptid;     /* FORK / EXIT */
	uint64_t time;          /* from sample_id, 0 if absent */
	/* MMAP2 */
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino;
	uint32_t prot, flags;
	uint8_t build_id_size;
	uint8_t build_id[20];
	const char *filename;   /* points into the record */
	/* COMM */
	const char *comm;
	/* LOST */
	uint64_t lost;
	/* AUX */
	uint64_t aux_offset, aux_size, aux_flags;
};

/* The dummy event attr for sideband (perf's tracking event, dummy:u). */
void bt_sideband_attr(struct perf_event_attr *attr, bool enable_on_exec,
		      bool build_id);

/* Parse @rec of an event opened with bt_sideband_attr() (sample_type
 * TID|TIME).  Returns 0, or -EINVAL for a malformed record. */
int bt_sideband_parse(const struct bt_rec *rec, struct bt_sb_event *ev);

struct bt_sb_task {
	int32_t pid, tid, ppid;
	bool exited;
	uint64_t exit_time;
	char comm[16];
};

/* An executable range mapped over while recording (dlclose + dlopen at the
 * same address, a JIT, MAP_FIXED): trace older than @time ran the old code. */
struct bt_sb_replaced {
	uint64_t start, end;           /* the part that was replaced */
	uint64_t pgoff;                /* of the old mapping at @start */
	uint64_t time;                 /* perf time of the new mapping, 0: unknown */
	char *path, *by;               /* old and new file (NULL: anonymous) */
	uint64_t by_pgoff;
};
#define BT_SB_REPLACED_MAX 16

struct bt_sideband {
	int32_t pid;                   /* the traced process */
	struct btrace_mapping *maps;   /* current mappings (exec ones) */
	size_t nmaps, cmaps;
	struct bt_sb_task *tasks;
	size_t ntasks, ctasks;
	uint64_t lost;                 /* PERF_RECORD_LOST total */
	uint64_t records;
	uint64_t comm_execs;           /* COMM records caused by exec */
	uint64_t now;                  /* time of the record being applied */
	struct bt_sb_replaced replaced[BT_SB_REPLACED_MAX]; /* the first ones */
	size_t nreplaced;              /* kept */
	uint64_t replaced_total;       /* all of them */
	/* FORK records of new threads not yet handled by the engine */
	int32_t *new_tids;
	size_t nnew, cnew;
};

void bt_sideband_init(struct bt_sideband *sb, pid_t pid);
void bt_sideband_fini(struct bt_sideband *sb);

/* Apply a record: add/replace mappings, tasks, comm, exits, lost counts.
 * Records of other processes are ignored. */
int bt_sideband_apply(struct bt_sideband *sb, const struct bt_sb_event *ev);

/* Synthesize the mappings and threads of @pid from /proc (executable
 * mappings only, build IDs read from the mapped files). */
int bt_sideband_synthesize(struct bt_sideband *sb, pid_t pid,
			   struct btrace_error *err);

/* Add or replace a mapping (ranges it overlaps are trimmed). */
int bt_sideband_add_map(struct bt_sideband *sb, const struct btrace_mapping *m);

struct bt_sb_task *bt_sideband_task(struct bt_sideband *sb, int32_t tid,
				    bool create);


#endif /* BT_CAPTURE_SIDEBAND_H */
