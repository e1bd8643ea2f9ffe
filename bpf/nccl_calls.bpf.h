/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NCCL's collectives and communicator calls (libnccl.so), included by cuda_calls.bpf.c: they
 * share its ring buffer, stack maps and in-flight key (the attach cookie in place of the API). nccl_enter keeps what the arguments say per thread;
 * nccl_exit sends it with the result. The attach cookie is the call's enum nt_nccl_op.
 *
 * x86-64 only, as the rest: arguments past the sixth, and a struct passed by value that does not
 * fit two registers (ncclUniqueId, 128 bytes), are on the caller's stack above the return
 * address.
 */
#ifndef NEUTRACER_NCCL_CALLS_BPF_H
#define NEUTRACER_NCCL_CALLS_BPF_H

DEFINE_HASH_MAP(nccl_inflight, struct nt_inflight_key, struct nt_nccl_inflight, 4096);

/* A communicator of one process, for its collective count. */
struct nccl_comm_key {
	__u32 tgid;
	__u32 pad;
	__u64 comm;
};

/* Collectives called per communicator; LRU: a process that exits without destroying its
 * communicators leaves entries that age out. */
struct nccl_comm_sequence {
	__u64 proc_start_ns; /* an entry of an earlier process with the same PID is started over */
	__u64 called;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nccl_comm_key);
	__type(value, struct nccl_comm_sequence);
} nccl_sequences SEC(".maps");

/* The number of this collective of `comm` in the calling process, from 1. */
static __always_inline __u64 nccl_next_sequence(__u32 tgid, __u64 comm, __u64 proc_start_ns)
{
	struct nccl_comm_key key = {.tgid = tgid, .comm = comm};
	struct nccl_comm_sequence *sequence = bpf_map_lookup_elem(&nccl_sequences, &key);

	if (sequence && sequence->proc_start_ns == proc_start_ns)
		return __sync_add_and_fetch(&sequence->called, 1);
	struct nccl_comm_sequence first = {.proc_start_ns = proc_start_ns, .called = 1};

	bpf_map_update_elem(&nccl_sequences, &key, &first, BPF_ANY);
	return 1;
}

static __always_inline void nccl_forget_sequence(__u32 tgid, __u64 comm)
{
	struct nccl_comm_key key = {.tgid = tgid, .comm = comm};

	bpf_map_delete_elem(&nccl_sequences, &key);
}

/* libbpf 1.1's bpf_tracing.h stops at the fifth argument. */
static __always_inline __u64 nccl_arg6(struct pt_regs *ctx)
{
	return ctx->r9;
}

/* The n-th word the caller passed on the stack (0: the first), at the function's entry. */
static __always_inline __u64 nccl_stack_word(struct pt_regs *ctx, int n)
{
	__u64 value = 0;

	bpf_probe_read_user(&value, sizeof(value), (const void *)(PT_REGS_SP(ctx) + 8 + 8 * n));
	return value;
}

/*
 * A communicator's key from its ncclUniqueId at `address`: its first 16 bytes (the bootstrap's
 * random magic and the root's address), the same for every rank given that id.
 */
static __always_inline __u64 nccl_unique_id_key(__u64 address)
{
	__u64 words[2] = {};

	if (address)
		bpf_probe_read_user(words, sizeof(words), (const void *)address);
	return words[0] ^ (words[1] * 0x9e3779b97f4a7c15ULL);
}

static __always_inline bool nccl_is_transfer(__u32 op)
{
	return op >= NT_NCCL_ALL_REDUCE && op <= NT_NCCL_RECV;
}

