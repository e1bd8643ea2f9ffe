// SPDX-License-Identifier: GPL-2.0
/*
 * Network use of traced processes, IPv4/IPv6 sockets only (not AF_UNIX):
 *
 * - bytes: what send/receive calls returned, in the caller's context
 *   (sock_send_length / sock_recv_length, Linux 6.3+; MSG_PEEK excluded).
 *   Without those tracepoints user space loads fexit/tcp_sendmsg and
 *   fentry/tcp_cleanup_rbuf instead: TCP only, and only where the kernel
 *   accepts fentry/fexit programs (without, network metrics are off).
 * - packets: TCP segments from tcp_sock::segs_out/segs_in (what the stack
 *   really sent and received, ACKs and retransmissions included), attributed
 *   to the socket's owner at each send/receive and at close; other sockets
 *   (UDP, raw) count one datagram per successful call (a UDP GSO send counts
 *   one).
 * - tcp_connections: sockets in ESTABLISHED that the process connected
 *   (SYN_SENT in its context) or sent/received on. An accepted connection
 *   counts from the process's first send or receive on it: accept() has no
 *   tracepoint, and the 6.18 kernels this was built for have no kprobes
 *   (CONFIG_KPROBES off) and refuse fentry/fexit loads (EPERM, even as root).
 *
 * A socket's segments and connection count for the first traced process that
 * used it (a socket shared across fork stays with that process).
 */
#include "os_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET 2
#define AF_INET6 10
#define MSG_PEEK 2

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* resized before load */
	__type(key, __u64);         /* struct sock * */
	__type(value, struct nt_os_socket);
} os_sockets SEC(".maps");

static __always_inline bool is_inet(struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	return family == AF_INET || family == AF_INET6;
}

static __always_inline bool is_tcp(struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP;
}

/*
 * Segments the socket sent and received since the last call go to its owner.
 * Two CPUs flushing one socket at once may count a delta twice (rare: needs
 * concurrent calls on one socket; atomic exchange would need -mcpu=v3).
 */
static __always_inline void flush_segments(struct sock *sk, struct nt_os_socket *entry)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 out = BPF_CORE_READ(tp, segs_out);
	__u32 in = BPF_CORE_READ(tp, segs_in);
	struct nt_os_counters *counters = traced_counters_of(entry->tgid, entry->proc_start_ns);

	if (counters) {
		__sync_fetch_and_add(&counters->net_tx_packets, (__u32)(out - entry->segs_out));
		__sync_fetch_and_add(&counters->net_rx_packets, (__u32)(in - entry->segs_in));
	}
	entry->segs_out = out;
	entry->segs_in = in;
}

/*
 * The socket's entry, created for the current (traced) process when missing.
 * from_birth: count the socket's segments from its first one (connect);
 * otherwise only those from now on (a connection older than the
 * tracing). A socket found ESTABLISHED here counts as a connection at once.
 */
static __always_inline struct nt_os_socket *socket_of(struct sock *sk, struct task_struct *task,
						       bool from_birth)
{
	__u64 key = (__u64)sk;
	struct nt_os_socket *entry = bpf_map_lookup_elem(&os_sockets, &key);
	struct nt_os_socket fresh = {};
	struct nt_os_counters *counters = NULL;
	long error;

	if (entry)
		return entry;
	fresh.tgid = task->tgid;
	fresh.proc_start_ns = task_process_start_ns(task);
	if (!from_birth) {
		fresh.segs_out = BPF_CORE_READ((struct tcp_sock *)sk, segs_out);
		fresh.segs_in = BPF_CORE_READ((struct tcp_sock *)sk, segs_in);
	}
	if (BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_ESTABLISHED) {
		counters = counters_of(fresh.tgid);
		fresh.established = counters != NULL;
	}
	error = bpf_map_update_elem(&os_sockets, &key, &fresh, BPF_NOEXIST);
	if (error == 0 && counters)
		__sync_fetch_and_add(&counters->tcp_connections, 1);
	entry = bpf_map_lookup_elem(&os_sockets, &key);
	if (!entry)
		count_os_stat(NT_OS_STAT_SOCKETS_MAP_FULL);
	return entry;
}

static __always_inline void count_transfer(struct sock *sk, int bytes, bool sent)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct nt_os_counters *counters;
	struct nt_os_socket *entry;

	if (bytes <= 0 || !sk || !task_traced(task) || !is_inet(sk))
		return;
	counters = counters_of(task->tgid);
	if (!counters)
		return;
	__sync_fetch_and_add(sent ? &counters->net_tx_bytes : &counters->net_rx_bytes, bytes);
	if (!is_tcp(sk)) {
		__sync_fetch_and_add(sent ? &counters->net_tx_packets
					  : &counters->net_rx_packets, 1);
		return;
	}
	entry = socket_of(sk, task, false);
	if (entry)
		flush_segments(sk, entry);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(os_sock_send_length, struct sock *sk, int ret, int flags)
{
	count_transfer(sk, ret, true);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(os_sock_recv_length, struct sock *sk, int ret, int flags)
{
	if (!(flags & MSG_PEEK))
		count_transfer(sk, ret, false);
	return 0;
}

/* Fallback before Linux 6.3: TCP only. */
SEC("fexit/tcp_sendmsg")
int BPF_PROG(os_tcp_sendmsg_exit, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
	count_transfer(sk, ret, true);
	return 0;
}

/* Fallback before Linux 6.3: bytes the reader consumed from the receive queue. */
SEC("fentry/tcp_cleanup_rbuf")
int BPF_PROG(os_tcp_cleanup_rbuf, struct sock *sk, int copied)
{
	count_transfer(sk, copied, false);
	return 0;
}

/* TCP state changes, often in softirq context: attribution goes through the socket's entry. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(os_inet_sock_set_state, struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	struct nt_os_socket *entry;
	struct nt_os_counters *counters;
	struct task_struct *task;

	if (!is_tcp(sk))
		return 0;
	if (newstate == TCP_SYN_SENT) {
		/* connect(), in the caller's context */
		task = bpf_get_current_task_btf();
		if (task_traced(task))
			socket_of(sk, task, true);
		return 0;
	}
	entry = bpf_map_lookup_elem(&os_sockets, &key);
	if (!entry)
		return 0;
	if (newstate == TCP_ESTABLISHED && !entry->established) {
		counters = traced_counters_of(entry->tgid, entry->proc_start_ns);
		if (counters) {
			entry->established = 1;
			__sync_fetch_and_add(&counters->tcp_connections, 1);
		}
	} else if (oldstate == TCP_ESTABLISHED && entry->established) {
		entry->established = 0;
		counters = traced_counters_of(entry->tgid, entry->proc_start_ns);
		if (counters)
			__sync_fetch_and_add(&counters->tcp_connections, -1);
	}
	if (newstate == TCP_CLOSE) {
		flush_segments(sk, entry);
		bpf_map_delete_elem(&os_sockets, &key);
	}
	return 0;
}
