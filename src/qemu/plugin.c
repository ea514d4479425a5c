// SPDX-License-Identifier: MIT
/*
 * btrace TCG plugin for qemu-x86_64 (QEMU 7.2 user mode, plugin API 1).
 *
 * Records the index of every executed translation block into a per-thread
 * ring inside a MAP_SHARED file that outlives the emulator, so btrace can
 * read the history after any death, SIGKILL included.  The layout is in
 * ring-file.h; docs/qemu-backend.md explains the whole backend.
 *
 * Arguments (comma-separated after the plugin path):
 *   dir=PATH      btrace's private directory (required): its socket
 *                 "sock" takes every other process's ring, and QEMU's guest
 *                 core goes there (preload.c)
 *   fd=N          the ring of this (the launched) process is the open
 *                 descriptor N, a memfd btrace created: the plugin sizes it,
 *                 maps it and closes it before the guest starts.  Without
 *                 it (a re-executed emulator) and in forked children, the
 *                 plugin creates a memfd itself and hands it to btrace over
 *                 dir=/sock (bt_file_publish)
 *   slots=N       thread slots per process (default 64)
 *   entries=N     ring entries per thread, rounded up to a power of two
 *                 (default 1M = 4 MiB)
 *   xslots=N      more slots, with smaller rings, for the threads beyond
 *                 the first slots= alive at once (default 1024)
 *   xentries=N    ring entries of those (default 64K), a power of two
 *   tbmax=N       TB table capacity (default 4M)
 *   fixpage=0|1   work around QEMU 7.2's page-crossing instruction bug (1)
 *   watch=0|1     1: a forked child waits until btrace watches it (or
 *                 is gone; bt_wait_watched()) (default 0)
 *   exec=0|1      1: at the guest's execve(), run the new program under a
 *                 new emulator with this plugin, so it stays traced
 *                 (plugin-exec.c; default 0: it runs natively)
 *   comm=NAME     the process's name (/proc/PID/comm) as the kernel's
 *                 execve() would set it: the basename of the path run,
 *                 15 bytes at most (default: of the program QEMU loads)
 *   dumpable=0|1  0: make the emulator non-dumpable, so a fatal guest
 *                 signal leaves only QEMU's guest core, not a host core of
 *                 QEMU itself (default 1: leave it alone)
 *   time=N        a CLOCK_MONOTONIC sample every N records (and at every
 *                 system call, thread start and exit, host fault); 0: no
 *                 clock samples at all (default 256, at most 1024)
 *   accesses=N    log each thread's last N memory accesses (instruction,
 *                 address, size, load or store), N rounded up to a power
 *                 of two, at most 4M; threads in second-class slots keep
 *                 at most 4096; 0: no access log (the default)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <capstone/capstone.h>
#include <emmintrin.h>

#include "plugin-exec.h"
#include "plugin-limits.h"
#include "procmaps.h"
#include "util.h"   /* its inline helpers only: no libbtrace here */
#include "qemu-plugin-abi.h"
#include "stack-op.h"
#include "ring-file.h"

#define BT_EXPORT __attribute__((visibility("default")))
#define BT_MAX_VCPUS 4096
#define BT_PAGE 4096ull

BT_EXPORT int qemu_plugin_version = BT_QEMU_PLUGIN_API_VERSION;

_Static_assert(sizeof(struct bt_ring_slot) == 192, "slot header size");
_Static_assert((sizeof(struct bt_ring_slot) + 4 * BT_RING_STAGE_ALLOC) % 64 == 0,
	       "ring alignment");
_Static_assert(sizeof(struct bt_tb_info) == 32, "tb info size");
_Static_assert(BT_RING_LOOP == 4, "bt_exec_loop looks back four records");
_Static_assert(sizeof(struct bt_ring_hdr) <= BT_RING_HDR_SIZE, "header size");

struct bt_range {
	uint64_t start, end;
};

static struct {
	char dir[PATH_MAX];
	char comm[16];                   /* comm=: the kernel's name of it */
	dev_t dir_dev;                   /* dir= as found at load: ours, */
	ino_t dir_ino;                   /* 0700 (0/0: unusable) */
	uint32_t nslots, nxslots;
	uint64_t entries, xentries;
	uint64_t tb_max;
	int ring_fd;                     /* until bt_map_root() */
	int mapped;                      /* the whole file is mapped */
	int off;                         /* the ring could not be mapped */
	int fixpage;
	int loops;                       /* fold the turns of short loops */
	int watch;                       /* btrace acknowledges children */
	int reexec;                      /* exec=1: execve() stays traced */
	int detached;                    /* a child without a file of its own */
	uint32_t time_every;             /* time=: records between samples */
	uint64_t acc_entries;            /* accesses=: per first-class slot */
	uint64_t acc_xentries;           /* per second-class slot */

	/* The current process's file, and the root file with the TB table. */
	struct bt_ring_hdr *hdr;
	size_t map_size;
	struct bt_ring_hdr *tbhdr;
	size_t tb_map_size;
	struct bt_tb_info *tbs;

	struct bt_ring_slot *sink;       /* for threads without a slot */
	pthread_mutex_t lock;
	int started;                     /* first translation done */

	struct bt_range *host;           /* QEMU's own mappings at install */
	size_t nhost;

	struct sigaction old_segv, old_bus;
	csh cs;
	int cs_ok;
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct bt_ring_slot *g_vslot[BT_MAX_VCPUS];
static uint64_t g_clone_flags[BT_MAX_VCPUS];
/* The pending mmap/mprotect/munmap/mremap of each vCPU: {a1, a2, a3, a4}. */
static uint64_t g_sysargs[BT_MAX_VCPUS][4];

static pid_t bt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- the ring file ---- */

/*
 * A ring for process @pid: the descriptor @fd when >= 0 (the launched
 * process's memfd from btrace), else a new memfd.  Either way its pages are
 * shmem: no page cache or writeback of a disk file, and nothing in TMPDIR,
 * so a full or read-only TMPDIR cannot make a write to the ring fail (a
 * sparse file there did: SIGBUS in the guest).  The descriptor stays open in
 * *@fd_out (for bt_file_publish() and bt_map_root()); with @whole the whole
 * ring is mapped, else only the header page.
 */
static struct bt_ring_hdr *bt_file_create(pid_t pid, int with_tbs, int fd,
					  int whole, size_t *size_out,
					  int *fd_out)
{
	char what[64];
	uint64_t slot_size = bt_ring_slot_size(g.entries);
	uint64_t xslot_size = bt_ring_slot_size(g.xentries);
	uint64_t maps_off = BT_RING_HDR_SIZE;
	uint64_t slot_off = maps_off + BT_RING_MAPS_CAP;
	uint64_t xslot_off = slot_off + g.nslots * slot_size;
	uint64_t acc_off = xslot_off + g.nxslots * xslot_size;
	uint64_t acc_xoff = acc_off + g.nslots * g.acc_entries *
			    sizeof(struct bt_ring_access);
	uint64_t tb_off = acc_xoff + g.nxslots * g.acc_xentries *
			  sizeof(struct bt_ring_access);
	uint64_t code_off = tb_off + g.tb_max * sizeof(struct bt_tb_info);
	uint64_t size = ((with_tbs ? code_off + BT_RING_CODE_CAP : tb_off) +
			 4095) & ~4095ull;
	struct bt_ring_hdr *h;
	void *p;

	const char *op = "memfd_create";
	int given = fd >= 0;

	if (given) {
		snprintf(what, sizeof(what), "ring fd %d", fd);
	} else {
		snprintf(what, sizeof(what), "ring of process %d", (int)pid);
		fd = memfd_create("btrace-ring", MFD_CLOEXEC);
	}
	p = MAP_FAILED;
	if (fd >= 0) {
		op = "resize";
		if (ftruncate(fd, (off_t)size) == 0) {
			op = "mmap";
			p = mmap(NULL, whole ? size : BT_RING_HDR_SIZE,
				 PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		}
	}
	if (p == MAP_FAILED) {
		fprintf(stderr, "btrace-qemu: %s: %s failed: %s; not tracing "
			"this process\n", what, op, strerror(errno));
		if (fd >= 0 && !given)
			close(fd);
		if (given)
			return NULL;
		/* Not traced, but running as it would: private memory in
		 * the ring's place that nobody reads (bt_map_root() maps the
		 * rest the same way). */
		fd = -1;
		p = mmap(NULL, whole ? size : BT_RING_HDR_SIZE,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
	}
	*fd_out = fd;
	/* Written in scattered places: no readahead. */
	if (whole)
		madvise(p, size, MADV_RANDOM);
	h = p;
	memcpy(h->magic, BT_RING_MAGIC, 8);
	h->version = BT_RING_VERSION;
	h->hdr_size = BT_RING_HDR_SIZE;
	h->pid = pid;
	h->ppid = getppid();
	h->nslots = g.nslots;
	h->entries = g.entries;
	h->slot_offset = slot_off;
	h->slot_size = slot_size;
	h->nxslots = g.nxslots;
	h->xentries = g.xentries;
	h->xslot_offset = xslot_off;
	h->xslot_size = xslot_size;
	h->maps_offset = maps_off;
	h->maps_cap = BT_RING_MAPS_CAP;
	h->time_every = g.time_every;
	h->acc_entries = g.acc_entries;
	h->acc_xentries = g.acc_xentries;
	h->acc_offset = acc_off;
	h->acc_xoffset = acc_xoff;
	if (with_tbs) {
		h->tb_offset = tb_off;
		h->tb_max = g.tb_max;
		h->tb_pid = pid;
		h->code_offset = code_off;
		h->code_cap = BT_RING_CODE_CAP;
	}
	if (!getcwd(h->cwd, sizeof(h->cwd)))
		h->cwd[0] = 0;
	*size_out = size;
	return h;
}

/*
 * Hand ring descriptor @fd (header complete) to btrace: one datagram with
 * the descriptor (SCM_RIGHTS) to the socket "sock" in dir=; the kernel adds
 * our pid (btrace sets SO_PASSCRED).  btrace keeps its own reference, so
 * the ring outlives this process whatever ends it.  The path goes through
 * /proc/self/fd/N of the directory, so a long TMPDIR does not overflow
 * sun_path.  Everything is opened and closed here, while no guest code runs
 * (the guest never sees these descriptors).  With @ack >= 0 that socket
 * goes along (the other end of the caller's socketpair): btrace writes one
 * byte there once it watches the process (bt_wait_watched()).  Fails at
 * once when btrace is gone (the directory removed: ENOENT; no reader:
 * ECONNREFUSED).  A full queue (btrace busy writing a snapshot) is waited
 * out, however long, while btrace lives: the kernel wakes a blocked sender
 * when the reading socket closes (unix_release_sock() wakes peer_wait, and
 * the send then fails with ECONNREFUSED), so btrace's death never leaves
 * the process stuck here.  Returns 0 or -errno.
 */
static int bt_file_publish(int fd, int ack)
{
	struct sockaddr_un a;
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} c;
	uint32_t magic = BT_RING_SOCK_MAGIC;
	struct iovec iov = { &magic, sizeof(magic) };
	struct msghdr m;
	struct cmsghdr *cm;
	struct stat st;
	int dfd, s, rc = 0, fds[2] = { fd, ack }, nfd = ack >= 0 ? 2 : 1;

	/* The directory btrace made, not one put in its place (docs/
	 * security.md): a ring is never sent to a socket someone else
	 * bound. */
	dfd = open(g.dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) || !g.dir_ino || st.st_dev != g.dir_dev ||
	    st.st_ino != g.dir_ino || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		close(dfd);
		return -EACCES;
	}
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/sock", dfd);
	memset(&m, 0, sizeof(m));
	memset(&c, 0, sizeof(c));
	m.msg_name = &a;
	m.msg_namelen = sizeof(a);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = c.buf;
	m.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfd * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfd * sizeof(int));
	while (sendmsg(s, &m, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR) {
			rc = -errno;
			break;
		}
	}
	close(s);
	close(dfd);
	return rc;
}

