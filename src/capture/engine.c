/* SPDX-License-Identifier: MIT */
/*
 * The capture engine: launch/attach, buffers per plan, sideband, the crash
 * watch (precise with PTRACE_SEIZE or passive), on-demand snapshots through
 * the registry, join and handover.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture-internal.h"
#include "engine-internal.h"
#include "signame.h"
#include "snapbuild.h"
#include "util.h"

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* "SEGV" for 11 (the C library's abbreviation, "POLL" for 29), @none
 * for a signal without a name. */
static const char *abbrev(int sig, const char *none)
{
	const char *n = bt_sig_name(sig, BT_SIG_POLL);

	return n ? n + 3 : none;
}

static void say(const struct bt_engine *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct bt_engine *e, const char *fmt, ...)
{
	char buf[2048], line[2100];
	va_list ap;

	if ((e->rec->flags & BTRACE_RECORD_QUIET) || !e->rec->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* to the recording's log callback, tagged like record's lines */
	snprintf(line, sizeof(line), "btrace record: %s", buf);
	e->rec->log(BTRACE_LOG_INFO, line, e->rec->log_ctx);
}

static struct bt_perf_ctx ctx_for(const struct bt_engine *e, pid_t tid, int cpu)
{
	struct bt_perf_ctx c = {
		.pmu = e->o->pmu_name, .tid = tid, .cpu = cpu,
		.aux_pmu = e->o->has_aux,
		.kernel = !e->o->trace_attr.exclude_kernel,
	};

	return c;
}

static int map_rings(struct bt_engine *e, struct bt_perf_ring *r, int fd,
		     const struct bt_perf_ctx *c, struct btrace_error *err)
{
	uint64_t before = e->st.user_locked + e->st.pinned;
	int ret;

	(void)before;
	ret = bt_perf_map_data(r, fd, e->o->data_pages, !e->o->bts_samples,
			       c, err);
	if (ret < 0)
		return ret;
	if (bt_budget_charge(&e->env, &e->st, 1 + e->o->data_pages) < 0)
		e->st.pinned += 1 + e->o->data_pages;  /* the kernel allowed it */
	if (!e->o->has_aux)
		return 0;
	ret = bt_perf_map_aux(r, e->plan.ring.ring, true, c, err);
	if (ret < 0)
		return ret;
	/* the ring may be smaller than planned (halved on ENOMEM) */
	if (bt_budget_charge(&e->env, &e->st, r->aux_size / e->env.page_size) < 0)
		e->st.pinned += r->aux_size / e->env.page_size;
	return 0;
}

static const struct bt_tev *find_tev_const(const struct bt_engine *e, pid_t tid)
{
	for (size_t i = 0; i < e->ntev; i++)
		if (e->tevs[i].tid == tid)
			return &e->tevs[i];
	return NULL;
}

static void attr_for(const struct bt_engine *e, struct perf_event_attr *a,
		     bool enable_on_exec, bool catch_all)
{
	*a = e->o->trace_attr;
	a->size = sizeof(*a);
	a->disabled = 1;
	a->enable_on_exec = enable_on_exec ? 1 : 0;
	a->inherit = 0;
	/* on a shared CPU ring, every PERF_RECORD_AUX names its thread and
	 * time (sample_id), so the ring can be split by thread */
	if (catch_all) {
		a->sample_id_all = 1;
		a->sample_type |= PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	}
}

int bt_engine_open_catch_all(struct bt_engine *e, struct bt_tev *t,
			     bool enable_on_exec, struct btrace_error *err)
{
	struct perf_event_attr a;
	int r = 0;

	t->cpu_fds = malloc(sizeof(int) * (size_t)e->ncpus);
	if (!t->cpu_fds)
		return bt_error(err, -ENOMEM, "catch-all rings: out of memory");
	for (int c = 0; c < e->ncpus; c++)
		t->cpu_fds[c] = -1;
	for (int c = 0; c < e->ncpus && r == 0; c++) {
		struct bt_perf_ctx cx = ctx_for(e, t->tid, e->cpus[c]);
		int fd, rfd;

		attr_for(e, &a, enable_on_exec, true);
		fd = bt_perf_open(&a, t->tid, e->cpus[c], &cx, err);
		if (fd < 0) {
			r = fd;
			break;
		}
		t->cpu_fds[c] = fd;
		if (e->cpu_rings[c].fd >= 0) {
			r = bt_perf_set_output(fd, e->cpu_rings[c].fd, &cx, err);
			continue;
		}
		/* The ring holds its own descriptor of the event from the
		 * start (close-on-exec like every other), so that closing
		 * the thread's never leaves the ring with a stale number. */
		rfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (rfd < 0) {
			r = bt_perf_explain(errno, BT_OP_OPEN, &cx, err);
			break;
		}
		r = map_rings(e, &e->cpu_rings[c], rfd, &cx, err);
		if (r < 0) {
			if (e->cpu_rings[c].fd < 0)
				close(rfd);
			bt_perf_ring_close(&e->cpu_rings[c]);
		}
	}
	if (r < 0) {
		for (int c = 0; c < e->ncpus; c++)
			if (t->cpu_fds[c] >= 0)
				close(t->cpu_fds[c]);
		free(t->cpu_fds);
		t->cpu_fds = NULL;
		return r;
	}
	e->cpu_rings_open = true;
	return 0;
}

static void note_untraced(struct bt_engine *e, pid_t tid, const char *why)
{
	struct bt_untraced *u;

	for (size_t i = 0; i < e->nuntraced; i++)
		if (e->untraced[i].tid == tid)
			return;
	say(e, "thread %d: not traced: %s", (int)tid, why);
	if (bt_grow((void **)&e->untraced, &e->cuntraced, e->nuntraced,
		    sizeof(*e->untraced)) < 0)
		return;
	u = &e->untraced[e->nuntraced++];
	u->tid = tid;
	snprintf(u->why, sizeof(u->why), "%s", why);
}

static bool is_untraced(const struct bt_engine *e, pid_t tid)
{
	for (size_t i = 0; i < e->nuntraced; i++)
		if (e->untraced[i].tid == tid)
			return true;
	return false;
}

/* Pages the catch-all rings still need to be mapped. */
static uint64_t cpu_rings_cost(const struct bt_engine *e)
{
	return e->cpu_rings_open ? 0 : e->plan.cpu_cost;
}

int bt_engine_open_thread(struct bt_engine *e, pid_t tid, bool enable_on_exec,
			  bool enable_now, struct btrace_error *err)
{
	struct bt_tev *t;
	uint64_t avail;
	int r, per_task_count = 0;

	for (size_t i = 0; i < e->ntev; i++) {
		if (e->tevs[i].tid == tid)
			return 0;
		per_task_count += e->tevs[i].per_task;
	}
	if (bt_grow((void **)&e->tevs, &e->ctev, e->ntev, sizeof(*e->tevs)) < 0)
		return bt_error(err, -ENOMEM, "thread %d: out of memory", (int)tid);
	t = &e->tevs[e->ntev];
	memset(t, 0, sizeof(*t));
	bt_perf_ring_init(&t->ring);
	t->tid = tid;
	avail = bt_budget_available(&e->env, &e->st);
	/* per-task if the budget still leaves room for the reserved
	 * catch-all rings */
	t->per_task = avail == BT_UNLIMITED ||
		avail >= e->plan.task_cost +
			 (e->plan.catch_all_rings ? cpu_rings_cost(e) : 0);
	if (e->o->max_tasks && per_task_count >= e->o->max_tasks)
		t->per_task = false;
	if (!t->per_task && avail != BT_UNLIMITED && avail < cpu_rings_cost(e))
		return bt_error(err, -EPERM,
				"no trace buffer: the locked-memory budget has %" PRIu64 " pages left, a per-task buffer needs %" PRIu64 " and the per-CPU rings %" PRIu64 "%s",
				avail, e->plan.task_cost, cpu_rings_cost(e),
				e->plan.unreserved ? " (they did not fit beside the buffers when recording began)" : "");
	if (t->per_task) {
		struct perf_event_attr a;
		struct bt_perf_ctx cx = ctx_for(e, tid, -1);
		int fd;

		attr_for(e, &a, enable_on_exec, false);
		fd = bt_perf_open(&a, tid, -1, &cx, err);
		if (fd < 0)
			return fd;
		r = map_rings(e, &t->ring, fd, &cx, err);
		if (r < 0) {
			if (t->ring.fd < 0)
				close(fd);
			bt_perf_ring_close(&t->ring);
			return r;
		}
	} else {
		r = bt_engine_open_catch_all(e, t, enable_on_exec, err);
		if (r < 0)
			return r;
	}
	e->ntev++;
	if (enable_now) {
		if (t->per_task)
			bt_perf_enable(t->ring.fd);
		else
			for (int c = 0; c < e->ncpus; c++)
				bt_perf_enable(t->cpu_fds[c]);
	}
	return 0;
}

/* A thread that appeared while recording: trace it, or record why not. */
static void open_new_thread(struct bt_engine *e, pid_t tid)
{
	struct btrace_error err = { 0 };
	int r;

	if (find_tev_const(e, tid) || is_untraced(e, tid))
		return;
	r = bt_engine_open_thread(e, tid, false, true, &err);
	if (r < 0 && r != -ESRCH)
		note_untraced(e, tid, err.msg);
}

static void close_all(struct bt_engine *e)
{
	for (size_t i = 0; i < e->ntev; i++) {
		struct bt_tev *t = &e->tevs[i];

		bt_perf_ring_close(&t->ring);
		if (t->cpu_fds) {
			for (int c = 0; c < e->ncpus; c++)
				if (t->cpu_fds[c] >= 0)
					close(t->cpu_fds[c]);
			free(t->cpu_fds);
		}
	}
	free(e->tevs);
	e->tevs = NULL;
	e->ntev = e->ctev = 0;
	free(e->untraced);
	e->untraced = NULL;
	e->nuntraced = e->cuntraced = 0;
	if (e->cpu_rings)
		for (int c = 0; c < e->ncpus; c++)
			bt_perf_ring_close(&e->cpu_rings[c]);
	e->cpu_rings_open = false;
	bt_sb_rings_close(&e->sbr);
}

static int make_plan(struct bt_engine *e, int nthreads, struct btrace_error *err)
{
	struct bt_plan_req req = {
		.nthreads = nthreads,
		.ncpus = e->ncpus,
		.history = e->o->history,
		.pad = e->o->pad,
		.data_pages = e->o->data_pages,
		.sideband_pages = e->o->sideband_pages,
		.max_ring = e->o->max_ring,
		.has_aux = e->o->has_aux,
		.allow_shrink = e->allow_shrink,
		.max_tasks = e->o->max_tasks,
		.new_threads = true,
	};
	int r;

	bt_budget_env_current(&e->env);
	bt_budget_state_init(&e->env, &e->st);
	r = bt_budget_plan(&e->env, &req, &e->plan, err);
	if (r < 0)
		return r;
	/* the sideband rings are charged first */
	for (int c = 0; c < e->ncpus && e->o->sideband_pages; c++)
		bt_budget_charge(&e->env, &e->st, 1 + e->o->sideband_pages);
	return 0;
}

/* --- ptrace --- */

static bool is_fatal(pid_t pid, int sig)
{
	char *buf = NULL, path[64];
	unsigned long long cgt = 0, ign = 0;
	char *p;

	switch (sig) {
	case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:
	case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:
		return false;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (bt_read_file(path, &buf, NULL, 1 << 16) < 0)
		return true;
	if ((p = strstr(buf, "SigCgt:")))
		cgt = strtoull(p + 7, NULL, 16);
	if ((p = strstr(buf, "SigIgn:")))
		ign = strtoull(p + 7, NULL, 16);
	free(buf);
	return !((cgt | ign) & (1ull << (sig - 1)));
}

static void regs_to_signal(const struct user_regs_struct *r,
			   struct btrace_signal *s)
{
	memcpy(s->regs, r, sizeof(uint64_t) * BTRACE_NREGS);
	s->has_regs = 1;
	s->fault_source = BTRACE_FAULT_REGS;
	s->fault_ip = r->rip;
}

static void finish_snapshot(struct bt_engine *e, const char *how)
{
	struct bt_snap_summary sum = { .style = BT_SNAP_SUMMARY_HW, .how = how };
	char line[2048];
	int fd;

	e->res->snapshots++;
	snprintf(e->res->snapshot_path, sizeof(e->res->snapshot_path), "%s",
		 e->output);
	/* the builder's summary line (snapbuild.h), as the QEMU backend's */
	bt_snapbuild_summary(&e->snap, &sum, line, sizeof(line));
	say(e, "%s", line);
	fd = open(e->output, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		int n = bt_registry_publish(e->reg, fd, how);

		if (n > 0)
			say(e, "sent to %d joined btrace process(es)", n);
		close(fd);
	}
}

static void precise_snapshot(struct bt_engine *e, pid_t tid, int sig,
			     const siginfo_t *si)
{
	struct btrace_error err = { 0 };
	struct user_regs_struct regs;
	struct btrace_signal s;
	char how[160];
	uint64_t t0 = bt_now_ns();

	bt_engine_disable_siblings_first(e, tid);
	e->disable_ns = bt_now_ns() - t0;
	memset(&s, 0, sizeof(s));
	s.tid = tid;
	s.signo = sig;
	s.code = si->si_code;
	s.err = si->si_errno;
	s.addr = (uint64_t)(uintptr_t)si->si_addr;
	s.sender_pid = si->si_code <= 0 ? si->si_pid : 0;
	s.exit_status = -1;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) == 0)
		regs_to_signal(&regs, &s);
	/* A handler re-raised it: the fault is the one seen before. */
	if (si->si_code <= 0 && e->have_fault && e->fault.tid == tid) {
		int32_t signo = s.signo;

		s = e->fault;
		s.signo = signo;
	}
	if (bt_engine_write(e, e->output, BTRACE_CRASH_PRECISE, &s, true,
			    &err) < 0) {
		say(e, "snapshot failed: %s", err.msg);
		return;
	}
	e->snapshotted = true;
	snprintf(how, sizeof(how), "precise: %s in thread %d at 0x%" PRIx64,
		 abbrev(sig, "signal"), (int)tid,
		 s.fault_ip);
	finish_snapshot(e, how);
}

