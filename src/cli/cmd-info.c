/* SPDX-License-Identifier: MIT */
/* btrace info: what a snapshot file holds and what was lost. */
#include <getopt.h>
#include <signal.h>
#include <string.h>

#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "cli.h"

static const char *backend_name(uint32_t b)
{
	const struct btrace_backend_desc *d = btrace_backend_by_id(b);

	return d ? d->name : NULL;
}

static const char *kind_name(uint32_t k)
{
	switch (k) {
	case BTRACE_TRACE_PT: return "pt";
	case BTRACE_TRACE_BTS: return "bts";
	}
	return NULL;
}

static const char *vendor_name(uint32_t v)
{
	switch (v) {
	case BTRACE_CPU_INTEL: return "GenuineIntel";
	case BTRACE_CPU_AMD: return "AuthenticAMD";
	case BTRACE_CPU_OTHER: return "other";
	}
	return NULL;
}

static const char *crash_mode_name(uint32_t m)
{
	switch (m) {
	case BTRACE_CRASH_PRECISE: return "precise";
	case BTRACE_CRASH_PASSIVE: return "passive";
	case BTRACE_CRASH_ONDEMAND: return "on-demand";
	case BTRACE_CRASH_EXIT: return "exit";
	}
	return NULL;
}

static const char *fault_source_name(uint32_t s)
{
	switch (s) {
	case BTRACE_FAULT_REGS: return "registers";
	case BTRACE_FAULT_CORE: return "core";
	case BTRACE_FAULT_BLOCK: return "block";
	}
	return NULL;
}

static void flags_str(char *buf, size_t len, uint32_t f)
{
	static const struct { uint32_t bit; const char *name; } names[] = {
		{ BTRACE_BUF_WRAPPED, "wrapped" },
		{ BTRACE_BUF_TRUNCATED, "truncated" },
		{ BTRACE_BUF_LOST, "lost" },
		{ BTRACE_BUF_PARTIAL, "partial" },
	};
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & names[i].bit)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0,
					      "%s%s", n ? "," : "",
					      names[i].name);
	if (!n)
		snprintf(buf, len, "-");
}

static const char *size_str(char *buf, size_t len, uint64_t b)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
	return buf;
}

static const char *sec_name(uint32_t type, char *buf, size_t len)
{
	const char *n = btrace_section_name(type);

	if (n)
		return n;
	snprintf(buf, len, "unknown(%u)", type);
	return buf;
}

static uint64_t code_bytes(const struct btrace_snapshot *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->ncode; i++)
		n += s->code[i].size;
	return n;
}

/* Bytes of memory ranges (docs/format.md, "memory"): the crashed
 * thread's stack (a thread's tid) and the process's other memory (tid
 * BTRACE_MEMORY_PROCESS), as the process had them and as stored in the
 * file (compressed).  The stored bytes are told apart when each memory
 * section read is one range (none skipped as damaged); else only their
 * total is known (*paired 0). */
struct mem_cost {
	uint64_t stack, data;                 /* as the process had them */
	uint64_t stored, stack_stored, data_stored;
	int paired;
};

static void memory_cost(const struct btrace_snapshot *s, struct mem_cost *c)
{
	size_t k = 0, nok = 0;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < s->nmemory; i++) {
		if (s->memory[i].tid == BTRACE_MEMORY_PROCESS)
			c->data += s->memory[i].size;
		else
			c->stack += s->memory[i].size;
	}
	for (size_t i = 0; i < s->nsections; i++)
		if (!s->sections[i].status && btrace_section_name(s->sections[i].type) &&
		    !strcmp(btrace_section_name(s->sections[i].type), "memory"))
			nok++;
	c->paired = nok == s->nmemory;
	for (size_t i = 0; i < s->nsections; i++) {
		const char *n = btrace_section_name(s->sections[i].type);

		if (!n || strcmp(n, "memory"))
			continue;
		c->stored += s->sections[i].stored_size;
		if (!c->paired || s->sections[i].status)
			continue;
		if (s->memory[k++].tid == BTRACE_MEMORY_PROCESS)
			c->data_stored += s->sections[i].stored_size;
		else
			c->stack_stored += s->sections[i].stored_size;
	}
}

static size_t exec_mappings(const struct btrace_snapshot *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nmappings; i++)
		n += !!(s->mappings[i].prot & 4);  /* PROT_EXEC */
	return n;
}

/* Of access log @l: the writes (*@st) and the fold marks (*@fo), which
 * are not accesses. */
