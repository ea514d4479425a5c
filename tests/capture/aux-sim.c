/* SPDX-License-Identifier: MIT */
/* AUX ring simulator: see aux-sim.h for what it models and from where. */
#include "aux-sim.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#define BTS_RECORD_SIZE 24

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static bool is_pow2(uint64_t n) { return n && !(n & (n - 1)); }

static int ilog2_u64(uint64_t n)
{
	int r = -1;

	while (n) {
		n >>= 1;
		r++;
	}
	return r;
}

/* get_order(): the order of the smallest block holding @bytes. */
static int get_order(uint64_t bytes, uint64_t page)
{
	uint64_t pages = (bytes + page - 1) / page;
	int o = 0;

	while (((uint64_t)1 << o) < pages)
		o++;
	return o;
}

void aux_sim_host_default(struct aux_sim_host *h)
{
	memset(h, 0, sizeof(*h));
	h->page_size = 4096;
	h->max_page_order = 10;
	h->largest_free_order = 10;
	h->free_pages = 1u << 20;
	h->mlock_kb = 516;
	h->online_cpus = 2;
	h->rlimit_memlock = 8u << 20;
	h->paranoid = 2;
}

void aux_sim_init(struct aux_sim *s, enum aux_sim_pmu pmu,
		  struct aux_sim_host *host)
{
	memset(s, 0, sizeof(*s));
	s->pmu = pmu;
	s->host = host;
	s->pid = 4242;
	s->tid = 4243;
}

void aux_sim_fini(struct aux_sim *s)
{
	free(s->base);
	free(s->aux);
	memset(s, 0, sizeof(*s));
}

static struct perf_event_mmap_page *upage(const struct aux_sim *s)
{
	return (struct perf_event_mmap_page *)(void *)s->base;
}

/* perf_mmap_calc_limits(): false means EPERM; sets the charges. */
static bool calc_limits(const struct aux_sim_host *h, long *user_extra,
			long *extra)
{
	uint64_t limit = (h->mlock_kb >> (ilog2_u64(h->page_size) - 10)) *
			 (uint64_t)h->online_cpus;
	uint64_t locked = h->user_locked;

	*extra = 0;
	if (locked > limit)
		locked = limit;
	locked += (uint64_t)*user_extra;
	if (locked > limit) {
		*extra = (long)(locked - limit);
		*user_extra -= *extra;
	}
	return h->pinned + (uint64_t)*extra <= h->rlimit_memlock / h->page_size ||
	       h->paranoid <= -1 /* !perf_is_paranoid() */ || h->cap_ipc_lock;
}

/* perf_mmap_account() */
static void account(struct aux_sim_host *h, long user_extra, long extra)
{
	h->user_locked += (uint64_t)user_extra;
	h->pinned += (uint64_t)extra;
}

int aux_sim_mmap_data(struct aux_sim *s, uint64_t len, bool writable)
{
	uint64_t ps = s->host->page_size, nr_pages;
	long user_extra, extra;

	/* perf_mmap(): a power-of-two count of data pages after the user
	 * page, the whole vma in pages */
	if (len < ps || len % ps)
		return -EINVAL;
	nr_pages = len / ps - 1;
	if (nr_pages && !is_pow2(nr_pages))
		return -EINVAL;
	if (s->base)
		return s->data_size == nr_pages * ps ? 0 : -EINVAL;
	user_extra = (long)nr_pages + 1;
	if (!calc_limits(s->host, &user_extra, &extra))
		return -EPERM;
	/* rb_alloc(): zeroed pages; ring_buffer_init(): overwrite unless
	 * the mapping is writable */
	s->base = aligned_alloc(ps, len);
	if (!s->base)
		return -ENOMEM;
	memset(s->base, 0, len);
	s->data_size = nr_pages * ps;
	s->data_writable = writable;
	upage(s)->data_offset = ps;
	upage(s)->data_size = s->data_size;
	account(s->host, user_extra, extra);
	return 0;
}

void aux_sim_set_aux_area(struct aux_sim *s, uint64_t aux_offset,
			  uint64_t aux_size)
{
	upage(s)->aux_offset = aux_offset;
	upage(s)->aux_size = aux_size;
}

static bool no_sg(const struct aux_sim *s)
{
	return s->pmu == AUX_SIM_BTS || s->pmu == AUX_SIM_PT_NO_SG;
}