/*
 * The launched process's whole ring, mapped at the first translation
 * rather than at install.  QEMU allocates its code buffer after installing
 * the plugin, top-down below the mappings that exist then: a ring mapped
 * at install (2.2 GB with 64 slots of 8 Mi entries) would put the code
 * buffer more than 2 GB away from the plugin, and TCG would call the
 * per-TB callback indirectly through a constant pool instead of with a
 * direct call (about 6% of the CPU time of a CPython run; see
 * docs/performance.md).  Nothing of the guest runs before its first
 * translation.  Returns -1 (and records nothing) when it cannot be mapped.
 */
static int bt_map_root(void)
{
	size_t sink_size = bt_ring_slot_size(g.entries);
	void *p = g.ring_fd >= 0 ?
		  mmap(NULL, g.map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       g.ring_fd, 0) :
		  /* No ring (bt_file_create() failed): private memory. */
		  mmap(NULL, g.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		       MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int e = errno;

	if (g.ring_fd >= 0)
		close(g.ring_fd);
	else if (p != MAP_FAILED)
		memcpy(p, g.hdr, BT_RING_HDR_SIZE);
	g.ring_fd = -1;
	/* Threads beyond the slots write into a private sink (mapped here
	 * too, for the same reason). */
	g.sink = mmap(NULL, sink_size, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		      MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED || g.sink == MAP_FAILED) {
		if (p != MAP_FAILED)
			e = errno;
		fprintf(stderr, "btrace-qemu: ring: mmap of %zu bytes failed: %s; "
			"not tracing%s\n", p == MAP_FAILED ? g.map_size : sink_size,
			strerror(e), e == ENOMEM ? " (raise the address-space "
			"limit, ulimit -v, or ask for less history)" : "");
		if (p != MAP_FAILED)
			munmap(p, g.map_size);
		if (g.sink != MAP_FAILED)
			munmap(g.sink, sink_size);
		g.sink = NULL;
		return -1;
	}
	madvise(p, g.map_size, MADV_RANDOM);
	for (int k = 0; k < BT_RING_LOOP; k++)
		g.sink->guard[k] = BT_RING_SENT;
	munmap(g.hdr, BT_RING_HDR_SIZE);
	g.hdr = p;
	bt_limits_set_hdr(g.hdr);
	g.tbhdr = p;
	g.tb_map_size = g.map_size;
	g.tbs = (struct bt_tb_info *)((uint8_t *)p + g.hdr->tb_offset);
	g.mapped = 1;
	return 0;
}

/* ---- the guest's memory map ---- */

static int bt_parse_range(const char *line, struct bt_range *r)
{
	struct bt_maps_line m;

	if (bt_maps_parse(line, strlen(line), &m) < BT_MAPS_RANGE)
		return -1;
	r->start = m.start;
	r->end = m.end;
	return 0;
}

static char *bt_read_maps(size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (n + 4096 > cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* QEMU's own mappings, before the guest is loaded. */
static void bt_note_host_maps(void)
{
	size_t len, cap = 0;
	char *maps = bt_read_maps(&len), *line, *save = NULL;

	if (!maps)
		return;
	for (line = strtok_r(maps, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct bt_range r;

		if (bt_parse_range(line, &r))
			continue;
		if (g.nhost == cap) {
			struct bt_range *n;

			cap = cap ? cap * 2 : 256;
			n = realloc(g.host, cap * sizeof(*n));
			if (!n)
				break;
			g.host = n;
		}
		g.host[g.nhost++] = r;
	}
	free(maps);
}

/* The plugin's own mappings: the ring files (a memfd has no path in dir=)
 * and the sink.  Not the guest's. */
static int bt_is_ours(const struct bt_range *r)
{
	const struct {
		const void *p;
		size_t len;
	} m[3] = {
		{ g.hdr, g.map_size },
		{ g.tbhdr, g.tb_map_size },
		{ g.sink, g.sink ? bt_ring_slot_size(g.entries) : 0 },
	};

	for (int i = 0; i < 3; i++) {
		uint64_t s = (uint64_t)(uintptr_t)m[i].p;

		if (m[i].p && r->start < s + m[i].len && r->end > s)
			return 1;
	}
	return 0;
}

static int bt_is_host(const struct bt_range *r)
{
	for (size_t i = 0; i < g.nhost; i++)
		if (g.host[i].start == r->start && g.host[i].end == r->end)
			return 1;
	return 0;
}

/*
 * Guest ranges with PROT_EXEC that are not file mappings (JIT code): QEMU
 * maps them without the execute bit on the host, so the plugin keeps them
 * from the guest's mmap/mprotect arguments.  Called with g.lock held.
 */
static void bt_xranges_set(uint64_t start, uint64_t end, int exec)
{
	struct bt_ring_hdr *h = g.hdr;
	uint64_t xs[2 * BT_RING_MAX_XRANGES + 2][2];
	uint32_t n = 0, i;

	if (end <= start)
		return;
	/* Remove [start, end) from every range, keep the rest. */
	for (i = 0; i < h->nxranges; i++) {
		uint64_t s = h->xranges[i].start, e = h->xranges[i].end;

		if (e <= start || s >= end) {
			xs[n][0] = s;
			xs[n++][1] = e;
			continue;
		}
		if (s < start) {
			xs[n][0] = s;
			xs[n++][1] = start;
		}
		if (e > end) {
			xs[n][0] = end;
			xs[n++][1] = e;
		}
	}
	if (exec) {
		/* Insert in order, merging with neighbours. */
		uint32_t k = 0;

		while (k < n && xs[k][0] < start)
			k++;
		memmove(xs[k + 1], xs[k], (n - k) * sizeof(xs[0]));
		xs[k][0] = start;
		xs[k][1] = end;
		n++;
		for (i = 1, k = 0; i < n; i++) {
			if (xs[i][0] <= xs[k][1]) {
				if (xs[i][1] > xs[k][1])
					xs[k][1] = xs[i][1];
			} else {
				k++;
				xs[k][0] = xs[i][0];
				xs[k][1] = xs[i][1];
			}
		}
		n = k + 1;
	}
	if (n > BT_RING_MAX_XRANGES) {
		/* Keep the newest-looking (highest) ranges. */
		h->xranges_lost += n - BT_RING_MAX_XRANGES;
		memmove(xs[0], xs[n - BT_RING_MAX_XRANGES],
			BT_RING_MAX_XRANGES * sizeof(xs[0]));
		n = BT_RING_MAX_XRANGES;
	}
	for (i = 0; i < n; i++) {
		h->xranges[i].start = xs[i][0];
		h->xranges[i].end = xs[i][1];
	}
	h->nxranges = n;
}

static int bt_xranges_overlap(const struct bt_range *r)
{
	for (uint32_t i = 0; i < g.hdr->nxranges; i++)
		if (g.hdr->xranges[i].start < r->end &&
		    g.hdr->xranges[i].end > r->start)
			return 1;
	return 0;
}

/*
 * The guest's view: the host's map minus what QEMU had mapped before the
 * guest existed, minus our own files; anonymous lines the guest made
 * executable get their 'x' back.
 */
static void bt_refresh_maps_x(int xchange, uint64_t xs, uint64_t xe,
			      int exec)
{
	struct bt_ring_hdr *h = g.hdr;
	char *out = (char *)h + h->maps_offset;
	size_t len, n = 0, dirlen = strlen(g.dir);
	char *maps, *line, *save = NULL;

	if (!g.mapped)
		return;   /* only the header is mapped (yet) */
	pthread_mutex_lock(&g.lock);
	__atomic_store_n(&h->maps_seq, h->maps_seq + 1, __ATOMIC_RELEASE);
	if (xchange)
		bt_xranges_set(xs, xe, exec);
	maps = bt_read_maps(&len);
	for (line = maps ? strtok_r(maps, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct bt_range r;
		const char *path = strchr(line, '/');
		size_t ll = strlen(line);

		if (bt_parse_range(line, &r) || bt_is_host(&r) || bt_is_ours(&r))
			continue;
		if (path && !strncmp(path, g.dir, dirlen))
			continue;
		if (n + ll + 1 >= h->maps_cap)
			break;
		if ((!path || strchr(line, '[')) && ll > 20) {
			char *perms = strchr(line, ' ');

			if (perms && perms[1] && perms[2] && perms[3] &&
			    bt_xranges_overlap(&r))
				perms[3] = 'x';
		}
		memcpy(out + n, line, ll);
		out[n + ll] = '\n';
		n += ll + 1;
	}
	if (maps)
		h->maps_len = (uint32_t)n;
	__atomic_store_n(&h->maps_seq, h->maps_seq + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g.lock);
	free(maps);
}

static void bt_refresh_maps(void)
{
	bt_refresh_maps_x(0, 0, 0, 0);
}

/* ---- slots ---- */

/*
 * A slot for the calling thread: a free one of the first class, else a
 * free one of the second (smaller rings), else the one of the thread that
 * exited longest ago (first class first).  With none, the thread writes
 * into the private sink and the header counts it and keeps its tid.
 * *@entries gets the slot's ring size, *@index its index (-1: the sink).
 */
static struct bt_ring_slot *bt_attach(unsigned int vcpu, uint64_t *entries,
				      int64_t *index)
{
	struct bt_ring_hdr *h = g.hdr;
	struct bt_ring_slot *best = NULL, *s;
	uint32_t besti = 0, n = h->nslots + h->nxslots;
	pid_t tid = bt_gettid();

	pthread_mutex_lock(&g.lock);
	for (uint32_t i = 0; i < n && !g.detached; i++) {
		s = bt_ring_slot_at(h, h, i);
		if (s->state == BT_SLOT_FREE) {
			best = s;
			besti = i;
			break;
		}
	}
	for (uint32_t i = 0; i < n && !g.detached && !best; i++) {
		s = bt_ring_slot_at(h, h, i);
		if (s->state == BT_SLOT_EXITED) {
			best = s;
			besti = i;
			break;
		}
	}
	for (uint32_t i = besti + 1; best && best->state == BT_SLOT_EXITED &&
	     i < n; i++) {
		s = bt_ring_slot_at(h, h, i);
		if (s->state == BT_SLOT_EXITED && s->seq < best->seq &&
		    (i < h->nslots) == (besti < h->nslots)) {
			best = s;
			besti = i;
		}
	}
	if (best) {
		memset(best, 0, sizeof(*best));
		best->tid = tid;
		best->seq = ++h->slot_seq;
		for (int k = 0; k < BT_RING_LOOP; k++)
			best->guard[k] = BT_RING_SENT;
		/* No staged records (a reused slot holds old ones). */
		bt_ring_stage(best)[0] = BT_RING_SENT;
		__atomic_store_n(&best->state, BT_SLOT_ACTIVE, __ATOMIC_RELEASE);
		*entries = bt_ring_slot_entries(h, besti);
		*index = besti;
		if (besti >= h->nslots && besti - h->nslots >= h->xslots_used)
			__atomic_store_n(&h->xslots_used, besti - h->nslots + 1,
					 __ATOMIC_RELEASE);
	} else {
		if (!g.detached) {
			if (h->untraced_ntids < BT_RING_MAX_UNTRACED)
				h->untraced_tids[h->untraced_ntids++] = tid;
			h->untraced++;
		}
		best = g.sink;
		*entries = g.entries;
		*index = -1;
	}
	g_vslot[vcpu] = best;
	pthread_mutex_unlock(&g.lock);
	return best;
}

/*
 * The per-TB callback, the whole run-time cost of the plugin: QEMU calls it
 * (QEMU_PLUGIN_CB_NO_REGS) at the start of every executed TB with udata =
 * the TB's table index in the low half and BT_RING_SENT in the high half.
 * One 8-byte store at the thread's cursor writes the entry and, after it,
 * the sentinel that tells the reader where the staged records end; the
 * cursor lives in this thread's TLS (initial-exec: %fs-relative loads), so
 * there is no lookup, lock or atomic.  The staging area (BT_RING_STAGE
 * entries, 4 KiB: it stays in L1) is copied to the ring with non-temporal
 * stores when it is full, which measured cheaper than storing every entry
 * into the ring directly (docs/performance.md).  The staging area, the ring
 * and the counters are in the shared file, so they outlive the emulator;
 * only the cursor is private, and the sentinel stands for it.  A thread's
 * first block and every full staging area take the out-of-line path (the
 * cursor then equals the end: both are NULL in a new thread).
 */
static __thread struct bt_tls {
	uint32_t *cur, *end;         /* staging cursor, staging + STAGE */
	uint32_t *stage;
	struct bt_ring_slot *s;
	uint64_t mask;               /* the slot's ring entries - 1 */
	struct bt_ring_time *times;  /* the slot's clock samples */
	uint64_t tmask;              /* their count - 1 */
} t_bt __attribute__((tls_model("initial-exec")));

/*
 * The access log (accesses=): the memory callback, on every access an
 * instruction makes, stores one 16-byte record (struct bt_ring_access) at
 * the thread's count in its access ring and bumps the count, both in the
 * shared file; the ring, its mask and the count are in TLS (the count
 * there is the one read: the file's copy is only written).  A thread without a ring of its own (before its first block, in the sink,
 * with no log) writes into a private one-record dummy, so the callback
 * never tests.
 *
 * The log follows the TB records: each record notes in at[] (by its
 * position in the staging area, modulo 4: the look-back of a loop fold
 * reaches four records back) the count when its block started; a fold
 * that drops records, and a rep-string block's repeat that stores
 * nothing, take the count back to where the dropped record (or the
 * repeated one) started.  The accesses of a loop's dropped turns go with
 * the turns, and every record keeps the accesses of the execution it
 * stands for.
 */
static struct bt_ring_access g_acc_dummy[1];
static uint64_t g_acc_dummy_count, g_acc_dummy_floor;

static __thread struct bt_acc_tls {
	struct bt_ring_access *ring;
	uint64_t mask;               /* the ring's records - 1 */
	uint64_t *count;             /* the slot's acc_count */
	uint64_t *floor;             /* its acc_floor */
	uint64_t n;                  /* records written (*count's value) */
	uint64_t at[4];              /* the count at each record's start */
} t_acc __attribute__((tls_model("initial-exec"))) = {
	g_acc_dummy, 0, &g_acc_dummy_count, &g_acc_dummy_floor, 0, { 0 }
};

static void bt_acc_detach(void)
{
	memset(&t_acc, 0, sizeof(t_acc));
	t_acc.ring = g_acc_dummy;
	t_acc.count = &g_acc_dummy_count;
	t_acc.floor = &g_acc_dummy_floor;
}

/* Slot @s (index @i of the slot classes, -1 the sink) becomes the calling
 * thread's: its access ring, when it has one. */
static void bt_acc_attach(struct bt_ring_slot *s, int64_t i)
{
	struct bt_ring_hdr *h = g.hdr;
	uint64_t n;

	bt_acc_detach();
	if (i < 0 || !h->acc_entries)
		return;
	n = bt_ring_acc_entries(h, (uint32_t)i);
	if (!n)
		return;
	t_acc.ring = bt_ring_acc_at(h, h, (uint32_t)i);
	t_acc.mask = n - 1;
	t_acc.count = &s->acc_count;
	t_acc.floor = &s->acc_floor;
}

static inline unsigned int bt_acc_pos(const uint32_t *c)
{
	return (unsigned int)((uintptr_t)c / sizeof(*c)) & 3;
}

/* The record at @c starts now. */
static inline void bt_acc_mark(const uint32_t *c)
{
	t_acc.at[bt_acc_pos(c)] = t_acc.n;
}

/* Back to where the record at @c started: the accesses since are
 * dropped.  Those the dropped ones overwrote in the ring (it wrapped) are
 * gone too: the floor rises first, so a reader never takes them. */
static inline void bt_acc_rewind(const uint32_t *c)
{
	uint64_t to = t_acc.at[bt_acc_pos(c)], n = t_acc.n;

	if (n > t_acc.mask + 1 && n - t_acc.mask - 1 > *t_acc.floor)
		__atomic_store_n(t_acc.floor, n - t_acc.mask - 1,
				 __ATOMIC_RELEASE);
	t_acc.n = to;
	__atomic_store_n(t_acc.count, to, __ATOMIC_RELEASE);
}

/* A loop fold: back to where the record at @c started, and a fold mark
 * there with the address of TB @idx, the loop block whose execution (and
 * accesses) follow the dropped turns (struct bt_ring_access).  A turn
 * folded again comes back to the mark and writes it again. */
static inline void bt_acc_fold(const uint32_t *c, uint32_t idx)
{
	struct bt_ring_access *r;
	uint64_t n;

	bt_acc_rewind(c);
	n = t_acc.n;
	r = t_acc.ring + (n & t_acc.mask);
	r->info = (idx < g.tb_max ? g.tbs[idx].start << BT_ACC_IP_SHIFT : 0) |
		  BT_ACC_FOLD;
	r->addr = 0;
	t_acc.n = n + 1;
	__atomic_store_n(t_acc.count, n + 1, __ATOMIC_RELEASE);
}

/* QEMU's memory callback (QEMU_PLUGIN_CB_NO_REGS): @udata is the
 * instruction's address shifted into place (struct bt_ring_access). */
static void bt_mem(unsigned int vcpu, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *udata)
{
	uint64_t n = t_acc.n;
	struct bt_ring_access *r = t_acc.ring + (n & t_acc.mask);

	(void)vcpu;
	r->info = (uint64_t)(uintptr_t)udata | ((info >> 4) & BT_ACC_SHIFT_MASK) |
		  ((info >> 14) & BT_ACC_STORE);
	r->addr = vaddr;
	t_acc.n = n + 1;
	__atomic_store_n(t_acc.count, n + 1, __ATOMIC_RELEASE);
}

/* Stage 0 of a fresh staging area: the records so far are in the ring. */
static void bt_stage_reset(struct bt_ring_slot *s, uint32_t *stage)
{
	stage[0] = BT_RING_SENT;
	__atomic_store_n(&s->stage_base, s->committed, __ATOMIC_RELEASE);
	t_bt.cur = stage;
}

/* The thread's record count (for the fault notes and the clock). */
static uint64_t bt_record_count(void)
{
	struct bt_ring_slot *s = t_bt.s;

	return s ? s->stage_base + (uint64_t)(t_bt.cur - t_bt.stage) : 0;
}

/*
 * A clock sample (ring-file.h, struct bt_ring_time) at the calling
 * thread's current record count.  CLOCK_MONOTONIC through the vDSO: one
 * clock for every thread and process, in nanoseconds, 20-90 ns a read
 * (docs/performance.md).  A sample whose position went back (a loop fold
 * since the last one) replaces the last one.
 */
static void bt_time_sample(void)
{
	struct bt_ring_slot *s = t_bt.s;
	struct bt_ring_time *t;
	struct timespec ts;
	uint64_t n, pos;

	if (!s || !t_bt.times)
		return;
	pos = bt_record_count();
	n = s->tcount;
	if (n && t_bt.times[(n - 1) & t_bt.tmask].pos > pos)
		n--;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = &t_bt.times[n & t_bt.tmask];
	t->pos = pos;
	t->ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	__atomic_store_n(&s->tcount, n + 1, __ATOMIC_RELEASE);
}

/* Where the hot path leaves next: the staging area's end, or the next
 * clock sample's checkpoint before it. */
static void bt_set_end(void)
{
	uint32_t *end = t_bt.stage + BT_RING_STAGE;

	if (t_bt.times && t_bt.cur + g.time_every < end)
		end = t_bt.cur + g.time_every;
	t_bt.end = end;
}

static __attribute__((noinline)) void bt_exec_slow(unsigned int vcpu,
						   void *udata)
{
	struct bt_ring_slot *s = t_bt.s;
	uint32_t *stage;

	if (!s) {
		uint64_t entries;
		int64_t index;

		s = bt_attach(vcpu & (BT_MAX_VCPUS - 1), &entries, &index);
		bt_acc_attach(s, index);
		t_bt.mask = entries - 1;
		stage = bt_ring_stage(s);
		t_bt.s = s;
		t_bt.stage = stage;
		t_bt.times = NULL;
		if (g.time_every && s != g.sink) {
			t_bt.times = bt_ring_times(s, entries);
			t_bt.tmask = bt_ring_time_entries(entries) - 1;
		}
		bt_stage_reset(s, stage);
	} else if (t_bt.cur != t_bt.stage + BT_RING_STAGE) {
		/* A clock checkpoint (bt_set_end()), not the end. */
	} else {
		/* Full: [stage_base, +STAGE) to the ring (never across its
		 * end: the ring is a multiple of the staging area), then
		 * commit, then start over.  A reader that finds the process
		 * dead at any point of this sees each record once, in the
		 * staging area until the commit and in the ring after it. */
		const __m128i *from = (const __m128i *)t_bt.stage;
		__m128i *to = (__m128i *)(bt_ring_entries(s) +
					  (s->committed & t_bt.mask));

		/* No fence: these stores are not lost if the process dies
		 * before they drain, and only a reader after its death
		 * looks. */
		for (unsigned int i = 0; i < BT_RING_STAGE / 4; i++)
			_mm_stream_si128(to + i, _mm_load_si128(from + i));
		__atomic_store_n(&s->committed, s->committed + BT_RING_STAGE,
				 __ATOMIC_RELEASE);
		bt_stage_reset(s, t_bt.stage);
	}
	bt_time_sample();
	bt_acc_mark(t_bt.cur);   /* the dummy's when there is no log */
	memcpy(t_bt.cur, &udata, 8);
	t_bt.cur++;
	bt_set_end();
}

/* The callbacks come in two builds each: without the access log, and
 * with it (@acc: the record notes the access count). */
#define BT_INLINE static inline __attribute__((always_inline))

BT_INLINE void bt_exec_t(unsigned int vcpu, void *udata, int acc)
{
	uint32_t *c = t_bt.cur;

	if (__builtin_expect(c == t_bt.end, 0)) {
		bt_exec_slow(vcpu, udata);
		return;
	}
	if (acc)
		bt_acc_mark(c);
	memcpy(c, &udata, 8);   /* the entry, then the sentinel */
	t_bt.cur = c + 1;
}

static void bt_exec(unsigned int vcpu, void *udata)
{
	bt_exec_t(vcpu, udata, 0);
}

static void bt_exec_acc(unsigned int vcpu, void *udata)
{
	bt_exec_t(vcpu, udata, 1);
}

/* The thread's latest record (a TB index), or BT_RING_SENT if none. */
static uint32_t bt_last_record(void)
{
	struct bt_ring_slot *s = t_bt.s;

	if (t_bt.cur > t_bt.stage)
		return t_bt.cur[-1];
	if (s && s->committed)
		return bt_ring_entries(s)[(s->committed - 1) & t_bt.mask];
	return BT_RING_SENT;
}

/* TBs ending in a rep-string instruction (only those): QEMU re-enters them
 * once per iteration; store the TB once (with the access log: the
 * accesses of its last iteration). */
static void bt_exec_rep(unsigned int vcpu, void *udata)
{
	if (bt_last_record() == (uint32_t)(uintptr_t)udata)
		return;
	bt_exec_t(vcpu, udata, 0);
}

static void bt_exec_rep_acc(unsigned int vcpu, void *udata)
{
	if (bt_last_record() == (uint32_t)(uintptr_t)udata) {
		bt_acc_rewind(t_bt.cur - 1);
		return;
	}
	bt_exec_t(vcpu, udata, 1);
}

/*
 * TBs ending in a backward direct jump or conditional branch that reaches
 * back at most BT_LOOP_SPAN bytes (only those): a short loop's closing
 * block.  When it finds itself among the thread's last
 * BT_RING_LOOP staged records, the records since its previous execution
 * are one more turn of a cycle of the path: they are dropped and this one
 * takes its old place, so a loop that spins (`for (;;)`, a busy wait, a
 * short loop of two to four blocks) keeps the history before it instead
 * of filling the ring with itself; the stored path stays a path (a cycle
 * removed), and the turns it had are not counted.  A cycle of two to four
 * blocks is folded only when none of the blocks between two runs of the
 * loop block ends in a call, a return, a far transfer, a trap or a system
 * call (bt_foldable(), checked on the TB table, only when a cycle is
 * found; a self loop is one block that ends in its backward branch, so it
 * holds none of them: QEMU ends a block at each): a loop that calls a
 * function or enters the kernel keeps every turn, as hardware PT would
 * show them (one system call for fifteen would be a false history), and a
 * folded turn is a path the value recovery can find in the code from the
 * loop block back to it (metadata qemu.fold_cycles, docs/report.md "Folded
 * loops").
 * A look-back before the staging area reads the slot's guard words, never
 * a TB index; a loop that spans a commit is stored again once.  Calls are
 * never such blocks, so recursion keeps every level.
 */
/* The farthest a loop's closing branch reaches back to get the loop
 * callback: a loop of at most four blocks is short; a long backward jump
 * (an interpreter's dispatch loop) would pay the look-back for nothing. */
#define BT_LOOP_SPAN 256u

static int bt_foldable(const uint32_t *r, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t k;

		if (r[i] >= g.tb_max)
			return 0;
		k = g.tbs[r[i]].kind;
		if (k == BT_TB_CALL || k == BT_TB_CALL_IND || k == BT_TB_RET ||
		    k == BT_TB_FAR || k == BT_TB_TRAP || k == BT_TB_SWINT ||
		    k == BT_TB_SYSCALL)
			return 0;
	}
	return 1;
}

BT_INLINE void bt_exec_loop_t(unsigned int vcpu, void *udata, int acc)
{
	uint32_t *c = t_bt.cur, idx = (uint32_t)(uintptr_t)udata;

	if (__builtin_expect(c == t_bt.end, 0)) {
		bt_exec_slow(vcpu, udata);
		return;
	}
	/* Four scalar loads, each at the start of one of the last 8-byte
	 * stores, so each is forwarded from the store buffer (a 16-byte load
	 * across them would stall until they retire). */
	if (__builtin_expect(c[-1] == idx, 0)) {
		/* a self loop: this turn's accesses replace the last's */
		if (acc)
			bt_acc_fold(c - 1, idx);
		return;
	}
	if (__builtin_expect(c[-2] == idx, 0)) {
		if (bt_foldable(c - 1, 1))
			c -= 2;
	} else if (__builtin_expect(c[-3] == idx, 0)) {
		if (bt_foldable(c - 2, 2))
			c -= 3;
	} else if (__builtin_expect(c[-4] == idx, 0)) {
		if (bt_foldable(c - 3, 3))
			c -= 4;
	}
	if (acc) {
		/* folded: the dropped turn's accesses go with it */
		if (c != t_bt.cur)
			bt_acc_fold(c, idx);
		else
			bt_acc_mark(c);
	}
	memcpy(c, &udata, 8);
	t_bt.cur = c + 1;
}

static void bt_exec_loop(unsigned int vcpu, void *udata)
{
	bt_exec_loop_t(vcpu, udata, 0);
}

static void bt_exec_loop_acc(unsigned int vcpu, void *udata)
{
	bt_exec_loop_t(vcpu, udata, 1);
}

static void bt_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
	/* A new thread: it attaches to a slot at its first block. */
	g_vslot[vcpu & (BT_MAX_VCPUS - 1)] = NULL;
}

static void bt_vcpu_exit(qemu_plugin_id_t id, unsigned int vcpu)
{
	struct bt_ring_slot *s = g_vslot[vcpu & (BT_MAX_VCPUS - 1)];

	if (s && s != g.sink)
		__atomic_store_n(&s->state, BT_SLOT_EXITED, __ATOMIC_RELEASE);
	g_vslot[vcpu & (BT_MAX_VCPUS - 1)] = NULL;
}

/* ---- host faults: note them, then let QEMU handle them ---- */

static int bt_is_handler_entry(uint64_t ip)
{
	uint32_t n = g.hdr->nhandlers;

	for (uint32_t i = 0; i < n && i < BT_RING_MAX_HANDLERS; i++)
		if (g.hdr->handlers[i] == ip)
			return 1;
	return 0;
}

/* The calling thread's record @pos, or BT_RING_SENT when it is not (yet,
 * or any more) there. */
static uint32_t bt_record_at(uint64_t pos)
{
	struct bt_ring_slot *s = t_bt.s;
	uint64_t count = bt_record_count();

	if (!s || pos >= count)
		return BT_RING_SENT;
	if (pos >= s->stage_base)
		return t_bt.stage[pos - s->stage_base];
	if (pos < s->committed && s->committed - pos <= t_bt.mask + 1)
		return bt_ring_entries(s)[pos & t_bt.mask];
	return BT_RING_SENT;
}

/*
 * A note marked BT_FAULT_F_MAYBE_QEMU (below) is settled by what the
 * thread ran next: a guest signal handler's entry means the guest got the
 * fault, anything else that QEMU resolved it and restarted the write
 * (nothing yet: still open; the reader settles it the same way).  QEMU's
 * own faults are taken back: the note before it is restored.
 */
static void bt_settle_note(struct bt_ring_slot *s)
{
	uint32_t idx;

	if (!(s->fault_flags & BT_FAULT_F_MAYBE_QEMU))
		return;
	idx = bt_record_at(s->fault_pos);
	if (idx == BT_RING_SENT)
		return;
	s->fault_flags = 0;
	if (idx < g.tbhdr->tb_max && idx < g.tbhdr->tb_count &&
	    bt_is_handler_entry(g.tbs[idx].start))
		return;
	bt_ring_take_back_note(s);
}

/*
 * Whether a host SIGSEGV may be QEMU's write-protection of translated code
 * that page_unprotect() resolves by invalidating the block that is
 * running (QEMU then restarts it without returning to us): a write
 * (ERR bit 1), an access error, to a page the current block lies on.
 */
static int bt_maybe_qemu_fault(int sig, const siginfo_t *si, void *uc)
{
	uint64_t page = (uint64_t)(uintptr_t)si->si_addr & ~(BT_PAGE - 1);
	uint32_t idx = bt_last_record();
	const struct bt_tb_info *t;

	if (sig != SIGSEGV || si->si_code != SEGV_ACCERR ||
	    !(((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2))
		return 0;
	if (idx >= g.tbhdr->tb_max || idx >= g.tbhdr->tb_count)
		return 0;
	t = &g.tbs[idx];
	return t->start < page + BT_PAGE &&
	       t->start + t->last_off + t->last_len > page;
}

/*
 * Host SIGSEGV/SIGBUS: note it in the thread's slot, then let QEMU handle
 * it.  QEMU's handler returns only when the fault was its own (a write to
 * a page it protected because it holds translated code, resolved by
 * unprotecting the page: any program that writes code it ran, a JIT); a
 * fault it gives the guest leaves by a longjmp to the CPU loop.  So a
 * return takes the note back.  The one own fault that does not return
 * (the write hits the page of the running block) is marked and settled by
 * the next record (bt_settle_note()).
 */
static void bt_host_fault(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = sig == SIGSEGV ? &g.old_segv : &g.old_bus;
	/* The thread's own slot: the handler runs on the thread that
	 * faulted. */
	struct bt_ring_slot *s = t_bt.s, saved = { 0 };
	int noted = 0;

	/* Not in a forked child before bt_child_init() gave it its own
	 * ring: the slot (shared memory) is its parent's, and a fault there
	 * is QEMU's own (its fork path failing under RLIMIT_NPROC: the
	 * parent got a false SIGSEGV SI_KERNEL "in _Fork" that way). */
	if (si->si_code > 0 && s && s != g.sink &&
	    s->state == BT_SLOT_ACTIVE && g.hdr &&
	    g.hdr->pid == (int32_t)syscall(SYS_getpid)) {
		bt_settle_note(s);
		saved = *s;
		s->prev_nfaults = s->nfaults;
		s->prev_fault_pos = s->fault_pos;
		s->prev_fault_addr = s->fault_addr;
		s->prev_fault_signo = s->fault_signo;
		s->prev_fault_code = s->fault_code;
		s->fault_flags = bt_maybe_qemu_fault(sig, si, uc) ?
				 BT_FAULT_F_MAYBE_QEMU : 0;
		s->fault_pos = bt_record_count();
		s->fault_addr = (uint64_t)(uintptr_t)si->si_addr;
		s->fault_code = si->si_code;
		s->fault_signo = sig;
		if (!s->nfaults) {
			s->first_fault_pos = s->fault_pos;
			s->first_fault_addr = s->fault_addr;
			s->first_fault_code = si->si_code;
			s->first_fault_signo = sig;
		}
		s->nfaults++;
		noted = 1;
		bt_time_sample();
	}
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, si, uc);
	} else if (old->sa_handler == SIG_DFL) {
		signal(sig, SIG_DFL);   /* the fault repeats and kills */
		return;
	} else if (old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	}
	/* Returned: QEMU's own fault, resolved.  Not the guest's. */
	if (noted) {
		s->nfaults = saved.nfaults;
		s->fault_pos = saved.fault_pos;
		s->fault_addr = saved.fault_addr;
		s->fault_code = saved.fault_code;
		s->fault_signo = saved.fault_signo;
		s->fault_flags = saved.fault_flags;
		s->first_fault_pos = saved.first_fault_pos;
		s->first_fault_addr = saved.first_fault_addr;
		s->first_fault_code = saved.first_fault_code;
		s->first_fault_signo = saved.first_fault_signo;
		s->prev_nfaults = saved.prev_nfaults;
		s->prev_fault_pos = saved.prev_fault_pos;
		s->prev_fault_addr = saved.prev_fault_addr;
		s->prev_fault_signo = saved.prev_fault_signo;
		s->prev_fault_code = saved.prev_fault_code;
	}
}

static void bt_chain_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bt_host_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &g.old_segv);
	sigaction(SIGBUS, &sa, &g.old_bus);
}

/* ---- instruction classification ---- */

static int32_t bt_rel32(const uint8_t *p, size_t n)
{
	int32_t v;

	memcpy(&v, p + n - 4, 4);
	return v;
}

static uint8_t bt_classify(const uint8_t *p, size_t n, uint64_t addr,
			   uint64_t *target)
{
	uint64_t end = addr + n;
	size_t i = 0;
	int rep = 0;
	uint8_t b;

	*target = 0;
	while (i < n) {
		b = p[i];
		if (b == 0xf2 || b == 0xf3)
			rep = 1;
		else if (b != 0x66 && b != 0x67 && b != 0x2e && b != 0x3e &&
			 b != 0x26 && b != 0x36 && b != 0x64 && b != 0x65 &&
			 b != 0xf0)
			break;
		i++;
	}
	if (i < n && (p[i] & 0xf0) == 0x40)
		i++;
	if (i >= n)
		return BT_TB_NONE;
	b = p[i];
	if ((b >= 0x70 && b <= 0x7f) || (b >= 0xe0 && b <= 0xe3)) {
		*target = end + (uint64_t)(int64_t)(int8_t)p[n - 1];
		return BT_TB_COND;
	}
	switch (b) {
	case 0xeb:
		*target = end + (uint64_t)(int64_t)(int8_t)p[n - 1];
		return BT_TB_JMP;
	case 0xe9:
		if (n - i < 5)
			return BT_TB_NONE;
		*target = end + (uint64_t)(int64_t)bt_rel32(p, n);
		return BT_TB_JMP;
	case 0xe8:
		if (n - i < 5)
			return BT_TB_NONE;
		*target = end + (uint64_t)(int64_t)bt_rel32(p, n);
		return BT_TB_CALL;
	case 0xc2:
	case 0xc3:
		return BT_TB_RET;
	case 0xca:
	case 0xcb:
	case 0xcf:
	case 0xea:
	case 0x9a:
		return BT_TB_FAR;
	case 0xcd:
		return BT_TB_SYSCALL;
	case 0xcc:
	case 0xf1:
		return BT_TB_SWINT;
	case 0xce:
	case 0xf4:
		return BT_TB_TRAP;
	case 0xff:
		if (i + 1 >= n)
			return BT_TB_NONE;
		switch ((p[i + 1] >> 3) & 7) {
		case 2:
			return BT_TB_CALL_IND;
		case 4:
			return BT_TB_JMP_IND;
		case 3:
		case 5:
			return BT_TB_FAR;
		}
		return BT_TB_NONE;
	case 0x0f:
		if (i + 1 >= n)
			return BT_TB_NONE;
		b = p[i + 1];
		if (b >= 0x80 && b <= 0x8f) {
			if (n - i < 6)
				return BT_TB_NONE;
			*target = end + (uint64_t)(int64_t)bt_rel32(p, n);
			return BT_TB_COND;
		}
		if (b == 0x05 || b == 0x34)
			return BT_TB_SYSCALL;
		if (b == 0x07 || b == 0x35)
			return BT_TB_FAR;
		if (b == 0x0b || b == 0xb9 || b == 0xff)
			return BT_TB_TRAP;
		return BT_TB_NONE;
	}
	if (rep && ((b >= 0xa4 && b <= 0xa7) || (b >= 0xaa && b <= 0xaf) ||
		    (b >= 0x6c && b <= 0x6f)))
		return BT_TB_REP;
	return BT_TB_NONE;
}

/*
 * QEMU 7.2 ends a TB before a non-first instruction that crosses a page but
 * still reports it as the TB's last instruction, truncated.  Returns 1 when
 * the last instruction is such an abandoned one.
 */
static int bt_abandoned(uint64_t addr, size_t size)
{
	uint64_t page_end = (addr | (BT_PAGE - 1)) + 1;
	uint8_t buf[16];
	const uint8_t *code = buf;
	uint64_t a = addr;
	cs_insn *insn;
	size_t n;
	ssize_t r;
	int crosses;

	if (addr + 15 <= page_end)
		return 0;   /* cannot cross */
	if (addr + size > page_end)
		return 1;
	if (!g.cs_ok)
		return 0;
	/* Near the page end: decode the real bytes.  QEMU gave up part way
	 * (the reported size is what it had fetched, e.g. 7 of an 11-byte
	 * mov with imm32); the read stops at an unreadable page. */
	r = bt_peek(addr, buf, 15);
	if (r < (ssize_t)size)
		return 0;
	n = (size_t)r;
	insn = cs_malloc(g.cs);
	if (!insn)
		return 0;
	if (cs_disasm_iter(g.cs, &code, &n, &a, insn))
		crosses = insn->size != size && addr + insn->size > page_end;
	else
		crosses = r < 15;   /* truncated by an unreadable page */
	cs_free(insn, 1);
	return crosses;
}

/* ---- translation ---- */

static void bt_first_translation(void)
{
	char *exe;

	if (bt_map_root()) {
		g.off = 1;
		return;
	}
	exe = qemu_plugin_path_to_binary();
	if (exe) {
		/* Absolute (after an execve() the path may be relative), but
		 * not resolved further: /bin/sh stays sh, as the kernel's
		 * comm would. */
		char *abs = exe[0] == '/' ? NULL : realpath(exe, NULL);

		snprintf(g.hdr->exe, sizeof(g.hdr->exe), "%s", abs ? abs : exe);
		free(abs);
		free(exe);
	}
	/* The name the kernel gives the program at its execve() (the
	 * basename of the path run), not "qemu-x86_64": the guest reads it
	 * from /proc/self/comm, which QEMU passes through.  Threads and
	 * forked children inherit it, as natively. */
	if (!g.comm[0] && g.hdr->exe[0]) {
		const char *b = strrchr(g.hdr->exe, '/');
		size_t n;

		b = b ? b + 1 : g.hdr->exe;
		n = strnlen(b, sizeof(g.comm) - 1);
		memcpy(g.comm, b, n);
		g.comm[n] = 0;
	}
	if (g.comm[0])
		prctl(PR_SET_NAME, (unsigned long)g.comm, 0UL, 0UL, 0UL);
	bt_chain_handlers();
	bt_refresh_maps();
	__atomic_or_fetch(&g.hdr->flags, BT_RING_F_READY, __ATOMIC_RELEASE);
}

/*
 * The TB's bytes as QEMU translated them, into the code log: the code as it
 * ran, whatever happens to it later (a JIT rewriting it in place, a file
 * deleted or replaced after it was mapped, a memfd).  Translation already
 * costs tens of thousands of instructions per block; this adds a copy of
 * a few dozen bytes.  When the log is full, later blocks have none.
 */
static void bt_log_code(const struct qemu_plugin_tb *tb,
			struct bt_tb_info *info)
{
	struct bt_ring_hdr *h = g.tbhdr;
	uint64_t len = (uint64_t)info->last_off + info->last_len, off;
	uint8_t *dst;

	if (!h->code_offset || !len)
		return;
	off = __atomic_fetch_add(&h->code_len, len, __ATOMIC_RELAXED);
	if (off + len > h->code_cap || off + len > UINT32_MAX) {
		__atomic_or_fetch(&h->flags, BT_RING_F_CODE_FULL,
				  __ATOMIC_RELAXED);
		return;
	}
	dst = (uint8_t *)h + h->code_offset + off;
	for (size_t i = 0; i < info->ninsn; i++) {
		const struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		uint64_t at = qemu_plugin_insn_vaddr(in) - info->start;
		size_t n = qemu_plugin_insn_size(in);
		const void *data = qemu_plugin_insn_data(in);

		if (!data || at >= len)
			return;   /* not contiguous: no bytes for this block */
		memcpy(dst + at, data, at + n > len ? len - at : n);
	}
	info->code_off = (uint32_t)off;
	info->flags |= BT_TB_F_CODE;
}

/*
 * The access log: a memory callback on each of the block's first @n
 * instructions (not one the block abandoned: it runs in the next block),
 * with its address as udata.  QEMU calls it after each access the
 * instruction makes (a faulting one makes none), also from the helpers
 * that call QEMU's memory functions; an access made otherwise is not
 * logged.  QEMU_PLUGIN_MEM_RW: 7.2 never calls a callback registered for
 * loads alone.
 */
/*
 * Not every access is logged: a stack operation (bt_stack_op()) right
 * after a push or pop of a register or a push of an immediate in the same
 * block gets no callback.  Its stack slot is the previous one's address
 * plus or minus 8, which the value recovery derives from the first of the
 * run (rsp_delta(), decoder/values.c), so the log loses nothing it would
 * use; a prologue's or epilogue's run of pushes or pops costs one call
 * (docs/performance.md, "the cost of the access log").
 */
static void bt_acc_trans(struct qemu_plugin_tb *tb, size_t n)
{
	int prev = 0;

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t ip = qemu_plugin_insn_vaddr(insn);
		uint64_t info = ip << BT_ACC_IP_SHIFT;
		int op = bt_stack_op(qemu_plugin_insn_data(insn),
				     qemu_plugin_insn_size(insn));
		int after_run = op && prev == 1;

		prev = op;
		if (after_run)
			continue;   /* derived from the run's first */
		if (bt_ring_access_ip(info) != ip)
			continue;   /* not canonical: cannot be recorded */
		qemu_plugin_register_vcpu_mem_cb(insn, bt_mem,
			QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
			(void *)(uintptr_t)info);
	}
}

