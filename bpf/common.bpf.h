/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the BPF programs. */
#ifndef NEUTRACER_COMMON_BPF_H
#define NEUTRACER_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "neutracer_abi.h"

/*
 * Start time of the calling process (its group leader), as /proc/<pid>/stat reports it, in ns.
 * Direct loads through the BTF task pointer: no bpf_probe_read_kernel call on the launch path.
 */
static __always_inline __u64 current_process_start_ns(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return task->group_leader->start_boottime;
}

/* A hash map `name` of `entries` entries from `key_type` to `value_type`. */
#define DEFINE_HASH_MAP(name, key_type, value_type, entries)                                       \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__uint(max_entries, entries);                                                      \
		__type(key, key_type);                                                             \
		__type(value, value_type);                                                         \
	} name SEC(".maps")

#define DEFINE_STATS_MAP                                                                           \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__uint(max_entries, NT_STAT_MAX);                                                  \
		__type(key, __u32);                                                                \
		__type(value, __u64);                                                              \
	} stats SEC(".maps");                                                                      \
                                                                                                   \
	static __always_inline void count_stat(__u32 which)                                        \
	{                                                                                          \
		__u64 *value = bpf_map_lookup_elem(&stats, &which);                                \
		if (value)                                                                         \
			*value += 1;                                                               \
	}

/*
 * Each thread's current CUDA context, shared by cuda_launch and cuda_calls (user space
 * makes cuda_calls reuse cuda_launch's map). LRU: entries of exited threads age out.
 */
#define DEFINE_THREAD_CONTEXTS_MAP                                                                 \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LRU_HASH);                                               \
		__uint(max_entries, 32768);                                                        \
		__type(key, __u64);                                                                \
		__type(value, struct nt_thread_context);                                           \
	} thread_contexts SEC(".maps");                                                            \
                                                                                                   \
	static __always_inline __u64 current_thread_start_ns(void)                                 \
	{                                                                                          \
		return bpf_get_current_task_btf()->start_boottime;                                 \
	}                                                                                          \
                                                                                                   \
	/* The calling thread's current CUcontext, 0 when we never saw it set. */                \
	static __always_inline __u64 current_context(void)                                         \
	{                                                                                          \
		__u64 pid_tgid = bpf_get_current_pid_tgid();                                       \
		struct nt_thread_context *state = bpf_map_lookup_elem(&thread_contexts, &pid_tgid); \
		if (!state || state->thread_start_ns != current_thread_start_ns())                 \
			return 0;                                                                  \
		return state->current;                                                             \
	}

/*
 * Native call stacks (neutracer_abi.h): one stack-trace map, created by cuda_launch and reused
 * by cuda_calls. Sizes are set from the config before load; `capture_stacks` (each object's
 * read-only data) switches capture off.
 */
#define DEFINE_STACKS_MAP                                                                          \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);                                            \
		__uint(max_entries, 8192);                                                         \
		__uint(key_size, sizeof(__u32));                                                   \
		__uint(value_size, 64 * sizeof(__u64));                                            \
	} stacks SEC(".maps");                                                                     \
                                                                                                   \
	const volatile __u32 capture_stacks = 0;                                                   \
                                                                                                   \
	/* The calling thread's user stack id; NT_NO_STACK when off or not stored (counted). */    \
	static __always_inline __s32 user_stack_id(struct pt_regs *ctx)                            \
	{                                                                                          \
		long id;                                                                           \
		if (!capture_stacks)                                                               \
			return NT_NO_STACK;                                                        \
		id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);                              \
		if (id < 0) {                                                                      \
			count_stat(NT_STAT_STACK_LOST);                                            \
			return NT_NO_STACK;                                                        \
		}                                                                                  \
		return (__s32)id;                                                                  \
	}                                                                                          \
                                                                                                   \
	/* At a function's entry: its return address, the top of the user stack. */              \
	static __always_inline __u64 entry_return_address(struct pt_regs *ctx)                     \
	{                                                                                          \
		__u64 address = 0;                                                                 \
		bpf_probe_read_user(&address, sizeof(address), (const void *)PT_REGS_SP(ctx));     \
		return address;                                                                    \
	}

#endif
