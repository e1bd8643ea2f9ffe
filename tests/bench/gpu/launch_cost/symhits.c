// SPDX-License-Identifier: Apache-2.0
/*
 * symhits: how many times does a process call each function of a shared library?
 *
 * Puts one counting entry uprobe (symhits.bpf.c) on every exported FUNC symbol of LIB whose
 * name starts with PREFIX (default "cu"), or only on the symbols named with --sym, optionally
 * only in process PID, and prints the non-zero counts per symbol:
 *   - on SIGUSR1: "SNAPSHOT <n> <monotonic ns>", one "<count> <symbol>" line per symbol hit
 *     so far (cumulative), then "END";
 *   - on SIGINT / SIGTERM / after --duration: the same block headed "FINAL", then exits.
 * Symbols at the same address are probed once and printed as "a=b".
 * Once every probe is in place it prints "ATTACHED <probes> <mode>" (stdout is flushed).
 *
 * Two ways to attach:
 *   --perf   one perf-event uprobe per address (bpf_program__attach_uprobe_opts), as neutracerd
 *            attaches its probes; detaching waits for a grace period per probe, so use it for a
 *            few symbols (the default with --sym);
 *   --multi  one uprobe_multi link for all addresses (kernel >= 6.6), attached and detached at
 *            once (the default for the PREFIX mode). libbpf 1.1 has no API for it, so the link
 *            is created with the bpf() system call; an address the kernel refuses is left out
 *            and reported ("SKIPPED <symbol> errno").
 *
 * --object runs another object's programs instead of count_hit (e.g. neutracerd's own
 * build/bpf/cuda_launch.bpf.o, to time exactly what the daemon's exact mode runs per launch):
 * --prog NAME on every probe, --prog-ex NAME instead on symbols whose name holds "Ex" (the
 * handle is their second argument), --set VAR=N for a 32-bit read-only variable of the object
 * (e.g. launch_stack_every=1000 capture_stacks=1, as the daemon sets them). Its counts are the
 * sum of the values of its map "launches", printed as one "<count> launches" line. With --pid,
 * each thread of the process gets an entry in the object's "thread_contexts" map, as the daemon's
 * context probes make one, so each launch does the lookup's hit and the thread's start time
 * comparison (to the clock tick only, so it fails: the same work) rather than a cheaper miss.
 *
 * usage: symhits --lib PATH [--prefix cu | --sym a,b,...] [--pid PID] [--perf|--multi]
 *                [--duration SECONDS] [--list]
 *                [--object FILE --prog NAME [--prog-ex NAME] [--set VAR=N]...]
 * --list prints the symbols and file offsets that would be probed, and exits (no root needed).
 * Needs root (or CAP_BPF + CAP_PERFMON). Build: see Makefile (static libbpf, skeleton).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "symhits.skel.h"

#define SYMHITS_MAX 16384
#define ATTACH_UPROBE_MULTI 48 /* BPF_TRACE_UPROBE_MULTI, newer than this libbpf's headers */
#define CMD_LINK_CREATE 28     /* BPF_LINK_CREATE */

struct probe {
	uint64_t offset; /* file offset of the symbol */
	char *names;     /* "a" or "a=b=..." for aliases */
	int failed_errno;
	struct bpf_program *prog; /* the program its probe runs */
};

static struct probe *probes;
static size_t probe_count;
static volatile sig_atomic_t want_snapshot, want_stop;

static void on_usr1(int sig) { (void)sig; want_snapshot = 1; }
static void on_stop(int sig) { (void)sig; want_stop = 1; }