static void bt_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct qemu_plugin_insn *li;
	struct bt_tb_info info;
	uint64_t idx, last;
	size_t size;
	int acc;

	if (!n)
		return;
	if (!__atomic_load_n(&g.started, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&g.lock);
		if (!g.started) {
			pthread_mutex_unlock(&g.lock);
			bt_first_translation();
			pthread_mutex_lock(&g.lock);
			__atomic_store_n(&g.started, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&g.lock);
	}
	/* Handlers start aligned even when nothing is recorded. */
	if (bt_is_handler_entry(qemu_plugin_tb_vaddr(tb)))
		bt_limits_handler_trans(tb, qemu_plugin_tb_vaddr(tb));
	if (g.off)
		return;
	bt_limits_tb_trans(tb);

	memset(&info, 0, sizeof(info));
	info.start = qemu_plugin_tb_vaddr(tb);
	info.ninsn = (uint16_t)n;
	li = qemu_plugin_tb_get_insn(tb, n - 1);
	last = qemu_plugin_insn_vaddr(li);
	size = qemu_plugin_insn_size(li);
	if (g.fixpage && n > 1 && bt_abandoned(last, size)) {
		/* The TB really ends before it: falls through to it. */
		li = qemu_plugin_tb_get_insn(tb, n - 2);
		info.ninsn = (uint16_t)(n - 1);
		info.last_off = (uint32_t)(qemu_plugin_insn_vaddr(li) - info.start);
		info.last_len = (uint8_t)qemu_plugin_insn_size(li);
		info.kind = BT_TB_NONE;
		info.flags = BT_TB_F_PAGEFIX;
	} else {
		info.last_off = (uint32_t)(last - info.start);
		info.last_len = (uint8_t)size;
		info.kind = bt_classify(qemu_plugin_insn_data(li), size, last,
					&info.target);
	}

	idx = __atomic_fetch_add(&g.tbhdr->tb_count, 1, __ATOMIC_RELAXED);
	if (idx >= g.tbhdr->tb_max) {
		__atomic_or_fetch(&g.tbhdr->flags, BT_RING_F_TB_FULL,
				  __ATOMIC_RELAXED);
		idx = BT_RING_IDX_GAP;
	} else {
		bt_log_code(tb, &info);
		g.tbs[idx] = info;
	}
	acc = g.acc_entries != 0;
	if (acc)
		bt_acc_trans(tb, info.ninsn);
	qemu_plugin_register_vcpu_tb_exec_cb(tb,
		info.kind == BT_TB_REP ? (acc ? bt_exec_rep_acc : bt_exec_rep) :
		g.loops && (info.kind == BT_TB_COND || info.kind == BT_TB_JMP) &&
		info.target <= info.start && idx != BT_RING_IDX_GAP &&
		info.start + info.last_off - info.target <= BT_LOOP_SPAN ?
		(acc ? bt_exec_loop_acc : bt_exec_loop) :
		(acc ? bt_exec_acc : bt_exec),
		QEMU_PLUGIN_CB_NO_REGS,
		(void *)(uintptr_t)((uint64_t)BT_RING_SENT << 32 | idx));
}

