// SPDX-License-Identifier: MIT
/*
 * Reading the plugin's ring files after the emulator died, and rebuilding
 * each thread's branch sequence from consecutive TB indices.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qemu-record.h"
#include "util.h"

static int bt_ring_map(const char *path, uint8_t **base, size_t *size,
		       struct btrace_error *err)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return bt_error(err, -errno, "%s: open failed: %s", path,
				strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_size < BT_RING_HDR_SIZE) {
		close(fd);
		return bt_error(err, -BTRACE_ERR_FORMAT,
				"%s: read ring failed: file too small", path);
	}
	/* Private: bt_settle() corrects slot headers in our copy (it makes
	 * the pages it changes writable: only those are copied and charged
	 * as private memory; the file is not changed). */
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		int e = errno;

		bt_error(err, -e, "%s: mmap of %lld bytes failed: %s", path,
			 (long long)st.st_size, strerror(e));
		return e == ENOMEM ? bt_hint(err, "raise the address-space "
					     "limit (ulimit -v) or record "
					     "with a smaller --size") : -e;
	}
	/* The file is sparse and read in scattered places: no readahead,
	 * which would fill the page cache with zeroed holes. */
	madvise(p, (size_t)st.st_size, MADV_RANDOM);
	*base = p;
	*size = (size_t)st.st_size;
	return 0;
}

/*
 * Where a slot's records are (ring-file.h): the ring holds those before
 * `committed`, the staging area those from `stage_base` up to its first
 * sentinel.  The plugin commits a full staging area before it resets it,
 * so a process that died at any moment leaves the two consistent:
 * stage_base is `committed` or, just after a commit, one staging area
 * before it (then both hold those records).  Anything else (a damaged
 * file) is read as the ring alone.
 */
static void bt_view_init(const struct bt_ring_slot *s, uint64_t entries,
			 struct bt_qemu_view *v)
{
	const uint32_t *stage = bt_ring_stage((struct bt_ring_slot *)s);
	uint64_t n = 0;

	memset(v, 0, sizeof(*v));
	v->entries = entries;
	if (s->state == BT_SLOT_FREE)
		return;
	while (n <= BT_RING_STAGE && stage[n] != BT_RING_SENT)
		n++;
	if (n > BT_RING_STAGE || (s->committed % BT_RING_STAGE) ||
	    (s->stage_base != s->committed &&
	     s->stage_base + BT_RING_STAGE != s->committed)) {
		v->base = s->committed;
		n = 0;
	} else {
		v->base = s->stage_base;
	}
	v->n = n;
	v->pos = v->base + n > s->committed ? v->base + n : s->committed;
	/* The clock samples: the oldest one in the ring may be being
	 * overwritten (the count goes up after the write), so it is not
	 * read. */
	if (s->tcount) {
		uint64_t tn = bt_ring_time_entries(entries);

		v->times = bt_ring_times((struct bt_ring_slot *)s, entries);
		v->tmask = tn - 1;
		v->tcount = s->tcount;
		v->tfirst = s->tcount >= tn ? s->tcount - tn + 1 : 0;
	}
}

static const struct bt_tb_info *bt_tb_at(const struct bt_qemu_ring *r,
					 const struct bt_ring_slot *s,
					 const struct bt_qemu_view *v,
					 uint64_t pos);
static int bt_is_handler(const struct bt_qemu_ring *r, uint64_t ip);

/*
 * A fault note the plugin left open (BT_FAULT_F_MAYBE_QEMU: a write to the
 * page of the running block, which QEMU may have resolved itself) is
 * settled as the plugin would have: the guest got it if nothing ran after
 * it or a signal handler's entry did; otherwise it was QEMU's, and the
 * note before it is restored (in our private copy of the header).
 */