static void die(const char *what)
{
	fprintf(stderr, "symhits: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int name_listed(const char *name, const char *list)
{
	size_t len = strlen(name);
	const char *p = list;

	while (p && *p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == len && strncmp(p, name, n) == 0)
			return 1;
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

static void add_probe(uint64_t offset, const char *name)
{
	for (size_t i = 0; i < probe_count; i++) {
		if (probes[i].offset == offset) { /* alias of an address already listed */
			size_t len = strlen(probes[i].names) + strlen(name) + 2;
			char *joined = malloc(len);
			snprintf(joined, len, "%s=%s", probes[i].names, name);
			free(probes[i].names);
			probes[i].names = joined;
			return;
		}
	}
	if (probe_count == SYMHITS_MAX) {
		fprintf(stderr, "symhits: more than %d addresses\n", SYMHITS_MAX);
		exit(2);
	}
	probes = realloc(probes, (probe_count + 1) * sizeof(*probes));
	probes[probe_count].offset = offset;
	probes[probe_count].names = strdup(name);
	probes[probe_count].failed_errno = 0;
	probe_count++;
}

/* Reads LIB's dynamic symbol table: defined FUNC symbols that match, with file offsets. */
static void read_symbols(const char *path, const char *prefix, const char *names)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		die(path);
	const uint8_t *image = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (image == MAP_FAILED)
		die("mmap");
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
		fprintf(stderr, "symhits: %s is not a 64-bit ELF file\n", path);
		exit(2);
	}
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(image + eh->e_shoff);
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(image + eh->e_phoff);

	for (int s = 0; s < eh->e_shnum; s++) {
		if (sh[s].sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Sym *syms = (const Elf64_Sym *)(image + sh[s].sh_offset);
		const char *strtab = (const char *)(image + sh[sh[s].sh_link].sh_offset);
		size_t count = sh[s].sh_size / sizeof(Elf64_Sym);
		for (size_t i = 0; i < count; i++) {
			const Elf64_Sym *sym = &syms[i];
			const char *name = strtab + sym->st_name;
			int bind = ELF64_ST_BIND(sym->st_info);
			if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
			    sym->st_value == 0 || (bind != STB_GLOBAL && bind != STB_WEAK))
				continue;
			if (names ? !name_listed(name, names) : strncmp(name, prefix, strlen(prefix)) != 0)
				continue;
			for (int p = 0; p < eh->e_phnum; p++) {
				if (ph[p].p_type == PT_LOAD && (ph[p].p_flags & PF_X) &&
				    sym->st_value >= ph[p].p_vaddr &&
				    sym->st_value < ph[p].p_vaddr + ph[p].p_filesz) {
					add_probe(sym->st_value - ph[p].p_vaddr + ph[p].p_offset, name);
					break;
				}
			}
		}
	}
	munmap((void *)image, st.st_size);
	close(fd);
}

/* One uprobe_multi link for probes[first .. first+n); on refusal, halves until the
 * addresses the kernel refuses are found (they are marked failed). Returns links made. */
static int attach_multi(int prog_fd, const char *path, int pid, size_t first, size_t n)
{
	if (n == 0)
		return 0;
	uint64_t *offsets = calloc(n, sizeof(uint64_t));
	uint64_t *cookies = calloc(n, sizeof(uint64_t));
	for (size_t i = 0; i < n; i++) {
		offsets[i] = probes[first + i].offset;
		cookies[i] = first + i;
	}
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		uint64_t path, offsets, ref_ctr_offsets, cookies;
		uint32_t cnt, uprobe_flags, pid;
		uint8_t zero[128 - 60];
	} attr;
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = ATTACH_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = (uint32_t)n;
	attr.pid = pid > 0 ? (uint32_t)pid : 0;
	int fd = (int)syscall(SYS_bpf, CMD_LINK_CREATE, &attr, sizeof(attr));
	int err = errno;
	free(offsets);
	free(cookies);
	if (fd >= 0)
		return 1; /* kept open until exit */
	if (n == 1) {
		probes[first].failed_errno = err;
		return 0;
	}
	return attach_multi(prog_fd, path, pid, first, n / 2) +
	       attach_multi(prog_fd, path, pid, first + n / 2, n - n / 2);
}