/* ---- syscalls ---- */

#define BT_NR_MMAP 9
#define BT_NR_MPROTECT 10
#define BT_NR_MUNMAP 11
#define BT_NR_BRK 12
#define BT_NR_RT_SIGACTION 13
#define BT_NR_MREMAP 25
#define BT_NR_CLONE 56
#define BT_NR_FORK 57
#define BT_NR_VFORK 58
#define BT_NR_EXECVE 59
#define BT_NR_CHDIR 80
#define BT_NR_FCHDIR 81
#define BT_NR_KILL 62
#define BT_NR_RT_SIGQUEUEINFO 129
#define BT_NR_TKILL 200
#define BT_NR_TGKILL 234
#define BT_NR_RT_TGSIGQUEUEINFO 297
#define BT_NR_EXIT_GROUP 231
#define BT_NR_EXECVEAT 322
#define BT_NR_CLONE3 435
#define BT_PROT_EXEC 0x4ull
#define BT_MAP_ANONYMOUS 0x20ull
#define BT_CLONE_VM 0x100ull
#define BT_CLONE_VFORK 0x4000ull
#define BT_AT_FDCWD (-100)

static void bt_note_handler(uint64_t act)
{
	struct bt_ring_hdr *h = g.hdr;
	uint64_t handler;

	if (!act || bt_peek(act, &handler, 8) != 8 || handler <= 1)
		return;
	pthread_mutex_lock(&g.lock);
	for (uint32_t i = 0; i < h->nhandlers; i++)
		if (h->handlers[i] == handler)
			goto out;
	if (h->nhandlers < BT_RING_MAX_HANDLERS) {
		/* no TB table when the ring could not be mapped (g.off) */
		uint64_t n = g.tbhdr && g.tbs ?
			     __atomic_load_n(&g.tbhdr->tb_count,
					     __ATOMIC_RELAXED) : 0;

		h->handlers[h->nhandlers++] = handler;
		/* Already translated (called as a function before): that
		 * block has no realigning callback (plugin-limits.c). */
		for (uint64_t i = 0; i < n && i < g.tbhdr->tb_max; i++)
			if (g.tbs[i].start == handler) {
				bt_limits_handler_late(handler);
				break;
			}
	} else {
		bt_limits_handler_late(handler);
	}
out:
	pthread_mutex_unlock(&g.lock);
}

