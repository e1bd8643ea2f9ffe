// SPDX-License-Identifier: GPL-2.0
/*
 * CPU and scheduling of traced processes: on-CPU, off-CPU and run-queue wait
 * time of their threads, summed per process, and CPU / NUMA-node migrations.
 * Raw BTF tracepoints; untraced tasks cost one inlined array lookup per hook.
 *
 * Times are deltas of the scheduler's own per-thread counters
 * (se.sum_exec_runtime, sched_info.run_delay) between two observations of a
 * thread (switch-in, switch-out, exit); off-CPU time is the wall time between
 * them minus the runtime. A switch the tracepoint does not report (measured on
 * 6.18: about 3% of switches, those of some kernel-side tasks, are never
 * reported) therefore costs nothing: the next observation catches up exactly.
 * User space adds the interval since the last observation (on or off CPU) when
 * it reads, so a thread running alone on its CPU for minutes is still counted.
 */
#include "os_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_DEAD 0x80

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* resized before load */
	__type(key, __u32);         /* tid */
	__type(value, struct nt_os_thread);
} os_threads SEC(".maps");

/* cpu -> NUMA node, filled by user space from sysfs; all 0 on single-node hosts. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to the possible CPUs before load */
	__type(key, __u32);
	__type(value, __u32);
} os_cpu_node SEC(".maps");

/* Before 5.16 the task's CPU was task_struct::cpu rather than thread_info::cpu. */
struct task_struct___pre516 {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_cpu(struct task_struct *task)
{
	if (bpf_core_field_exists(task->thread_info.cpu))
		return BPF_CORE_READ(task, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___pre516 *)task, cpu);
}

static __always_inline __u32 cpu_node(__u32 cpu)
{
	__u32 *node = bpf_map_lookup_elem(&os_cpu_node, &cpu);

	return node ? *node : 0;
}

/* Run-queue wait so far; 0 without CONFIG_SCHED_INFO. */
static __always_inline __u64 task_run_delay(struct task_struct *task)
{
	if (bpf_core_field_exists(task->sched_info.run_delay))
		return task->sched_info.run_delay;
	return 0;
}

/*
 * A thread seen for the first time. Born after tracing began: everything since
 * its birth (task->start_time, CLOCK_MONOTONIC) counts. Older: from tracing's
 * start, when it was on its CPU for its whole current slice (the running
 * thread at a switch-out) or off it (at a switch-in).
 */
static __always_inline struct nt_os_thread *first_seen(struct task_struct *task,
						      struct nt_os_traced *traced, __u64 now,
						      bool was_running)
{
	__u32 tid = task->pid;
	__u64 runtime = task->se.sum_exec_runtime;
	__u64 born = task->start_time;
	__u64 slice, span;
	struct nt_os_thread fresh = {.tgid = task->tgid};
	struct nt_os_thread *thread;

	if (born >= traced->traced_since_ns) {
		fresh.seen_ns = born;
	} else {
		fresh.seen_ns = traced->traced_since_ns;
		fresh.run_delay_ns = task_run_delay(task);
		fresh.runtime_ns = runtime;
		if (was_running) {
			slice = runtime - task->se.prev_sum_exec_runtime;
			span = now > fresh.seen_ns ? now - fresh.seen_ns : 0;
			fresh.runtime_ns = runtime - (slice < span ? slice : span);
		}
	}
	bpf_map_update_elem(&os_threads, &tid, &fresh, BPF_NOEXIST);
	thread = bpf_map_lookup_elem(&os_threads, &tid);
	if (!thread)
		count_os_stat(NT_OS_STAT_THREADS_MAP_FULL);
	return thread;
}

/* Adds what the thread did since its last observation; on_cpu: its state from now on. */
static __always_inline void observe(struct task_struct *task, struct nt_os_traced *traced,
				    __u64 now, bool was_running, __u32 on_cpu)
{
	__u32 tid = task->pid;
	struct nt_os_thread *thread = bpf_map_lookup_elem(&os_threads, &tid);
	struct nt_os_counters *counters;
	__u64 runtime = task->se.sum_exec_runtime;
	__u64 run_delay = task_run_delay(task);
	__u64 wall, ran;

	if (!thread) {
		thread = first_seen(task, traced, now, was_running);
		if (!thread)
			return;
	}
	wall = now > thread->seen_ns ? now - thread->seen_ns : 0;
	ran = runtime > thread->runtime_ns ? runtime - thread->runtime_ns : 0;
	counters = counters_of(thread->tgid);
	/* Scheduler hooks run with interrupts off: plain adds to this CPU's counters are safe. */
	if (counters) {
		counters->oncpu_ns += ran;
		counters->offcpu_ns += wall > ran ? wall - ran : 0;
		if (run_delay > thread->run_delay_ns)
			counters->runqueue_wait_ns += run_delay - thread->run_delay_ns;
	}
	thread->seen_ns = now;
	thread->runtime_ns = runtime;
	thread->run_delay_ns = run_delay;
	thread->on_cpu = on_cpu;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(os_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct nt_os_traced *traced;
	__u64 now = 0;

	traced = task_traced(prev);
	/* The last switch of an exiting thread: exit removed its entry, keep it removed. */
	if (traced && !(prev->__state & TASK_DEAD)) {
		now = bpf_ktime_get_ns();
		observe(prev, traced, now, true, 0);
	}
	traced = task_traced(next);
	if (traced) {
		if (!now)
			now = bpf_ktime_get_ns();
		observe(next, traced, now, false, 1);
	}
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(os_sched_migrate_task, struct task_struct *task, int dest_cpu)
{
	struct nt_os_counters *counters;

	if (!task_traced(task))
		return 0;
	counters = counters_of(task->tgid);
	if (!counters)
		return 0;
	counters->migrations += 1;
	if (cpu_node(task_cpu(task)) != cpu_node((__u32)dest_cpu))
		counters->numa_migrations += 1;
	return 0;
}

/* Fires for every exiting thread, in its own context, before its last switch. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(os_sched_process_exit, struct task_struct *task)
{
	__u32 tid = task->pid;
	__u32 tgid = task->tgid;
	struct nt_os_traced *traced = task_traced(task);

	if (!traced)
		return 0;
	/* Its runtime lags by up to a tick here: updated on ticks and switches. */
	observe(task, traced, bpf_ktime_get_ns(), true, 0);
	bpf_map_delete_elem(&os_threads, &tid);
	/*
	 * Last thread of the process (do_exit decrements signal->live before this
	 * tracepoint): stop tracing its tgid now, so a reused PID is never counted
	 * here. Its counters stay until user space has read them and drops them.
	 */
	if (task->signal->live.counter == 0)
		bpf_map_delete_elem(&traced_tgids, &tgid);
	return 0;
}