static void bt_settle(const struct bt_qemu_ring *r, struct bt_ring_slot *s,
		      const struct bt_qemu_view *v)
{
	const struct bt_tb_info *t;

	if (s->state == BT_SLOT_FREE || !s->nfaults ||
	    !(s->fault_flags & BT_FAULT_F_MAYBE_QEMU))
		return;
	if (s->fault_pos >= v->pos)
		return;   /* nothing ran after it: the guest's */
	t = bt_tb_at(r, s, v, s->fault_pos);
	if (!t || bt_is_handler(r, t->start))
		return;   /* unknown (gone from the ring), or the guest's */
	{
		uintptr_t a = (uintptr_t)s & ~(uintptr_t)4095;
		uintptr_t e = ((uintptr_t)(s + 1) + 4095) & ~(uintptr_t)4095;

		if (mprotect((void *)a, e - a, PROT_READ | PROT_WRITE))
			return;   /* left as noted */
	}
	s->fault_flags = 0;
	bt_ring_take_back_note(s);
}

uint32_t bt_qemu_nslots(const struct bt_qemu_ring *r)
{
	return r->nslots;
}

const uint8_t *bt_qemu_tb_code(const struct bt_qemu_ring *r,
			       const struct bt_tb_info *t, uint64_t *len)
{
	uint64_t n = (uint64_t)t->last_off + t->last_len;

	if (!r->code || !(t->flags & BT_TB_F_CODE) ||
	    (uint64_t)t->code_off + n > r->code_len)
		return NULL;
	*len = n;
	return r->code + t->code_off;
}

/* Whether @n items of @each bytes at @off lie within @size bytes, without
 * overflow (the header is the program's: its emulator wrote it, and the
 * guest can reach the emulator's memory). */
static int bt_fits(uint64_t off, uint64_t n, uint64_t each, uint64_t size)
{
	return off <= size && (!n || each <= (size - off) / n);
}

/* Ring entries a slot may have: a power of two the ring can index. */
static int bt_entries_ok(uint64_t e)
{
	return e && !(e & (e - 1)) && e <= (1ull << 32);
}

static int bt_ring_hdr_ok(const struct bt_ring_hdr *h, uint64_t size)
{
	if (!bt_entries_ok(h->entries) ||
	    h->slot_size != bt_ring_slot_size(h->entries) ||
	    !bt_fits(h->slot_offset, h->nslots, h->slot_size, size))
		return 0;
	if (h->nxslots && (!bt_entries_ok(h->xentries) ||
			   h->xentries % BT_RING_STAGE ||
			   h->xslot_size != bt_ring_slot_size(h->xentries) ||
			   !bt_fits(h->xslot_offset, h->nxslots, h->xslot_size,
				    size)))
		return 0;
	if (h->code_offset && (!h->tb_offset ||
			       !bt_fits(h->code_offset, 1, h->code_cap, size)))
		return 0;
	if (!bt_fits(h->maps_offset, 1, h->maps_cap, size) ||
	    h->maps_len > h->maps_cap)
		return 0;
	return !h->tb_offset || bt_fits(h->tb_offset, h->tb_max,
					sizeof(struct bt_tb_info), size);
}