static struct bt_tev *find_tev(struct bt_engine *e, pid_t tid)
{
	for (size_t i = 0; i < e->ntev; i++)
		if (e->tevs[i].tid == tid)
			return &e->tevs[i];
	return NULL;
}

void bt_engine_handle_stop(struct bt_engine *e, pid_t tid, int status)
{
	int event = status >> 16, sig = WSTOPSIG(status);
	struct btrace_error err = { 0 };

	if (event == PTRACE_EVENT_CLONE) {
		unsigned long msg = 0;

		ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg);
		if (msg)
			open_new_thread(e, (pid_t)msg);
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (event == PTRACE_EVENT_EXIT) {
		unsigned long msg = 0;

		ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg);
		if ((e->rec->on & BTRACE_ON_EXIT) && tid == e->pid &&
		    !e->snapshotted) {
			struct btrace_signal s = { .tid = tid,
						   .exit_status = (int)msg };

			bt_engine_disable_siblings_first(e, tid);
			if (bt_engine_write(e, e->output, BTRACE_CRASH_EXIT, &s,
					    true, &err) == 0) {
				e->snapshotted = true;
				finish_snapshot(e, "at exit");
			} else {
				say(e, "snapshot failed: %s", err.msg);
			}
		}
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (event == PTRACE_EVENT_STOP) {
		/* group-stop (job control) or the first stop of a new thread.
		 * That stop may be reported before the parent's
		 * PTRACE_EVENT_CLONE: the thread's event is opened before it
		 * runs, not when the parent's event comes. */
		open_new_thread(e, tid);
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
		    sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);
		else
			ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (event == 0) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0) {
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			return;
		}
		if (si.si_code > 0 && (sig == SIGSEGV || sig == SIGBUS ||
				       sig == SIGILL || sig == SIGFPE ||
				       sig == SIGTRAP)) {
			struct user_regs_struct regs;

			memset(&e->fault, 0, sizeof(e->fault));
			e->fault.tid = tid;
			e->fault.signo = sig;
			e->fault.code = si.si_code;
			e->fault.addr = (uint64_t)(uintptr_t)si.si_addr;
			e->fault.exit_status = -1;
			if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) == 0)
				regs_to_signal(&regs, &e->fault);
			e->have_fault = true;
		}
		if (!e->snapshotted && sig < 63 &&
		    (e->rec->on & BTRACE_ON_SIGNAL(sig)) && is_fatal(e->pid, sig))
			precise_snapshot(e, tid, sig, &si);
		ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
		return;
	}
	ptrace(PTRACE_CONT, tid, NULL, NULL);
}