static void access_counts(const struct btrace_access_log *l, uint64_t *st,
			  uint64_t *fo)
{
	*st = *fo = 0;
	for (uint64_t k = 0; k < l->n; k++) {
		*st += l->entries[k].flags & BTRACE_ACCESS_STORE;
		*fo += !!(l->entries[k].flags & BTRACE_ACCESS_FOLD);
	}
}

/* Whether the trace has time, its clock and where its timing packets are
 * (docs/format.md, "Time": the metadata the decoder reads). */
static void print_time(const struct btrace_snapshot *s)
{
	const char *clk = btrace_snapshot_meta(s, "time.clock");
	const char *steps = btrace_snapshot_meta(s, "time.steps");

	if (s->config.trace_kind != BTRACE_TRACE_PT || !clk ||
	    !btrace_snapshot_meta(s, "time.tsc")) {
		printf("time:       none (no timing packets with a clock: "
		       "every time is unknown)\n");
		return;
	}
	printf("time:       %s; %s\n", cli_esc(clk),
	       steps ? cli_esc(steps) : "timing packets, where unknown");
}

static void print_text(const char *path, const struct btrace_snapshot *s)
{
	const struct btrace_config *c = &s->config;
	char a[32], b[32], f[64];

	printf("file:       %s\n", cli_esc(path));
	printf("format:     %u.%u, little-endian, %u-bit program\n",
	       s->format_major, s->format_minor, s->word_size * 8);
	printf("size:       %s in %zu sections%s\n",
	       size_str(a, sizeof(a), s->file_size), s->nsections,
	       s->complete ? "" : " (INCOMPLETE: no end marker)");
	if (s->has_config) {
		printf("backend:    %s, trace %s, %s, crash mode %s\n",
		       backend_name(c->backend) ? backend_name(c->backend) : "unknown",
		       kind_name(c->trace_kind) ? kind_name(c->trace_kind) : "unknown",
		       c->user_only ? "user space only" : "user and kernel",
		       crash_mode_name(c->crash_mode) ?
		       crash_mode_name(c->crash_mode) : "unknown");
		printf("cpu:        %s family %u model %u stepping %u",
		       vendor_name(c->cpu_vendor) ? vendor_name(c->cpu_vendor) : "unknown",
		       c->cpu_family, c->cpu_model, c->cpu_stepping);
		if (c->cpuid_0x15_eax || c->cpuid_0x15_ebx)
			printf(", cpuid 0x15 %u/%u", c->cpuid_0x15_ebx,
			       c->cpuid_0x15_eax);
		if (c->nom_freq)
			printf(", nominal ratio %u", c->nom_freq);
		printf("\n");
		if (c->pmu_type || c->pt_config)
			printf("event:      type %u config 0x%llx (mtc period %u, "
			       "psb period %u)\n", c->pmu_type,
			       (unsigned long long)c->pt_config, c->mtc_freq,
			       c->psb_period);
		printf("history:    %s requested + %s pad per buffer\n",
		       size_str(a, sizeof(a), c->requested_size),
		       size_str(b, sizeof(b), c->pad));
		print_time(s);
	} else {
		printf("backend:    unknown (no config section)\n");
	}
	if (s->nmeta)
		printf("metadata:\n");
	for (size_t i = 0; i < s->nmeta; i++)
		printf("  %-16s %s\n", cli_esc(s->meta[i].key),
		       cli_esc(s->meta[i].value));
	if (s->signal) {
		const struct btrace_signal *g = s->signal;
		char sname[32];
		const char *name = btrace_signal_str(g->signo, sname, sizeof(sname));

		printf("signal:     %s (%d) code %d addr 0x%llx in thread %d",
		       name ? name : "SIG?", g->signo, g->code,
		       (unsigned long long)g->addr, g->tid);
		if (g->fault_source)
			printf("; fault ip 0x%llx (%s)",
			       (unsigned long long)g->fault_ip,
			       fault_source_name(g->fault_source) ?
			       fault_source_name(g->fault_source) : "?");
		printf("%s\n", g->has_regs ? "; registers" : "");
	}

	printf("\nsections:\n  %3s %10s  %-9s %10s %10s  %s\n", "#", "offset",
	       "type", "stored", "raw", "ratio");
	for (size_t i = 0; i < s->nsections; i++) {
		const struct btrace_section_info *si = &s->sections[i];
		char t[32];

		printf("  %3zu %10llu  %-9s %10s %10s  ", i,
		       (unsigned long long)si->offset,
		       sec_name(si->type, t, sizeof(t)),
		       size_str(a, sizeof(a), si->stored_size),
		       size_str(b, sizeof(b), si->raw_size));
		if (si->flags & BTRACE_SECTION_ZSTD && si->stored_size)
			printf("%.2fx zstd", (double)si->raw_size /
			       (double)si->stored_size);
		else
			printf("-");
		if (si->status)
			printf("  DAMAGED: %s", btrace_strerror(-(int)si->status));
		printf("\n");
	}

	printf("\nbuffers: %zu\n", s->nbuffers);
	if (s->nbuffers)
		printf("  %8s %4s %4s %10s %10s %10s %10s  %s\n", "tid", "cpu",
		       "kind", "trace", "ring", "head", "requested", "flags");
	for (size_t i = 0; i < s->nbuffers; i++) {
		const struct btrace_buffer *bf = &s->buffers[i];
		char r[32], q[32];

		flags_str(f, sizeof(f), bf->flags);
		printf("  %8d %4d %4s %10s %10s %10llu %10s  %s", bf->tid,
		       bf->cpu, kind_name(bf->kind) ? kind_name(bf->kind) : "?",
		       size_str(a, sizeof(a), bf->size),
		       size_str(r, sizeof(r), bf->ring_size),
		       (unsigned long long)bf->head,
		       size_str(q, sizeof(q), bf->requested_size), f);
		if (bf->lost)
			printf(" (%llu lost)", (unsigned long long)bf->lost);
		printf("\n");
	}
	printf("\ntasks: %zu\n", s->ntasks);
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct btrace_task *t = &s->tasks[i];

		printf("  pid %d tid %d %-16s %s%s%s%s\n", t->pid, t->tid,
		       t->comm ? cli_esc(t->comm) : "?", t->exe ? cli_esc(t->exe) : "",
		       t->flags & BTRACE_TASK_CRASHED ? " [crashed]" : "",
		       t->flags & BTRACE_TASK_EXITED ? " [exited]" : "",
		       t->flags & BTRACE_TASK_UNTRACED ? " [untraced]" : "");
	}
	printf("\nmappings: %zu (%zu executable)\n", s->nmappings,
	       exec_mappings(s));
	printf("code:     %zu blobs, %s embedded\n", s->ncode,
	       size_str(a, sizeof(a), code_bytes(s)));
	if (s->nmemory) {
		struct mem_cost mc;
		char st[32];

		memory_cost(s, &mc);
		printf("memory:   %zu range%s, %s (%s in the file)\n", s->nmemory,
		       s->nmemory == 1 ? "" : "s",
		       size_str(a, sizeof(a), mc.stack + mc.data),
		       size_str(st, sizeof(st), mc.stored));
		if (mc.paired) {
			printf("  stack %s (%s in the file)",
			       size_str(a, sizeof(a), mc.stack),
			       size_str(st, sizeof(st), mc.stack_stored));
			printf(", other memory %s (%s in the file)\n",
			       size_str(a, sizeof(a), mc.data),
			       size_str(st, sizeof(st), mc.data_stored));
		} else {
			printf("  stack %s", size_str(a, sizeof(a), mc.stack));
			printf(", other memory %s\n",
			       size_str(a, sizeof(a), mc.data));
		}
		for (size_t i = 0; i < s->nmemory; i++) {
			printf("  0x%llx-0x%llx  ",
			       (unsigned long long)s->memory[i].vaddr,
			       (unsigned long long)(s->memory[i].vaddr +
						    s->memory[i].size));
			if (s->memory[i].tid == BTRACE_MEMORY_PROCESS)
				printf("process memory\n");
			else
				printf("stack of thread %d\n",
				       s->memory[i].tid);
		}
	}

	if (s->naccess_logs) {
		uint64_t stored = 0;

		for (size_t i = 0; i < s->nsections; i++) {
			const char *n = btrace_section_name(s->sections[i].type);
			if (n && !strcmp(n, "accesses") && !s->sections[i].status)
				stored += s->sections[i].stored_size;
		}
		printf("accesses: %zu log%s, %s in the file\n", s->naccess_logs,
		       s->naccess_logs == 1 ? "" : "s",
		       size_str(a, sizeof(a), stored));
		for (size_t i = 0; i < s->naccess_logs; i++) {
			const struct btrace_access_log *l = &s->access_logs[i];
			uint64_t st, fo;

			access_counts(l, &st, &fo);
			printf("  thread %d: %llu accesses (%llu writes)%s",
			       l->tid, (unsigned long long)(l->n - fo),
			       (unsigned long long)st,
			       l->flags & BTRACE_ACCESSES_COMPLETE ?
			       ", every one since the thread started" :
			       ", the last ones");
			if (fo)
				printf(", %llu loop fold%s marked",
				       (unsigned long long)fo, fo == 1 ? "" : "s");
			printf("\n");
		}
	}

	if (s->nwarnings) {
		printf("\nwarnings: %zu\n", s->nwarnings);
		for (size_t i = 0; i < s->nwarnings; i++)
			printf("  %s\n", cli_esc(s->warnings[i]));
	}
}

