/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The calling thread's Python frames, walked in the kernel through the interpreter's own
 * structures (docs/python-frames.md): _PyRuntime -> interpreters.head -> its thread
 * states, the one whose thread id is the caller's -> its current frame -> previous frames.
 * Each frame is recorded as (code object, instruction); user space turns those into file,
 * function and line (pystacks/python_frame_resolver.h).
 *
 * Include it once per BPF object (it defines the maps below), fill python_processes from user
 * space (pystacks to_abi_offsets), then call read_python_stack() with a buffer in map or
 * ring-buffer memory (struct nt_python_stack is too big for the BPF stack).
 */
#ifndef NEUTRACER_PYTHON_FRAMES_BPF_H
#define NEUTRACER_PYTHON_FRAMES_BPF_H

#include "common.bpf.h"

_Static_assert((NT_PYTHON_FRAMES_MAX & (NT_PYTHON_FRAMES_MAX - 1)) == 0,
	       "frame slots are indexed with a mask");

/*
 * python_processes: tgid -> offsets of its CPython, written by user space.
 * python_thread_states: pid_tgid -> the thread's PyThreadState as last found (checked again
 * before each use: a thread state is freed with its thread and the address reused).
 * Objects that include this header each get both; a loader shares one pair between them
 * with bpf_map__reuse_fd, as CudaTracer does for thread_contexts.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct nt_python_offsets);
} python_processes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} python_thread_states SEC(".maps");

/* Whether the offsets were written for this process and not an earlier one of the same PID. */
static __always_inline int python_same_process(const struct nt_python_offsets *py)
{
	if (!py->proc_start_ns || !py->ns_per_tick)
		return 1;
	return py->proc_start_ns / py->ns_per_tick == current_process_start_ns() / py->ns_per_tick;
}

/* Reads a user-space word; sets *failed when the page is not there (or the address is bad). */
static __always_inline __u64 python_read_u64(__u64 address, __u32 *failed)
{
	__u64 value = 0;

	if (bpf_probe_read_user(&value, sizeof(value), (const void *)address))
		*failed = 1;
	return value;
}

/* What the thread state's id field must hold for the calling thread. */
static __always_inline __u64 python_wanted_thread_id(const struct nt_python_offsets *py,
						     __u64 pid_tgid)
{
	if (py->thread_match == NT_PYTHON_MATCH_PTHREAD) {
		/* pthread_self() is the thread's TCB, which the fs base points at (x86-64). */
		struct task_struct *task = bpf_get_current_task_btf();

		return BPF_CORE_READ(task, thread.fsbase);
	}
	return (__u32)pid_tgid;
}

/*
 * The calling thread's PyThreadState: the cached one if its id still matches, else a walk of
 * the thread list of interpreters.head (at most NT_PYTHON_THREADS_MAX states). Threads that
 * released the GIL (waiting in a C call) are found all the same: the match is on their id.
 */
static __always_inline __u64 python_thread_state(const struct nt_python_offsets *py,
						 __u64 pid_tgid, __u32 *failed)
{
	__u64 wanted = python_wanted_thread_id(py, pid_tgid);
	__u64 *cached = bpf_map_lookup_elem(&python_thread_states, &pid_tgid);
	__u32 read_failed = 0;

	if (cached && *cached) {
		__u64 id = python_read_u64(*cached + py->thread_id, &read_failed);

		if (!read_failed && id == wanted)
			return *cached;
	}
	__u64 interp = python_read_u64(py->runtime_address + py->runtime_interpreters_head, failed);

	if (*failed || !interp)
		return 0;
	__u64 state = python_read_u64(interp + py->interp_threads_head, failed);

	for (int i = 0; i < NT_PYTHON_THREADS_MAX; i++) {
		if (*failed || !state)
			return 0;
		if (python_read_u64(state + py->thread_id, failed) == wanted && !*failed) {
			bpf_map_update_elem(&python_thread_states, &pid_tgid, &state, BPF_ANY);
			return state;
		}
		state = python_read_u64(state + py->thread_next, failed);
	}
	return 0;
}

/*
 * How many of a frame's first bytes hold every field the walk reads; 0 when that is not below
 * NT_PYTHON_FRAME_WINDOW (user space never writes such offsets).
 */
