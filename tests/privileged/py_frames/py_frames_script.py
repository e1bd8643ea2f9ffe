# SPDX-License-Identifier: Apache-2.0
"""Driven by python_frames_bpf_test.cpp: calls the probed C function from known lines.

Each command read from stdin makes one call and prints "done": "main" from the main thread,
"thread" from a new thread (the main thread waits in join(), the GIL released), "deep" under
100 frames of recursion. The test finds the lines by their "line:" markers.
"""
import ctypes
import sys
import threading

target = ctypes.CDLL(sys.argv[1]).nt_py_frames_target
target.argtypes = [ctypes.c_int]


def inner():
    return target(41)  # line: inner-call


def outer():
    return inner()  # line: outer-call


class Worker:
    def run(self):
        return outer()  # line: worker-call


def deep(levels):
    if levels == 0:
        return target(0)  # line: deep-call
    return deep(levels - 1)  # line: deep-recurse


def in_thread():
    thread = threading.Thread(target=Worker().run)
    thread.start()
    thread.join()


COMMANDS = {"main": outer, "thread": in_thread, "deep": lambda: deep(100)}

print("ready", flush=True)
for command in sys.stdin:
    COMMANDS[command.strip()]()  # line: command
    print("done", flush=True)