static int bt_ring_open(const char *path, struct bt_qemu_ring *r,
			int need_table, struct btrace_error *err)
{
	const struct bt_ring_hdr *h;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = bt_ring_map(path, &r->base, &r->size, err);
	if (rc)
		return rc;
	h = (const struct bt_ring_hdr *)r->base;
	r->hdr = h;
	if (memcmp(h->magic, BT_RING_MAGIC, 8) || h->version != BT_RING_VERSION) {
		bt_qemu_ring_close(r);
		return bt_error(err, -BTRACE_ERR_VERSION,
				"%s: read ring failed: bad magic or version",
				path);
	}
	if (!bt_ring_hdr_ok(h, r->size)) {
		bt_qemu_ring_close(r);
		return bt_error(err, -BTRACE_ERR_FORMAT,
				"%s: read ring failed: inconsistent header",
				path);
	}
	r->maps = malloc((size_t)h->maps_len + 1);
	/* Second-class slots no thread took are never read: on a sparse
	 * file each would cost a page fault (a thousand per forked child). */
	r->nslots = h->nslots + (h->xslots_used < h->nxslots ? h->xslots_used :
				 h->nxslots);
	r->views = calloc(r->nslots ? r->nslots : 1, sizeof(*r->views));
	if (!r->maps || !r->views) {
		bt_qemu_ring_close(r);
		return bt_error(err, -ENOMEM, "%s: read failed: out of memory",
				path);
	}
	memcpy(r->maps, r->base + h->maps_offset, h->maps_len);
	r->maps[h->maps_len] = 0;
	for (uint32_t i = 0; i < r->nslots; i++)
		bt_view_init(bt_ring_slot_at(r->base, h, i),
			     bt_ring_slot_entries(h, i), &r->views[i]);
	if (h->tb_offset) {
		r->tbs = (const struct bt_tb_info *)(r->base + h->tb_offset);
		r->ntbs = h->tb_count < h->tb_max ? h->tb_count : h->tb_max;
		if (h->code_offset) {
			r->code = r->base + h->code_offset;
			r->code_len = h->code_len < h->code_cap ? h->code_len :
				      h->code_cap;
		}
	} else if (need_table) {
		/* A child's tb_pid names a file without a table (itself, or
		 * another child): no chain of them is followed. */
		bt_qemu_ring_close(r);
		return bt_error(err, -BTRACE_ERR_FORMAT, "%s: read ring failed: "
				"no TB table where a child's ring says", path);
	} else {
		/* A forked child: the table is in the root process's file. */
		char tpath[PATH_MAX];
		const char *slash = strrchr(path, '/');
		struct bt_qemu_ring root;
		int dl = slash ? (int)(slash - path) : 1;

		snprintf(tpath, sizeof(tpath), "%.*s/ring.%d", dl,
			 slash ? path : ".", h->tb_pid);
		rc = bt_ring_open(tpath, &root, 1, err);
		if (rc) {
			bt_qemu_ring_close(r);
			return rc;
		}
		/* Keep the root mapping alive: leak its struct into ours. */
		r->tbs = root.tbs;
		r->ntbs = root.ntbs;
		r->code = root.code;
		r->code_len = root.code_len;
		free(root.maps);
		free(root.views);
	}
	for (uint32_t i = 0; i < r->nslots; i++)
		bt_settle(r, bt_ring_slot_at(r->base, h, i), &r->views[i]);
	return 0;
}

int bt_qemu_ring_open(const char *path, struct bt_qemu_ring *r,
		      struct btrace_error *err)
{
	return bt_ring_open(path, r, 0, err);
}

void bt_qemu_ring_close(struct bt_qemu_ring *r)
{
	if (r->base)
		munmap(r->base, r->size);
	free(r->maps);
	free(r->views);
	memset(r, 0, sizeof(*r));
}

struct bt_ring_slot *bt_qemu_ring_slot(const struct bt_qemu_ring *r,
				       uint32_t i)
{
	return bt_ring_slot_at(r->base, r->hdr, i);
}

static const struct bt_qemu_view *bt_view(const struct bt_qemu_ring *r,
					  const struct bt_ring_slot *s)
{
	uint64_t off = (uint64_t)((const uint8_t *)s - r->base);
	const struct bt_ring_hdr *h = r->hdr;

	if (h->nxslots && off >= h->xslot_offset)
		return &r->views[h->nslots +
				 (off - h->xslot_offset) / h->xslot_size];
	return &r->views[(off - h->slot_offset) / h->slot_size];
}

uint64_t bt_qemu_slot_pos(const struct bt_qemu_ring *r,
			  const struct bt_ring_slot *s)
{
	return bt_view(r, s)->pos;
}

uint64_t bt_qemu_slot_entries(const struct bt_qemu_ring *r,
			      const struct bt_ring_slot *s)
{
	return bt_view(r, s)->entries;
}

/* The index of slot @s among both classes. */
static uint32_t bt_slot_index(const struct bt_qemu_ring *r,
			      const struct bt_ring_slot *s)
{
	uint64_t off = (uint64_t)((const uint8_t *)s - r->base);
	const struct bt_ring_hdr *h = r->hdr;

	if (h->nxslots && off >= h->xslot_offset)
		return h->nslots + (uint32_t)((off - h->xslot_offset) /
					      h->xslot_size);
	return (uint32_t)((off - h->slot_offset) / h->slot_size);
}

