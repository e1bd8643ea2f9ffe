// SPDX-License-Identifier: Apache-2.0
#pragma once
// Gives a long-lived thread's deep stack pages back to the kernel. The HTTP server has one
// worker thread per connection it can hold (web.max_connections) and hands each new connection
// to the worker that waited longest, so scrape after scrape reaches a fresh worker: the daemon
// grew by 48 KiB with each of the first max_connections scrapes, the stack pages its request
// had touched kept by each worker; 20 KiB once those below the handler are given back.

namespace neutracer {

// Drops (MADV_DONTNEED) the calling thread's stack pages below the caller's frame: they hold
// nothing live once a call has returned, and they are zero-filled again on the next use.
// Returns the size of the range dropped (resident or not), 0 when nothing was dropped: on the
// main thread, or when the thread's stack bounds are unknown.
unsigned long release_stack_below_caller();

} // namespace neutracer