/* rb_alloc_aux_page(): the order asked for, capped at MAX_PAGE_ORDER,
 * else lower orders down to 0.  Returns the order given, or -1. */
static int alloc_block(struct aux_sim_host *h, int order)
{
	if (order > h->max_page_order)
		order = h->max_page_order;
	for (; order >= 0; order--)
		if (order <= h->largest_free_order &&
		    h->free_pages >= ((uint64_t)1 << order)) {
			h->free_pages -= (uint64_t)1 << order;
			return order;
		}
	return -1;
}

/* rb_alloc_aux(): 0 or -errno; *first_order the order of the first block. */
static int rb_alloc_aux(struct aux_sim *s, uint64_t nr_pages, bool overwrite,
			int *nbufs)
{
	struct aux_sim_host *h = s->host;
	bool contiguous = s->pmu != AUX_SIM_SOFTWARE; /* NO_SG | PREFER_LARGE */
	int max_order = 0, first = -1;
	uint64_t got = 0;

	if (s->pmu == AUX_SIM_SOFTWARE)          /* !has_aux(event) */
		return -EOPNOTSUPP;
	if (!nr_pages)
		return -EINVAL;
	if (!overwrite) {
		uint64_t watermark = nr_pages * h->page_size / 2;

		if (contiguous)
			max_order = get_order(watermark, h->page_size);
	} else if (contiguous) {
		max_order = ilog2_u64(nr_pages);
	}
	/* kcalloc_node() of the page array */
	if (get_order(nr_pages * sizeof(void *), h->page_size) > h->max_page_order)
		return -ENOMEM;
	*nbufs = 0;
	while (got < nr_pages) {
		int want = ilog2_u64(nr_pages - got), o;

		if (want > max_order)
			want = max_order;
		o = alloc_block(h, want);
		if (o < 0) {
			h->free_pages += got;         /* __rb_free_aux() */
			return -ENOMEM;
		}
		if (first < 0)
			first = o;
		got += (uint64_t)1 << o;
		(*nbufs)++;
	}
	/* "In overwrite mode, PMUs that don't support SG may not handle
	 * more than one contiguous allocation" */
	if (no_sg(s) && overwrite && first != max_order) {
		h->free_pages += got;
		return -ENOMEM;
	}
	/* bts_buffer_setup_aux(): "only allow one physical" in overwrite */
	if (s->pmu == AUX_SIM_BTS && overwrite && *nbufs > 1) {
		h->free_pages += got;
		return -ENOMEM;
	}
	return 0;
}

int aux_sim_mmap_aux(struct aux_sim *s, uint64_t len, uint64_t off,
		     bool writable)
{
	uint64_t ps = s->host->page_size, nr_pages = len / ps;
	long user_extra, extra;
	int nbufs, r;

	/* perf_mmap_aux() */
	if (!s->base)
		return -EINVAL;
	if (upage(s)->aux_offset < s->data_size + ps)
		return -EINVAL;
	if (upage(s)->aux_offset != off)
		return -EINVAL;
	if (upage(s)->aux_size != nr_pages * ps || len % ps)
		return -EINVAL;
	if (!is_pow2(nr_pages))
		return -EINVAL;
	if (s->aux)
		return s->aux_size == len ? 0 : -EINVAL;
	user_extra = (long)nr_pages;
	if (!calc_limits(s->host, &user_extra, &extra))
		return -EPERM;
	r = rb_alloc_aux(s, nr_pages, !writable, &nbufs);
	if (r)
		return r;
	/* PERF_AUX_GFP has __GFP_ZERO: zeroed once, never again */
	s->aux = calloc(1, len);
	if (!s->aux)
		return -ENOMEM;
	s->aux_size = len;
	s->aux_overwrite = !writable;
	/* where the hardware wraps: bts_buffer_setup_aux() real_size and
	 * the phys size bts_config_buffer() takes as absolute maximum; PT
	 * fills every ToPA region */
	s->hw_end = s->pmu == AUX_SIM_BTS ? len - len % BTS_RECORD_SIZE : len;
	account(s->host, user_extra, extra);
	return 0;
}

/* perf_output_begin() .. perf_output_end() of one record @rec (its header
 * already holds its size).  Normal mode drops what does not fit before
 * data_tail and counts it; the next record that fits is preceded by
 * PERF_RECORD_LOST {id, lost}. */