/* Records an access ring may have: 0, or a power of two up to the most. */
static int bt_acc_entries_ok(uint64_t e)
{
	return !e || (!(e & (e - 1)) && e <= BT_RING_ACC_MAX);
}

int bt_qemu_slot_accesses(const struct bt_qemu_ring *r,
			  const struct bt_ring_slot *s,
			  struct bt_qemu_accesses *out, char *why, size_t len)
{
	const struct bt_ring_hdr *h = r->hdr;
	const size_t each = sizeof(struct bt_ring_access);
	const struct bt_ring_access *ring;
	uint64_t cap, count, floor, lo;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	if (!h->acc_entries)
		return 1;
	/* Everything in the file is the emulator's, which the guest can
	 * reach: checked before it is used. */
	if (!bt_acc_entries_ok(h->acc_entries) ||
	    !bt_acc_entries_ok(h->acc_xentries) ||
	    !bt_fits(h->acc_offset, h->nslots, h->acc_entries * each, r->size) ||
	    !bt_fits(h->acc_xoffset, h->nxslots, h->acc_xentries * each,
		     r->size)) {
		snprintf(why, len, "the ring file's access rings do not fit "
			 "in it (%llu and %llu records per slot at offsets "
			 "%llu and %llu of %zu bytes)",
			 (unsigned long long)h->acc_entries,
			 (unsigned long long)h->acc_xentries,
			 (unsigned long long)h->acc_offset,
			 (unsigned long long)h->acc_xoffset, r->size);
		return -BTRACE_ERR_FORMAT;
	}
	i = bt_slot_index(r, s);
	cap = bt_ring_acc_entries(h, i);
	if (!cap)
		return 1;
	ring = bt_ring_acc_at(r->base, h, i);
	count = s->acc_count;
	floor = s->acc_floor;
	if (floor > count) {
		snprintf(why, len, "thread %d's access count %llu is below its "
			 "first record kept, %llu", (int)s->tid,
			 (unsigned long long)count, (unsigned long long)floor);
		return -BTRACE_ERR_FORMAT;
	}
	lo = count > cap ? count - cap : 0;
	if (lo < floor)
		lo = floor;
	out->n = count - lo;
	out->total = count;
	out->cap = cap;
	out->complete = lo == 0;
	out->tid = s->tid;
	if (!out->n)
		return 0;
	out->e = malloc(out->n * sizeof(*out->e));
	if (!out->e) {
		snprintf(why, len, "out of memory for %llu records",
			 (unsigned long long)out->n);
		return -ENOMEM;
	}
	for (uint64_t k = 0; k < out->n; k++) {
		const struct bt_ring_access *a = &ring[(lo + k) & (cap - 1)];
		struct btrace_access *e = &out->e[k];
		uint64_t info = a->info;

		e->ip = bt_ring_access_ip(info);
		e->addr = a->addr;
		e->size = 1u << (info & BT_ACC_SHIFT_MASK);
		e->flags = info & BT_ACC_STORE ? BTRACE_ACCESS_STORE : 0;
		if (info & BT_ACC_FOLD) {
			/* a fold mark: no size, no store, no address */
			e->flags = BTRACE_ACCESS_FOLD;
			e->size = 0;
			if ((info & (BT_ACC_SHIFT_MASK | BT_ACC_STORE)) || e->addr)
				e->ip = 0;   /* refused below */
		}
		if ((info & BT_ACC_RESERVED) || !e->ip ||
		    e->addr > UINT64_MAX - (e->size - 1)) {
			snprintf(why, len, "thread %d's access record %llu of "
				 "%llu is not one the plugin writes (info "
				 "%#llx, address %#llx)", (int)s->tid,
				 (unsigned long long)(lo + k),
				 (unsigned long long)count,
				 (unsigned long long)info,
				 (unsigned long long)a->addr);
			free(out->e);
			memset(out, 0, sizeof(*out));
			return -BTRACE_ERR_FORMAT;
		}
	}
	return 0;
}

