// SPDX-License-Identifier: Apache-2.0
/*
 * progstats: one line per loaded BPF program with its run count and total run time, as the
 * kernel counts them while kernel.bpf_stats_enabled=1 (sysctl). Two snapshots around a
 * workload give, per program, the hits and the nanoseconds per hit spent in the program
 * itself (not in the trap or tracepoint machinery that called it).
 *
 *   progstats [--enable]     prints: "<id> <type> <run_cnt> <run_time_ns> <name>"
 *
 * <name> is the program's full function name from its BTF when it has one (the kernel keeps
 * only 15 characters in bpf_prog_info.name), else that short name. --enable holds the stats
 * on (BPF_ENABLE_STATS) for as long as progstats runs: it prints one snapshot per line read
 * on stdin ("snap LABEL" -> "SNAP LABEL" block) until EOF, so no sysctl is needed.
 * Needs root (CAP_SYS_ADMIN). Build: see Makefile (static libbpf).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

static void full_name(int fd, const struct bpf_prog_info *base, char *out, size_t size)
{
	snprintf(out, size, "%s", base->name[0] ? base->name : "-");
	if (!base->btf_id || base->nr_func_info == 0)
		return;
	struct bpf_func_info funcs[1];
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	info.nr_func_info = 1;
	info.func_info_rec_size = sizeof(funcs[0]);
	info.func_info = (uint64_t)(uintptr_t)funcs;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return;
	struct btf *btf = btf__load_from_kernel_by_id(base->btf_id);
	if (!btf)
		return;
	const struct btf_type *type = btf__type_by_id(btf, funcs[0].type_id);
	if (type) {
		const char *name = btf__name_by_offset(btf, type->name_off);
		if (name && *name)
			snprintf(out, size, "%s", name);
	}
	btf__free(btf);
}

static void snapshot(void)
{
	uint32_t id = 0;

	while (bpf_prog_get_next_id(id, &id) == 0) {
		int fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue; /* unloaded since */
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			char name[128];
			full_name(fd, &info, name, sizeof(name));
			printf("%u %u %llu %llu %s\n", info.id, info.type,
			       (unsigned long long)info.run_cnt, (unsigned long long)info.run_time_ns,
			       name);
		}
		close(fd);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--enable") == 0) {
		int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0) {
			fprintf(stderr, "progstats: BPF_ENABLE_STATS: %s\n", strerror(errno));
			return 1;
		}
		printf("ENABLED\n");
		fflush(stdout);
		char line[256];
		while (fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\n")] = 0;
			printf("SNAP %s\n", strncmp(line, "snap ", 5) == 0 ? line + 5 : line);
			snapshot();
			printf("END\n");
			fflush(stdout);
		}
		close(stats_fd);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: progstats [--enable]\n");
		return 2;
	}
	snapshot();
	return 0;
}
