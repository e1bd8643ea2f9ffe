/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* Dual-licensed: the GPL-2.0 BPF programs and the Apache-2.0 daemon both include this header. */
/*
 * The one contract between the BPF programs and the daemon: API identifiers,
 * map keys and ring-buffer events. Fixed-width fields, explicit padding; the
 * C++ side static_asserts sizes and offsets (cuda/event_decoder.h).
 */
#ifndef NEUTRACER_ABI_H
#define NEUTRACER_ABI_H

#ifdef __BPF__
typedef __u8 nt_u8;
typedef __u32 nt_u32;
typedef __s32 nt_s32;
typedef __u64 nt_u64;
#else
#include <stdint.h>
typedef uint8_t nt_u8;
typedef uint32_t nt_u32;
typedef int32_t nt_s32;
typedef uint64_t nt_u64;
#endif

/*
 * Probed driver entry points. The value is the uprobe's BPF cookie, so one
 * program serves every symbol of the same shape (`_v2`, `_ptsz`, `_ptds`
 * twins share their base API's id).
 */
enum nt_api {
	NT_API_NONE = 0,
	/* launches: entry probe only, counted in the kernel */
	NT_API_LAUNCH_KERNEL = 1,
	NT_API_LAUNCH_KERNEL_EX,
	NT_API_LAUNCH_COOPERATIVE_KERNEL,
	NT_API_GRAPH_LAUNCH,
	/* kernel naming */
	NT_API_MODULE_GET_FUNCTION = 10,
	NT_API_LIBRARY_GET_KERNEL,
	NT_API_KERNEL_GET_FUNCTION,
	/* allocations: arg1 = out pointer, arg2 = size (pitch: see below) */
	NT_API_MEM_ALLOC = 20,
	NT_API_MEM_ALLOC_PITCH,
	NT_API_MEM_ALLOC_ASYNC,
	NT_API_MEM_ALLOC_FROM_POOL_ASYNC,
	NT_API_MEM_ALLOC_MANAGED,
	NT_API_MEM_HOST_ALLOC,
	NT_API_MEM_ALLOC_HOST,
	NT_API_MEM_CREATE,
	/* frees: arg1 = address or handle */
	NT_API_MEM_FREE = 40,
	NT_API_MEM_FREE_ASYNC,
	NT_API_MEM_FREE_HOST,
	NT_API_MEM_RELEASE,
	/* copies: arg1 = dst, arg2 = src, arg3 = bytes unless noted */
	NT_API_MEMCPY_HTOD = 50,
	NT_API_MEMCPY_DTOH,
	NT_API_MEMCPY_DTOD,
	NT_API_MEMCPY_HTOD_ASYNC,
	NT_API_MEMCPY_DTOH_ASYNC,
	NT_API_MEMCPY_DTOD_ASYNC,
	NT_API_MEMCPY,
	NT_API_MEMCPY_ASYNC,
	NT_API_MEMCPY_PEER,       /* bytes = arg5 */
	NT_API_MEMCPY_PEER_ASYNC, /* bytes = arg5 */
	NT_API_MEMCPY_2D,         /* arg1 = const CUDA_MEMCPY2D* */
	NT_API_MEMCPY_2D_ASYNC,
	NT_API_MEMCPY_2D_UNALIGNED,
	NT_API_MEMCPY_3D, /* arg1 = const CUDA_MEMCPY3D* */
	NT_API_MEMCPY_3D_ASYNC,
	/* synchronisation */
	NT_API_STREAM_SYNCHRONIZE = 70,
	NT_API_CTX_SYNCHRONIZE,
	NT_API_EVENT_SYNCHRONIZE,
	/*
	 * Contexts, for the device of each call: the thread's current context
	 * (set, push, pop: entry probes only) joined with context -> device
	 * (primary-context retain and context creation: out[0] = the context).
	 */
	NT_API_CTX_SET_CURRENT = 80,
	NT_API_CTX_PUSH_CURRENT,
	NT_API_CTX_POP_CURRENT,
	NT_API_PRIMARY_CTX_RETAIN, /* (CUcontext *out, CUdevice dev) */
	NT_API_CTX_CREATE,         /* _v2 (CUcontext *out, flags, CUdevice dev) */
	NT_API_CTX_CREATE_V3,      /* (out, params, count, flags, CUdevice dev) */
	NT_API_CTX_CREATE_V4,      /* (out, const CUctxCreateParams *, flags, CUdevice dev) */
	NT_API_MAX = 96,
};

