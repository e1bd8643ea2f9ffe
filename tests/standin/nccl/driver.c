/* SPDX-License-Identifier: Apache-2.0 */
/*
 * neutracer-nccl-rank: one rank of a stand-in NCCL job. Drives the stand-in libnccl.so.2
 * (linked, found next to this program through RUNPATH $ORIGIN) one command at a time, so a
 * test can make ranks disagree, stall or straggle. Prints "READY <pid>", then reads stdin line
 * by line and answers each command with exactly one flushed line:
 *
 *   init ID RANK NRANKS        OK init            ncclCommInitRankConfig with unique id ID
 *   allreduce COUNT N [MS]     OK allreduce N     N float32 all-reduces of COUNT elements,
 *                                                 MS milliseconds apart (default 0)
 *   broadcast COUNT ROOT       OK broadcast       one float32 broadcast
 *   send COUNT PEER            OK send            one float32 send
 *   destroy                    OK destroy
 *   exit                       OK exit            (then exits 0)
 *
 * ID is a word whose bytes fill the start of the ncclUniqueId (the rest is zero), so that
 * ranks given the same word join one communicator. Numbers are decimal. A malformed or unknown
 * command answers "ERR <why>" and changes nothing.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r, nanosleep */

#include "standin_nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kFloat32 = 7, kSum = 0 };

static ncclComm_t comm;

static int number(char **saveptr, long long *value) {
  const char *token = strtok_r(NULL, " \t", saveptr);
  if (token == NULL || *token == '\0')
    return 0;
  char *end = NULL;
  *value = strtoll(token, &end, 10);
  return *end == '\0' && *value >= 0;
}

static void sleep_ms(long long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&pause, NULL);
}

static void run_init(char **saveptr) {
  const char *word = strtok_r(NULL, " \t", saveptr);
  long long rank = 0, nranks = 0;
  if (word == NULL || !number(saveptr, &rank) || !number(saveptr, &nranks)) {
    printf("ERR init needs ID RANK NRANKS\n");
    return;
  }
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  strncpy(id.internal, word, sizeof id.internal - 1);
  const ncclResult_t result = ncclCommInitRankConfig(&comm, (int)nranks, id, (int)rank, NULL);
  if (result != 0)
    printf("ERR init returned %d\n", result);
  else
    printf("OK init\n");
}

/* Not inlined: the e2e tests expect a hang to name this function as the collective's site. */
__attribute__((noinline)) static void run_allreduce(char **saveptr) {
  long long count = 0, calls = 0, ms = 0;
  if (!number(saveptr, &count) || !number(saveptr, &calls)) {
    printf("ERR allreduce needs COUNT N [MS]\n");
    return;
  }
  number(saveptr, &ms);
  for (long long i = 0; i < calls; ++i) {
    if (i > 0 && ms > 0)
      sleep_ms(ms);
    ncclAllReduce(NULL, NULL, (size_t)count, kFloat32, kSum, comm, NULL);
  }
  printf("OK allreduce %lld\n", calls);
}

/* Runs one command line; 0 when the program should exit. */
static int run_command(char *line) {
  char *saveptr = NULL;
  const char *command = strtok_r(line, " \t", &saveptr);
  long long count = 0, other = 0;
  if (command == NULL)
    return 1;
  if (strcmp(command, "init") == 0) {
    run_init(&saveptr);
  } else if (strcmp(command, "allreduce") == 0) {
    run_allreduce(&saveptr);
  } else if (strcmp(command, "broadcast") == 0) {
    if (number(&saveptr, &count) && number(&saveptr, &other) &&
        ncclBroadcast(NULL, NULL, (size_t)count, kFloat32, (int)other, comm, NULL) == 0)
      printf("OK broadcast\n");
    else
      printf("ERR broadcast needs COUNT ROOT and a communicator\n");
  } else if (strcmp(command, "send") == 0) {
    if (number(&saveptr, &count) && number(&saveptr, &other) &&
        ncclSend(NULL, (size_t)count, kFloat32, (int)other, comm, NULL) == 0)
      printf("OK send\n");
    else
      printf("ERR send needs COUNT PEER and a communicator\n");
  } else if (strcmp(command, "destroy") == 0) {
    ncclCommDestroy(comm);
    comm = NULL;
    printf("OK destroy\n");
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
