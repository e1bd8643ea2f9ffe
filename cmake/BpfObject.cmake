# SPDX-License-Identifier: Apache-2.0
# Builds BPF C into skeleton headers: vmlinux.h (from the build host's BTF) -> .bpf.o -> .skel.h.
find_program(BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

set(NEUTRACER_BTF_FILE "/sys/kernel/btf/vmlinux" CACHE FILEPATH "Kernel BTF used to generate vmlinux.h")
if(NOT EXISTS "${NEUTRACER_BTF_FILE}")
  message(FATAL_ERROR
    "neutracerd needs kernel BTF to build its BPF programs, but ${NEUTRACER_BTF_FILE} does not exist.\n"
    "Build on a kernel with CONFIG_DEBUG_INFO_BTF=y (Debian 12's default kernel has it), "
    "or pass -DNEUTRACER_BTF_FILE=/path/to/vmlinux-with-btf.")
endif()

set(NEUTRACER_BPF_INCLUDE_DIR ${CMAKE_BINARY_DIR}/bpf)
set(NEUTRACER_VMLINUX_H ${NEUTRACER_BPF_INCLUDE_DIR}/vmlinux.h)
# Call from the directory whose targets compile BPF code (custom command outputs are per directory).
function(bpf_vmlinux_header)
  add_custom_command(
    OUTPUT ${NEUTRACER_VMLINUX_H}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${NEUTRACER_BPF_INCLUDE_DIR}
    COMMAND ${BPFTOOL} btf dump file ${NEUTRACER_BTF_FILE} format c > ${NEUTRACER_VMLINUX_H}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${NEUTRACER_VMLINUX_H}.tmp ${NEUTRACER_VMLINUX_H}
    COMMENT "Generating vmlinux.h from ${NEUTRACER_BTF_FILE}"
    VERBATIM)
endfunction()

# bpf_skeleton(NAME SOURCE [TEST] [DEPENDS headers...]) -> ${NEUTRACER_BPF_INCLUDE_DIR}/NAME.skel.h
# TEST: a program only tests load (listed in NEUTRACER_TEST_SKELETONS, not the daemon's).
function(bpf_skeleton name source)
  cmake_parse_arguments(ARG "TEST" "" "DEPENDS" ${ARGN})
  set(object ${NEUTRACER_BPF_INCLUDE_DIR}/${name}.bpf.o)
  set(skeleton ${NEUTRACER_BPF_INCLUDE_DIR}/${name}.skel.h)
  add_custom_command(
    OUTPUT ${object}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror
            -I${NEUTRACER_BPF_INCLUDE_DIR} -I${CMAKE_SOURCE_DIR}/bpf
            # <bpf/usdt.bpf.h> includes <linux/errno.h>, whose <asm/errno.h> lives in the
            # multiarch folder; searched last, so vmlinux.h's types win.
            -idirafter /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}
            # BTF keeps file names: relative ones keep build paths out of the binary and package.
            -ffile-prefix-map=${CMAKE_SOURCE_DIR}/= -fdebug-compilation-dir=.
            -c ${source} -o ${object}
    DEPENDS ${source} ${NEUTRACER_VMLINUX_H} ${ARG_DEPENDS}
    COMMENT "Compiling BPF object ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skeleton}
    COMMAND ${BPFTOOL} gen skeleton ${object} name ${name} > ${skeleton}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${skeleton}.tmp ${skeleton}
    DEPENDS ${object}
    COMMENT "Generating BPF skeleton ${name}.skel.h"
    VERBATIM)
  if(ARG_TEST)
    set_property(GLOBAL APPEND PROPERTY NEUTRACER_TEST_SKELETONS ${skeleton})
  else()
    set_property(GLOBAL APPEND PROPERTY NEUTRACER_SKELETONS ${skeleton})
  endif()
endfunction()
