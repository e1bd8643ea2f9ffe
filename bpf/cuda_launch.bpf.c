// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel launches: one entry uprobe per launch, counted in the kernel per
 * (process, function handle). No return probe and no ring-buffer traffic on
 * this path: launches are the hottest calls of a CUDA program (docs/architecture.md).
 */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* resized from the config before load */
	__type(key, struct nt_launch_key);
	__type(value, __u64);
} launches SEC(".maps");

/*
 * Adaptive launch counting (set before load): the launch probes of a process are attached
 * for a window of each period (one uprobe_multi link per program and process), and only
 * launches inside the window are counted. The daemon opens and closes the window here, so the
 * time it measures is the time counted.
 */
const volatile __u32 gated = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* 1 while the window is open */
} launch_gates SEC(".maps");

DEFINE_STATS_MAP
DEFINE_THREAD_CONTEXTS_MAP

static __always_inline int count_launch(struct pt_regs *ctx, __u64 handle)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (gated) {
		__u32 *open = bpf_map_lookup_elem(&launch_gates, &tgid);

		if (!open || !*open)
			return 0;
	}
	struct nt_launch_key key = {
		.tgid = tgid,
		.api = (__u32)bpf_get_attach_cookie(ctx),
		.proc_start_ns = current_process_start_ns(),
		.handle = handle,
		.context = current_context(),
	};
	static const __u64 one = 1;
	__u64 *count = bpf_map_lookup_elem(&launches, &key);

	if (count) {
		__sync_fetch_and_add(count, 1);
		return 0;
	}
	if (bpf_map_update_elem(&launches, &key, &one, BPF_NOEXIST) == 0)
		return 0;
	/* Another CPU inserted the key first, or the map is full. */
	count = bpf_map_lookup_elem(&launches, &key);
	if (count)
		__sync_fetch_and_add(count, 1);
	else
		count_stat(NT_STAT_LAUNCH_MAP_FULL);
	return 0;
}

/* cuLaunchKernel, cuLaunchCooperativeKernel, cuGraphLaunch (+ _ptsz): handle is argument 1. */
SEC("uprobe")
int BPF_KPROBE(launch_handle_arg1, __u64 handle)
{
	return count_launch(ctx, handle);
}

/* cuLaunchKernelEx(const CUlaunchConfig *, CUfunction, ...) (+ _ptsz): handle is argument 2. */
SEC("uprobe")
int BPF_KPROBE(launch_handle_arg2, void *config, __u64 handle)
{
	return count_launch(ctx, handle);
}
