// SPDX-License-Identifier: Apache-2.0
/*
 * libntnoop.so: empty functions whose first instruction is known, as targets for the cost of
 * one user-space probe (uprobe) hit, measured by noop_loop.c and noop_loop.py.
 *
 * Each function takes one pointer and does nothing. They differ only in their first
 * instruction, which decides how the x86 kernel resumes the probed program after the int3:
 *
 *   nt_noop        push %rbp (compiled at -O0 with frame pointers): the kernel emulates it
 *   nt_noop_twin   identical to nt_noop, never probed: the "without probe" baseline
 *   nt_noop_sstep  sub $8,%rsp: not emulated, executed out of line with a single step (#DB)
 *   nt_noop_endbr  endbr64, then push %rbp: what -fcf-protection builds start with
 *   nt_noop_nop5   a 5-byte nop (0f 1f 44 00 00), the shape of a USDT site
 *
 * nt_work(buffer) is never probed: ~1 µs of branchy user code (256 indirect calls to 16
 * functions, each touching a cache line on one of 16 pages of the 64 KiB buffer). Called right
 * after a probed function it shows whether a trap also slows the user code that follows it
 * (predictors, caches and TLBs it left cold), a cost the empty-function loops cannot see.
 *
 * Build (the Makefile does this and checks the first bytes with objdump):
 *   cc -O0 -fno-omit-frame-pointer -fcf-protection=none -fPIC -shared -o libntnoop.so ntnoop.c
 */

void nt_noop(void *arg) { (void)arg; }
void nt_noop_twin(void *arg) { (void)arg; }

#define NT_WORK_PAGE 4096
#define NT_WORK_LINE 64
static unsigned nt_w0(unsigned char *b, unsigned i) { return b[0 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + i; }
static unsigned nt_w1(unsigned char *b, unsigned i) { return b[1 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ ^ i; }
static unsigned nt_w2(unsigned char *b, unsigned i) { return b[2 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + 3 * i; }
static unsigned nt_w3(unsigned char *b, unsigned i) { return b[3 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ - i; }
static unsigned nt_w4(unsigned char *b, unsigned i) { return b[4 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + (i << 1); }
static unsigned nt_w5(unsigned char *b, unsigned i) { return b[5 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ ^ (i >> 1); }
static unsigned nt_w6(unsigned char *b, unsigned i) { return b[6 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + 5 * i; }
static unsigned nt_w7(unsigned char *b, unsigned i) { return b[7 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ | i; }
static unsigned nt_w8(unsigned char *b, unsigned i) { return b[8 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + i * i; }
static unsigned nt_w9(unsigned char *b, unsigned i) { return b[9 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ ^ 7 * i; }
static unsigned nt_wa(unsigned char *b, unsigned i) { return b[10 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + 11 * i; }
static unsigned nt_wb(unsigned char *b, unsigned i) { return b[11 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ - 3 * i; }
static unsigned nt_wc(unsigned char *b, unsigned i) { return b[12 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ & i; }
static unsigned nt_wd(unsigned char *b, unsigned i) { return b[13 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + (i >> 2); }
static unsigned nt_we(unsigned char *b, unsigned i) { return b[14 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ ^ (i << 3); }
static unsigned nt_wf(unsigned char *b, unsigned i) { return b[15 * NT_WORK_PAGE + (i % 64) * NT_WORK_LINE]++ + 13 * i; }

static unsigned (*const nt_work_table[16])(unsigned char *, unsigned) = {
	nt_w0, nt_w1, nt_w2, nt_w3, nt_w4, nt_w5, nt_w6, nt_w7,
	nt_w8, nt_w9, nt_wa, nt_wb, nt_wc, nt_wd, nt_we, nt_wf};

/* buffer: at least 16 pages. Returns a value so nothing is optimised away. */
unsigned nt_work(void *buffer)
{
	unsigned char *b = buffer;
	unsigned acc = 0;

	for (unsigned i = 0; i < 256; i++)
		acc += nt_work_table[(i * 7 + (acc & 1)) % 16](b, i);
	return acc;
}

__asm__(".text\n"
	".globl nt_noop_sstep\n"
	".type nt_noop_sstep, @function\n"
	"nt_noop_sstep:\n"
	"\tsub $8, %rsp\n"
	"\tadd $8, %rsp\n"
	"\tret\n"
	".size nt_noop_sstep, .-nt_noop_sstep\n"

	".globl nt_noop_endbr\n"
	".type nt_noop_endbr, @function\n"
	"nt_noop_endbr:\n"
	"\t.byte 0xf3, 0x0f, 0x1e, 0xfa\n" /* endbr64 */
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size nt_noop_endbr, .-nt_noop_endbr\n"

	".globl nt_noop_nop5\n"
	".type nt_noop_nop5, @function\n"
	"nt_noop_nop5:\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* nopl 0x0(%rax,%rax,1) */
	"\tret\n"
	".size nt_noop_nop5, .-nt_noop_nop5\n");
