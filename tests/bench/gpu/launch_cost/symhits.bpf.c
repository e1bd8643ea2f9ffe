// SPDX-License-Identifier: GPL-2.0
/*
 * symhits: one counting entry uprobe per probed symbol. The attach cookie is the symbol's
 * index in user space's table; the program adds one to that slot. Nothing else: this is the
 * cheapest BPF program a uprobe can run, so a probed call costs the kernel's trap path plus
 * a few tens of nanoseconds.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define SYMHITS_MAX 16384

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SYMHITS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

SEC("uprobe")
int count_hit(void *ctx)
{
	__u32 index = (__u32)bpf_get_attach_cookie(ctx);
	__u64 *count = bpf_map_lookup_elem(&hits, &index);

	if (count)
		__sync_fetch_and_add(count, 1);
	return 0;
}
