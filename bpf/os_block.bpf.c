// SPDX-License-Identifier: GPL-2.0
/*
 * Block IO of traced processes: bytes and requests per direction and a
 * latency histogram, from raw BTF block tracepoints.
 *
 * Attribution: a request belongs to the task current when it starts
 * (block_io_start, called from blk_account_io_start in the submitter's
 * context). Reads, direct IO and writes flushed by fsync()/O_SYNC in the
 * process's own context count for the process; buffered writes written back
 * later are submitted by the flusher kworker and count for no traced process
 * (/proc/<pid>/io write_bytes covers those, at the time pages are dirtied).
 * Only requests of stacked-on disks are seen (bio-based dm/md have none), so
 * nothing is counted twice; loop devices count at the loop device.
 *
 * Before Linux 6.5 (no block_io_start) user space loads block_rq_insert and
 * block_rq_issue instead: the first one seen in a traced context claims the
 * request.
 */
#include "os_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define REQ_OP_MASK 0xff /* (1 << REQ_OP_BITS) - 1 */
#define EEXIST 17

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* resized before load */
	__type(key, __u64);         /* struct request * */
	__type(value, struct nt_os_io_start);
} os_io_inflight SEC(".maps");

static __always_inline void claim(struct request *rq, __u64 flags)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 key = (__u64)rq;
	struct nt_os_io_start start = {};
	long error;

	if (!task_traced(task))
		return;
	start.tgid = task->tgid;
	start.proc_start_ns = task_process_start_ns(task);
	start.start_ns = bpf_ktime_get_ns();
	error = bpf_map_update_elem(&os_io_inflight, &key, &start, flags);
	if (error && error != -EEXIST)
		count_os_stat(NT_OS_STAT_IO_MAP_FULL);
}

SEC("tp_btf/block_io_start")
int BPF_PROG(os_block_io_start, struct request *rq)
{
	/* BPF_ANY: request structures are reused; a new start replaces any stale entry. */
	claim(rq, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(os_block_rq_insert, struct request *rq)
{
	claim(rq, BPF_ANY);
	return 0;
}

/* Requests issued without insertion; an issue from kblockd must not take over an insert's claim. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(os_block_rq_issue, struct request *rq)
{
	claim(rq, BPF_NOEXIST);
	return 0;
}

/* The merged-away request is freed without completing: forget it. */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(os_block_rq_merge, struct request *rq)
{
	__u64 key = (__u64)rq;

	bpf_map_delete_elem(&os_io_inflight, &key);
	return 0;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/*
 * Called once per completed chunk (drivers may complete a request in parts);
 * nr_bytes covers the whole remainder on the last call.
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(os_block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct nt_os_io_start *start = bpf_map_lookup_elem(&os_io_inflight, &key);
	struct nt_os_counters *counters;
	bool last;
	__u32 op, slot;
	__u64 latency_ns;

	if (!start)
		return 0;
	last = nr_bytes >= BPF_CORE_READ(rq, __data_len);
	op = BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK;
	/* Flushes, discards, zeroing and passthrough commands are not reads or writes of data. */
	if (op == REQ_OP_READ || op == REQ_OP_WRITE) {
		counters = traced_counters_of(start->tgid, start->proc_start_ns);
		if (counters) {
			/* Completions may interrupt each other on one CPU: atomic adds. */
			if (!error)
				__sync_fetch_and_add(op == REQ_OP_READ ? &counters->io_read_bytes
								       : &counters->io_write_bytes,
						     nr_bytes);
			if (last) {
				__sync_fetch_and_add(op == REQ_OP_READ ? &counters->io_read_ops
								       : &counters->io_write_ops,
						     1);
				latency_ns = bpf_ktime_get_ns() - start->start_ns;
				slot = log2_u64(latency_ns / 1000);
				if (slot >= NT_OS_IO_LATENCY_SLOTS)
					slot = NT_OS_IO_LATENCY_SLOTS - 1;
				__sync_fetch_and_add(&counters->io_latency_sum_ns, latency_ns);
				__sync_fetch_and_add(&counters->io_latency_slots[slot], 1);
			}
		}
	}
	if (last)
		bpf_map_delete_elem(&os_io_inflight, &key);
	return 0;
}