/* The sum of the values of a hash map of __u64 counts (--object: its "launches"). */
static uint64_t sum_of_counts(int map_fd, size_t key_size)
{
	unsigned char key[256], next[256];
	uint64_t sum = 0, value;
	int more = key_size <= sizeof(key) && bpf_map_get_next_key(map_fd, NULL, next) == 0;

	while (more) {
		memcpy(key, next, key_size);
		if (bpf_map_lookup_elem(map_fd, key, &value) == 0)
			sum += value;
		more = bpf_map_get_next_key(map_fd, key, next) == 0;
	}
	return sum;
}

static size_t object_key_size; /* --object: key size of its "launches" map; 0: symhits' own */

static void print_counts(int map_fd, const char *head)
{
	printf("%s %llu\n", head, (unsigned long long)now_ns());
	if (object_key_size) {
		printf("%llu launches\nEND\n",
		       (unsigned long long)sum_of_counts(map_fd, object_key_size));
		fflush(stdout);
		return;
	}
	for (size_t i = 0; i < probe_count; i++) {
		uint32_t key = (uint32_t)i;
		uint64_t value = 0;
		if (bpf_map_lookup_elem(map_fd, &key, &value) == 0 && value)
			printf("%llu %s\n", (unsigned long long)value, probes[i].names);
	}
	printf("END\n");
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr, "usage: symhits --lib PATH [--prefix cu | --sym a,b,...] [--pid PID] "
			"[--perf|--multi] [--duration SECONDS] [--list] "
			"[--object FILE --prog NAME [--prog-ex NAME] [--set VAR=N]...]\n");
	exit(2);
}

/* --set VAR=N: writes N into the 32-bit variable VAR of the object's .rodata before load. */
static void set_rodata_u32(struct bpf_object *obj, const char *assignment)
{
	const char *eq = strchr(assignment, '=');
	struct bpf_map *rodata = bpf_object__find_map_by_name(obj, ".rodata");
	const struct btf *btf = bpf_object__btf(obj);
	size_t size = 0;
	const void *initial = rodata ? bpf_map__initial_value(rodata, &size) : NULL;
	unsigned char *data = initial ? malloc(size) : NULL;
	int sec_id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;

	if (!eq || !data || sec_id < 0) {
		fprintf(stderr, "symhits: cannot --set %s (VAR=N, and an object with .rodata)\n",
			assignment);
		exit(2);
	}
	const struct btf_type *sec = btf__type_by_id(btf, sec_id);
	const struct btf_var_secinfo *var = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, var++) {
		const char *name = btf__name_by_offset(btf, btf__type_by_id(btf, var->type)->name_off);
		if (strlen(name) != (size_t)(eq - assignment) ||
		    strncmp(name, assignment, eq - assignment) != 0)
			continue;
		if (var->size != sizeof(uint32_t) || var->offset + var->size > size) {
			fprintf(stderr, "symhits: %s is not a 32-bit variable\n", name);
			exit(2);
		}
		char *end = NULL;
		unsigned long parsed = strtoul(eq + 1, &end, 0);
		if (end == eq + 1 || *end || parsed > UINT32_MAX) {
			fprintf(stderr, "symhits: --set %s: not a 32-bit number\n", assignment);
			exit(2);
		}
		uint32_t value = (uint32_t)parsed;
		memcpy(data, initial, size);
		memcpy(data + var->offset, &value, sizeof(value));
		if (bpf_map__set_initial_value(rodata, data, size))
			die("set .rodata");
		free(data);
		return;
	}
	fprintf(stderr, "symhits: no read-only variable %.*s in the object\n",
		(int)(eq - assignment), assignment);
	exit(2);
}

static struct bpf_program *program_named(struct bpf_object *obj, const char *name)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, name);
	if (!prog) {
		fprintf(stderr, "symhits: no program %s in the object\n", name);
		exit(2);
	}
	return prog;
}