/* Contexts pushed over the current one that a thread can pop back to. */
#define NT_CONTEXT_STACK_DEPTH 3

/* A thread's current CUDA context (key: pid_tgid), as its set/push/pop calls left it. */
struct nt_thread_context {
	nt_u64 thread_start_ns; /* the thread's start_boottime: a reused TID starts empty */
	nt_u64 current;         /* CUcontext; 0 when unknown */
	nt_u64 saved[NT_CONTEXT_STACK_DEPTH];
	nt_u32 depth;
	nt_u32 pad;
};

/* Layout of the driver's copy descriptors (cuda.h), read by the return probe. */
#define NT_MEMCPY2D_SRC_MEMORY_TYPE 16
#define NT_MEMCPY2D_DST_MEMORY_TYPE 72
#define NT_MEMCPY2D_WIDTH_IN_BYTES 112
#define NT_MEMCPY2D_HEIGHT 120
#define NT_MEMCPY3D_SRC_MEMORY_TYPE 32
#define NT_MEMCPY3D_DST_MEMORY_TYPE 120
#define NT_MEMCPY3D_WIDTH_IN_BYTES 176
#define NT_MEMCPY3D_HEIGHT 184
#define NT_MEMCPY3D_DEPTH 192

/* Longest kernel name copied out of a traced process (mangled, NUL included). */
#define NT_NAME_MAX 4096

/*
 * Native call stacks (docs/architecture.md, "Call sites"). The kernel walks the calling
 * thread's user stack through frame pointers into the stack-trace map `stacks` (one map, shared
 * by cuda_launch and cuda_calls); records carry the id it returns. An id is a hash bucket: a
 * different stack whose hash lands on an occupied bucket is not stored (no BPF_F_REUSE_STACKID,
 * so an id never changes meaning while user space may hold it), and the record carries
 * NT_NO_STACK instead, counted in NT_STAT_STACK_LOST. User space deletes ids nothing refers to.
 *
 * Stacks taken at a function's entry (sync calls, sampled launches) also carry `caller`, the
 * return address on top of the stack: kernels without perf's uprobe-at-entry fix-up skip the
 * immediate caller there (the probed function has not pushed its frame yet). Stacks taken at a
 * return probe (allocations) start at the call site itself.
 */
#define NT_NO_STACK (-1)
/* Frames kept per stack at most: the kernel's default kernel.perf_event_max_stack. */
#define NT_STACK_MAX_DEPTH 127

/* Sampled launch stacks: key -> __u64 samples (1 in `launch_stack_every` launches, jittered). */
struct nt_launch_stack_key {
	nt_u32 tgid;
	nt_s32 stack_id;
	nt_u64 proc_start_ns;
	nt_u64 caller; /* return address at the launch API's entry */
	nt_u64 python_stack; /* the key of the launching thread's Python stack in python_stacks; 0: none */
};

/*
 * Adaptive launch counting: a process's counting window, tgid -> gate. The launch program
 * counts only while `open` is 1, and times the launches it counts, so the daemon sees how long
 * the window's launches took apart from the time the window stood open (docs/architecture.md).
 */
struct nt_launch_gate {
	nt_u32 open;
	nt_u32 pad;
	nt_u64 first_ns; /* bpf_ktime_get_ns of the window's first counted launch; 0: none yet */
	nt_u64 last_ns;  /* of its latest counted launch */
	nt_u64 launches; /* counted in the window (every thread of the process) */
};

/* In-kernel launch counter: key -> __u64 count. */
struct nt_launch_key {
	nt_u32 tgid;
	nt_u32 api;
	nt_u64 proc_start_ns; /* group leader's start_boottime: PID reuse never mixes processes */
	nt_u64 handle;        /* CUfunction / CUkernel / CUgraphExec */
	nt_u64 context;       /* the launching thread's current CUcontext, 0 when unknown */
};

/*
 * cuKernelGetFunction results already sent: (process, CUfunction) -> CUkernel. PyTorch asks
 * before most launches; a call that returns a pair already sent sends no event (no ring-buffer
 * record, no wake-up of the daemon), which is most of what the call cost the launching thread.
 */
struct nt_kernel_function_key {
	nt_u32 tgid;
	nt_u32 pad;
	nt_u64 proc_start_ns;
	nt_u64 function;
};

