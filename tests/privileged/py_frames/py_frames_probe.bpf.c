// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only (tests/privileged/py_frames): a uprobe on the test library's function sends the
 * calling thread's Python stack, as bpf/python_frames.bpf.h walks it, through a ring buffer.
 */
#include "common.bpf.h"
#include "python_frames.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* One sample: the thread that called, and its stack. */
struct py_frames_sample {
	__u32 tid;
	__u32 pad;
	struct nt_python_stack stack;
};

/* BPF_RB_NO_WAKEUP for the benchmark (tests/bench/python_frames_cost.cpp), which drains the
 * ring buffer on its own clock so that wakeups stay out of what it measures. */
const volatile __u64 submit_flags = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} samples SEC(".maps");

/* Time spent in read_python_stack and walks made, per CPU, for the benchmark. */
struct walk_time {
	__u64 ns;
	__u64 walks;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_time);
} walk_times SEC(".maps");

SEC("uprobe")
int py_frames_probe(struct pt_regs *ctx)
{
	struct py_frames_sample *sample = bpf_ringbuf_reserve(&samples, sizeof(*sample), 0);

	if (!sample)
		return 0;
	sample->tid = (__u32)bpf_get_current_pid_tgid();
	sample->pad = 0;
	__u64 start = bpf_ktime_get_ns();

	read_python_stack(&sample->stack);
	__u64 elapsed = bpf_ktime_get_ns() - start;
	__u32 zero = 0;
	struct walk_time *time = bpf_map_lookup_elem(&walk_times, &zero);

	if (time) {
		time->ns += elapsed;
		time->walks += 1;
	}
	bpf_ringbuf_submit(sample, submit_flags);
	return 0;
}
