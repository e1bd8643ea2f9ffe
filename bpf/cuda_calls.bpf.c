// SPDX-License-Identifier: GPL-2.0
/*
 * Rare driver calls (allocations, frees, copies, syncs, kernel naming): the
 * entry probe saves the arguments per (thread, API), the return probe reads
 * what the call wrote and its CUresult and sends one event to user space.
 * Sync calls still in the inflight map are waits in progress.
 */
#include "common.bpf.h"
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "GPL";

/* Calls between their entry and return probes. */
DEFINE_HASH_MAP(inflight, struct nt_inflight_key, struct nt_inflight_call, 16384);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized from the config before load */
} events SEC(".maps");

/*
 * How an event wakes the daemon: only once an eighth of the ring waits to be read. A wakeup per
 * event costs the calling thread an interrupt on the way out of the probe (about 10 us a call on
 * a VM: BENCHMARKS.md, "NCCL probes"); the daemon reads the ring at least every 100 ms anyway.
 */
static __always_inline __u64 event_wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >
			       bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 8
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/* One name event per CPU, built before its used bytes are copied into `events`. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nt_name_event);
} name_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nt_kernel_function_key);
	__type(value, __u64); /* CUkernel */
} known_kernel_functions SEC(".maps");

DEFINE_STATS_MAP
DEFINE_THREAD_CONTEXTS_MAP
DEFINE_STACKS_MAP
#include "python_stacks.bpf.h"

static __always_inline bool is_allocation(__u32 api)
{
	return api >= NT_API_MEM_ALLOC && api <= NT_API_MEM_CREATE;
}

static __always_inline bool is_sync(__u32 api)
{
	return api >= NT_API_STREAM_SYNCHRONIZE && api <= NT_API_EVENT_SYNCHRONIZE;
}

static __always_inline struct nt_inflight_key inflight_key(struct pt_regs *ctx)
{
	struct nt_inflight_key key = {
		.pid_tgid = bpf_get_current_pid_tgid(),
		.api = (__u32)bpf_get_attach_cookie(ctx),
	};
	return key;
}

/* The calling thread's native and Python stacks at a call's entry: what names its site. */
static __always_inline __s32 entry_stacks(struct pt_regs *ctx, __u64 *python_stack)
{
	__s32 stack_id = user_stack_id(ctx);

	if (stack_id != NT_NO_STACK)
		*python_stack = store_python_stack();
	return stack_id;
}

/* Keeps a call's entry for its return probe; a full map loses it (counted). */
static __always_inline void keep_inflight(void *map, const void *key, const void *call)
{
	if (bpf_map_update_elem(map, key, call, BPF_ANY))
		count_stat(NT_STAT_INFLIGHT_MAP_FULL);
}

static __always_inline int record_entry(struct pt_regs *ctx)
{
	struct nt_inflight_key key = inflight_key(ctx);
	struct nt_inflight_call call = {
		.proc_start_ns = current_process_start_ns(),
		.enter_ns = bpf_ktime_get_ns(),
		.args = {PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
			 PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx)},
		.context = current_context(),
		.stack_id = NT_NO_STACK,
	};

	/* A wait in progress names its site: the stack is taken now, while the thread waits. */
	if (is_sync(key.api)) {
		call.stack_id = entry_stacks(ctx, &call.python_stack);
		if (call.stack_id != NT_NO_STACK)
			call.caller = entry_return_address(ctx);
	}
	keep_inflight(&inflight, &key, &call);
	return 0;
}

SEC("uprobe")
int call_enter(struct pt_regs *ctx)
{
	return record_entry(ctx);
}

/*
 * The same, for calls probed per process together with the launches in adaptive mode
 * (uprobe_multi links, so loaded for that attach type; see CudaTracer).
 */
SEC("uprobe")
int sampled_call_enter(struct pt_regs *ctx)
{
	return record_entry(ctx);
}

static __always_inline __u64 read_user_u64(__u64 address)
{
	__u64 value = 0;

	if (address)
		bpf_probe_read_user(&value, sizeof(value), (const void *)address);
	return value;
}

static __always_inline __u32 read_user_u32(__u64 address)
{
	__u32 value = 0;

	if (address)
		bpf_probe_read_user(&value, sizeof(value), (const void *)address);
	return value;
}