static uint64_t bt_first_pos(const struct bt_qemu_ring *r,
			     const struct bt_qemu_view *v)
{
	(void)r;
	return v->pos > v->entries ? v->pos - v->entries : 0;
}

/* Record @pos of slot @s, whose view is @v. */
static const struct bt_tb_info *bt_tb_at(const struct bt_qemu_ring *r,
					 const struct bt_ring_slot *s,
					 const struct bt_qemu_view *v,
					 uint64_t pos)
{
	uint32_t idx;

	if (pos >= v->pos || pos < bt_first_pos(r, v))
		return NULL;
	if (pos >= v->base && pos < v->base + v->n)
		idx = bt_ring_stage((struct bt_ring_slot *)s)[pos - v->base];
	else if (pos < s->committed)
		idx = bt_ring_entries((struct bt_ring_slot *)s)
			[pos & (v->entries - 1)];
	else
		return NULL;
	if (idx == BT_RING_IDX_GAP || idx >= r->ntbs)
		return NULL;
	return &r->tbs[idx];
}

const struct bt_tb_info *bt_qemu_tb_at(const struct bt_qemu_ring *r,
				       const struct bt_ring_slot *s,
				       uint64_t pos)
{
	return bt_tb_at(r, s, bt_view(r, s), pos);
}

static uint64_t tb_last(const struct bt_tb_info *t)
{
	return t->start + t->last_off;
}

static uint64_t tb_end(const struct bt_tb_info *t)
{
	return t->start + t->last_off + t->last_len;
}

static int bt_is_handler(const struct bt_qemu_ring *r, uint64_t ip)
{
	uint32_t n = r->hdr->nhandlers;

	if (n > BT_RING_MAX_HANDLERS)
		n = BT_RING_MAX_HANDLERS;
	for (uint32_t i = 0; i < n; i++)
		if (r->hdr->handlers[i] == ip)
			return 1;
	return 0;
}

/* Where an interrupted TB stopped, when nothing more precise is known. */
static uint64_t bt_async_from(const struct bt_tb_info *p, int fault_here)
{
	if (p->kind == BT_TB_TRAP)
		return tb_last(p);
	if (fault_here)
		return p->start;   /* the fault is somewhere in the block */
	switch (p->kind) {
	case BT_TB_NONE:
	case BT_TB_REP:
		return tb_end(p);
	case BT_TB_JMP:
	case BT_TB_CALL:
		return p->target;
	default:
		return tb_last(p);
	}
}

static void bt_set(struct bt_branch *b, uint8_t kind, uint64_t from,
		   uint8_t len, uint64_t to, int taken)
{
	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->from = from;
	b->len = len;
	b->to = to;
	b->taken = (uint8_t)taken;
}

/*
 * The transition p -> @to.  Returns 1 with *b filled, 0 when it is not a
 * branch (rep-string iteration), 2 for an asynchronous edge.
 */
