/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The calling thread's Python stack, stored for user space under a key (python_frames.bpf.h
 * walks it). Include after DEFINE_STACKS_MAP (capture_stacks switches it off with the native
 * stacks); objects that include it each get the maps below, which the loader shares with
 * bpf_map__reuse_fd (CudaTracer: cuda_calls takes cuda_launch's).
 */
#ifndef NEUTRACER_PYTHON_STACKS_BPF_H
#define NEUTRACER_PYTHON_STACKS_BPF_H

#include "python_frames.bpf.h"

/*
 * Python stacks of allocations and sampled launches (docs/python-frames.md): walked into a
 * per-CPU buffer (too big for the BPF stack), keyed by a hash of the process and the frames,
 * and kept in an LRU map that user space reads by the key the event or launch sample carries.
 * Equal stacks share one entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nt_python_stack);
} python_stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NT_PYTHON_STACKS_ENTRIES);
	__type(key, __u64);
	__type(value, struct nt_python_stack);
} python_stacks SEC(".maps");

/* The calling thread's Python stack, stored; its key, or 0 when it has no Python frames. */
static __noinline __u64 store_python_stack(void)
{
	__u32 zero = 0;
	struct nt_python_stack *stack;
	__u64 key;

	if (!capture_stacks)
		return 0;
	stack = bpf_map_lookup_elem(&python_stack_scratch, &zero);
	if (!stack || !read_python_stack(stack))
		return 0;
	key = nt_python_stack_key(bpf_get_current_pid_tgid() >> 32, stack);
	if (!bpf_map_lookup_elem(&python_stacks, &key))
		bpf_map_update_elem(&python_stacks, &key, stack, BPF_ANY);
	return key;
}

#endif /* NEUTRACER_PYTHON_STACKS_BPF_H */
