/* SPDX-License-Identifier: MIT */
/*
 * AUX ring simulator: what the kernel and the trace hardware do to the
 * memory btrace maps, following the kernel's rules as written, for testing
 * the engine's ring, snapshot and export code where there is no Intel PT
 * or BTS.  Every rule names the kernel function it comes from (Linux 6.x:
 * kernel/events/core.c, kernel/events/ring_buffer.c,
 * arch/x86/events/intel/{pt,bts,ds}.c).
 *
 * What it models
 * - mmap of the data ring (perf_mmap) and of the AUX ring
 *   (perf_mmap_aux): EINVAL, EPERM from perf_mmap_calc_limits(), the
 *   charges of perf_mmap_account(), and EOPNOTSUPP / EINVAL / ENOMEM from
 *   rb_alloc_aux() with the page allocator reduced to "the largest free
 *   block order" and "free pages" (rb_alloc_aux_page() falls back to lower
 *   orders; PMUs with PERF_PMU_CAP_AUX_NO_SG need the first block to be of
 *   order ilog2(pages) in overwrite mode), then the PMU's setup_aux().
 * - The hardware writing an overwrite-mode ("snapshot") AUX ring: PT fills
 *   the whole buffer and wraps at its end (ToPA END entry, or single range
 *   output); BTS writes 24-byte records between the base and the absolute
 *   maximum that bts_config_buffer() sets at the trimmed size
 *   (bts_buffer_setup_aux(): size - size % 24) and wraps to the base.
 * - pmu::stop(PERF_EF_UPDATE) (sched-out, PERF_EVENT_IOC_DISABLE, exit):
 *   the only time user_page->aux_head changes; in overwrite mode it is the
 *   write offset inside the buffer (pt_update_head(), bts_update()), and
 *   perf_aux_output_end() writes PERF_RECORD_AUX {offset = that head,
 *   size = the whole buffer, flags = OVERWRITE | the driver's} into the
 *   data ring.
 * - Records into the data ring (perf_output_begin()): in normal mode
 *   (writable mapping) a record that does not fit before data_tail is
 *   dropped and counted, and the next one that fits is preceded by
 *   PERF_RECORD_LOST; in overwrite mode (read-only) nothing is checked.
 * - The legacy BTS path (branch-instructions, sample_period 1):
 *   intel_pmu_drain_bts_buffer() turns DS records into PERF_RECORD_SAMPLE
 *   {ip = from, addr = to} (sample_type IP|ADDR: 24 bytes each), leaves out
 *   records with a kernel address when exclude_kernel is set, and writes
 *   one batch per drain (all or none).
 *
 * What it does not model: packet content (the PT stream and the BTS
 * records come from the software encoder of real programs), timing,
 * normal-mode AUX (btrace maps the AUX ring read-only), interrupts.
 * Whether the DS index can be published at the absolute maximum (the
 * record that wraps it not written yet) is not stated by the kernel: both
 * are simulated (bts_lazy_wrap).
 */
#ifndef BT_TEST_AUX_SIM_H
#define BT_TEST_AUX_SIM_H

#include <stdbool.h>
#include <stdint.h>

enum aux_sim_pmu {
	AUX_SIM_PT,          /* intel_pt with topa_multiple_entries:
			      * PERF_PMU_CAP_AUX_PREFER_LARGE */
	AUX_SIM_PT_NO_SG,    /* intel_pt without it: PERF_PMU_CAP_AUX_NO_SG */
	AUX_SIM_BTS,         /* intel_bts: PERF_PMU_CAP_AUX_NO_SG */
	AUX_SIM_SOFTWARE,    /* a PMU without AUX (has_aux() false) */
};

/* What decides mmap: the user's and the machine's state. */
struct aux_sim_host {
	uint64_t page_size;        /* 4096 */
	int max_page_order;        /* MAX_PAGE_ORDER: 10 on x86 */
	int largest_free_order;    /* the biggest block the buddy allocator
				    * has now (fragmentation) */
	uint64_t free_pages;       /* pages it can give in all */
	uint64_t mlock_kb;         /* kernel.perf_event_mlock_kb (516) */
	int online_cpus;
	uint64_t user_locked;      /* user->locked_vm, pages */
	uint64_t pinned;           /* mm->pinned_vm, pages */
	uint64_t rlimit_memlock;   /* bytes */
	int paranoid;              /* kernel.perf_event_paranoid */
	bool cap_ipc_lock;
};