static __always_inline __u32 python_frame_window_size(const struct nt_python_offsets *py)
{
	__u32 size = py->frame_code + 8;

	if (py->frame_previous + 8 > size)
		size = py->frame_previous + 8;
	if (py->frame_instr + py->frame_instr_size > size)
		size = py->frame_instr + py->frame_instr_size;
	if (py->frame_owner != NT_PYTHON_NO_FIELD && py->frame_owner + 1 > size)
		size = py->frame_owner + 1;
	return size < NT_PYTHON_FRAME_WINDOW ? size : 0;
}

/* Fields of a frame read into window: offsets masked into it (aligned as the ABI says). */
static __always_inline __u64 python_window_u64(const __u8 *window, __u32 offset)
{
	return *(const __u64 *)(window + (offset & (NT_PYTHON_FRAME_WINDOW - 8)));
}

static __always_inline __u32 python_window_u32(const __u8 *window, __u32 offset)
{
	return *(const __u32 *)(window + (offset & (NT_PYTHON_FRAME_WINDOW - 4)));
}

/*
 * Walks the calling thread's frames into *stack, innermost first, and returns the depth.
 * stack->status tells why a stack is empty or short (enum nt_python_stack_status).
 *
 * One read per frame: its first bytes into a window on the BPF stack (128 bytes), from which
 * code, instruction, previous frame and owner are taken.
 *
 * The depth lives in *stack, not in a register, on purpose: read back from memory it is an
 * unknown the verifier bounds with the mask, so the paths that kept a frame and those that
 * skipped one meet again at the next iteration instead of doubling the states it explores.
 */
static __always_inline __u32 read_python_stack(struct nt_python_stack *stack)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 failed = 0;
	__u8 window[NT_PYTHON_FRAME_WINDOW] = {};

	stack->depth = 0;
	stack->status = 0;
	struct nt_python_offsets *py = bpf_map_lookup_elem(&python_processes, &tgid);

	if (!py || !python_same_process(py)) {
		stack->status = NT_PYTHON_NOT_PYTHON;
		return 0;
	}
	__u32 window_size = python_frame_window_size(py);

	if (!window_size) {
		stack->status = NT_PYTHON_NOT_PYTHON;
		return 0;
	}
	__u64 state = python_thread_state(py, pid_tgid, &failed);

	if (!state) {
		stack->status = failed ? NT_PYTHON_READ_FAILED : NT_PYTHON_NO_THREAD_STATE;
		return 0;
	}
	__u64 frame = python_read_u64(state + py->thread_frame, &failed);

	if (frame && py->cframe_current_frame != NT_PYTHON_NO_FIELD)
		frame = python_read_u64(frame + py->cframe_current_frame, &failed);

	/* C-stack entry frames (3.12+) are skipped, within twice the frames kept. */
	for (int i = 0; i < 2 * NT_PYTHON_FRAMES_MAX; i++) {
		if (failed || !frame)
			break;
		__u32 depth = stack->depth;

		if (depth >= NT_PYTHON_FRAMES_MAX) {
			stack->status |= NT_PYTHON_TRUNCATED;
			break;
		}
		/* Below the window already; the mask is for the verifier. */
		if (bpf_probe_read_user(window, window_size & (NT_PYTHON_FRAME_WINDOW - 1),
					(const void *)frame)) {
			failed = 1;
			break;
		}
		if (py->frame_owner == NT_PYTHON_NO_FIELD ||
		    window[py->frame_owner & (NT_PYTHON_FRAME_WINDOW - 1)] != py->frame_owner_skip) {
			struct nt_python_frame *out = &stack->frames[depth & (NT_PYTHON_FRAMES_MAX - 1)];

			out->code = python_window_u64(window, py->frame_code);
			/* f_lasti is an int, sign-extended by user space. */
			out->instr = py->frame_instr_size == 4 ? python_window_u32(window, py->frame_instr)
							       : python_window_u64(window, py->frame_instr);
			stack->depth = depth + 1;
		}
		frame = python_window_u64(window, py->frame_previous);
	}
	if (failed)
		stack->status |= NT_PYTHON_READ_FAILED;
	else if (frame && !(stack->status & NT_PYTHON_TRUNCATED))
		stack->status |= NT_PYTHON_TRUNCATED;
	return stack->depth;
}

#endif /* NEUTRACER_PYTHON_FRAMES_BPF_H */
