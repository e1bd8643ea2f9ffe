// SPDX-License-Identifier: Apache-2.0
/*
 * The C function py_frames_script.py calls through ctypes; the test puts a uprobe on its
 * entry, so each call shows the Python frames that led to it.
 */
__attribute__((noinline, visibility("default"))) int nt_py_frames_target(int value)
{
	return value + 1;
}