static void passive_snapshot(struct bt_engine *e, int status)
{
	struct btrace_error err = { 0 };
	struct btrace_signal s;
	uint32_t mode = BTRACE_CRASH_PASSIVE;
	char how[400];
	bool want;

	memset(&s, 0, sizeof(s));
	s.tid = e->pid;
	s.exit_status = status;
	if (status >= 0 && WIFSIGNALED(status)) {
		s.signo = WTERMSIG(status);
		want = e->rec->on & BTRACE_ON_SIGNAL(s.signo);
	} else if (status >= 0) {
		mode = BTRACE_CRASH_EXIT;
		want = e->rec->on & BTRACE_ON_EXIT;
	} else {
		want = true;  /* attached passively: the cause is unknown */
	}
	if (!want || e->snapshotted)
		return;
	if (bt_engine_write(e, e->output, mode, s.signo || status < 0 ? &s : NULL,
			    false, &err) < 0) {
		say(e, "snapshot failed: %s", err.msg);
		return;
	}
	e->snapshotted = true;
	if (mode == BTRACE_CRASH_EXIT)
		snprintf(how, sizeof(how), "at exit, after the process ended");
	else if (s.signo)
		snprintf(how, sizeof(how),
			 "passive: taken after the process died of %s%s%s",
			 abbrev(s.signo, "a signal"),
			 e->mode_why[0] ? "; " : "", e->mode_why);
	else
		snprintf(how, sizeof(how),
			 "passive: taken after the process died, cause unknown%s%s",
			 e->mode_why[0] ? "; " : "", e->mode_why);
	finish_snapshot(e, how);
}