SEC("uprobe")
int nccl_enter(struct pt_regs *ctx)
{
	struct nt_inflight_key key = inflight_key(ctx);
	struct nt_nccl_inflight call = {
		.proc_start_ns = current_process_start_ns(),
		.enter_ns = bpf_ktime_get_ns(),
		.rank = -1,
		.nranks = -1,
		.stack_id = NT_NO_STACK,
	};

	switch (key.api) {
	case NT_NCCL_ALL_REDUCE: /* (send, recv, count, type, op, comm, stream) */
	case NT_NCCL_REDUCE_SCATTER:
		call.count = PT_REGS_PARM3(ctx);
		call.datatype = (__u32)PT_REGS_PARM4(ctx);
		call.comm = nccl_arg6(ctx);
		break;
	case NT_NCCL_BROADCAST: /* (send, recv, count, type, root, comm, stream) */
		call.count = PT_REGS_PARM3(ctx);
		call.datatype = (__u32)PT_REGS_PARM4(ctx);
		call.rank = (__s32)PT_REGS_PARM5(ctx);
		call.comm = nccl_arg6(ctx);
		break;
	case NT_NCCL_REDUCE: /* (send, recv, count, type, op, root, comm, stream) */
		call.count = PT_REGS_PARM3(ctx);
		call.datatype = (__u32)PT_REGS_PARM4(ctx);
		call.rank = (__s32)nccl_arg6(ctx);
		call.comm = nccl_stack_word(ctx, 0);
		break;
	case NT_NCCL_ALL_GATHER: /* (send, recv, sendcount, type, comm, stream) */
		call.count = PT_REGS_PARM3(ctx);
		call.datatype = (__u32)PT_REGS_PARM4(ctx);
		call.comm = PT_REGS_PARM5(ctx);
		break;
	case NT_NCCL_SEND: /* (buffer, count, type, peer, comm, stream) */
	case NT_NCCL_RECV:
		call.count = PT_REGS_PARM2(ctx);
		call.datatype = (__u32)PT_REGS_PARM3(ctx);
		call.rank = (__s32)PT_REGS_PARM4(ctx);
		call.comm = PT_REGS_PARM5(ctx);
		break;
	case NT_NCCL_COMM_INIT_RANK: /* (comm *, nranks, ncclUniqueId by value, rank[, config]) */
	case NT_NCCL_COMM_INIT_RANK_CONFIG:
		call.comm_out = PT_REGS_PARM1(ctx);
		call.nranks = (__s32)PT_REGS_PARM2(ctx);
		call.rank = (__s32)PT_REGS_PARM3(ctx);
		call.comm_key = nccl_unique_id_key(PT_REGS_SP(ctx) + 8);
		break;
	case NT_NCCL_COMM_INIT_RANK_SCALABLE: /* (comm *, nranks, myrank, nId, ids *, config) */
		call.comm_out = PT_REGS_PARM1(ctx);
		call.nranks = (__s32)PT_REGS_PARM2(ctx);
		call.rank = (__s32)PT_REGS_PARM3(ctx);
		call.comm_key = nccl_unique_id_key(PT_REGS_PARM5(ctx));
		break;
	case NT_NCCL_COMM_SPLIT: /* (comm, color, key, comm *, config) */
		call.comm_key = PT_REGS_PARM1(ctx);
		call.rank = (__s32)PT_REGS_PARM2(ctx);
		call.comm_out = PT_REGS_PARM4(ctx);
		break;
	case NT_NCCL_COMM_DESTROY: /* (comm) */
	case NT_NCCL_COMM_ABORT:
		call.comm = PT_REGS_PARM1(ctx);
		break;
	default:
		return 0;
	}
	/* Where a collective was called from: the site a hang names. */
	if (nccl_is_transfer(key.api)) {
		call.stack_id = entry_stacks(ctx, &call.python_stack);
		if (call.stack_id != NT_NO_STACK)
			call.caller = entry_return_address(ctx);
	}
	if (key.api >= NT_NCCL_ALL_REDUCE && key.api <= NT_NCCL_REDUCE_SCATTER)
		call.sequence =
		    nccl_next_sequence(key.pid_tgid >> 32, call.comm, call.proc_start_ns);
	else if (key.api == NT_NCCL_COMM_DESTROY || key.api == NT_NCCL_COMM_ABORT)
		nccl_forget_sequence(key.pid_tgid >> 32, call.comm);
	keep_inflight(&nccl_inflight, &key, &call);
	return 0;
}

SEC("uretprobe")
int nccl_exit(struct pt_regs *ctx)
{
	struct nt_inflight_key key = inflight_key(ctx);
	struct nt_nccl_inflight *call = bpf_map_lookup_elem(&nccl_inflight, &key);
	struct nt_nccl_event *event;

	if (!call) {
		count_stat(NT_STAT_RETURN_WITHOUT_ENTRY);
		return 0;
	}
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (event) {
		*event = (struct nt_nccl_event){
			.kind = NT_EVENT_NCCL,
			.op = key.api,
			.tgid = key.pid_tgid >> 32,
			.tid = (__u32)key.pid_tgid,
			.exit_ns = bpf_ktime_get_ns(),
			.result = (__u32)PT_REGS_RC(ctx),
			.call = *call,
		};
	} else {
		count_stat(NT_STAT_RINGBUF_FULL);
		bpf_map_delete_elem(&nccl_inflight, &key);
		return 0;
	}
	/* A new communicator is known once the call wrote it (ncclInProgress, 7: non-blocking). */
	if (call->comm_out && (event->result == 0 || event->result == 7)) {
		event->call.comm = read_user_u64(call->comm_out);
		/* A new communicator where an old one was: its count starts again. */
		nccl_forget_sequence(key.pid_tgid >> 32, event->call.comm);
	}
	bpf_map_delete_elem(&nccl_inflight, &key);
	bpf_ringbuf_submit(event, event_wakeup());
	return 0;
}

#endif /* NEUTRACER_NCCL_CALLS_BPF_H */