/* Fills out[] with what the call wrote through its pointer arguments. */
static __always_inline void read_results(__u32 api, const __u64 *args, __u64 *out)
{
	__u64 desc = args[0];

	switch (api) {
	case NT_API_MEM_ALLOC_PITCH:
		out[1] = read_user_u64(args[1]);
		/* fallthrough */
	case NT_API_MEM_ALLOC:
	case NT_API_MEM_ALLOC_ASYNC:
	case NT_API_MEM_ALLOC_FROM_POOL_ASYNC:
	case NT_API_MEM_ALLOC_MANAGED:
	case NT_API_MEM_HOST_ALLOC:
	case NT_API_MEM_ALLOC_HOST:
	case NT_API_MEM_CREATE:
	case NT_API_KERNEL_GET_FUNCTION:
	case NT_API_PRIMARY_CTX_RETAIN:
	case NT_API_CTX_CREATE:
	case NT_API_CTX_CREATE_V3:
	case NT_API_CTX_CREATE_V4:
		out[0] = read_user_u64(args[0]);
		break;
	case NT_API_MEMCPY_2D:
	case NT_API_MEMCPY_2D_ASYNC:
	case NT_API_MEMCPY_2D_UNALIGNED:
		out[0] = read_user_u32(desc + NT_MEMCPY2D_SRC_MEMORY_TYPE) |
			 (__u64)read_user_u32(desc + NT_MEMCPY2D_DST_MEMORY_TYPE) << 32;
		out[1] = read_user_u64(desc + NT_MEMCPY2D_WIDTH_IN_BYTES) *
			 read_user_u64(desc + NT_MEMCPY2D_HEIGHT);
		break;
	case NT_API_MEMCPY_3D:
	case NT_API_MEMCPY_3D_ASYNC:
		out[0] = read_user_u32(desc + NT_MEMCPY3D_SRC_MEMORY_TYPE) |
			 (__u64)read_user_u32(desc + NT_MEMCPY3D_DST_MEMORY_TYPE) << 32;
		out[1] = read_user_u64(desc + NT_MEMCPY3D_WIDTH_IN_BYTES) *
			 read_user_u64(desc + NT_MEMCPY3D_HEIGHT) *
			 read_user_u64(desc + NT_MEMCPY3D_DEPTH);
		break;
	default:
		break;
	}
}

/* The calling thread's context state, created empty (or reset for a reused TID). */
static __always_inline struct nt_thread_context *thread_context(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 start = current_thread_start_ns();
	struct nt_thread_context *state = bpf_map_lookup_elem(&thread_contexts, &pid_tgid);

	if (state && state->thread_start_ns == start)
		return state;
	struct nt_thread_context fresh = {.thread_start_ns = start};
	bpf_map_update_elem(&thread_contexts, &pid_tgid, &fresh, BPF_ANY);
	return bpf_map_lookup_elem(&thread_contexts, &pid_tgid);
}

static __always_inline void push_context(__u64 context)
{
	struct nt_thread_context *state = thread_context();

	if (!state)
		return;
	if (state->depth < NT_CONTEXT_STACK_DEPTH) {
		__u32 depth = state->depth;
		if (depth < NT_CONTEXT_STACK_DEPTH)
			state->saved[depth] = state->current;
		state->depth = depth + 1;
	} else {
		/* Deeper stacks than we keep: forget the oldest. */
		state->saved[0] = state->saved[1];
		state->saved[1] = state->saved[2];
		state->saved[2] = state->current;
	}
	state->current = context;
}

/* cuCtxSetCurrent(CUcontext): replaces the top of the thread's context stack. */
SEC("uprobe")
int BPF_KPROBE(context_set, __u64 context)
{
	struct nt_thread_context *state = thread_context();

	if (state)
		state->current = context;
	return 0;
}

/* cuCtxPushCurrent(CUcontext) */
SEC("uprobe")
int BPF_KPROBE(context_push, __u64 context)
{
	push_context(context);
	return 0;
}

/* cuCtxPopCurrent(CUcontext *): the context below becomes current (0 past what we kept). */
SEC("uprobe")
int context_pop(struct pt_regs *ctx)
{
	struct nt_thread_context *state = thread_context();
	__u32 depth;

	if (!state)
		return 0;
	depth = state->depth;
	if (depth > 0 && depth <= NT_CONTEXT_STACK_DEPTH) {
		state->current = state->saved[depth - 1];
		state->depth = depth - 1;
	} else {
		state->current = 0;
	}
	return 0;
}

/*
 * A successful cuKernelGetFunction whose (function, kernel) pair this process already sent:
 * true. Otherwise `pair` and `kernel` say what to remember once its event has room in the ring
 * (pair->function stays 0 for other calls).
 */
static __always_inline bool known_kernel_function(struct pt_regs *ctx,
						  const struct nt_inflight_key *key,
						  const struct nt_inflight_call *call,
						  struct nt_kernel_function_key *pair, __u64 *kernel)
{
	__u64 *known;