/* --object with --pid: one "thread_contexts" entry per thread of the process (see above). */
static int fill_thread_contexts(struct bpf_object *obj, int pid)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "thread_contexts");
	char path[64];
	int filled = 0;

	if (!map || pid <= 0 || bpf_map__key_size(map) != sizeof(uint64_t) ||
	    bpf_map__value_size(map) < 2 * sizeof(uint64_t))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *tasks = opendir(path);
	if (!tasks)
		return 0;
	unsigned char *value = calloc(1, bpf_map__value_size(map));
	const uint64_t ns_per_tick = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
	struct dirent *entry;
	while (value && (entry = readdir(tasks)) != NULL) {
		int tid = atoi(entry->d_name);
		char stat[512];
		unsigned long long start_ticks = 0;
		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(stat, 1, sizeof(stat) - 1, f);
		fclose(f);
		stat[n] = 0;
		const char *p = strrchr(stat, ')'); /* fields after the comm: state is field 3 */
		for (int field = 2; p && field < 22; field++)
			p = strchr(p + 1, ' ');
		if (!p || sscanf(p + 1, "%llu", &start_ticks) != 1)
			continue;
		uint64_t key = ((uint64_t)pid << 32) | (uint32_t)tid;
		uint64_t fields[2] = {start_ticks * ns_per_tick, 1 /* a context */};
		memcpy(value, fields, sizeof(fields));
		filled += bpf_map_update_elem(bpf_map__fd(map), &key, value, BPF_ANY) == 0;
	}
	free(value);
	closedir(tasks);
	return filled;
}

