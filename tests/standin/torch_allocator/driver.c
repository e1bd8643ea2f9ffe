// SPDX-License-Identifier: Apache-2.0
/*
 * neutracer-torch-allocator: drives the stand-in libc10_cuda.so (linked, found
 * next to this program through RUNPATH $ORIGIN) one command at a time, so a
 * test can attach between steps. Prints "READY <pid>" once started, then reads
 * stdin line by line and answers each command with exactly one flushed line:
 *
 *   alloc BYTES COUNT [DEVICE [STREAM]]  OK alloc BYTES COUNT first=0xADDR live=N
 *   free_oldest COUNT                    OK free_oldest COUNT live=N
 *   free_all                             OK free_all freed=N live=0
 *   semaphores                           OK semaphores malloc=M free=F
 *   exit                                 OK exit   (then exits 0)
 *
 * BYTES and COUNT are decimal and at least 1; DEVICE (default 0) is -128..127,
 * STREAM (default 0) unsigned decimal. A malformed or unknown command answers
 * "ERR <why>" and changes nothing. Blank lines are ignored; end of input exits
 * 0. Blocks still live at exit are not freed.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include "standin_c10_cuda.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Live blocks, oldest first. */
static void **live;
static size_t live_count;
static size_t live_capacity;

static int keep_block(void *ptr) {
  if (live_count == live_capacity) {
    size_t capacity = live_capacity ? live_capacity * 2 : 64;
    void **grown = realloc(live, capacity * sizeof *grown);
    if (grown == NULL)
      return 0;
    live = grown;
    live_capacity = capacity;
  }
  live[live_count++] = ptr;
  return 1;
}

static void free_oldest(size_t count) {
  for (size_t i = 0; i < count; ++i)
    standin_torch_free(live[i]);
  memmove(live, live + count, (live_count - count) * sizeof *live);
  live_count -= count;
}

/* An unsigned decimal token; 0 when it is missing or malformed. */
static int parse_unsigned(const char *token, unsigned long long *value) {
  if (token == NULL || *token < '0' || *token > '9')
    return 0;
  char *end = NULL;
  errno = 0;
  *value = strtoull(token, &end, 10);
  return errno == 0 && *end == '\0';
}

static void run_alloc(char *saveptr) {
  unsigned long long bytes = 0, count = 0, stream = 0;
  long long device = 0;
  const char *bytes_token = strtok_r(NULL, " \t", &saveptr);
  const char *count_token = strtok_r(NULL, " \t", &saveptr);
  const char *device_token = strtok_r(NULL, " \t", &saveptr);
  const char *stream_token = strtok_r(NULL, " \t", &saveptr);
  if (!parse_unsigned(bytes_token, &bytes) || !parse_unsigned(count_token, &count) || bytes == 0 ||
      count == 0) {
    printf("ERR alloc needs BYTES COUNT, both at least 1\n");
    return;
  }
  if (device_token != NULL) {
    char *end = NULL;
    device = strtoll(device_token, &end, 10);
    if (*end != '\0' || device < -128 || device > 127) {
      printf("ERR alloc DEVICE must be -128..127\n");
      return;
    }
  }
  if (stream_token != NULL && !parse_unsigned(stream_token, &stream)) {
    printf("ERR alloc STREAM must be unsigned decimal\n");
    return;
  }
  if (strtok_r(NULL, " \t", &saveptr) != NULL) {
    printf("ERR alloc takes at most 4 arguments\n");
    return;
  }
  void *first = NULL;
  for (unsigned long long i = 0; i < count; ++i) {
    void *ptr = standin_torch_allocate((size_t)bytes, (int)device, stream);
    if (!keep_block(ptr)) {
      printf("ERR out of memory after %llu blocks\n", i);
      return;
    }
    if (i == 0)
      first = ptr;
  }
  printf("OK alloc %llu %llu first=%p live=%zu\n", bytes, count, first, live_count);
}

static void run_free_oldest(char *saveptr) {
  unsigned long long count = 0;
  if (!parse_unsigned(strtok_r(NULL, " \t", &saveptr), &count) ||
      strtok_r(NULL, " \t", &saveptr) != NULL) {
    printf("ERR free_oldest needs COUNT\n");
    return;
  }
  if (count > live_count) {
    printf("ERR free_oldest %llu but only %zu live\n", count, live_count);
    return;
  }
  free_oldest((size_t)count);
  printf("OK free_oldest %llu live=%zu\n", count, live_count);
}

/* Runs one command line; 0 when the program should exit. */
static int run_command(char *line) {
  char *saveptr = NULL;
  const char *command = strtok_r(line, " \t", &saveptr);
  if (command == NULL)
    return 1;
  if (strcmp(command, "alloc") == 0) {
    run_alloc(saveptr);
  } else if (strcmp(command, "free_oldest") == 0) {
    run_free_oldest(saveptr);
  } else if (strcmp(command, "free_all") == 0) {
    size_t freed = live_count;
    free_oldest(freed);
    printf("OK free_all freed=%zu live=0\n", freed);
  } else if (strcmp(command, "semaphores") == 0) {
    printf("OK semaphores malloc=%u free=%u\n", standin_torch_malloc_semaphore(),
           standin_torch_free_semaphore());
  } else if (strcmp(command, "exit") == 0) {
    printf("OK exit\n");
    return 0;
  } else {
    printf("ERR unknown command '%s'\n", command);
  }
  return 1;
}

int main(void) {
  printf("READY %d\n", (int)getpid());
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    const int go_on = run_command(line);
    fflush(stdout);
    if (!go_on)
      break;
  }
  return 0;
}
