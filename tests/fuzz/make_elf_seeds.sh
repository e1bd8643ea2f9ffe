#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the elf_symbols seed corpus: tiny shared libraries (1-2 KiB) defining cuLaunchKernel,
# cuMemAlloc_v2 and f (the names the harness asks for) plus a data object, in .dynsym only,
# with .symtab too, and as ELF32; a header cut short; and a file that is not ELF.
#
#   tests/fuzz/make_elf_seeds.sh tests/fuzz/corpus/elf_symbols
set -euo pipefail
out=$1
cc=${CC:-clang-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/s.c" <<'C'
int cuLaunchKernel(void) { return 1; }
int cuMemAlloc_v2(void) { return 2; }
int f(void) { return 3; }
int data_not_func = 4;
C
# Small: no C library, one-byte-aligned segments, no build id, no RELRO padding.
flags=(-O1 -fPIC -shared -nostdlib -Wl,-z,noseparate-code -Wl,-z,max-page-size=16
  -Wl,--build-id=none -Wl,-z,norelro)
mkdir -p "$out"
"$cc" "${flags[@]}" -s -o "$out/tiny64_dynsym.so" "$work/s.c"
"$cc" "${flags[@]}" -o "$out/tiny64_symtab.so" "$work/s.c"
"$cc" -m32 "${flags[@]}" -s -o "$out/tiny32_dynsym.so" "$work/s.c"
chmod -x "$out"/*.so
head -c 64 "$out/tiny64_dynsym.so" >"$out/truncated_header"
printf 'not an ELF file\n' >"$out/not_elf"