static void print_json(const char *path, const struct btrace_snapshot *s)
{
	const struct btrace_config *c = &s->config;
	struct mem_cost mc;
	struct json j;
	char f[64];

	json_init(&j, stdout, true);
	json_begin_object(&j, NULL);
	json_str(&j, "file", path);
	json_uint(&j, "format_major", s->format_major);
	json_uint(&j, "format_minor", s->format_minor);
	json_uint(&j, "word_size", s->word_size);
	json_uint(&j, "file_size", s->file_size);
	json_bool(&j, "complete", s->complete);
	if (s->has_config) {
		json_begin_object(&j, "config");
		json_str(&j, "backend", backend_name(c->backend));
		json_str(&j, "trace", kind_name(c->trace_kind));
		json_str(&j, "cpu_vendor", vendor_name(c->cpu_vendor));
		json_uint(&j, "cpu_family", c->cpu_family);
		json_uint(&j, "cpu_model", c->cpu_model);
		json_uint(&j, "cpu_stepping", c->cpu_stepping);
		json_uint(&j, "cpuid_0x15_eax", c->cpuid_0x15_eax);
		json_uint(&j, "cpuid_0x15_ebx", c->cpuid_0x15_ebx);
		json_uint(&j, "nom_freq", c->nom_freq);
		json_uint(&j, "mtc_freq", c->mtc_freq);
		json_uint(&j, "pmu_type", c->pmu_type);
		json_hex(&j, "pt_config", c->pt_config);
		json_uint(&j, "psb_period", c->psb_period);
		json_bool(&j, "user_only", c->user_only);
		json_uint(&j, "requested_size", c->requested_size);
		json_uint(&j, "pad", c->pad);
		json_str(&j, "crash_mode", crash_mode_name(c->crash_mode));
		json_end_object(&j);
	} else {
		json_null(&j, "config");
	}
	json_begin_object(&j, "metadata");
	for (size_t i = 0; i < s->nmeta; i++)
		json_str(&j, s->meta[i].key, s->meta[i].value);
	json_end_object(&j);
	if (s->signal) {
		const struct btrace_signal *g = s->signal;

		json_begin_object(&j, "signal");
		json_int(&j, "tid", g->tid);
		json_int(&j, "number", g->signo);
		char sname[32];
		json_str(&j, "name", btrace_signal_str(g->signo, sname, sizeof(sname)));
		json_int(&j, "code", g->code);
		json_hex(&j, "address", g->addr);
		json_str(&j, "fault_source", fault_source_name(g->fault_source));
		if (g->fault_source)
			json_hex(&j, "fault_ip", g->fault_ip);
		else
			json_null(&j, "fault_ip");
		json_bool(&j, "registers", g->has_regs);
		json_end_object(&j);
	} else {
		json_null(&j, "signal");
	}
	json_begin_array(&j, "sections");
	for (size_t i = 0; i < s->nsections; i++) {
		const struct btrace_section_info *si = &s->sections[i];

		json_begin_object(&j, NULL);
		json_uint(&j, "type", si->type);
		json_str(&j, "name", btrace_section_name(si->type));
		json_uint(&j, "offset", si->offset);
		json_uint(&j, "stored_size", si->stored_size);
		json_uint(&j, "raw_size", si->raw_size);
		json_str(&j, "compression",
			 si->flags & BTRACE_SECTION_ZSTD ? "zstd" : NULL);
		json_str(&j, "damage", si->status ?
			 btrace_strerror(-(int)si->status) : NULL);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_begin_array(&j, "buffers");
	for (size_t i = 0; i < s->nbuffers; i++) {
		const struct btrace_buffer *bf = &s->buffers[i];

		flags_str(f, sizeof(f), bf->flags);
		json_begin_object(&j, NULL);
		json_int(&j, "tid", bf->tid);
		json_int(&j, "cpu", bf->cpu);
		json_str(&j, "kind", kind_name(bf->kind));
		json_uint(&j, "size", bf->size);
		json_uint(&j, "ring_size", bf->ring_size);
		json_uint(&j, "head", bf->head);
		json_uint(&j, "requested_size", bf->requested_size);
		json_uint(&j, "pad", bf->pad);
		json_uint(&j, "lost", bf->lost);
		json_begin_array(&j, "flags");
		if (bf->flags & BTRACE_BUF_WRAPPED)
			json_str(&j, NULL, "wrapped");
		if (bf->flags & BTRACE_BUF_TRUNCATED)
			json_str(&j, NULL, "truncated");
		if (bf->flags & BTRACE_BUF_LOST)
			json_str(&j, NULL, "lost");
		if (bf->flags & BTRACE_BUF_PARTIAL)
			json_str(&j, NULL, "partial");
		json_end_array(&j);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_begin_array(&j, "tasks");
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct btrace_task *t = &s->tasks[i];

		json_begin_object(&j, NULL);
		json_int(&j, "pid", t->pid);
		json_int(&j, "tid", t->tid);
		json_str(&j, "comm", t->comm);
		json_str(&j, "exe", t->exe);
		json_bool(&j, "crashed", t->flags & BTRACE_TASK_CRASHED);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_uint(&j, "mappings", s->nmappings);
	json_uint(&j, "exec_mappings", exec_mappings(s));
	json_uint(&j, "code_blobs", s->ncode);
	json_uint(&j, "code_bytes", code_bytes(s));
	json_begin_array(&j, "memory");
	for (size_t i = 0; i < s->nmemory; i++) {
		json_begin_object(&j, NULL);
		json_int(&j, "tid", s->memory[i].tid);
		json_hex(&j, "address", s->memory[i].vaddr);
		json_uint(&j, "bytes", s->memory[i].size);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_begin_array(&j, "accesses");
	for (size_t i = 0; i < s->naccess_logs; i++) {
		const struct btrace_access_log *l = &s->access_logs[i];
		uint64_t st, fo;

		access_counts(l, &st, &fo);
		json_begin_object(&j, NULL);
		json_int(&j, "tid", l->tid);
		json_uint(&j, "count", l->n - fo);
		json_uint(&j, "writes", st);
		json_uint(&j, "folds", fo);
		json_bool(&j, "complete", l->flags & BTRACE_ACCESSES_COMPLETE);
		json_end_object(&j);
	}
	json_end_array(&j);
	memory_cost(s, &mc);
	json_uint(&j, "memory_bytes", mc.stack + mc.data);
	json_uint(&j, "memory_stored_bytes", mc.stored);
	json_uint(&j, "memory_stack_bytes", mc.stack);
	json_uint(&j, "memory_data_bytes", mc.data);
	if (mc.paired) {
		json_uint(&j, "memory_stack_stored_bytes", mc.stack_stored);
		json_uint(&j, "memory_data_stored_bytes", mc.data_stored);
	}
	json_begin_array(&j, "warnings");
	for (size_t i = 0; i < s->nwarnings; i++)
		json_str(&j, NULL, s->warnings[i]);
	json_end_array(&j);
	json_end_object(&j);
	json_finish(&j);
}

static void help(void)
{
	printf("usage: btrace info [--json] FILE\n\n"
	       "Show what a snapshot holds: the header, every section with its\n"
	       "size and compression ratio, the trace buffers with their flags,\n"
	       "tasks, mappings, embedded code, and any damage found (checksum\n"
	       "mismatches, truncation, unknown sections skipped).\n\n"
	       "  --json       machine-readable output\n"
	       "  -h, --help   this text\n");
	cli_help_end(stdout, "info");
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 256 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_snapshot *s;
	struct btrace_error err;
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 256: json = true; break;
		case 'h': help(); return CLI_EXIT_OK;
		default: return cli_bad_option("info", c, argv);
		}
	}
	if (optind != argc - 1)
		return cli_usage("info", "expected one snapshot FILE");
	if (btrace_snapshot_read(argv[optind], BTRACE_READ_LENIENT, &s, &err))
		return cli_fail("info", &err);
	if (json)
		print_json(argv[optind], s);
	else
		print_text(argv[optind], s);
	btrace_snapshot_free(s);
	return CLI_EXIT_OK;
}