static int by_program(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct probe *)a)->prog;
	uintptr_t y = (uintptr_t)((const struct probe *)b)->prog;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *lib = NULL, *prefix = "cu", *names = NULL;
	int pid = -1, mode = 0; /* 0 default, 1 perf, 2 multi */
	double duration = 0;
	int list_only = 0;
	const char *object = NULL, *prog_name = NULL, *prog_ex_name = NULL;
	const char *sets[16];
	int set_count = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--lib") && i + 1 < argc)
			lib = argv[++i];
		else if (!strcmp(a, "--prefix") && i + 1 < argc)
			prefix = argv[++i];
		else if (!strcmp(a, "--sym") && i + 1 < argc)
			names = argv[++i];
		else if (!strcmp(a, "--pid") && i + 1 < argc)
			pid = atoi(argv[++i]);
		else if (!strcmp(a, "--duration") && i + 1 < argc)
			duration = atof(argv[++i]);
		else if (!strcmp(a, "--perf"))
			mode = 1;
		else if (!strcmp(a, "--multi"))
			mode = 2;
		else if (!strcmp(a, "--list"))
			list_only = 1;
		else if (!strcmp(a, "--object") && i + 1 < argc)
			object = argv[++i];
		else if (!strcmp(a, "--prog") && i + 1 < argc)
			prog_name = argv[++i];
		else if (!strcmp(a, "--prog-ex") && i + 1 < argc)
			prog_ex_name = argv[++i];
		else if (!strcmp(a, "--set") && i + 1 < argc) {
			if (set_count == 16) {
				fprintf(stderr, "symhits: at most 16 --set\n");
				return 2;
			}
			sets[set_count++] = argv[++i];
		}
		else
			usage();
	}
	if (!lib || (object && !prog_name) || (!object && (prog_name || prog_ex_name || set_count)))
		usage();
	if (mode == 0)
		mode = names ? 1 : 2;

	char *path = realpath(lib, NULL);
	if (!path)
		die(lib);
	read_symbols(path, prefix, names);
	if (probe_count == 0) {
		fprintf(stderr, "symhits: no matching FUNC symbol in %s\n", path);
		return 2;
	}
	if (names) { /* say which named symbols do not exist */
		const char *p = names;
		while (*p) {
			const char *comma = strchr(p, ',');
			size_t n = comma ? (size_t)(comma - p) : strlen(p);
			int found = 0;
			for (size_t i = 0; i < probe_count && !found; i++) {
				const char *q = probes[i].names;
				while (q && !found) {
					const char *eq = strchr(q, '=');
					size_t m = eq ? (size_t)(eq - q) : strlen(q);
					found = m == n && !strncmp(q, p, n);
					q = eq ? eq + 1 : NULL;
				}
			}
			if (!found)
				printf("MISSING %.*s\n", (int)n, p);
			if (!comma)
				break;
			p = comma + 1;
		}
	}
	if (list_only) {
		for (size_t i = 0; i < probe_count; i++)
			printf("0x%llx %s\n", (unsigned long long)probes[i].offset, probes[i].names);
		return 0;
	}

	struct symhits_bpf *skel = NULL;
	struct bpf_object *obj = NULL;
	int map_fd;
	if (object) {
		obj = bpf_object__open_file(object, NULL);
		if (!obj)
			die(object);
		for (int i = 0; i < set_count; i++)
			set_rodata_u32(obj, sets[i]);
		struct bpf_program *prog;
		bpf_object__for_each_program(prog, obj) {
			int wanted = !strcmp(bpf_program__name(prog), prog_name) ||
				     (prog_ex_name && !strcmp(bpf_program__name(prog), prog_ex_name));
			bpf_program__set_autoload(prog, wanted);
			if (wanted && mode == 2)
				bpf_program__set_expected_attach_type(
					prog, (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
		}
		if (bpf_object__load(obj))
			die("load BPF object");
		struct bpf_map *launches = bpf_object__find_map_by_name(obj, "launches");
		if (!launches) {
			fprintf(stderr, "symhits: no map \"launches\" in %s\n", object);
			return 2;
		}
		map_fd = bpf_map__fd(launches);
		object_key_size = bpf_map__key_size(launches);
		printf("THREADS %d\n", fill_thread_contexts(obj, pid));
	} else {
		skel = symhits_bpf__open();
		if (!skel)
			die("open BPF object");
		if (mode == 2)
			bpf_program__set_expected_attach_type(
				skel->progs.count_hit, (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
		if (symhits_bpf__load(skel))
			die("load BPF object");
		map_fd = bpf_map__fd(skel->maps.hits);
	}
	for (size_t i = 0; i < probe_count; i++) {
		if (!obj)
			probes[i].prog = skel->progs.count_hit;
		else if (prog_ex_name && strstr(probes[i].names, "Ex"))
			probes[i].prog = program_named(obj, prog_ex_name);
		else
			probes[i].prog = program_named(obj, prog_name);
	}
	qsort(probes, probe_count, sizeof(*probes), by_program); /* one link per program */

	size_t attached = 0;
	if (mode == 1) {
		for (size_t i = 0; i < probe_count; i++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = i);
			struct bpf_link *link = bpf_program__attach_uprobe_opts(
				probes[i].prog, pid, path, probes[i].offset, &opts);
			if (!link) {
				probes[i].failed_errno = errno;
				continue;
			}
			attached++;
		}
	} else {
		for (size_t first = 0; first < probe_count;) { /* one link per program */
			size_t n = 1;
			while (first + n < probe_count && probes[first + n].prog == probes[first].prog)
				n++;
			attach_multi(bpf_program__fd(probes[first].prog), path, pid, first, n);
			first += n;
		}
		for (size_t i = 0; i < probe_count; i++)
			attached += probes[i].failed_errno == 0;
	}
	for (size_t i = 0; i < probe_count; i++)
		if (probes[i].failed_errno)
			printf("SKIPPED %s %d\n", probes[i].names, probes[i].failed_errno);
	if (attached == 0) {
		fprintf(stderr, "symhits: no probe could be attached\n");
		return 1;
	}

	signal(SIGUSR1, on_usr1);
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	printf("ATTACHED %zu %s\n", attached, mode == 1 ? "perf" : "multi");
	fflush(stdout);

	uint64_t deadline = duration > 0 ? now_ns() + (uint64_t)(duration * 1e9) : 0;
	unsigned snapshot = 0;
	while (!want_stop && (!deadline || now_ns() < deadline)) {
		usleep(2000);
		if (want_snapshot) {
			char head[32];
			want_snapshot = 0;
			snprintf(head, sizeof(head), "SNAPSHOT %u", ++snapshot);
			print_counts(map_fd, head);
		}
	}
	print_counts(map_fd, "FINAL 0");
	return 0; /* links and the object go with the process */
}