	if (key->api != NT_API_KERNEL_GET_FUNCTION || PT_REGS_RC(ctx) != 0)
		return false;
	pair->tgid = key->pid_tgid >> 32;
	pair->proc_start_ns = call->proc_start_ns;
	pair->function = read_user_u64(call->args[0]);
	*kernel = call->args[1];
	known = bpf_map_lookup_elem(&known_kernel_functions, pair);
	return known && *known == *kernel;
}

static __always_inline int report_call(struct pt_regs *ctx)
{
	struct nt_inflight_key key = inflight_key(ctx);
	struct nt_inflight_call *call = bpf_map_lookup_elem(&inflight, &key);
	struct nt_kernel_function_key pair = {};
	struct nt_call_event *event;
	__u64 kernel = 0, python_stack;

	if (!call) {
		count_stat(NT_STAT_RETURN_WITHOUT_ENTRY);
		return 0;
	}
	if (known_kernel_function(ctx, &key, call, &pair, &kernel)) {
		bpf_map_delete_elem(&inflight, &key);
		return 0;
	}
	/* Walked before the ring record is reserved: no call with a reservation held. */
	python_stack = is_allocation(key.api) ? store_python_stack() : call->python_stack;
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		count_stat(NT_STAT_RINGBUF_FULL);
		bpf_map_delete_elem(&inflight, &key);
		return 0;
	}
	event->kind = NT_EVENT_CALL;
	event->api = key.api;
	event->tgid = key.pid_tgid >> 32;
	event->tid = (__u32)key.pid_tgid;
	event->proc_start_ns = call->proc_start_ns;
	event->enter_ns = call->enter_ns;
	event->exit_ns = bpf_ktime_get_ns();
	event->result = (__u32)PT_REGS_RC(ctx);
	for (int i = 0; i < 5; i++)
		event->args[i] = call->args[i];
	event->out[0] = 0;
	event->out[1] = 0;
	event->context = call->context;
	/* An allocation's stack at its return starts at the call site, failures included. */
	event->stack_id = is_allocation(key.api) ? user_stack_id(ctx) : call->stack_id;
	event->caller = is_allocation(key.api) ? 0 : call->caller;
	event->python_stack = python_stack;
	if (event->result == 0)
		read_results(key.api, call->args, event->out);
	/* A created context is pushed on the creating thread's stack. */
	if (event->result == 0 && (key.api == NT_API_CTX_CREATE || key.api == NT_API_CTX_CREATE_V3 ||
				   key.api == NT_API_CTX_CREATE_V4))
		push_context(event->out[0]);
	bpf_map_delete_elem(&inflight, &key);
	bpf_ringbuf_submit(event, event_wakeup());
	if (pair.function)
		bpf_map_update_elem(&known_kernel_functions, &pair, &kernel, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int call_exit(struct pt_regs *ctx)
{
	return report_call(ctx);
}

SEC("uretprobe")
int sampled_call_exit(struct pt_regs *ctx)
{
	return report_call(ctx);
}

/*
 * cuModuleGetFunction / cuLibraryGetKernel(out handle, owner, const char *name).
 * The event is built in a per-CPU buffer and only the bytes the name holds go into the ring:
 * fixed 4 KiB records let the ring carry a few thousand names; most names are under 100 bytes.
 */
SEC("uretprobe")
int name_exit(struct pt_regs *ctx)
{
	struct nt_inflight_key key = inflight_key(ctx);
	struct nt_inflight_call *call = bpf_map_lookup_elem(&inflight, &key);
	struct nt_name_event *event;
	__u32 zero = 0;
	__u64 name_len;
	long copied;

	if (!call) {
		count_stat(NT_STAT_RETURN_WITHOUT_ENTRY);
		return 0;
	}
	event = bpf_map_lookup_elem(&name_scratch, &zero);
	if (!event) {
		bpf_map_delete_elem(&inflight, &key);
		return 0;
	}
	event->kind = NT_EVENT_NAME;
	event->api = key.api;
	event->tgid = key.pid_tgid >> 32;
	event->tid = (__u32)key.pid_tgid;
	event->proc_start_ns = call->proc_start_ns;
	event->result = (__u32)PT_REGS_RC(ctx);
	event->handle = event->result == 0 ? read_user_u64(call->args[0]) : 0;
	event->owner = call->args[1];
	copied = bpf_probe_read_user_str(event->name, sizeof(event->name),
					 (const void *)call->args[2]);
	name_len = copied > 0 ? (__u64)copied : 0;
	if (name_len > NT_NAME_MAX)
		name_len = NT_NAME_MAX;
	event->name_len = (__u32)name_len;
	if (bpf_ringbuf_output(&events, event, offsetof(struct nt_name_event, name) + name_len,
			       event_wakeup()))
		count_stat(NT_STAT_RINGBUF_FULL);
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}

/*
 * PyTorch's caching allocator, through its static tracepoints (docs/allocator-view.md); attached
 * per process, only while its allocator view is open. A sampled block's address is kept until its
 * free, so that only the frees of sampled blocks reach user space.
 */
const volatile __u64 allocator_sample_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_HASH); /* not LRU: a block forgotten here would look leaked */
	__uint(max_entries, NT_SAMPLED_BLOCKS_ENTRIES);
	__type(key, struct nt_block_key);
	__type(value, __u64); /* weight */
} sampled_blocks SEC(".maps");

