/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps and helpers shared by os_sched, os_block and os_net. Each object
 * declares these maps; the daemon loads os_sched first and hands its map fds
 * to the other two (bpf_map__reuse_fd) so all three count into one table.
 * Three objects rather than one keep one concern per file, and let os_block and
 * os_net pick their hooks at load time from the kernel's BTF.
 */
#ifndef NEUTRACER_OS_MAPS_BPF_H
#define NEUTRACER_OS_MAPS_BPF_H

#include "common.bpf.h"

/* 1e9 / USER_HZ: /proc gives process start times in ticks, so starts compare in ticks. */
const volatile __u64 ns_per_tick = 10000000;

/*
 * Bit tgid % 64 of word tgid / 64 is set for traced tgids: an array lookup is
 * inlined by the verifier, so untraced tasks skip the hash lookup. Sized from
 * kernel.pid_max before load; tgids beyond it fall through to the hash.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536); /* resized before load */
	__type(key, __u32);
	__type(value, __u64);
} traced_bits SEC(".maps");

/* tgid -> process; filled by user space, removed here when the process exits. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized before load */
	__type(key, __u32);
	__type(value, struct nt_os_traced);
} traced_tgids SEC(".maps");

/*
 * Per-CPU so the scheduler hooks never share a cache line between CPUs. Not
 * preallocated: per-CPU values cost value size x CPUs, so memory follows the
 * processes actually traced rather than max_entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096); /* resized before load */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct nt_os_counters);
} os_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NT_OS_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} os_stats SEC(".maps");

static const struct nt_os_counters zero_counters;

static __always_inline void count_os_stat(__u32 which)
{
	__u64 *value = bpf_map_lookup_elem(&os_stats, &which);

	if (value)
		*value += 1;
}

static __always_inline bool same_start(__u64 traced_start_ns, __u64 start_ns)
{
	return traced_start_ns == 0 || traced_start_ns / ns_per_tick == start_ns / ns_per_tick;
}

/* Whether the process (tgid, start) is traced: for work done outside its context. */
static __always_inline bool process_traced(__u32 tgid, __u64 proc_start_ns)
{
	struct nt_os_traced *traced = bpf_map_lookup_elem(&traced_tgids, &tgid);

	return traced && same_start(traced->proc_start_ns, proc_start_ns);
}

/* Tasks are BTF pointers everywhere (tp_btf arguments, bpf_get_current_task_btf): direct loads. */
static __always_inline __u64 task_process_start_ns(struct task_struct *task)
{
	return task->group_leader->start_boottime;
}

/*
 * The hot filter: an inlined array lookup for untraced tasks; the hash lookup
 * and the start check only for traced ones. Returns the process's entry, NULL
 * when it is not traced.
 */
static __always_inline struct nt_os_traced *task_traced(struct task_struct *task)
{
	__u32 tgid = task->tgid;
	__u32 word = tgid / 64;
	__u64 *bits = bpf_map_lookup_elem(&traced_bits, &word);
	struct nt_os_traced *traced;

	if (bits && !((*bits >> (tgid % 64)) & 1))
		return NULL;
	traced = bpf_map_lookup_elem(&traced_tgids, &tgid);
	if (traced && same_start(traced->proc_start_ns, task_process_start_ns(task)))
		return traced;
	return NULL;
}

/* The process's counters, created on first use; NULL (and counted) when the map is full. */
static __always_inline struct nt_os_counters *counters_of(__u32 tgid)
{
	struct nt_os_counters *counters = bpf_map_lookup_elem(&os_counters, &tgid);

	if (counters)
		return counters;
	/* -EEXIST when another CPU created it first: not a failure. */
	bpf_map_update_elem(&os_counters, &tgid, &zero_counters, BPF_NOEXIST);
	counters = bpf_map_lookup_elem(&os_counters, &tgid);
	if (!counters)
		count_os_stat(NT_OS_STAT_COUNTERS_MAP_FULL);
	return counters;
}

/*
 * Counters of a process for work seen outside its context (IO completion,
 * socket state changes): NULL once the process is no longer traced, so an
 * exited process's entry is never created again.
 */
static __always_inline struct nt_os_counters *traced_counters_of(__u32 tgid,
								  __u64 proc_start_ns)
{
	if (!process_traced(tgid, proc_start_ns))
		return NULL;
	return counters_of(tgid);
}

#endif
