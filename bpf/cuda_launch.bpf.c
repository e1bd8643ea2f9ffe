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
	__type(key, __u32); /* tgid */
	__type(value, struct nt_launch_gate);
} launch_gates SEC(".maps");

DEFINE_STATS_MAP
DEFINE_THREAD_CONTEXTS_MAP
DEFINE_STACKS_MAP
#include "python_stacks.bpf.h"

/*
 * Launch sites: about 1 in `launch_stack_every` launches (set before load; 0: none) records its
 * stack. Each CPU counts down a random gap (1 to 2N-1 launches, N on average), so a loop whose
 * launches repeat with a period that shares a factor with N is still sampled everywhere; a launch
 * pays the countdown (an inlined per-CPU array access) and nothing else until its turn.
 */
const volatile __u32 launch_stack_every = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32); /* launches left before the next sample; 0: not drawn yet */
} launch_stack_countdown SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* resized from the config before load */
	__type(key, struct nt_launch_stack_key);
	__type(value, __u64);
} launch_stacks SEC(".maps");

static __always_inline bool launch_stack_due(void)
{
	__u32 zero = 0;
	__u32 *left;

	if (!launch_stack_every)
		return false;
	left = bpf_map_lookup_elem(&launch_stack_countdown, &zero);
	if (!left)
		return false;
	if (*left > 1) {
		*left -= 1;
		return false;
	}
	const bool due = *left == 1;
	*left = 1 + bpf_get_prandom_u32() % (2 * launch_stack_every - 1);
	return due;
}

static __always_inline void sample_launch_stack(struct pt_regs *ctx, __u32 tgid,
						__u64 proc_start_ns)
{
	struct nt_launch_stack_key key = {
		.tgid = tgid,
		.stack_id = user_stack_id(ctx),
		.proc_start_ns = proc_start_ns,
		.caller = entry_return_address(ctx),
	};
	static const __u64 one = 1;
	__u64 *samples;

	if (key.stack_id == NT_NO_STACK)
		return;
	key.python_stack = store_python_stack();
	samples = bpf_map_lookup_elem(&launch_stacks, &key);
	if (samples) {
		__sync_fetch_and_add(samples, 1);
		return;
	}
	if (bpf_map_update_elem(&launch_stacks, &key, &one, BPF_NOEXIST) == 0)
		return;
	samples = bpf_map_lookup_elem(&launch_stacks, &key);
	if (samples)
		__sync_fetch_and_add(samples, 1);
	else
		count_stat(NT_STAT_LAUNCH_STACKS_FULL);
}

static __always_inline int count_launch(struct pt_regs *ctx, __u64 handle)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (gated) {
		struct nt_launch_gate *gate = bpf_map_lookup_elem(&launch_gates, &tgid);
		__u64 now;

		if (!gate || !gate->open)
			return 0;
		/* Threads of one process may race here: the times stay within the window. */
		now = bpf_ktime_get_ns();
		if (!gate->first_ns)
			gate->first_ns = now;
		gate->last_ns = now;
		__sync_fetch_and_add(&gate->launches, 1);
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
	} else if (bpf_map_update_elem(&launches, &key, &one, BPF_NOEXIST) != 0) {
		/* Another CPU inserted the key first, or the map is full. */
		count = bpf_map_lookup_elem(&launches, &key);
		if (count)
			__sync_fetch_and_add(count, 1);
		else
			count_stat(NT_STAT_LAUNCH_MAP_FULL);
	}
	if (launch_stack_due())
		sample_launch_stack(ctx, tgid, key.proc_start_ns);
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
