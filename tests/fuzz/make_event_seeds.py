#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the event_decoder seed corpus in its harness's record format.

Each record is a selector byte (1: call event, 2: name event), a 2-byte little-endian length,
then the event's leading bytes; the harness zero-pads them to the event size, so the seeds stay
valid when an event grows a field at its end (see event_decoder_fuzzer.cpp).

    python3 tests/fuzz/make_event_seeds.py tests/fuzz/corpus/event_decoder
"""
import os
import struct
import sys

START_NS = 123_000_000_000  # the traced process's start time


def call(api, result=0, args=(0, 0, 0, 0, 0), out=(0, 0), enter=1000, exit_ns=2500):
    """An nt_call_event up to its `out` values (bpf/neutracer_abi.h)."""
    body = struct.pack("<IIIIQQQII5Q2Q", 1, api, 4242, 4243, START_NS, enter, exit_ns, result, 0,
                       *args, *out)
    return bytes([1]) + struct.pack("<H", len(body)) + body


def name(api, handle, text):
    """An nt_name_event with its NUL-terminated name."""
    raw = text.encode() + b"\0"
    body = struct.pack("<IIIIQIIQQ", 2, api, 4242, 4243, START_NS, 0, len(raw), handle, 0x5000)
    body += raw
    return bytes([2]) + struct.pack("<H", len(body)) + body


TICK = bytes([0x80])  # a selector with only the tick bit: smooth throughput, no event

SEEDS = {
    # cuMemAlloc, cuMemHostAlloc, cuMemcpy between them, cuMemFree
    "alloc_copy_free": call(20, args=(0, 1 << 20, 0, 0, 0), out=(0x7E0000000000, 0))
    + call(25, args=(0, 4096, 0, 0, 0), out=(0x10000, 0))
    + call(56, args=(0x7E0000000000, 0x10000, 4096, 0, 0))
    + call(40, args=(0x7E0000000000, 0, 0, 0, 0)),
    # an out-of-memory cuMemAlloc, then a 2 s cuStreamSynchronize
    "failed_alloc_and_sync": call(20, result=2, args=(0, 1 << 30, 0, 0, 0))
    + call(70, enter=0, exit_ns=2_000_000_000)
    + TICK,
    # cuModuleGetFunction and cuLibraryGetKernel names, cuKernelGetFunction linking them
    "kernel_names": name(10, 0xF00, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11Fill"
                         "FunctorIfEESt5arrayIPcLm1EEEEviT0_")
    + name(11, 0xABC, "triton_poi_fused_add_0")
    + call(12, args=(0, 0xABC, 0, 0, 0), out=(0xDEF, 0)),
    # a raw record shorter than any event
    "raw_too_short": bytes([0]) + struct.pack("<H", 6) + b"\1\0\0\0\x14\0",
}

if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    for file_name, data in SEEDS.items():
        with open(os.path.join(sys.argv[1], file_name), "wb") as seed:
            seed.write(data)