static void bt_note_self_signal(int signo, int32_t code)
{
	if (signo <= 0 || signo >= 65)
		return;
	g.hdr->self_code = code;
	__atomic_store_n(&g.hdr->self_signo, signo, __ATOMIC_RELEASE);
}

static void bt_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num,
		       uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		       uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8)
{
	struct bt_ring_hdr *h = g.hdr;
	unsigned int v = vcpu & (BT_MAX_VCPUS - 1);

	bt_time_sample();   /* the system call's entry */
	bt_limits_syscall(num, a1, a2, a3);
	switch (num) {
	case BT_NR_MMAP:
	case BT_NR_MPROTECT:
	case BT_NR_MUNMAP:
	case BT_NR_MREMAP:
		g_sysargs[v][0] = a1;
		g_sysargs[v][1] = a2;
		g_sysargs[v][2] = a3;
		g_sysargs[v][3] = a4;
		break;
	case BT_NR_RT_SIGACTION:
		bt_note_handler(a2);
		break;
	case BT_NR_CLONE:
		g_clone_flags[v] = a1;
		break;
	case BT_NR_CLONE3:
		if (bt_peek(a1, &g_clone_flags[v], 8) != 8)
			g_clone_flags[v] = 0;
		break;
	case BT_NR_FORK:
	case BT_NR_VFORK:
		g_clone_flags[v] = 0;
		break;
	case BT_NR_EXECVE:
	case BT_NR_EXECVEAT: {
		char path[sizeof(h->exec_path)];
		ssize_t r;

		memset(path, 0, sizeof(path));
		r = bt_peek(num == BT_NR_EXECVE ? a1 : a2, path,
			    sizeof(path) - 1);
		if (r > 0)
			memcpy(h->exec_path, path, sizeof(path));
		__atomic_or_fetch(&h->flags, BT_RING_F_EXEC, __ATOMIC_RELEASE);
		/* exec=1: the new program runs under a new emulator with this
		 * plugin (returns if it is to run natively). */
		if (g.reexec && g.mapped && num == BT_NR_EXECVE)
			bt_exec_reenter(a1, a2, a3);
		else if (g.reexec && g.mapped && num == BT_NR_EXECVEAT &&
			 (int32_t)a1 == BT_AT_FDCWD && !a5)
			bt_exec_reenter(a2, a3, a4);
		break;
	}
	case BT_NR_EXIT_GROUP:
		__atomic_or_fetch(&h->flags, BT_RING_F_EXITED, __ATOMIC_RELEASE);
		break;
	case BT_NR_KILL:
		if ((pid_t)a1 == getpid() || (pid_t)a1 == 0)
			bt_note_self_signal((int)a2, 0 /* SI_USER */);
		break;
	case BT_NR_TKILL:
		if ((pid_t)a1 == bt_gettid() || (pid_t)a1 == getpid())
			bt_note_self_signal((int)a2, -6 /* SI_TKILL */);
		break;
	case BT_NR_TGKILL:
		if ((pid_t)a1 == getpid())
			bt_note_self_signal((int)a3, -6 /* SI_TKILL */);
		break;
	case BT_NR_RT_SIGQUEUEINFO:
	case BT_NR_RT_TGSIGQUEUEINFO: {
		int32_t code;
		uint64_t info = num == BT_NR_RT_SIGQUEUEINFO ? a3 : a4;

		if ((pid_t)a1 == getpid() && bt_peek(info + 8, &code, 4) == 4)
			bt_note_self_signal(num == BT_NR_RT_SIGQUEUEINFO ?
					    (int)a2 : (int)a3, code);
		break;
	}
	}
}

