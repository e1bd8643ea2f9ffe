// SPDX-License-Identifier: Apache-2.0
/* Context-switch-heavy load for the OS tracer's overhead: two processes pinned to one CPU
 * pass a byte back and forth through pipes, so every round trip is two context switches
 * (plus two sched_switch tracepoint hits). Prints ns per round trip.
 * Usage: pingpong ROUNDTRIPS [SETTLE_MS]
 * SETTLE_MS: both processes exist this long before timing starts (lets a daemon discover them). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const long rounds = argc > 1 ? atol(argv[1]) : 200000;
  const long settle_ms = argc > 2 ? atol(argv[2]) : 0;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) { perror("sched_setaffinity"); return 2; }
  int ping[2], pong[2];
  if (pipe(ping) || pipe(pong)) { perror("pipe"); return 2; }
  char byte = 0;
  const pid_t child = fork();
  if (child == 0) {
    for (long i = 0; i < rounds; i++)
      if (read(ping[0], &byte, 1) != 1 || write(pong[1], &byte, 1) != 1) _exit(1);
    _exit(0);
  }
  if (settle_ms > 0) usleep((useconds_t)settle_ms * 1000);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < rounds; i++)
    if (write(ping[1], &byte, 1) != 1 || read(pong[0], &byte, 1) != 1) return 1;
  clock_gettime(CLOCK_MONOTONIC, &end);
  waitpid(child, NULL, 0);
  const double ns = (end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec);
  printf("%.0f\n", ns / rounds);
  return 0;
}
