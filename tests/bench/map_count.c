// SPDX-License-Identifier: Apache-2.0
/*
 * map_count: occupancy of one process's BPF maps, for tests/bench/churn.sh and soak.sh.
 *
 *   map_count PID [PIDFILE]
 *
 * Finds the maps PID holds open (the bpf-map fds in /proc/PID/fd, their map_id from
 * /proc/PID/fdinfo), opens each by id and walks its keys. Prints one line per hash map:
 *
 *   NAME TYPE MAX_ENTRIES ENTRIES DEAD
 *
 * DEAD: entries whose owner process or thread no longer exists (/proc/ID is gone) or is
 * listed in PIDFILE (one PID a line: processes known to have exited, so a reused PID is
 * not taken for the owner). The owner is read from the key as the daemon's BPF programs
 * lay it out (bpf/neutracer_abi.h): launches (u32 tgid first), inflight and thread_contexts
 * (u64 pid_tgid: tgid in the high half, thread id in the low half; thread ids are checked),
 * traced_tgids, os_counters (u32 tgid), os_threads (u32 tid). Maps keyed by kernel pointers
 * (os_io_inflight, os_sockets) print "-" for DEAD. Arrays, ring buffers and the programs'
 * .rodata/.bss maps are not listed (their entry count is fixed).
 * Needs root (CAP_SYS_ADMIN for BPF_MAP_GET_FD_BY_ID).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

static unsigned *g_exited;
static size_t g_exited_len;

static int cmp_u(const void *a, const void *b) {
  const unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  return x < y ? -1 : x > y;
}

static void load_exited(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) { perror(path); exit(1); }
  size_t cap = 0;
  unsigned v;
  while (fscanf(f, "%u", &v) == 1) {
    if (g_exited_len == cap) {
      cap = cap ? cap * 2 : 1024;
      g_exited = realloc(g_exited, cap * sizeof *g_exited);
      if (!g_exited) exit(1);
    }
    g_exited[g_exited_len++] = v;
  }
  fclose(f);
  qsort(g_exited, g_exited_len, sizeof *g_exited, cmp_u);
}

static int dead(unsigned id) {
  if (g_exited_len && bsearch(&id, g_exited, g_exited_len, sizeof id, cmp_u)) return 1;
  char path[64];
  snprintf(path, sizeof path, "/proc/%u", id);
  return access(path, F_OK) != 0;
}

enum owner { O_NONE, O_U32_FIRST, O_PID_TGID };

static enum owner owner_of(const char *name) {
  if (!strcmp(name, "launches") || !strcmp(name, "traced_tgids") ||
      !strcmp(name, "os_counters") || !strcmp(name, "os_threads"))
    return O_U32_FIRST;
  if (!strcmp(name, "inflight") || !strcmp(name, "thread_contexts")) return O_PID_TGID;
  return O_NONE;
}

static const char *type_name(unsigned t) {
  switch (t) {
  case BPF_MAP_TYPE_HASH: return "hash";
  case BPF_MAP_TYPE_PERCPU_HASH: return "percpu_hash";
  case BPF_MAP_TYPE_LRU_HASH: return "lru_hash";
  case BPF_MAP_TYPE_LRU_PERCPU_HASH: return "lru_percpu_hash";
  default: return NULL;
  }
}

static void count_map(unsigned id) {
  const int fd = bpf_map_get_fd_by_id(id);
  if (fd < 0) return; /* freed meanwhile */
  struct bpf_map_info info;
  __u32 len = sizeof info;
  memset(&info, 0, sizeof info);
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) { close(fd); return; }
  const char *type = type_name(info.type);
  if (!type) { close(fd); return; }
  const enum owner owner = owner_of(info.name);
  unsigned char key[256], next[256];
  if (info.key_size > sizeof key) { close(fd); return; }
  unsigned long entries = 0, gone = 0;
  void *prev = NULL;
  while (bpf_map_get_next_key(fd, prev, next) == 0) {
    entries++;
    if (owner == O_U32_FIRST) {
      unsigned id32;
      memcpy(&id32, next, sizeof id32);
      gone += dead(id32);
    } else if (owner == O_PID_TGID) {
      unsigned long long pid_tgid;
      memcpy(&pid_tgid, next, sizeof pid_tgid);
      gone += dead((unsigned)pid_tgid); /* the thread id; the thread group's PID too */
    }
    memcpy(key, next, info.key_size);
    prev = key;
    if (entries > 100000000UL) break;
  }
  if (owner == O_NONE)
    printf("%s %s %u %lu -\n", info.name, type, info.max_entries, entries);
  else
    printf("%s %s %u %lu %lu\n", info.name, type, info.max_entries, entries, gone);
  close(fd);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s PID [EXITED_PIDFILE]\n", argv[0]);
    return 2;
  }
  if (argc == 3) load_exited(argv[2]);
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%s/fd", argv[1]);
  DIR *d = opendir(dir);
  if (!d) { perror(dir); return 1; }
  unsigned ids[512];
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < sizeof ids / sizeof ids[0]) {
    if (e->d_name[0] == '.') continue;
    char link[512], target[128];
    snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
    const ssize_t tl = readlink(link, target, sizeof target - 1);
    if (tl <= 0) continue;
    target[tl] = 0;
    if (strcmp(target, "anon_inode:bpf-map") != 0) continue;
    char fdinfo[512], line[256];
    snprintf(fdinfo, sizeof fdinfo, "/proc/%s/fdinfo/%s", argv[1], e->d_name);
    FILE *f = fopen(fdinfo, "r");
    if (!f) continue;
    unsigned id = 0;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "map_id: %u", &id) == 1) break;
    fclose(f);
    int seen = 0;
    for (size_t i = 0; i < n; i++) seen |= ids[i] == id;
    if (id && !seen) ids[n++] = id;
  }
  closedir(d);
  qsort(ids, n, sizeof ids[0], cmp_u);
  for (size_t i = 0; i < n; i++) count_map(ids[i]);
  return 0;
}