static int bt_transition(const struct bt_qemu_ring *r,
			 const struct bt_tb_info *p, uint64_t to,
			 int fault_here, struct bt_branch *b)
{
	uint64_t last = tb_last(p), end = tb_end(p);
	uint8_t len = p->last_len;
	int async = 0;

	switch (p->kind) {
	case BT_TB_NONE:
		if (to == end)
			bt_set(b, BT_BR_NONE, last, len, to, 0);
		else
			async = 1;
		break;
	case BT_TB_COND:
		if (to == p->target)
			bt_set(b, BT_BR_COND, last, len, to, 1);
		else if (to == end)
			bt_set(b, BT_BR_COND, last, len, to, 0);
		else
			async = 1;
		break;
	case BT_TB_JMP:
	case BT_TB_CALL:
		if (to == p->target)
			bt_set(b, p->kind == BT_TB_JMP ? BT_BR_JMP : BT_BR_CALL,
			       last, len, to, 1);
		else
			async = 1;
		break;
	case BT_TB_JMP_IND:
	case BT_TB_CALL_IND:
	case BT_TB_RET:
		if (bt_is_handler(r, to) || fault_here)
			async = 1;
		else
			bt_set(b, p->kind == BT_TB_RET ? BT_BR_RET :
			       p->kind == BT_TB_JMP_IND ? BT_BR_JMP_IND :
			       BT_BR_CALL_IND, last, len, to, 1);
		break;
	case BT_TB_SYSCALL:
	case BT_TB_FAR:
	case BT_TB_SWINT:
		/* int3 and int1 complete before their exception is taken: a far
		 * transfer, whatever runs next (the next instruction, a SIGTRAP
		 * handler), as for int n.  libipt decodes them as far calls and
		 * wants a TIP.PGD there, not a FUP. */
		if (fault_here)
			async = 1;
		else
			bt_set(b, BT_BR_FAR, last, len, to, 1);
		break;
	case BT_TB_REP:
		if (to == last)
			return 0;
		if (to == end)
			bt_set(b, BT_BR_NONE, last, len, to, 0);
		else
			async = 1;
		break;
	case BT_TB_TRAP:
	default:
		if (to == end && !fault_here)
			bt_set(b, BT_BR_NONE, last, len, to, 0);
		else
			async = 1;
		break;
	}
	if (!async)
		return 1;
	/* Back inside the same block, with no signal in between: QEMU ran
	 * it again from @to (it restarts a block after resolving a fault of
	 * its own, e.g. a write to the block's own page).  The straight line
	 * up to @to is what ran; no branch. */
	if (!fault_here && to >= p->start && to <= last)
		return 0;
	bt_set(b, BT_BR_ASYNC, bt_async_from(p, fault_here), 0, to, 0);
	return 2;
}

/*
 * The clock samples of a slot, in order, by record position (struct
 * bt_ring_time).  The samples are the guest's to damage (its emulator
 * wrote them): one whose time or position goes back is skipped.
 */
struct bt_times {
	const struct bt_qemu_view *v;
	uint64_t i;           /* next sample */
	uint64_t last_ns;     /* the last one passed on */
	uint64_t before_ns;   /* the last one skipped (before the history) */
};

/* The samples at record position @pos (those before it are skipped):
 * returns how many, *@a the first's time, *@z the last's. */
static unsigned int bt_times_at(struct bt_times *t, uint64_t pos,
				uint64_t *a, uint64_t *z)
{
	const struct bt_qemu_view *v = t->v;
	unsigned int n = 0;

	for (; t->i < v->tcount; t->i++) {
		const struct bt_ring_time *e = &v->times[t->i & v->tmask];
		uint64_t p = e->pos, ns = e->ns;

		if (p > pos)
			break;
		if (p < pos && ns >= t->before_ns)
			t->before_ns = ns;
		if (p < pos || ns < t->last_ns || !ns)
			continue;
		if (!n++)
			*a = ns;
		*z = ns;
		t->last_ns = ns;
	}
	return n;
}

static int bt_time_mark(bt_qemu_branch_cb cb, void *ctx, uint64_t ns,
			struct bt_qemu_rebuild *out)
{
	struct bt_branch m;

	bt_set(&m, BT_QEMU_MARK_TIME, 0, 0, ns, 0);
	out->ntimes++;
	return cb(ctx, &m);
}

int bt_qemu_rebuild(const struct bt_qemu_ring *r,
		    const struct bt_ring_slot *s, const struct bt_qemu_end *end,
		    bt_qemu_branch_cb cb, void *ctx,
		    struct bt_qemu_rebuild *out)
{
	const struct bt_tb_info *prev = NULL;
	const struct bt_qemu_view *v = bt_view(r, s);
	uint64_t pos, first = bt_first_pos(r, v);
	struct bt_times tm = { v, v->tfirst, 0, 0 };
	uint64_t ta = 0, tz = 0;
	unsigned int nt;
	struct bt_branch b;
	int rc, gap = 0;