/* A host with plenty of everything (no limit in the way). */
void aux_sim_host_default(struct aux_sim_host *h);

struct aux_sim {
	enum aux_sim_pmu pmu;
	struct aux_sim_host *host;
	bool sample_id_all;        /* trace event attr: TID|TIME sample_id */
	uint32_t pid, tid;
	bool bts_lazy_wrap;        /* BTS: wrap the index before the next
				    * record instead of after the last one */

	/* data ring: the user page, then data_size bytes */
	uint8_t *base;
	uint64_t data_size;
	bool data_writable;        /* normal mode (else overwrite) */
	uint64_t data_head;        /* rb->head (monotonic) */
	uint64_t lost;             /* rb->lost: records not written */

	/* AUX ring */
	uint8_t *aux;
	uint64_t aux_size;
	bool aux_overwrite;
	uint64_t hw_end;           /* where the hardware wraps */
	uint64_t hw_pos;           /* the hardware's write offset */
	uint64_t head;             /* driver head (bts head / pt offsets) */
	bool running;
	uint32_t aux_flags;        /* driver flags for the next stop */
	uint64_t written;          /* bytes the hardware wrote in all */
	uint64_t stops;            /* PERF_RECORD_AUX written */
	uint64_t now;              /* perf time for sample_id (0: 1000 +
				    * stops, as before) */
	bool context_switch;       /* attr.context_switch of the event(s)
				    * writing to this ring */
};

void aux_sim_init(struct aux_sim *s, enum aux_sim_pmu pmu,
		  struct aux_sim_host *host);
void aux_sim_fini(struct aux_sim *s);

/* mmap(NULL, len, PROT_READ [| PROT_WRITE], MAP_SHARED, fd, 0):
 * perf_mmap() for the data ring.  0 or -errno. */
int aux_sim_mmap_data(struct aux_sim *s, uint64_t len, bool writable);

/* The user page's aux_offset / aux_size, as user space writes them. */
void aux_sim_set_aux_area(struct aux_sim *s, uint64_t aux_offset,
			  uint64_t aux_size);

/* mmap(NULL, len, prot, MAP_SHARED, fd, pgoff_bytes): perf_mmap_aux().
 * 0 or -errno. */
int aux_sim_mmap_aux(struct aux_sim *s, uint64_t len, uint64_t off,
		     bool writable);

/* pmu::start: the hardware resumes at the driver's head. */
void aux_sim_start(struct aux_sim *s);
/* The hardware writes @n bytes of PT, or @n / 24 BTS records. */
void aux_sim_write(struct aux_sim *s, const uint8_t *p, uint64_t n);
/* pmu::stop(PERF_EF_UPDATE): publish aux_head, PERF_RECORD_AUX. */
void aux_sim_stop(struct aux_sim *s);

/* PERF_RECORD_ITRACE_START {pid, tid} of the event of s->tid:
 * perf_log_itrace_start(), called from event_sched_in() before
 * pmu::add(PERF_EF_START), once per event (PERF_ATTACH_ITRACE). */
void aux_sim_itrace_start(struct aux_sim *s);
/* PERF_RECORD_SWITCH of a task event (misc PERF_RECORD_MISC_SWITCH_OUT on
 * the way out): perf_event_switch() from perf_event_task_sched_out()
 * (before the context's events are stopped) and from
 * perf_event_task_sched_in() (after they are started); written only when
 * attr.context_switch (perf_event_switch_match()). */
void aux_sim_switch(struct aux_sim *s, bool out);

/* user_page->aux_head, data_head, data_tail. */
uint64_t aux_sim_aux_head(const struct aux_sim *s);
void aux_sim_set_data_tail(struct aux_sim *s, uint64_t tail);

/* intel_pmu_drain_bts_buffer(): @n 24-byte {from, to, flags} DS records
 * become samples in the data ring (exclude_kernel set).  Returns the
 * number of samples written. */
uint64_t aux_sim_drain_bts(struct aux_sim *s, const uint8_t *recs,
			   uint64_t n);

#endif /* BT_TEST_AUX_SIM_H */
