// SPDX-License-Identifier: Apache-2.0
/*
 * noop_loop: what one call of an empty library function costs a small C program, with and
 * without a uprobe on it (the probe is put on and taken off from outside, by symhits).
 *
 *   noop_loop LIBNTNOOP        prints "READY <pid>", then serves commands read from stdin:
 *     call FUNC N    calls FUNC (an nt_noop* symbol of libntnoop.so) N times through a
 *                    function pointer; prints "RESULT call FUNC N <seconds>"
 *     pair FUNC N    N times: FUNC(NULL), then nt_work(buffer) (never probed, ~1 µs of branchy
 *                    code over 16 pages); prints "RESULT pair FUNC N <seconds>". With FUNC
 *                    probed, minus the same with nt_noop_twin, this is the trap's whole cost
 *                    including the slow-down of the user code that follows it
 *     syscall N      N getppid() system calls (the price of a bare kernel entry and exit);
 *                    prints "RESULT syscall getppid N <seconds>"
 *     quit
 * Seconds are CLOCK_MONOTONIC around the loop. The same protocol is served by noop_loop.py
 * (Python / ctypes, optionally inside a CUDA PyTorch process) and launch_loop.cu.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: noop_loop LIBNTNOOP\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "noop_loop: %s\n", dlerror());
		return 2;
	}
	unsigned (*work)(void *) = (unsigned (*)(void *))dlsym(lib, "nt_work");
	static unsigned char buffer[16 * 4096] __attribute__((aligned(4096)));
	volatile unsigned sink = 0;

	printf("READY %d\n", (int)getpid());
	fflush(stdout);

	char line[256], word[64], func[128];
	while (fgets(line, sizeof(line), stdin)) {
		long n = 0;
		if (sscanf(line, "%63s", word) != 1)
			continue;
		if (!strcmp(word, "quit"))
			break;
		if (!strcmp(word, "call") && sscanf(line, "%*s %127s %ld", func, &n) == 2) {
			void (*volatile fn)(void *) = (void (*)(void *))dlsym(lib, func);
			if (!fn) {
				printf("ERROR no symbol %s\n", func);
				fflush(stdout);
				continue;
			}
			double t0 = now_s();
			for (long i = 0; i < n; i++)
				fn(NULL);
			double t = now_s() - t0;
			printf("RESULT call %s %ld %.9f\n", func, n, t);
		} else if (!strcmp(word, "pair") && work &&
			   sscanf(line, "%*s %127s %ld", func, &n) == 2) {
			void (*volatile fn)(void *) = (void (*)(void *))dlsym(lib, func);
			if (!fn) {
				printf("ERROR no symbol %s\n", func);
				fflush(stdout);
				continue;
			}
			double t0 = now_s();
			for (long i = 0; i < n; i++) {
				fn(NULL);
				sink += work(buffer);
			}
			double t = now_s() - t0;
			printf("RESULT pair %s %ld %.9f\n", func, n, t);
		} else if (!strcmp(word, "syscall") && sscanf(line, "%*s %ld", &n) == 1) {
			double t0 = now_s();
			for (long i = 0; i < n; i++)
				syscall(SYS_getppid);
			double t = now_s() - t0;
			printf("RESULT syscall getppid %ld %.9f\n", n, t);
		} else {
			printf("ERROR bad command: %s", line);
		}
		fflush(stdout);
	}
	return 0;
}