/* On-demand snapshot for `btrace snapshot PID`. */
static void serve_snapshot(struct bt_engine *e, int client)
{
	struct btrace_error err = { 0 };
	const char *dir = bt_registry_dir();
	char path[512], note[128];
	int fd = -1;

	snprintf(path, sizeof(path), "%s/snap-%d-%d.btrace", dir ? dir : "/tmp",
		 (int)getpid(), e->ondemand++);
	bt_engine_disable_all(e);
	if (bt_engine_write(e, path, BTRACE_CRASH_ONDEMAND, NULL, true, &err) == 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		unlink(path);
	}
	bt_engine_enable_all(e);
	snprintf(note, sizeof(note), "on demand, process %d", (int)e->pid);
	bt_registry_reply(client, fd, note, err.msg);
	if (fd >= 0)
		close(fd);
}

static long proc_exit_code(pid_t pid)
{
	char path[64], *buf, *p;
	long code = -1;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (bt_read_file(path, &buf, NULL, 1 << 16) < 0)
		return -1;
	p = strrchr(buf, ')');
	if (p && p[1] == ' ' && p[2] == 'Z') {
		for (p++; *p && field < 52; p++)
			if (*p == ' ')
				field++;
		if (field == 52)
			code = strtol(p, NULL, 10);
	}
	free(buf);
	return code;
}

/*
 * A ptrace stop of a tracee sends SIGCHLD to the tracer
 * (do_notify_parent_cldstop() in kernel/signal.c): with SIGCHLD blocked and
 * read through a signalfd, the stop wakes the loop at once instead of at
 * the next tick, so the siblings of a crashed thread are stopped before
 * they overwrite their history.  A blocked signal is never discarded as
 * ignored (sig_ignored()), whatever the caller's disposition.  In a
 * multi-threaded caller another thread may take the signal: the tick is
 * then the fallback.
 */
static void sigchld_watch_start(struct bt_engine *e)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (pthread_sigmask(SIG_BLOCK, &set, &e->old_mask) != 0)
		return;
	e->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (e->sigfd < 0)
		pthread_sigmask(SIG_SETMASK, &e->old_mask, NULL);
}

static void sigchld_drain(struct bt_engine *e)
{
	struct signalfd_siginfo si;

	while (e->sigfd >= 0 && read(e->sigfd, &si, sizeof(si)) == sizeof(si))
		;
}

static void sigchld_watch_stop(struct bt_engine *e)
{
	if (e->sigfd < 0)
		return;
	/* the stops of our tracees are ours: not handed to the caller */
	sigchld_drain(e);
	close(e->sigfd);
	e->sigfd = -1;
	pthread_sigmask(SIG_SETMASK, &e->old_mask, NULL);
}

/*
 * Asked to stop while the target lives: end the ptrace link of every thread
 * now, before the registry is released, so that a joiner taking over can
 * seize it (otherwise the link ends only with this process, exit_ptrace(),
 * and a library caller may live on).  A seized running thread is stopped
 * with PTRACE_INTERRUPT first; a signal it was stopped for is passed on.
 */
static void detach_all(struct bt_engine *e)
{
	for (int round = 0; round < 5; round++) {
		pid_t *tids = NULL;
		int n = bt_proc_tids(e->pid, &tids), left = 0;

		for (int i = 0; i < n; i++) {
			int st, sig = 0;
			pid_t w;

			if (ptrace(PTRACE_INTERRUPT, tids[i], NULL, NULL) < 0)
				continue;   /* not ours, or gone */
			left++;
			w = waitpid(tids[i], &st, __WALL);
			if (w != tids[i] || !WIFSTOPPED(st))
				continue;
			if ((st >> 16) == 0)
				sig = WSTOPSIG(st);   /* a signal-delivery stop */
			ptrace(PTRACE_DETACH, tids[i], NULL, (void *)(long)sig);
		}
		free(tids);
		if (!left)
			break;   /* a clone during the detach: another round */
	}
}