/* A call between its entry and return probe, keyed by thread and API. */
struct nt_inflight_key {
	nt_u64 pid_tgid;
	nt_u32 api;
	nt_u32 pad;
};

struct nt_inflight_call {
	nt_u64 proc_start_ns;
	nt_u64 enter_ns; /* CLOCK_MONOTONIC */
	nt_u64 args[5];
	nt_u64 context; /* the calling thread's current CUcontext at entry, 0 when unknown */
	nt_s32 stack_id; /* sync calls: the waiting thread's stack at entry; else NT_NO_STACK */
	nt_u32 pad;
	nt_u64 caller; /* with stack_id: the return address at entry */
	nt_u64 python_stack; /* sync calls: the waiting thread's Python stack (python_stacks key) */
};

enum nt_event_kind {
	NT_EVENT_CALL = 1,
	NT_EVENT_NAME = 2,
	NT_EVENT_BLOCK = 3,
	NT_EVENT_NCCL = 4,
};

/* A completed call (allocation, free, copy, sync, kernel->function link). */
struct nt_call_event {
	nt_u32 kind; /* NT_EVENT_CALL */
	nt_u32 api;
	nt_u32 tgid;
	nt_u32 tid;
	nt_u64 proc_start_ns;
	nt_u64 enter_ns;
	nt_u64 exit_ns;
	nt_u32 result; /* CUresult */
	/*
	 * Allocations: the caller's stack at return (failed ones too); sync calls: the stack at
	 * entry (with `caller`); NT_NO_STACK otherwise, or when stacks are off or lost.
	 */
	nt_s32 stack_id;
	nt_u64 args[5];
	/*
	 * Values read at return: allocations out[0] = address/handle (pitch:
	 * out[1] = pitch); cuKernelGetFunction out[0] = CUfunction; 2D/3D copies
	 * out[0] = src memory type | dst memory type << 32, out[1] = bytes;
	 * primary-context retain and context creation out[0] = CUcontext.
	 */
	nt_u64 out[2];
	nt_u64 context; /* the calling thread's current CUcontext at entry, 0 when unknown */
	nt_u64 caller;  /* sync calls with a stack: the return address at entry; else 0 */
	/*
	 * Allocations (at return) and sync calls (at entry) by a thread of a Python process
	 * (python_processes has it): the key of the thread's Python stack in `python_stacks` (a
	 * hash of the process and its frames); 0 for none (not Python, stacks off, no frames).
	 */
	nt_u64 python_stack;
};

/*
 * A kernel handle and its mangled name, from cuModuleGetFunction / cuLibraryGetKernel. A record
 * in the ring buffer carries only the name's bytes: it is offsetof(name) + min(name_len,
 * NT_NAME_MAX) bytes long.
 */
struct nt_name_event {
	nt_u32 kind; /* NT_EVENT_NAME */
	nt_u32 api;
	nt_u32 tgid;
	nt_u32 tid;
	nt_u64 proc_start_ns;
	nt_u32 result;
	nt_u32 name_len; /* bytes copied including NUL; 0 when unreadable */
	nt_u64 handle;   /* CUfunction or CUkernel */
	nt_u64 owner;    /* CUmodule or CUlibrary */
	char name[NT_NAME_MAX];
};

/*
 * PyTorch's caching allocator (docs/allocator-view.md): a tensor block handed out
 * (pytorch:malloc) or taken back (pytorch:free), from the static tracepoints of libc10_cuda.so,
 * attached only to processes whose allocator view is open. Blocks are sampled by bytes: a block
 * of `allocator_sample_bytes` or more always, a smaller one with probability bytes /
 * allocator_sample_bytes; a free is sent only for a sampled block.
 */
enum nt_block_op {
	NT_BLOCK_ALLOC = 1,
	NT_BLOCK_FREE = 2,
};

struct nt_block_event {
	nt_u32 kind; /* NT_EVENT_BLOCK */
	nt_u32 op;   /* enum nt_block_op */
	nt_u32 tgid;
	nt_u32 tid;
	nt_u64 proc_start_ns;
	nt_u64 time_ns;
	nt_u64 address;
	nt_u64 bytes;  /* alloc: the block's size */
	nt_u64 weight; /* alloc: the bytes the sample stands for (>= bytes) */
	nt_u64 stream; /* alloc: the stream id PyTorch passed */
	nt_s32 device; /* alloc: the device index */
	nt_s32 stack_id; /* alloc: the allocating thread's native stack, NT_NO_STACK if none */
	nt_u64 python_stack; /* alloc: its Python stack (python_stacks key), 0 if none */
};