/* Whether a failure to hand a ring to btrace means btrace is gone (its
 * directory removed, or nobody reading its socket): then the process runs
 * on untraced, silently. */
static int bt_btrace_gone(int rc)
{
	return rc == -ENOENT || rc == -ECONNREFUSED || rc == -ENOTDIR;
}

/*
 * watch=1: wait until btrace holds a pidfd on this process, so that even
 * an instant crash is seen.  btrace writes byte 1 on @ack (its end went
 * with the ring); there is no time limit, since a busy btrace (an
 * on-demand snapshot took 3.4 s under load) is no reason to run untraced,
 * and btrace's death closes its end (in flight or received): read() then
 * sees end of file at once.  Returns 0 when watched, else -errno: -ENOENT
 * when btrace is gone (run on silently), another when btrace is alive but
 * could not take this process (byte 0: it found no descriptor for the
 * pidfd; end of file: the ring was dropped in flight, or btrace is busy
 * ending the recording).
 */
static int bt_wait_watched(int ack)
{
	struct sockaddr_un a;
	char b = 0;
	ssize_t n;
	int s, dfd, rc;

	while ((n = read(ack, &b, 1)) < 0 && errno == EINTR)
		;
	if (n == 1)
		return b == 1 ? 0 : -EMFILE;
	/* End of file: btrace dropped the socket.  Still alive? */
	dfd = open(g.dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -ENOENT;
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/sock", dfd);
	rc = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 &&
	     bt_btrace_gone(-errno) ? -ENOENT : -EPIPE;
	if (s >= 0)
		close(s);
	close(dfd);
	return rc;
}

/*
 * In a forked child: a ring of its own (a memfd handed to btrace), fresh
 * slots, same TB table.  When the ring cannot be made or handed over, or
 * btrace cannot watch the process, the child runs on untraced (its threads
 * write into the private sink), says why (unless btrace is gone) and the
 * parent's header counts it (untraced_children).
 */
static void bt_child_init(void)
{
	struct bt_ring_hdr *h, *ph = g.hdr;
	size_t size, psize = g.map_size;
	int fd = -1, rc = -1, ack[2] = { -1, -1 };

	if (!g.mapped)
		return;   /* not tracing */
	/* The forking thread's slot and cursor are the parent's. */
	memset(g_vslot, 0, sizeof(g_vslot));
	memset(&t_bt, 0, sizeof(t_bt));
	bt_acc_detach();
	h = bt_file_create(getpid(), 0, -1, 1, &size, &fd);
	if (!h) {
		g.detached = 1;   /* untraced, and out of the parent's file */
		__atomic_add_fetch(&ph->untraced_children, 1, __ATOMIC_RELAXED);
		return;
	}
	h->tb_pid = g.tbhdr->pid;
	h->flags = BT_RING_F_FORKED | BT_RING_F_READY;
	snprintf(h->exe, sizeof(h->exe), "%s", ph->exe);
	memcpy(h->handlers, ph->handlers, sizeof(h->handlers));
	h->nhandlers = ph->nhandlers;
	bt_limits_inherit(h, ph);
	g.hdr = h;
	bt_limits_set_hdr(g.hdr);
	g.map_size = size;
	pthread_mutex_init(&g.lock, NULL);
	bt_refresh_maps();
	/* A child of an untraced process stays untraced: its parent's ring
	 * (and perhaps the TB table) is not btrace's. */
	if (fd >= 0 && !g.detached) {
		if (g.watch && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
					  0, ack)) {
			rc = -errno;
		} else {
			rc = bt_file_publish(fd, ack[1]);
			if (ack[1] >= 0)
				close(ack[1]);
			if (!rc && ack[0] >= 0)
				rc = bt_wait_watched(ack[0]);
		}
		if (rc && !bt_btrace_gone(rc))
			fprintf(stderr, "btrace-qemu: ring of process %d: %s "
				"failed: %s; not tracing this process\n",
				(int)getpid(), rc == -EMFILE || rc == -EPIPE ?
				"watch by btrace" : "hand to btrace",
				rc == -EPIPE ? "btrace dropped it" :
				strerror(-rc));
		if (ack[0] >= 0)
			close(ack[0]);
	}
	if (fd >= 0)
		close(fd);
	if (rc) {
		if (!g.detached)
			__atomic_add_fetch(&ph->untraced_children, 1,
					   __ATOMIC_RELAXED);
		g.detached = 1;
	}
	/* Keep the parent's mapping if it holds the TB table. */
	if (ph != g.tbhdr)
		munmap(ph, psize);
}