static void loop(struct bt_engine *e)
{
	int tick = e->o->tick_ms == 0 ? 20 : e->o->tick_ms < 0 ? -1 :
		   e->o->tick_ms;
	bool first = true;

	if (e->launched || e->precise)
		sigchld_watch_start(e);
	while (!e->done && !stop_requested) {
		struct pollfd pfd[71];
		int n = 0, pidfd_slot = -1, reg_slot = -1;

		for (int i = 0; i < e->sbr.ncpus && n < 64; i++) {
			pfd[n].fd = bt_sb_rings_fd(&e->sbr, i);
			pfd[n++].events = POLLIN;
		}
		if (e->reg) {
			reg_slot = n;
			pfd[n].fd = bt_registry_owner_fd(e->reg);
			pfd[n++].events = POLLIN;
		}
		if (e->pidfd >= 0) {
			pidfd_slot = n;
			pfd[n].fd = e->pidfd;
			pfd[n++].events = POLLIN;
		}
		if (e->sigfd >= 0) {
			pfd[n].fd = e->sigfd;
			pfd[n++].events = POLLIN;
		}
		/* stops that came before the watch started: look at once */
		poll(pfd, (nfds_t)n, first ? 0 : tick);
		first = false;
		sigchld_drain(e);
		bt_sb_rings_drain(&e->sbr, &e->sb);
		bt_engine_drain_trace(e);
		/* new threads seen in FORK records (passive mode) */
		for (size_t i = 0; i < e->sb.nnew; i++)
			open_new_thread(e, e->sb.new_tids[i]);
		e->sb.nnew = 0;
		if (reg_slot >= 0 && (pfd[reg_slot].revents & POLLIN)) {
			int client, kind = bt_registry_accept(e->reg, &client);

			if (kind == BT_REG_JOINED)
				say(e, "another btrace joined this recording");
			else if (kind == BT_REG_SNAPSHOT)
				serve_snapshot(e, client);
		}
		if (e->launched || e->precise) {
			for (;;) {
				int status;
				pid_t w = waitpid(-1, &status, __WALL | WNOHANG);

				if (w <= 0)
					break;
				if (WIFSTOPPED(status)) {
					bt_engine_handle_stop(e, w, status);
					continue;
				}
				if (w == e->pid) {
					e->exit_status = status;
					e->done = true;
				} else {
					struct bt_tev *t = find_tev(e, w);

					if (t)
						t->exited = true;
				}
			}
		}
		if (!e->launched && pidfd_slot >= 0 &&
		    (pfd[pidfd_slot].revents & (POLLIN | POLLHUP))) {
			long code = proc_exit_code(e->pid);

			e->exit_status = code >= 0 ? (int)code : -1;
			e->done = true;
		}
	}
	if (!e->done && e->precise)
		detach_all(e);
	sigchld_watch_stop(e);
}

/* --- setup --- */

static int seize_all(struct bt_engine *e, struct btrace_error *err)
{
	long opts = PTRACE_O_TRACECLONE |
		    ((e->rec->on & BTRACE_ON_EXIT) ? PTRACE_O_TRACEEXIT : 0);
	pid_t *tids = NULL;
	int n, seized = 0;

	/* Repeat until no new thread appears (threads may be created while
	 * we attach; TRACECLONE covers them once their parent is seized). */
	for (int round = 0; round < 10; round++) {
		int fresh = 0;

		n = bt_proc_tids(e->pid, &tids);
		if (n < 0)
			return bt_error(err, n, "process %d: listing threads failed: %s",
					(int)e->pid, strerror(-n));
		for (int i = 0; i < n; i++) {
			if (ptrace(PTRACE_SEIZE, tids[i], NULL, (void *)opts) == 0) {
				fresh++;
				seized++;
			} else if (errno != EPERM || seized) {
				continue;   /* already ours, or gone */
			} else {
				int e2 = errno;

				free(tids);
				return bt_error(err, -e2, "thread %d: PTRACE_SEIZE failed: %s",
						(int)tids[i], strerror(e2));
			}
		}
		free(tids);
		tids = NULL;
		if (!fresh)
			break;
	}
	return 0;
}

