// SPDX-License-Identifier: MIT
/*
 * export-gen: a test snapshot with a known true path, for the perf.data
 * export tests.
 *
 *	export-gen [--bts] [--retcomp] [--psb N] [--ring N] [--no-vdso-bid]
 *		   SNAPSHOT TRUTH -- PROGRAM [ARGS...]
 *
 * Runs PROGRAM under ptrace, stops at main() (an int3 there), then
 * single-steps every instruction until the program dies of a signal.  The
 * stepped IPs are the truth (rep-string iterations counted once, as trace
 * decoders count them), written one hex address per line to TRUTH.  Each
 * instruction is classified with capstone, the branches are fed to the
 * software encoder (src/encode) and the result is written as a .btrace
 * with the writer API: config, the buffer (tid = the program's), the task,
 * every mapping of /proc/PID/maps with the build IDs of its files, the
 * executable segments of the program, libc and ld.so (and the vDSO) as
 * embedded code, and the signal.  For BTS, TRUTH holds "from to" per taken
 * branch instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capstone/capstone.h>
#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <btrace/snapshot.h>

#include "encode.h"

#define MAX_STEPS 5000000ull

struct map {
	uint64_t start, end, pgoff, dev, ino;
	uint32_t prot, flags;
	char path[512];
	uint8_t bid[64];
	uint32_t bid_size;
	uint8_t *code;          /* exec mappings: the bytes */
};

static struct map maps[256];
static size_t nmaps;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "export-gen: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/* GNU build-ID note in an ELF image in memory (or its first bytes). */
static uint32_t mem_build_id(const uint8_t *p, size_t n, uint8_t *bid)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;

	if (n < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > n)
		return 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + eh->e_phoff) + i;
		uint64_t pos, end;

		if (ph->p_type != PT_NOTE || ph->p_offset + ph->p_filesz > n)
			continue;
		pos = ph->p_offset;
		end = pos + ph->p_filesz;
		while (pos + sizeof(Elf64_Nhdr) <= end) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(p + pos);
			uint64_t name = pos + sizeof(*nh);
			uint64_t desc = name + ((nh->n_namesz + 3u) & ~3u);

			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + name, "GNU", 4) && nh->n_descsz <= 64) {
				memcpy(bid, p + desc, nh->n_descsz);
				return nh->n_descsz;
			}
			pos = desc + ((nh->n_descsz + 3u) & ~3u);
		}
	}
	return 0;
}

static uint32_t file_build_id(const char *path, uint8_t *bid)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint8_t *buf;
	uint32_t n = 0;

	if (fd < 0)
		return 0;
	if (!fstat(fd, &st) && st.st_size > 0) {
		size_t len = st.st_size < (1 << 16) ? (size_t)st.st_size : (1 << 16);

		buf = malloc(len);
		if (buf && pread(fd, buf, len, 0) == (ssize_t)len)
			n = mem_build_id(buf, len, bid);
		free(buf);
	}
	close(fd);
	return n;
}

static void read_maps(int pid)
{
	char path[64], line[1024];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	nmaps = 0;
	while (fgets(line, sizeof(line), f) && nmaps < 256) {
		struct map *m = &maps[nmaps];
		char perm[8], *p;
		unsigned int maj, min;
		int off = 0;

		memset(m, 0, sizeof(*m));
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &m->start, &m->end, perm, &m->pgoff, &maj, &min,
			   &m->ino, &off) < 7)
			continue;
		m->dev = makedev(maj, min);
		m->prot = (perm[0] == 'r' ? 1 : 0) | (perm[1] == 'w' ? 2 : 0) |
			  (perm[2] == 'x' ? 4 : 0);
		m->flags = perm[3] == 's' ? 1 : 2;
		p = line + off;
		p[strcspn(p, "\n")] = 0;
		snprintf(m->path, sizeof(m->path), "%s", p);
		if (m->path[0] == '/')
			m->bid_size = file_build_id(m->path, m->bid);
		nmaps++;
	}
	fclose(f);
}

static void read_code(int pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	for (size_t i = 0; i < nmaps; i++) {
		struct map *m = &maps[i];
		size_t n = m->end - m->start;

		if (!(m->prot & 4) || !strcmp(m->path, "[vsyscall]"))
			continue;
		m->code = malloc(n);
		if (!m->code || pread(fd, m->code, n, (off_t)m->start) != (ssize_t)n)
			die("read %s at 0x%" PRIx64 ": %s", m->path, m->start,
			    strerror(errno));
		if (!strcmp(m->path, "[vdso]"))
			m->bid_size = mem_build_id(m->code, n, m->bid);
	}
	close(fd);
}