/* Sampled live blocks, so that only their frees are sent. */
struct nt_block_key {
	nt_u32 tgid;
	nt_u32 pad;
	nt_u64 address;
};

#define NT_SAMPLED_BLOCKS_ENTRIES 65536

/*
 * NCCL calls (libnccl.so, as a process maps it): the attach cookie of nccl_enter/nccl_exit.
 * Collectives and point-to-point calls first, then the communicator's life.
 */
enum nt_nccl_op {
	NT_NCCL_NONE = 0,
	NT_NCCL_ALL_REDUCE = 1,
	NT_NCCL_BROADCAST,
	NT_NCCL_REDUCE,
	NT_NCCL_ALL_GATHER,
	NT_NCCL_REDUCE_SCATTER,
	NT_NCCL_SEND,
	NT_NCCL_RECV,
	NT_NCCL_COMM_INIT_RANK,
	NT_NCCL_COMM_INIT_RANK_CONFIG,
	NT_NCCL_COMM_INIT_RANK_SCALABLE,
	NT_NCCL_COMM_SPLIT,
	NT_NCCL_COMM_DESTROY,
	NT_NCCL_COMM_ABORT,
	NT_NCCL_OP_MAX,
};

/* An NCCL call between its entry and its return, per thread; sent whole with its result. */
struct nt_nccl_inflight {
	nt_u64 proc_start_ns;
	nt_u64 enter_ns;
	nt_u64 comm;  /* ncclComm_t: the call's communicator; init and split: the new one */
	nt_u64 count; /* elements (collectives, send/recv) */
	nt_u64 comm_out; /* init and split, at entry: where the new ncclComm_t is written */
	/*
	 * Init: the first 16 bytes of the ncclUniqueId folded into one word, the same in every
	 * rank of the communicator; split: the parent communicator. Else 0.
	 */
	nt_u64 comm_key;
	nt_u64 python_stack; /* collectives: the caller's Python stack (python_stacks key), 0 if none */
	nt_u64 caller;       /* with stack_id: the return address at entry; else 0 */
	/*
	 * Collectives: the number of this one among the communicator's collectives in this process,
	 * from 1, counted at entry in the kernel: a lost event leaves a gap instead of shifting the
	 * count. 0 for other calls.
	 */
	nt_u64 sequence;
	nt_u32 datatype; /* ncclDataType_t (collectives, send/recv) */
	/*
	 * Init: the rank (scalable: myrank) and nranks; split: color in `rank`, nranks -1;
	 * broadcast/reduce: the root in `rank`; send/recv: the peer in `rank`; else -1.
	 */
	nt_s32 rank;
	nt_s32 nranks;
	nt_s32 stack_id; /* collectives: the calling thread's stack at entry; else NT_NO_STACK */
};

/*
 * One NCCL call, sent at its return. A collective is enqueued on its stream when the call
 * returns: the times are the host's arrival and enqueue, not the GPU's completion.
 */
struct nt_nccl_event {
	nt_u32 kind; /* NT_EVENT_NCCL */
	nt_u32 op;   /* enum nt_nccl_op */
	nt_u32 tgid;
	nt_u32 tid;
	nt_u64 exit_ns;
	nt_u32 result; /* ncclResult_t */
	nt_u32 pad;
	struct nt_nccl_inflight call; /* comm: the new communicator once an init or split wrote it */
};

/* Per-CPU counters of things the BPF side had to drop. */
enum nt_stat {
	NT_STAT_RINGBUF_FULL = 0,      /* event lost: ring buffer full */
	NT_STAT_LAUNCH_MAP_FULL,       /* launch not counted: map full */
	NT_STAT_INFLIGHT_MAP_FULL,     /* call entry not recorded: map full */
	NT_STAT_RETURN_WITHOUT_ENTRY,  /* return probe found no entry */
	NT_STAT_STACK_LOST,            /* stack not stored: its id's bucket holds another, or no walk */
	NT_STAT_LAUNCH_STACKS_FULL,    /* sampled launch stack not counted: map full */
	NT_STAT_SAMPLED_BLOCKS_FULL,   /* sampled tensor block not kept: its free will not be seen */
	NT_STAT_MAX,
};