static int setup_launch(struct bt_engine *e, struct btrace_error *err)
{
	int go[2], ep[2], r, child_err = 0;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0)
		return bt_error(err, -errno, "launch: pipe failed: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return bt_error(err, -errno, "launch: fork failed: %s", strerror(errno));
	if (pid == 0) {
		char c;
		int e2;

		close(go[1]);
		close(ep[0]);
		signal(SIGINT, SIG_DFL);
		/* the program runs with the caller's limit, not btrace's */
		if (e->nofile_raised)
			setrlimit(RLIMIT_NOFILE, &e->old_nofile);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(e->rec->argv[0], e->rec->argv);
		e2 = errno;
		if (write(ep[1], &e2, sizeof(e2)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	e->pid = pid;
	e->launched = true;
	snprintf(e->comm, sizeof(e->comm), "%s",
		 strrchr(e->rec->argv[0], '/') ? strrchr(e->rec->argv[0], '/') + 1 :
		 e->rec->argv[0]);
	if (e->precise) {
		long opts = PTRACE_O_TRACECLONE |
			    ((e->rec->on & BTRACE_ON_EXIT) ? PTRACE_O_TRACEEXIT : 0);

		if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)opts) < 0) {
			e->precise = false;
			snprintf(e->mode_why, sizeof(e->mode_why),
				 "PTRACE_SEIZE failed: %s", strerror(errno));
		}
	}
	bt_sideband_init(&e->sb, pid);
	r = make_plan(e, 1, err);
	if (r == 0)
		r = bt_sb_rings_open(&e->sbr, pid, true, e->o->sideband_pages, err);
	if (r == 0)
		r = bt_engine_open_thread(e, pid, true, false, err);
	if (r < 0) {
		kill(pid, SIGKILL);
		close(go[1]);
		close(ep[0]);
		waitpid(pid, NULL, 0);
		return r;
	}
	if (e->o->use_registry) {
		pid_t owner = 0;
		struct btrace_error rerr = { 0 };

		if (bt_registry_claim(pid, e->o->cfg.backend, &e->reg, &owner,
				      &rerr) < 0)
			say(e, "single-owner registry unavailable: %s", rerr.msg);
	}
	if (write(go[1], "g", 1) != 1) {
		/* the child died already; the loop reports its status */
	}
	close(go[1]);
	if (read(ep[0], &child_err, sizeof(child_err)) == sizeof(child_err)) {
		close(ep[0]);
		waitpid(pid, NULL, 0);
		return bt_error(err, -child_err, "%s: exec failed: %s",
				e->rec->argv[0], strerror(child_err));
	}
	close(ep[0]);
	return 0;
}

static int setup_attach(struct bt_engine *e, struct btrace_error *err)
{
	pid_t *tids = NULL;
	long tracer;
	int n, r;

	e->pid = e->rec->pid;
	bt_proc_comm(e->pid, e->pid, e->comm, sizeof(e->comm));
	if (!e->comm[0] && kill(e->pid, 0) < 0 && errno == ESRCH)
		return bt_error(err, -ESRCH, "process %d: attach failed: no such process",
				(int)e->pid);
	tracer = bt_proc_status_long(e->pid, "TracerPid");
	/* Taking over: the previous owner gives up the registry before it
	 * exits, and the kernel ends its ptrace only when it exits
	 * (exit_ptrace() from exit_notify() in kernel/exit.c).  Wait for
	 * that rather than fall back to passive mode. */
	for (int i = 0; e->precise && e->prev_owner > 0 &&
	     tracer == e->prev_owner && i < 3000; i++) {
		usleep(20000);
		tracer = bt_proc_status_long(e->pid, "TracerPid");
	}
	if (e->precise && tracer > 0) {
		char tc[32];

		bt_proc_comm((pid_t)tracer, (pid_t)tracer, tc, sizeof(tc));
		e->precise = false;
		snprintf(e->mode_why, sizeof(e->mode_why),
			 "process %d is already ptraced by %s (pid %ld)",
			 (int)e->pid, tc[0] ? tc : "another tracer", tracer);
	}
	if (e->precise) {
		r = seize_all(e, err);
		if (r < 0) {
			e->precise = false;
			snprintf(e->mode_why, sizeof(e->mode_why), "%.250s", err->msg);
			bt_error_clear(err);
		}
	}
	bt_sideband_init(&e->sb, e->pid);
	n = bt_proc_tids(e->pid, &tids);
	if (n < 0)
		return bt_error(err, n, "process %d: attach failed: %s", (int)e->pid,
				strerror(-n));
	r = make_plan(e, n, err);
	if (r == 0)
		r = bt_sb_rings_open(&e->sbr, e->pid, false, e->o->sideband_pages, err);
	for (int i = 0; i < n && r == 0; i++) {
		if (tids[i] != e->pid)
			r = bt_sb_rings_add_thread(&e->sbr, tids[i], err);
		if (r == -ESRCH) {
			r = 0;
			continue;
		}
		if (r == 0)
			r = bt_engine_open_thread(e, tids[i], false, false, err);
		if (r == -ESRCH)
			r = 0;
		/* The first thread's failure is the recording's; a later
		 * one's leaves that thread untraced, and the snapshot says so. */
		if (r < 0 && e->ntev > 0) {
			note_untraced(e, tids[i], err->msg);
			bt_error_clear(err);
			r = 0;
		}
	}
	free(tids);
	if (r < 0)
		return r;
	r = bt_sideband_synthesize(&e->sb, e->pid, err);
	if (r < 0)
		return r;
	bt_sb_rings_enable(&e->sbr);
	bt_engine_enable_all(e);
	e->pidfd = (int)syscall(SYS_pidfd_open, e->pid, 0);
	return 0;
}

static void engine_init(struct bt_engine *e, const struct bt_engine_opts *o,
			struct btrace_record_result *res)
{
	memset(e, 0, sizeof(*e));
	e->o = o;
	e->rec = o->rec;
	e->res = res;
	res->snapshots = 0;
	res->snapshot_path[0] = '\0';
	e->pidfd = -1;
	e->sigfd = -1;
	e->exit_status = -1;
	e->precise = !(o->rec->flags & BTRACE_RECORD_NO_PTRACE);
	e->allow_shrink = o->allow_shrink;
	e->can_take_over = true;
	if (!e->precise)
		snprintf(e->mode_why, sizeof(e->mode_why), "--no-ptrace was given");
	e->t0 = bt_now_ns();
}