/* The bytes a block of `bytes` stands for when sampled, 0 when it is not sampled. */
static __always_inline __u64 block_weight(__u64 bytes)
{
	__u64 every = allocator_sample_bytes;
	__u64 draw;

	if (every <= 1 || bytes >= every)
		return bytes;
	draw = ((__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32()) % every;
	return draw < bytes ? every : 0;
}

/* pytorch:malloc(void *ptr, int8 device, size_t size, int64 stream), after the block is chosen. */
SEC("usdt")
int torch_block_alloc(struct pt_regs *ctx)
{
	long address = 0, device = 0, size = 0, stream = 0;
	struct nt_block_event *event;
	struct nt_block_key key = {};
	__u64 weight, python_stack;
	__s32 stack_id;

	if (bpf_usdt_arg(ctx, 0, &address) || bpf_usdt_arg(ctx, 2, &size) || !address ||
	    size <= 0)
		return 0;
	bpf_usdt_arg(ctx, 1, &device);
	bpf_usdt_arg(ctx, 3, &stream);
	weight = block_weight((__u64)size);
	if (!weight)
		return 0;
	key.tgid = bpf_get_current_pid_tgid() >> 32;
	key.address = (__u64)address;
	if (bpf_map_update_elem(&sampled_blocks, &key, &weight, BPF_ANY)) {
		/* Untracked: its free could not be matched, so it is not sent at all. */
		count_stat(NT_STAT_SAMPLED_BLOCKS_FULL);
		return 0;
	}
	/* Walked before the ring record is reserved: no call with a reservation held. */
	python_stack = store_python_stack();
	stack_id = user_stack_id(ctx);
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		count_stat(NT_STAT_RINGBUF_FULL);
		bpf_map_delete_elem(&sampled_blocks, &key);
		return 0;
	}
	event->kind = NT_EVENT_BLOCK;
	event->op = NT_BLOCK_ALLOC;
	event->tgid = key.tgid;
	event->tid = (__u32)bpf_get_current_pid_tgid();
	event->proc_start_ns = current_process_start_ns();
	event->time_ns = bpf_ktime_get_ns();
	event->address = (__u64)address;
	event->bytes = (__u64)size;
	event->weight = weight;
	event->stream = (__u64)stream;
	event->device = (__s32)device;
	event->stack_id = stack_id;
	event->python_stack = python_stack;
	bpf_ringbuf_submit(event, event_wakeup());
	return 0;
}

/* pytorch:free(void *ptr), when the block goes back to the pool. */
SEC("usdt")
int torch_block_free(struct pt_regs *ctx)
{
	struct nt_block_key key = {};
	struct nt_block_event *event;
	long address = 0;

	if (bpf_usdt_arg(ctx, 0, &address) || !address)
		return 0;
	key.tgid = bpf_get_current_pid_tgid() >> 32;
	key.address = (__u64)address;
	if (bpf_map_delete_elem(&sampled_blocks, &key))
		return 0; /* not sampled, or handed out before the view opened */
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		count_stat(NT_STAT_RINGBUF_FULL);
		return 0;
	}
	__builtin_memset(event, 0, sizeof(*event));
	event->kind = NT_EVENT_BLOCK;
	event->op = NT_BLOCK_FREE;
	event->tgid = key.tgid;
	event->tid = (__u32)bpf_get_current_pid_tgid();
	event->proc_start_ns = current_process_start_ns();
	event->time_ns = bpf_ktime_get_ns();
	event->address = (__u64)address;
	event->stack_id = NT_NO_STACK;
	bpf_ringbuf_submit(event, event_wakeup());
	return 0;
}

#include "nccl_calls.bpf.h"