static const struct map *map_of(uint64_t ip)
{
	for (size_t i = 0; i < nmaps; i++)
		if (maps[i].code && ip >= maps[i].start && ip < maps[i].end)
			return &maps[i];
	return NULL;
}

/* main's address in the running program (PIE: plus the load base). */
static uint64_t find_main(int pid, const char *exe)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	uint64_t addr = 0, base = 0;
	int fd = open(exe, O_RDONLY);

	if (fd < 0)
		die("%s: %s", exe, strerror(errno));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || !gelf_getehdr(e, &eh))
		die("%s: not an ELF file", exe);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && !strcmp(name, "main") &&
			    GELF_ST_TYPE(s.st_info) == STT_FUNC)
				addr = s.st_value;
		}
	}
	if (eh.e_type == ET_DYN) {
		char real[512];

		if (!realpath(exe, real))
			die("%s: %s", exe, strerror(errno));
		read_maps(pid);
		for (size_t i = 0; i < nmaps; i++)
			if (!strcmp(maps[i].path, real) && maps[i].pgoff == 0) {
				base = maps[i].start;
				break;
			}
		if (!base)
			die("%s: load base not found", exe);
	}
	elf_end(e);
	close(fd);
	if (!addr)
		die("%s: no symbol main", exe);
	return base + addr;
}

static int wait_stop(int pid, int *sig)
{
	int st;

	if (waitpid(pid, &st, 0) < 0)
		die("waitpid: %s", strerror(errno));
	if (WIFEXITED(st) || WIFSIGNALED(st))
		return -1;
	*sig = WSTOPSIG(st);
	return 0;
}

/* ---- classification ---- */

struct cls {
	uint64_t ip;
	uint8_t kind;       /* BT_BR_* or 0xff = not a branch */
	uint8_t len;
};

static csh cs;
static struct cls *cache;
static size_t cache_n = 1u << 16;

/* @next: the IP stepped after @ip, for what capstone 4 cannot decode
 * (some EVEX instructions): those are never branches, so they are as long
 * as the step. */