int bt_engine_prepare(struct bt_engine *e, struct btrace_error *err)
{
	int r = bt_online_cpus(&e->cpus);

	if (r < 0)
		return bt_error(err, r, "capture: listing CPUs failed: %s", strerror(-r));
	e->ncpus = r;
	e->cpu_rings = calloc((size_t)e->ncpus, sizeof(*e->cpu_rings));
	e->cpu_flags = calloc((size_t)e->ncpus, sizeof(*e->cpu_flags));
	e->cpu_records_lost = calloc((size_t)e->ncpus, sizeof(*e->cpu_records_lost));
	e->cpu_marks = calloc((size_t)e->ncpus, sizeof(*e->cpu_marks));
	e->cpu_slices = calloc((size_t)e->ncpus, sizeof(*e->cpu_slices));
	e->scratch = malloc(65536);
	if (!e->cpu_rings || !e->cpu_flags || !e->scratch ||
	    !e->cpu_records_lost || !e->cpu_marks || !e->cpu_slices)
		return bt_error(err, -ENOMEM, "capture: out of memory");
	for (int c = 0; c < e->ncpus; c++)
		bt_perf_ring_init(&e->cpu_rings[c]);
	return 0;
}

void bt_engine_release(struct bt_engine *e)
{
	close_all(e);
	bt_registry_release(e->reg);
	e->reg = NULL;
	if (e->pidfd >= 0)
		close(e->pidfd);
	bt_sideband_fini(&e->sb);
	free(e->cpu_rings);
	free(e->cpu_flags);
	free(e->cpu_records_lost);
	free(e->cpu_marks);
	for (int c = 0; e->cpu_slices && c < e->ncpus; c++)
		free(e->cpu_slices[c].v);
	free(e->cpu_slices);
	free(e->cpus);
	free(e->scratch);
}

static void set_output(struct bt_engine *e)
{
	if (e->rec->output)
		snprintf(e->output, sizeof(e->output), "%s", e->rec->output);
	else
		bt_snap_default_name(e->output, sizeof(e->output), e->comm,
				     e->pid);
}

/* Run as owner of an attached target until it ends. */
static int run_owner_attached(struct bt_engine *e, struct btrace_error *err)
{
	int r = setup_attach(e, err);

	if (r < 0)
		return r;
	set_output(e);
	say(e, "attached to process %d (%zu thread(s)), %s crash watch%s%s; %s",
	    (int)e->pid, e->ntev, e->precise ? "precise" : "passive",
	    e->precise ? "" : ": ", e->precise ? "" : e->mode_why,
	    e->plan.summary);
	loop(e);
	if (!e->done)
		return 0;   /* we were asked to stop: the target lives on */
	if (!e->snapshotted)
		passive_snapshot(e, e->exit_status);
	return 0;
}

/* Joined another owner: receive its snapshots; take over if it leaves. */
static int run_joined(struct bt_engine *e, struct bt_registry_sub *sub,
		      pid_t owner, uint32_t backend, struct btrace_error *err)
{
	uint64_t left_at = 0;

	set_output(e);
	say(e, "process %d is already recorded by btrace (pid %d, %s): joined it; its snapshots are written to %s; this process locks no memory",
	    (int)e->pid, (int)owner,
	    backend == BTRACE_BACKEND_PT ? "Intel PT" :
	    backend == BTRACE_BACKEND_BTS ? "Intel BTS" :
	    backend == BTRACE_BACKEND_QEMU ? "QEMU software trace" :
	    "backend unknown", e->output);
	e->pidfd = (int)syscall(SYS_pidfd_open, e->pid, 0);
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = bt_registry_sub_fd(sub), .events = POLLIN },
			{ .fd = e->pidfd, .events = POLLIN },
		};
		char note[512];
		int fd, r;

		if (stop_requested)
			break;
		poll(pfd, e->pidfd >= 0 ? 2 : 1, 200);
		r = bt_registry_sub_recv(sub, &fd, note, sizeof(note));
		if (r == 1) {
			if (bt_registry_save(fd, e->output, err) == 0) {
				e->res->snapshots++;
				snprintf(e->res->snapshot_path,
					 sizeof(e->res->snapshot_path), "%s", e->output);
				say(e, "snapshot from the owner written to %s (%s)",
				    e->output, note);
			} else {
				say(e, "saving the owner's snapshot failed: %s", err->msg);
			}
			close(fd);
			continue;
		}
		if (r == -EAGAIN)
			continue;
		if (r == -EPROTO || r == -EMSGSIZE) {
			bt_registry_sub_close(sub);
			return bt_error(err, r, "process %d: the owner (pid %d) broke the registry protocol: %s: refused",
					(int)e->pid, (int)owner,
					r == -EPROTO ? note : "a line too long");
		}
		/* the owner left */
		bt_registry_sub_close(sub);
		sub = NULL;
		if (kill(e->pid, 0) < 0 || proc_exit_code(e->pid) >= 0) {
			return 0;   /* and so did the target */
		}
		if (!e->can_take_over) {
			say(e, "the owner (pid %d) left; this process cannot take over the recording of process %d: %s",
			    (int)owner, (int)e->pid,
			    e->no_take_over_why[0] ? e->no_take_over_why :
			    "no hardware backend");
			return 0;
		}
		left_at = bt_now_ns();
		for (int tries = 0; tries < 50; tries++) {
			pid_t o2 = 0;

			r = bt_registry_claim(e->pid, e->o->cfg.backend, &e->reg, &o2, err);
			if (r < 0)
				return r;
			if (r == 0)
				break;
			r = bt_registry_join(e->pid, &sub, &owner, &backend, err);
			if (r == 0)
				break;
			usleep(20000);
		}
		if (sub) {
			say(e, "the owner left; joined the new owner (pid %d)", (int)owner);
			continue;
		}
		if (!e->reg)
			return bt_error(err, -EAGAIN, "process %d: taking over the recording failed",
					(int)e->pid);
		/* We own it now: re-open the events at our own cost. */
		e->allow_shrink = true;
		e->prev_owner = owner;
		say(e, "the owner (pid %d) left: this process takes over the recording of process %d and re-opens the trace at its own cost",
		    (int)owner, (int)e->pid);
		for (int tries = 0;; tries++) {
			bt_error_clear(err);
			r = setup_attach(e, err);
			if (r != -EBUSY || tries > 50)
				break;
			close_all(e);   /* the old owner's events are going away */
			usleep(20000);
		}
		if (r < 0)
			return r;
		snprintf(e->gap, sizeof(e->gap),
			 "ownership passed from btrace pid %d to pid %d: no trace for %.1f ms before the hand-over; buffers: %.300s",
			 (int)owner, (int)getpid(),
			 (double)(bt_now_ns() - left_at) / 1e6, e->plan.summary);
		if (e->plan.ring.shrunk)
			say(e, "the buffers are smaller than the previous owner's: %s",
			    e->plan.summary);
		say(e, "%s", e->gap);
		loop(e);
		if (e->done && !e->snapshotted)
			passive_snapshot(e, e->exit_status);
		return 0;
	}
	bt_registry_sub_close(sub);
	return 0;
}