static void output(struct aux_sim *s, const uint8_t *rec, uint16_t size)
{
	uint8_t lost[8 + 16 + 16];
	uint16_t lsize = 0, idsz = s->sample_id_all ? 16 : 0;
	uint64_t tail, total = size;

	if (!s->base || !s->data_size)
		return;                  /* !rb->nr_pages: nothing written */
	if (s->lost) {
		lsize = (uint16_t)(24 + idsz);
		total += lsize;
	}
	tail = __atomic_load_n(&upage(s)->data_tail, __ATOMIC_ACQUIRE);
	if (s->data_writable &&
	    ((tail - (s->data_head + 1)) & (s->data_size - 1)) < total) {
		s->lost++;               /* local_inc(&rb->lost) */
		return;
	}
	if (lsize) {
		memset(lost, 0, sizeof(lost));
		put32(lost, PERF_RECORD_LOST);
		put16(lost + 6, lsize);
		put64(lost + 8, 1);      /* event id */
		put64(lost + 16, s->lost);
		if (idsz) {
			put32(lost + 24, s->pid);
			put32(lost + 28, s->tid);
		}
		for (uint16_t i = 0; i < lsize; i++)
			s->base[s->host->page_size +
				((s->data_head + i) & (s->data_size - 1))] = lost[i];
		s->data_head += lsize;
		s->lost = 0;
	}
	for (uint16_t i = 0; i < size; i++)
		s->base[s->host->page_size +
			((s->data_head + i) & (s->data_size - 1))] = rec[i];
	s->data_head += size;
	/* perf_output_put_handle(): publish */
	__atomic_store_n(&upage(s)->data_head, s->data_head, __ATOMIC_RELEASE);
}

void aux_sim_start(struct aux_sim *s)
{
	/* bts_event_start() -> bts_config_buffer(): index = bb->head in
	 * snapshot mode (bts_buffer_reset() returns at once);
	 * pt_event_start() -> pt_config_buffer(): the output registers as
	 * pt_read_offset() left them */
	s->hw_pos = s->head;
	s->running = true;
}

void aux_sim_write(struct aux_sim *s, const uint8_t *p, uint64_t n)
{
	if (!s->running || !s->aux)
		return;
	if (s->pmu != AUX_SIM_BTS) {
		for (uint64_t i = 0; i < n; i++) {
			s->aux[s->hw_pos++] = p[i];
			if (s->hw_pos == s->hw_end)   /* ToPA END -> first */
				s->hw_pos = 0;
		}
		s->written += n;
		return;
	}
	for (uint64_t i = 0; i + BTS_RECORD_SIZE <= n; i += BTS_RECORD_SIZE) {
		if (s->bts_lazy_wrap && s->hw_pos >= s->hw_end)
			s->hw_pos = 0;
		memcpy(s->aux + s->hw_pos, p + i, BTS_RECORD_SIZE);
		s->hw_pos += BTS_RECORD_SIZE;
		if (!s->bts_lazy_wrap && s->hw_pos >= s->hw_end)
			s->hw_pos = 0;
		s->written += BTS_RECORD_SIZE;
	}
}

void aux_sim_stop(struct aux_sim *s)
{
	uint8_t rec[32 + 16];
	uint16_t size = (uint16_t)(32 + (s->sample_id_all ? 16 : 0));
	uint64_t flags = PERF_AUX_FLAG_OVERWRITE | s->aux_flags;

	if (!s->running)
		return;
	s->running = false;
	/* bts_update() / pt_update_head(): in snapshot mode data_size =
	 * the write offset; *_event_stop(): handle.head = xchg(data_size,
	 * nr_pages << PAGE_SHIFT); perf_aux_output_end(handle, that size):
	 * rb->aux_head = handle->head, PERF_RECORD_AUX {aux_head, size,
	 * flags} (size is non-zero, so always sent), user_page->aux_head */
	s->head = s->hw_pos;
	memset(rec, 0, sizeof(rec));
	put32(rec, PERF_RECORD_AUX);
	put16(rec + 6, size);
	put64(rec + 8, s->head);
	put64(rec + 16, s->aux_size);
	put64(rec + 24, flags);
	if (s->sample_id_all) {                 /* TID, TIME */
		put32(rec + 32, s->pid);
		put32(rec + 36, s->tid);
		put64(rec + 40, s->now ? s->now : 1000 + s->stops);
	}
	output(s, rec, size);
	__atomic_store_n(&upage(s)->aux_head, s->head, __ATOMIC_RELEASE);
	s->aux_flags = 0;
	s->stops++;
}