static const struct cls *classify(uint64_t ip, uint64_t next)
{
	struct cls *c = &cache[(ip * 0x9e3779b97f4a7c15ull >> 40) & (cache_n - 1)];
	const struct map *m;
	cs_insn *insn;
	size_t n, avail;

	if (c->ip == ip && c->len)
		return c;
	m = map_of(ip);
	if (!m)
		die("no code at 0x%" PRIx64, ip);
	avail = m->end - ip < 16 ? m->end - ip : 16;
	n = cs_disasm(cs, m->code + (ip - m->start), avail, ip, 1, &insn);
	if (n != 1) {
		if (next <= ip || next - ip > 15)
			die("cannot disassemble 0x%" PRIx64, ip);
		c->ip = ip;
		c->len = (uint8_t)(next - ip);
		c->kind = 0xff;
		return c;
	}
	c->ip = ip;
	c->len = (uint8_t)insn->size;
	c->kind = 0xff;
	{
		cs_detail *d = insn->detail;
		int direct = d->x86.op_count == 1 && d->x86.operands[0].type == X86_OP_IMM;

		if (cs_insn_group(cs, insn, X86_GRP_CALL))
			c->kind = direct ? BT_BR_CALL : BT_BR_CALL_IND;
		else if (cs_insn_group(cs, insn, X86_GRP_RET) &&
			 insn->id != X86_INS_IRET && insn->id != X86_INS_IRETQ &&
			 insn->id != X86_INS_RETF && insn->id != X86_INS_RETFQ)
			c->kind = BT_BR_RET;
		else if (insn->id == X86_INS_JMP)
			c->kind = direct ? BT_BR_JMP : BT_BR_JMP_IND;
		else if (cs_insn_group(cs, insn, X86_GRP_JUMP))
			c->kind = BT_BR_COND;
		else if (insn->id == X86_INS_SYSCALL || insn->id == X86_INS_SYSENTER ||
			 cs_insn_group(cs, insn, X86_GRP_INT) ||
			 cs_insn_group(cs, insn, X86_GRP_IRET))
			c->kind = BT_BR_FAR;
	}
	cs_free(insn, 1);
	return c;
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr, "usage: export-gen [--bts] [--retcomp] [--psb N] [--ring N] "
		"SNAPSHOT TRUTH -- PROGRAM [ARGS...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bt_pt_enc_opts eo = { 0 };
	struct bt_pt_enc *pt = NULL;
	struct bt_bts_enc *bts = NULL;
	int use_bts = 0, ai = 1, pid, sig = 0;
	uint64_t ring = 0, main_ip, *ips = NULL, nips = 0, capips = 0, fault_ip;
	const char *snap_path, *truth_path;
	struct user_regs_struct regs;
	siginfo_t si;
	FILE *tf;

	for (; ai < argc && argv[ai][0] == '-' && strcmp(argv[ai], "--"); ai++) {
		if (!strcmp(argv[ai], "--bts"))
			use_bts = 1;
		else if (!strcmp(argv[ai], "--retcomp"))
			eo.retcomp = 1;
		else if (!strcmp(argv[ai], "--tnt64"))
			eo.tnt64 = 1;
		else if (!strcmp(argv[ai], "--psb") && ai + 1 < argc)
			eo.psb_period = (uint32_t)strtoul(argv[++ai], NULL, 0);
		else if (!strcmp(argv[ai], "--ring") && ai + 1 < argc)
			ring = strtoull(argv[++ai], NULL, 0);
		else
			usage();
	}
	if (argc - ai < 4 || strcmp(argv[ai + 2], "--"))
		usage();
	snap_path = argv[ai];
	truth_path = argv[ai + 1];
	argv += ai + 3;

	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	if (wait_stop(pid, &sig) || sig != SIGTRAP)
		die("%s: did not start", argv[0]);
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_EXITKILL);

	/* run to main */
	main_ip = find_main(pid, argv[0]);
	{
		long orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)main_ip, NULL);

		ptrace(PTRACE_POKETEXT, pid, (void *)main_ip,
		       (void *)((orig & ~0xffl) | 0xcc));
		ptrace(PTRACE_CONT, pid, NULL, NULL);
		if (wait_stop(pid, &sig) || sig != SIGTRAP)
			die("%s: did not reach main", argv[0]);
		ptrace(PTRACE_POKETEXT, pid, (void *)main_ip, (void *)orig);
		ptrace(PTRACE_GETREGS, pid, NULL, &regs);
		regs.rip = main_ip;
		ptrace(PTRACE_SETREGS, pid, NULL, &regs);
	}

	/* single-step to the fatal signal */
	for (;;) {
		if (nips == capips) {
			capips = capips ? 2 * capips : 65536;
			ips = realloc(ips, capips * sizeof(*ips));
			if (!ips)
				die("out of memory");
		}
		ptrace(PTRACE_GETREGS, pid, NULL, &regs);
		ips[nips++] = regs.rip;
		if (nips > MAX_STEPS)
			die("%s: more than %llu steps", argv[0], MAX_STEPS);
		ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL);
		if (wait_stop(pid, &sig))
			die("%s: exited without a fatal signal", argv[0]);
		if (sig != SIGTRAP)
			break;
	}
	ptrace(PTRACE_GETREGS, pid, NULL, &regs);
	ptrace(PTRACE_GETSIGINFO, pid, NULL, &si);
	fault_ip = regs.rip;
	/* the last stepped IP is the faulting instruction: not completed */
	if (nips && ips[nips - 1] == fault_ip)
		nips--;
	read_maps(pid);
	read_code(pid);

	/* classify, drop rep iterations, encode */
	cache = calloc(cache_n, sizeof(*cache));
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK || !cache)
		die("capstone init failed");
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (use_bts) {
		if (bt_bts_enc_new(ring, &bts))
			die("bts encoder");
	} else {
		eo.ring_size = ring;
		if (bt_pt_enc_new(&eo, &pt) || bt_pt_enc_begin(pt, ips[0]))
			die("pt encoder");
	}
	tf = fopen(truth_path, "w");
	if (!tf)
		die("%s: %s", truth_path, strerror(errno));
	uint64_t kept = 0;
	for (uint64_t i = 0; i < nips; i++) {
		uint64_t ip = ips[i], next = i + 1 < nips ? ips[i + 1] : fault_ip;
		const struct cls *c = classify(ip, next);
		struct bt_branch br = { 0 };

		if (next == ip && c->kind == 0xff)
			continue;       /* a rep-string iteration */
		kept++;
		if (!use_bts)
			fprintf(tf, "%" PRIx64 "\n", ip);
		if (c->kind == 0xff) {
			if (next == ip + c->len)
				continue;
			br.kind = BT_BR_ASYNC;
		} else {
			br.kind = c->kind;
		}
		br.from = ip;
		br.to = next;
		br.len = c->len;
		br.taken = next != ip + c->len;
		if (use_bts) {
			if (br.kind != BT_BR_COND || br.taken)
				fprintf(tf, "%" PRIx64 " %" PRIx64 "\n", br.from, br.to);
			if (bt_bts_enc_branch(bts, &br))
				die("bts encode");
		} else if (bt_pt_enc_branch(pt, &br)) {
			die("pt encode at 0x%" PRIx64, ip);
		}
	}
	fclose(tf);

	/* the snapshot */
	struct btrace_error err = { 0 };
	struct btrace_writer *w;
	struct btrace_config cfg = { 0 };
	struct btrace_buffer buf = { 0 };
	struct btrace_task task = { 0 };
	struct btrace_signal bsig = { 0 };
	char comm[64] = "", exe[512] = "", p[64];
	int wrapped = 0;
	FILE *f;

	if (btrace_writer_open(snap_path, 0, &w, &err))
		die("%s", err.msg);
	cfg.backend = BTRACE_BACKEND_QEMU;
	cfg.trace_kind = use_bts ? BTRACE_TRACE_BTS : BTRACE_TRACE_PT;
	cfg.cpu_vendor = BTRACE_CPU_AMD;
	cfg.pt_config = use_bts ? 0 : 0x2001 | (eo.retcomp ? 0 : 0x800);
	cfg.tsc_bit = 0x400;
	cfg.mtc_bit = 0x200;
	cfg.cyc_bit = 0x2;
	cfg.noretcomp_bit = 0x800;
	cfg.branch_bit = 0x2000;
	cfg.psb_period = eo.psb_period;
	cfg.user_only = 1;
	cfg.requested_size = ring;
	cfg.crash_mode = BTRACE_CRASH_PRECISE;
	if (btrace_writer_set_config(w, &cfg, &err))
		die("%s", err.msg);
	buf.kind = cfg.trace_kind;
	buf.tid = pid;
	buf.cpu = -1;
	buf.requested_size = ring;
	buf.ring_size = ring;
	buf.data = use_bts ? bt_bts_enc_data(bts, &buf.size, &wrapped) :
		   bt_pt_enc_data(pt, &buf.size, &wrapped);
	buf.flags = wrapped ? BTRACE_BUF_WRAPPED : 0;
	buf.head = ring ? buf.size % ring : buf.size;
	if (btrace_writer_add_buffer(w, &buf, &err))
		die("%s", err.msg);
	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	if ((f = fopen(p, "r"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	if (readlink(p, exe, sizeof(exe) - 1) < 0)
		exe[0] = 0;
	task.pid = task.tid = pid;
	task.ppid = getpid();
	task.flags = BTRACE_TASK_CRASHED;
	task.comm = comm;
	task.exe = exe;
	if (btrace_writer_add_task(w, &task, &err))
		die("%s", err.msg);
	for (size_t i = 0; i < nmaps; i++) {
		struct map *m = &maps[i];
		struct btrace_mapping bm = { 0 };

		bm.pid = pid;
		bm.prot = m->prot;
		bm.flags = m->flags;
		bm.start = m->start;
		bm.end = m->end;
		bm.pgoff = m->pgoff;
		bm.dev = m->dev;
		bm.ino = m->ino;
		bm.build_id_size = m->bid_size;
		memcpy(bm.build_id, m->bid, m->bid_size);
		bm.path = m->path;
		if (btrace_writer_add_mapping(w, &bm, &err))
			die("%s", err.msg);
		if (m->code) {
			struct btrace_code bc = { 0 };
			int vdso = !strcmp(m->path, "[vdso]");

			if (m->path[0] != '/' && !vdso)
				continue;
			if (!vdso && !m->bid_size)
				continue;
			bc.kind = vdso ? BTRACE_CODE_VDSO : BTRACE_CODE_FILE;
			bc.build_id_size = m->bid_size;
			memcpy(bc.build_id, m->bid, m->bid_size);
			bc.vaddr = m->start;
			bc.file_offset = vdso ? 0 : m->pgoff;
			bc.data = m->code;
			bc.size = m->end - m->start;
			bc.path = m->path;
			if (btrace_writer_add_code(w, &bc, &err))
				die("%s", err.msg);
		}
	}
	bsig.tid = pid;
	bsig.signo = si.si_signo;
	bsig.code = si.si_code;
	bsig.addr = (uint64_t)(uintptr_t)si.si_addr;
	bsig.fault_source = BTRACE_FAULT_REGS;
	bsig.fault_ip = fault_ip;
	bsig.has_regs = 1;
	memcpy(bsig.regs, &regs, sizeof(bsig.regs));
	bsig.exit_status = -1;
	if (btrace_writer_set_signal(w, &bsig, &err))
		die("%s", err.msg);
	if (btrace_writer_commit(w, &err))
		die("%s", err.msg);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fprintf(stderr, "export-gen: %s: %" PRIu64 " instructions, fault at 0x%" PRIx64
		" (signal %d), %" PRIu64 " trace bytes%s\n", argv[0], kept, fault_ip,
		si.si_signo, buf.size, wrapped ? " (wrapped)" : "");
	bt_pt_enc_free(pt);
	bt_bts_enc_free(bts);
	free(ips);
	return 0;
}