/*
 * Guest ranges mapped executable (file code and JIT), from the mmap and
 * mprotect arguments.  The copy of the map is what decodes the code, so it
 * is refreshed when a change touches executable memory; changes to data
 * mappings alone (malloc arenas: hundreds in a CPython run) do not pay for
 * a read of /proc/self/maps.  The loader's own mappings of the program and
 * the interpreter are in the first copy.
 */
#define BT_MAX_EXEC_RANGES 512
static struct bt_range g_exec[BT_MAX_EXEC_RANGES];
static unsigned int g_nexec;
static int g_exec_full;  /* too many to track: refresh on every change */

/* Does [s, e) touch executable memory?  Updates the list: @exec adds the
 * range, otherwise ranges it covers entirely are dropped. */
static int bt_exec_touch(uint64_t s, uint64_t e, int exec)
{
	int hit = exec || g_exec_full;

	pthread_mutex_lock(&g.lock);
	for (unsigned int i = 0; i < g_nexec; i++) {
		if (g_exec[i].start >= e || g_exec[i].end <= s)
			continue;
		hit = 1;
		if (!exec && g_exec[i].start >= s && g_exec[i].end <= e)
			g_exec[i--] = g_exec[--g_nexec];
	}
	if (exec) {
		if (g_nexec < BT_MAX_EXEC_RANGES)
			g_exec[g_nexec++] = (struct bt_range){ s, e };
		else
			g_exec_full = 1;
	}
	pthread_mutex_unlock(&g.lock);
	return hit;
}