/*
 * One event per CPU per thread (sideband in attach mode, catch-all rings)
 * runs past a soft `ulimit -n` of 1024 on a large host: raise the soft
 * limit to the hard one, as perf does (rlimit__increase_nofile() in
 * tools/perf), and give the caller its own back at the end.
 */
static void raise_nofile(struct bt_engine *e)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &e->old_nofile) < 0 ||
	    e->old_nofile.rlim_cur >= e->old_nofile.rlim_max)
		return;
	rl = e->old_nofile;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		e->nofile_raised = true;
}

static void restore_nofile(struct bt_engine *e)
{
	if (e->nofile_raised)
		setrlimit(RLIMIT_NOFILE, &e->old_nofile);
	e->nofile_raised = false;
}

int bt_engine_join(const struct bt_engine_opts *o, bool can_take_over,
		   const char *why, struct btrace_record_result *res,
		   struct btrace_error *err)
{
	struct bt_registry_sub *sub = NULL;
	struct btrace_error jerr = { 0 };
	struct bt_engine e;
	uint32_t backend = 0;
	pid_t owner = 0;
	int r;

	engine_init(&e, o, res);
	e.can_take_over = can_take_over;
	snprintf(e.no_take_over_why, sizeof(e.no_take_over_why), "%s",
		 why ? why : "");
	e.pid = o->rec->pid;
	bt_proc_comm(e.pid, e.pid, e.comm, sizeof(e.comm));
	r = bt_registry_join(e.pid, &sub, &owner, &backend, &jerr);
	if (r < 0) {
		bt_engine_release(&e);
		return r == -ESRCH ? 1 : bt_error(err, r, "%s", jerr.msg);
	}
	/* an emulated program: its name, not the emulator's */
	if (bt_registry_sub_name(sub)[0])
		snprintf(e.comm, sizeof(e.comm), "%s", bt_registry_sub_name(sub));
	raise_nofile(&e);
	r = bt_engine_prepare(&e, err);
	if (r == 0)
		r = run_joined(&e, sub, owner, backend, err);
	else
		bt_registry_sub_close(sub);
	bt_engine_release(&e);
	restore_nofile(&e);
	return r;
}

int bt_engine_run(const struct bt_engine_opts *o,
		  struct btrace_record_result *res, struct btrace_error *err)
{
	struct sigaction sa, old_int, old_term, old_hup;
	struct bt_engine e;
	int r;

	engine_init(&e, o, res);
	raise_nofile(&e);
	r = bt_engine_prepare(&e, err);
	if (r < 0)
		goto out;
	stop_requested = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	/* Ctrl-C goes to the program; btrace waits for its fate. */
	sa.sa_handler = o->rec->argv ? SIG_IGN : on_term;
	sigaction(SIGINT, &sa, &old_int);

	if (o->rec->argv) {
		r = setup_launch(&e, err);
		if (r == 0) {
			set_output(&e);
			say(&e, "recording %s (pid %d), %s crash watch%s%s; %s",
			    e.comm, (int)e.pid, e.precise ? "precise" : "passive",
			    e.precise ? "" : ": ", e.precise ? "" : e.mode_why,
			    e.plan.summary);
			loop(&e);
			if (e.done && !e.snapshotted)
				passive_snapshot(&e, e.exit_status);
		}
	} else if (o->use_registry) {
		pid_t owner = 0;

		e.pid = o->rec->pid;
		bt_proc_comm(e.pid, e.pid, e.comm, sizeof(e.comm));
		r = bt_registry_claim(e.pid, o->cfg.backend, &e.reg, &owner, err);
		if (r == 1) {
			struct bt_registry_sub *sub = NULL;
			uint32_t backend = 0;

			r = bt_registry_join(e.pid, &sub, &owner, &backend, err);
			if (r == 0)
				r = run_joined(&e, sub, owner, backend, err);
		} else if (r == 0) {
			r = run_owner_attached(&e, err);
		}
	} else {
		r = run_owner_attached(&e, err);
	}
	res->exit_status = e.exit_status;
	if (e.exit_status >= 0)
		res->shell_status = WIFSIGNALED(e.exit_status) ?
			128 + WTERMSIG(e.exit_status) : WEXITSTATUS(e.exit_status);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
out:
	bt_engine_release(&e);
	restore_nofile(&e);
	return r;
}