/* The sample_id of a side-band record: { u32 pid, tid; u64 time; } with
 * sample_type TID | TIME (__perf_event_header__init_id()). */
static uint16_t put_id(const struct aux_sim *s, uint8_t *p)
{
	if (!s->sample_id_all)
		return 0;
	put32(p, s->pid);
	put32(p + 4, s->tid);
	put64(p + 8, s->now ? s->now : 1000 + s->stops);
	return 16;
}

void aux_sim_itrace_start(struct aux_sim *s)
{
	uint8_t rec[16 + 16];
	uint16_t size = 16;

	/* perf_log_itrace_start(): { header, u32 pid, tid } + sample_id */
	memset(rec, 0, sizeof(rec));
	put32(rec, PERF_RECORD_ITRACE_START);
	put32(rec + 8, s->pid);
	put32(rec + 12, s->tid);
	size = (uint16_t)(size + put_id(s, rec + 16));
	put16(rec + 6, size);
	output(s, rec, size);
}

void aux_sim_switch(struct aux_sim *s, bool out)
{
	uint8_t rec[8 + 16];
	uint16_t size = 8;

	/* perf_event_switch_output(): a task event gets PERF_RECORD_SWITCH
	 * (no next/prev pid: that is PERF_RECORD_SWITCH_CPU_WIDE's) */
	if (!s->context_switch)
		return;
	memset(rec, 0, sizeof(rec));
	put32(rec, PERF_RECORD_SWITCH);
	put16(rec + 4, out ? PERF_RECORD_MISC_SWITCH_OUT : 0);
	size = (uint16_t)(size + put_id(s, rec + 8));
	put16(rec + 6, size);
	output(s, rec, size);
}

uint64_t aux_sim_aux_head(const struct aux_sim *s)
{
	return __atomic_load_n(&upage(s)->aux_head, __ATOMIC_ACQUIRE);
}

void aux_sim_set_data_tail(struct aux_sim *s, uint64_t tail)
{
	__atomic_store_n(&upage(s)->data_tail, tail, __ATOMIC_RELEASE);
}

/* kernel_ip() on x86-64 */
static bool kernel_ip(uint64_t ip)
{
	return (int64_t)ip < 0;
}

uint64_t aux_sim_drain_bts(struct aux_sim *s, const uint8_t *recs, uint64_t n)
{
	uint64_t keep = 0, out = 0;
	uint8_t *batch;

	for (uint64_t i = 0; i < n; i++)
		if (!kernel_ip(get64(recs + i * 24)) &&
		    !kernel_ip(get64(recs + i * 24 + 8)))
			keep++;
	if (!keep)
		return 0;
	/* perf_output_begin(header.size * (top - base - skip)): one
	 * reservation for the batch; each sample {header, ip = from,
	 * addr = to}.  The regs are zeroed, so perf_misc_flags() says
	 * kernel: misc is not to be trusted. */
	batch = malloc(keep * 24);
	if (!batch)
		return 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t from = get64(recs + i * 24), to = get64(recs + i * 24 + 8);
		uint8_t *p = batch + out * 24;

		if (kernel_ip(from) || kernel_ip(to))
			continue;
		memset(p, 0, 24);
		put32(p, PERF_RECORD_SAMPLE);
		put16(p + 4, PERF_RECORD_MISC_KERNEL);
		put16(p + 6, 24);
		put64(p + 8, from);
		put64(p + 16, to);
		out++;
	}
	if (s->data_writable) {
		uint64_t tail = __atomic_load_n(&upage(s)->data_tail,
						__ATOMIC_ACQUIRE);

		if (((tail - (s->data_head + 1)) & (s->data_size - 1)) <
		    keep * 24) {
			s->lost++;
			free(batch);
			return 0;
		}
	}
	for (uint64_t i = 0; i < keep * 24; i++)
		s->base[s->host->page_size +
			((s->data_head + i) & (s->data_size - 1))] = batch[i];
	s->data_head += keep * 24;
	__atomic_store_n(&upage(s)->data_head, s->data_head, __ATOMIC_RELEASE);
	free(batch);
	return keep;
}
