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

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} samples SEC(".maps");

SEC("uprobe")
int py_frames_probe(struct pt_regs *ctx)
{
	struct py_frames_sample *sample = bpf_ringbuf_reserve(&samples, sizeof(*sample), 0);

	if (!sample)
		return 0;
	sample->tid = (__u32)bpf_get_current_pid_tgid();
	sample->pad = 0;
	read_python_stack(&sample->stack);
	bpf_ringbuf_submit(sample, 0);
	return 0;
}