/*
 * OS metrics of traced processes (os_sched, os_block, os_net). User space fills
 * traced_tgids (tgid -> struct nt_os_traced); every program returns at once for
 * other processes.
 */
struct nt_os_traced {
	nt_u64 proc_start_ns;   /* ns after boot, tick precision; 0 matches any start */
	nt_u64 traced_since_ns; /* CLOCK_MONOTONIC: bounds intervals begun before tracing */
};

/*
 * Block IO latency, from the request's start (block_io_start: queueing in the
 * scheduler included, like iostat's await) to its completion. Slot i counts
 * requests that took [2^i, 2^(i+1)) microseconds (slot 0 also takes < 1 us);
 * the last slot takes everything from 2^(NT_OS_IO_LATENCY_SLOTS-1) us up.
 */
#define NT_OS_IO_LATENCY_SLOTS 24

/* Per-process counters: a per-CPU hash keyed by tgid; user space sums the CPUs. */
struct nt_os_counters {
	/* scheduler, summed over the process's threads (os_sched) */
	nt_u64 oncpu_ns;
	nt_u64 offcpu_ns;        /* not running: blocked or waiting for a CPU */
	nt_u64 runqueue_wait_ns; /* runnable but waiting for a CPU */
	nt_u64 migrations;       /* moves to another CPU */
	nt_u64 numa_migrations;  /* moves to a CPU of another NUMA node */
	/* block layer, attributed to the task that submitted the request (os_block) */
	nt_u64 io_read_bytes;
	nt_u64 io_write_bytes;
	nt_u64 io_read_ops;
	nt_u64 io_write_ops;
	nt_u64 io_latency_sum_ns;
	nt_u64 io_latency_slots[NT_OS_IO_LATENCY_SLOTS];
	/* IPv4/IPv6 sockets (os_net) */
	nt_u64 net_tx_bytes; /* returned by send calls */
	nt_u64 net_rx_bytes; /* returned by receive calls (MSG_PEEK excluded) */
	nt_u64 net_tx_packets; /* TCP segments (ACKs included) + one per datagram send */
	nt_u64 net_rx_packets;
	nt_u64 tcp_connections; /* ESTABLISHED sockets: +1/-1 per CPU, sum as signed 64-bit */
};

/*
 * Per-thread scheduler state (key: tid) at the thread's last observation
 * (switch-in, switch-out): times count from there to the next one.
 */
struct nt_os_thread {
	nt_u32 tgid;
	nt_u32 on_cpu;       /* 1 after a switch-in, 0 after a switch-out */
	nt_u64 seen_ns;      /* CLOCK_MONOTONIC */
	nt_u64 runtime_ns;   /* the task's se.sum_exec_runtime then */
	nt_u64 run_delay_ns; /* the task's sched_info.run_delay then */
};

/* A block request between its start and completion (key: struct request address). */
struct nt_os_io_start {
	nt_u32 tgid;
	nt_u32 pad;
	nt_u64 proc_start_ns;
	nt_u64 start_ns; /* CLOCK_MONOTONIC */
};

/* A TCP socket used by a traced process (key: struct sock address). */
struct nt_os_socket {
	nt_u32 tgid;
	nt_u32 established; /* 1 while counted in tcp_connections */
	nt_u64 proc_start_ns;
	nt_u32 segs_out; /* tcp_sock segs_out / segs_in already attributed */
	nt_u32 segs_in;
};

/* Per-CPU counters of OS map insertions that failed (map full). */
enum nt_os_stat {
	NT_OS_STAT_COUNTERS_MAP_FULL = 0,
	NT_OS_STAT_THREADS_MAP_FULL,
	NT_OS_STAT_IO_MAP_FULL,
	NT_OS_STAT_SOCKETS_MAP_FULL,
	NT_OS_STAT_MAX,
};

/* ==== Python frames (pystacks/, bpf/python_frames.bpf.h) ==== */

/* Frames a walk records, innermost first; deeper stacks are truncated (NT_PYTHON_TRUNCATED). */
#define NT_PYTHON_FRAMES_MAX 64
/* Thread states a walk looks through for the calling thread. */
#define NT_PYTHON_THREADS_MAX 128
/*
 * A frame's fields are read in one go: its first bytes, up to the last field the walk uses,
 * which must end below this many bytes (pointer fields 8-aligned, f_lasti 4-aligned).
 */
#define NT_PYTHON_FRAME_WINDOW 128
/* An offset the interpreter version does not have. */
#define NT_PYTHON_NO_FIELD 0xffffffffu