	memset(out, 0, sizeof(*out));
	for (pos = first; pos < v->pos; pos++) {
		const struct bt_tb_info *t = bt_tb_at(r, s, v, pos);

		if (!t) {
			gap = 1;
			out->ngaps++;
			continue;
		}
		out->ntb++;
		/* The clock between the previous record and this one. */
		nt = bt_times_at(&tm, pos, &ta, &tz);
		if (!prev || gap) {
			/* The start, or unknown blocks in between. */
			if (!prev)
				out->first_ip = t->start;
			bt_set(&b, prev ? BT_QEMU_MARK_GAP : BT_QEMU_MARK_BEGIN,
			       0, 0, t->start, 0);
			/* the start's time goes into its PSB+ (the encoder
			 * holds a time given before the first PSB); when the
			 * ring wrapped, the last sample before the history
			 * (a lower bound: perf needs a time in the first
			 * PSB+, docs/export.md) */
			if (!prev && !nt && tm.before_ns) {
				nt = 1;
				tz = tm.before_ns;
			}
			rc = !prev && nt ? bt_time_mark(cb, ctx, tz, out) : 0;
			if (!rc)
				rc = cb(ctx, &b);
			if (!rc && prev && nt)
				rc = bt_time_mark(cb, ctx, tz, out);
			if (rc)
				return rc;
		} else {
			/* the last noted fault, or the first (a handler
			 * that returned to the faulting instruction, which
			 * faulted again) */
			int fault_here = s->nfaults &&
					 (s->fault_pos == pos ||
					  s->first_fault_pos == pos);

			rc = bt_transition(r, prev, t->start, fault_here, &b);
			if (rc == 2)
				out->nasync++;
			if (rc == 2 && !fault_here && prev->kind == BT_TB_CALL) {
				/* The signal came after the block: its direct
				 * call is done (the edge leaves from the
				 * target), and a decoder executes it, pushing
				 * the return address.  The encoder must push
				 * it too: without this call its return stack
				 * missed an entry the decoder's has, and a
				 * later compressed return was decoded to a
				 * wrong address (Go's SIGURG preemption). */
				struct bt_branch c;

				bt_set(&c, BT_BR_CALL, tb_last(prev),
				       prev->last_len, prev->target, 1);
				rc = cb(ctx, &c);
				if (rc)
					return rc;
				rc = 2;
			}
			/* Two samples across a far or asynchronous transfer
			 * (a system call's entry and return): one on each
			 * side of it; otherwise the latest, after the
			 * branch. */
			if (rc > 0 && nt > 1 && ta != tz &&
			    (b.kind == BT_BR_FAR || b.kind == BT_BR_ASYNC)) {
				rc = bt_time_mark(cb, ctx, ta, out);
				if (rc)
					return rc;
				rc = 1;
			}
			if (rc > 0) {
				rc = cb(ctx, &b);
				if (rc)
					return rc;
			}
			if (nt) {
				rc = bt_time_mark(cb, ctx, tz, out);
				if (rc)
					return rc;
			}
		}
		gap = 0;
		prev = t;
	}
	if (!prev)
		return 0;
	out->last_tb_start = prev->start;
	/* After the last record: a system call it entered, its fault.  The
	 * first such sample bounds the last block's end (a system call's
	 * return may come much later, and nothing of it is in the trace). */
	nt = bt_times_at(&tm, v->pos, &ta, &tz);
	tz = ta;
	/* The end: exact when the fault address is known and reachable. */
	if (end && end->have_ip) {
		uint64_t ip = end->ip;

		if (ip >= prev->start && ip <= tb_last(prev)) {
			out->end_ip = ip;
			out->end_exact = 1;
			return nt ? bt_time_mark(cb, ctx, tz, out) : 0;
		}
		rc = bt_transition(r, prev, ip, 0, &b);
		if (rc == 1 && b.kind != BT_BR_ASYNC) {
			rc = cb(ctx, &b);
			if (rc)
				return rc;
			out->end_ip = ip;
			out->end_exact = 1;
			return nt ? bt_time_mark(cb, ctx, tz, out) : 0;
		}
	}
	/* Only the block is known; a thread blocked in a syscall stopped at
	 * the syscall instruction. */
	out->end_ip = prev->kind == BT_TB_SYSCALL ? tb_last(prev) : prev->start;
	return nt ? bt_time_mark(cb, ctx, tz, out) : 0;
}