static void bt_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu,
			   int64_t num, int64_t ret)
{
	unsigned int v = vcpu & (BT_MAX_VCPUS - 1);

	const uint64_t *a = g_sysargs[v];
	uint64_t len = (a[1] + BT_PAGE - 1) & ~(BT_PAGE - 1);

	bt_limits_syscall_ret(num, ret);
	switch (num) {
	case BT_NR_MMAP:
		/* Anonymous executable memory: JIT code.  File mappings get
		 * their execute bit from the ELF file. */
		if ((ret >= 0 || ret < -4096) &&
		    bt_exec_touch((uint64_t)ret, (uint64_t)ret + len,
				  !!(a[2] & BT_PROT_EXEC)))
			bt_refresh_maps_x(1, (uint64_t)ret, (uint64_t)ret + len,
					  (a[2] & BT_PROT_EXEC) &&
					  (a[3] & BT_MAP_ANONYMOUS));
		break;
	case BT_NR_MPROTECT:
		if (ret == 0 && bt_exec_touch(a[0], a[0] + len,
					      !!(a[2] & BT_PROT_EXEC)))
			bt_refresh_maps_x(1, a[0], a[0] + len,
					  !!(a[2] & BT_PROT_EXEC));
		break;
	case BT_NR_MUNMAP:
		if (ret == 0 && bt_exec_touch(a[0], a[0] + len, 0))
			bt_refresh_maps_x(1, a[0], a[0] + len, 0);
		break;
	case BT_NR_MREMAP:
		if ((ret >= 0 || ret < -4096) &&
		    bt_exec_touch(a[0], a[0] + len, 0))
			bt_refresh_maps_x(1, a[0], a[0] + len, 0);
		break;
	case BT_NR_CLONE:
	case BT_NR_CLONE3:
	case BT_NR_FORK:
	case BT_NR_VFORK:
		if (ret == 0 && (num == BT_NR_FORK || num == BT_NR_VFORK ||
				 !(g_clone_flags[v] & BT_CLONE_VM) ||
				 (g_clone_flags[v] & BT_CLONE_VFORK)))
			bt_child_init();
		break;
	case BT_NR_EXECVE:
	case BT_NR_EXECVEAT:
		if (ret < 0)
			__atomic_and_fetch(&g.hdr->flags, ~BT_RING_F_EXEC,
					   __ATOMIC_RELEASE);
		break;
	case BT_NR_CHDIR:
	case BT_NR_FCHDIR:
		if (ret == 0 && !getcwd(g.hdr->cwd, sizeof(g.hdr->cwd)))
			g.hdr->cwd[0] = 0;
		break;
	}
	/* Its return (after bt_child_init(): a forked child has no slot
	 * yet, and never writes into its parent's). */
	bt_time_sample();
}

static void bt_atexit(qemu_plugin_id_t id, void *udata)
{
	if (g.hdr)
		__atomic_or_fetch(&g.hdr->flags, BT_RING_F_EXITED,
				  __ATOMIC_RELEASE);
}

/* ---- install ---- */

static int bt_parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

/* The memory callback decodes QEMU 7.2's meminfo itself (bt_mem()): check
 * that this QEMU's own functions read it the same way. */
static int bt_meminfo_ok(void)
{
	for (uint32_t shift = 0; shift < 8; shift++) {
		for (uint32_t rw = 1; rw <= 2; rw++) {
			qemu_plugin_meminfo_t info = shift << 4 | rw << 16;

			if (qemu_plugin_mem_size_shift(info) != shift ||
			    qemu_plugin_mem_is_store(info) != (rw == 2) ||
			    ((info >> 4) & BT_ACC_SHIFT_MASK) != shift ||
			    !!((info >> 14) & BT_ACC_STORE) != (rw == 2))
				return 0;
		}
	}
	return 1;
}

BT_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
				  int argc, char **argv)
{
	int dumpable = 1, fd = -1;   /* fd=: the launched process's memfd */
	size_t size;

	g.nslots = BT_RING_DEF_SLOTS;
	g.nxslots = BT_RING_DEF_XSLOTS;
	g.entries = 1u << 20;
	g.xentries = BT_RING_DEF_XENTRIES;
	g.tb_max = BT_RING_DEF_TBMAX;
	g.fixpage = 1;
	g.ring_fd = -1;
	g.time_every = BT_RING_DEF_TIME;
	g.acc_entries = 0;
	/* Debugging aid: BTRACE_QEMU_LOOPS=0 keeps every turn of a loop (a
	 * test compares the trace with QEMU's own log of every block). */
	g.loops = !getenv("BTRACE_QEMU_LOOPS") ||
		  strcmp(getenv("BTRACE_QEMU_LOOPS"), "0") != 0;
	/* BTRACE_QEMU_TIME=N: a clock sample every N records, 0 none (the
	 * benchmark compares both; time= below overrides it). */
	if (getenv("BTRACE_QEMU_TIME")) {
		uint64_t v;

		if (bt_parse_u64(getenv("BTRACE_QEMU_TIME"), &v) ||
		    v > BT_RING_STAGE) {
			fprintf(stderr, "btrace-qemu: BTRACE_QEMU_TIME='%s': "
				"parse failed: not a number of records from 0 "
				"to %u\n", getenv("BTRACE_QEMU_TIME"),
				BT_RING_STAGE);
			return -1;
		}
		g.time_every = (uint32_t)v;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		uint64_t v = 0;
		int bad = 0;

		if (!strncmp(a, "dir=", 4))
			snprintf(g.dir, sizeof(g.dir), "%s", a + 4);
		else if (!strncmp(a, "slots=", 6))
			bad = bt_parse_u64(a + 6, &v) || !v || v > 4096 ||
			      ((g.nslots = (uint32_t)v), 0);
		else if (!strncmp(a, "xslots=", 7))
			bad = bt_parse_u64(a + 7, &v) || v > 65536 ||
			      ((g.nxslots = (uint32_t)v), 0);
		else if (!strncmp(a, "xentries=", 9))
			bad = bt_parse_u64(a + 9, &v) || v < 1024 ||
			      v > (1ull << 28) || ((g.xentries = bt_pow2_roundup(v)), 0);
		else if (!strncmp(a, "entries=", 8))
			bad = bt_parse_u64(a + 8, &v) || v < 1024 ||
			      v > (1ull << 28) || ((g.entries = bt_pow2_roundup(v)), 0);
		else if (!strncmp(a, "tbmax=", 6))
			bad = bt_parse_u64(a + 6, &v) || v < 1024 ||
			      v >= BT_RING_SENT || ((g.tb_max = v), 0);
		else if (!strncmp(a, "fixpage=", 8))
			bad = bt_parse_u64(a + 8, &v) || ((g.fixpage = !!v), 0);
		else if (!strncmp(a, "fd=", 3))
			bad = bt_parse_u64(a + 3, &v) || v > INT_MAX ||
			      fcntl((int)v, F_GETFD) < 0 || ((fd = (int)v), 0);
		else if (!strncmp(a, "watch=", 6))
			bad = bt_parse_u64(a + 6, &v) || ((g.watch = !!v), 0);
		else if (!strncmp(a, "exec=", 5))
			bad = bt_parse_u64(a + 5, &v) || ((g.reexec = !!v), 0);
		else if (!strncmp(a, "time=", 5))
			bad = bt_parse_u64(a + 5, &v) || v > BT_RING_STAGE ||
			      ((g.time_every = (uint32_t)v), 0);
		else if (!strncmp(a, "accesses=", 9))
			bad = bt_parse_u64(a + 9, &v) || v > BT_RING_ACC_MAX ||
			      ((g.acc_entries = v ? bt_pow2_roundup(v) : 0), 0);
		else if (!strncmp(a, "dumpable=", 9))
			bad = bt_parse_u64(a + 9, &v) || ((dumpable = !!v), 0);
		else if (!strncmp(a, "comm=", 5))
			snprintf(g.comm, sizeof(g.comm), "%s", a + 5);
		else
			bad = 1;
		if (bad) {
			fprintf(stderr, "btrace-qemu: argument '%s': parse failed: "
				"unknown or out of range\n", a);
			return -1;
		}
	}
	if (info && strcmp(info->target_name, "x86_64") != 0) {
		fprintf(stderr, "btrace-qemu: target %s: load failed: only "
			"x86_64 is supported\n", info->target_name);
		return -1;
	}
	if (!g.dir[0]) {
		fprintf(stderr, "btrace-qemu: load failed: no dir= argument\n");
		return -1;
	}
	if (g.acc_entries && !bt_meminfo_ok()) {
		fprintf(stderr, "btrace-qemu: access log: this QEMU encodes "
			"memory accesses otherwise than 7.2; not logging them\n");
		g.acc_entries = 0;
	}
	g.acc_xentries = bt_ring_acc_xentries(g.acc_entries);
	{
		struct stat st;

		if (!lstat(g.dir, &st) && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && !(st.st_mode & 077)) {
			g.dir_dev = st.st_dev;
			g.dir_ino = st.st_ino;
		}
	}
	bt_note_host_maps();
	/* The header now (btrace sees the plugin started), the rest at the
	 * first translation (bt_map_root), which also closes the descriptor
	 * before any guest code runs. */
	g.hdr = bt_file_create(getpid(), 1, fd, 0, &size, &g.ring_fd);
	bt_limits_set_hdr(g.hdr);
	if (!g.hdr)
		return -1;
	if (fd < 0) {
		/* A re-executed emulator: its own ring, handed to btrace.
		 * Failing that, the program runs on untraced. */
		int rc = g.ring_fd >= 0 ? bt_file_publish(g.ring_fd, -1) : -1;

		if (rc && g.ring_fd >= 0 && !bt_btrace_gone(rc))
			fprintf(stderr, "btrace-qemu: ring of process %d: hand "
				"to btrace failed: %s; not tracing this "
				"process\n", (int)getpid(), strerror(-rc));
		if (rc)
			g.detached = 1;
	}
	g.map_size = size;
	g.cs_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &g.cs) == CS_ERR_OK;
	if (!dumpable)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	qemu_plugin_register_vcpu_init_cb(id, bt_vcpu_init);
	qemu_plugin_register_vcpu_exit_cb(id, bt_vcpu_exit);
	qemu_plugin_register_vcpu_tb_trans_cb(id, bt_tb_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, bt_syscall);
	qemu_plugin_register_vcpu_syscall_ret_cb(id, bt_syscall_ret);
	qemu_plugin_register_atexit_cb(id, bt_atexit, NULL);
	return 0;
}