/* How a PyThreadState is matched to the calling thread. */
enum nt_python_thread_match {
	NT_PYTHON_MATCH_NATIVE_ID = 1, /* 3.11+: native_thread_id == the thread's TID */
	NT_PYTHON_MATCH_PTHREAD = 2,   /* 3.9, 3.10: thread_id (pthread_self()) == the fs base */
};

/*
 * One Python process (key: tgid), filled by user space (pystacks/python_offsets.h,
 * to_abi_offsets): where _PyRuntime is and the offsets of what a frame walk reads, for the
 * process's CPython version. Offsets are in bytes from the start of each structure.
 */
struct nt_python_offsets {
	nt_u64 runtime_address; /* &_PyRuntime in the process */
	/*
	 * The group leader's start (start_ticks * ns_per_tick, as /proc/<pid>/stat gives it) or 0
	 * for any: a reused PID does not match. Compared in ticks (start_boottime / ns_per_tick).
	 */
	nt_u64 proc_start_ns;
	nt_u64 ns_per_tick;
	nt_u32 version;         /* major << 8 | minor, for user space */
	nt_u32 thread_match;    /* enum nt_python_thread_match */
	nt_u32 runtime_interpreters_head; /* _PyRuntimeState.interpreters.head */
	nt_u32 interp_threads_head;       /* PyInterpreterState tstate_head / threads.head */
	nt_u32 thread_next;               /* PyThreadState.next */
	nt_u32 thread_id;                 /* PyThreadState.thread_id or .native_thread_id */
	nt_u32 thread_frame;  /* PyThreadState .frame (3.9, 3.10), .cframe, .current_frame (3.13) */
	nt_u32 cframe_current_frame; /* _PyCFrame.current_frame (3.11, 3.12), else NO_FIELD */
	nt_u32 frame_previous;       /* f_back / previous */
	nt_u32 frame_code;           /* f_code / f_executable */
	nt_u32 frame_instr;          /* f_lasti (int) / prev_instr / instr_ptr (pointers) */
	nt_u32 frame_instr_size;     /* 4 for f_lasti, 8 for a pointer */
	nt_u32 frame_owner;          /* _PyInterpreterFrame.owner (3.12+), else NO_FIELD */
	nt_u32 frame_owner_skip;     /* owner value of frames that are not Python's (CSTACK) */
};

/* One frame: the code object and where it is (f_lasti, or the instruction pointer). */
struct nt_python_frame {
	nt_u64 code;
	nt_u64 instr;
};

enum nt_python_stack_status {
	NT_PYTHON_TRUNCATED = 1,        /* more frames than NT_PYTHON_FRAMES_MAX */
	NT_PYTHON_NO_THREAD_STATE = 2,  /* no PyThreadState of this thread (not Python's) */
	NT_PYTHON_READ_FAILED = 4,      /* the process's memory could not be read (paged out) */
	NT_PYTHON_NOT_PYTHON = 8,       /* no offsets for this process */
};

/* A thread's Python stack: depth frames, innermost first. */
struct nt_python_stack {
	nt_u32 depth;
	nt_u32 status; /* enum nt_python_stack_status bits */
	struct nt_python_frame frames[NT_PYTHON_FRAMES_MAX];
};

/* Python stacks of allocations kept for user space to read (LRU; key: nt_call_event.python_stack). */
#define NT_PYTHON_STACKS_ENTRIES 2048

/*
 * A Python stack's key in python_stacks: FNV-1a over the process and each frame's words, then
 * the status; never 0. The probes store a stack under it; user space checks a stack it reads
 * against its key (a probe preempted between hashing and storing its per-CPU buffer could store
 * another thread's frames).
 */
static inline nt_u64 nt_python_stack_key(nt_u32 tgid, const struct nt_python_stack *stack)
{
	nt_u64 key = 0xcbf29ce484222325ull ^ tgid;

	for (nt_u32 i = 0; i < NT_PYTHON_FRAMES_MAX; i++) {
		if (i >= stack->depth)
			break;
		key = (key ^ stack->frames[i].code) * 0x100000001b3ull;
		key = (key ^ stack->frames[i].instr) * 0x100000001b3ull;
	}
	key = (key ^ stack->status) * 0x100000001b3ull;
	return key ? key : 1;
}

/* ==== end of Python frames ==== */

#endif /* NEUTRACER_ABI_H */
