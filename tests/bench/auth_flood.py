# SPDX-License-Identifier: Apache-2.0
"""Load for auth_flood.sh: a password-guessing flood, or a valid scraper that times its scrapes.

  auth_flood.py flood PORT THREADS SECONDS USER
      THREADS threads send GET /metrics with USER and a new wrong password each time, one request
      per connection, back to back; prints the statuses they got.
  auth_flood.py scrape PORT SCRAPES INTERVAL USER:PASSWORD[,USER:PASSWORD...]
      SCRAPES scrapes, one every INTERVAL seconds, cycling through the credentials; prints one
      line per scrape (status, seconds) and a summary line starting "scrapes".
"""
import base64
import collections
import socket
import sys
import threading
import time


def get(port, credentials, timeout=15.0):
    """Status of GET /metrics with basic auth (0: no answer) and the seconds it took."""
    token = base64.b64encode(credentials.encode()).decode()
    request = (f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {token}\r\n"
               "Connection: close\r\n\r\n").encode()
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(request)
            head = b""
            while b"\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                head += chunk
            status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
            while sock.recv(65536):  # the whole answer, as a scraper would
                pass
    except OSError:
        status = 0
    return status, time.monotonic() - start


def flood(port, threads, seconds, user):
    stop = time.monotonic() + seconds
    counts = collections.Counter()
    lock = threading.Lock()

    def guess(worker):
        n = 0
        while time.monotonic() < stop:
            status, _ = get(port, f"{user}:guess-{worker}-{n}")
            n += 1
            with lock:
                counts[status] += 1

    pool = [threading.Thread(target=guess, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    print("flood", " ".join(f"{status}:{count}" for status, count in sorted(counts.items())))


def scrape(port, scrapes, interval, credentials):
    results = []
    next_at = time.monotonic()
    for i in range(scrapes):
        status, seconds = get(port, credentials[i % len(credentials)])
        results.append((status, seconds))
        print(f"scrape {i} status {status} seconds {seconds:.3f}", flush=True)
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    within = sum(1 for status, seconds in results if status == 200 and seconds <= 1.0)
    times = sorted(seconds for _, seconds in results)
    print(f"scrapes {scrapes} ok_within_1s {within} share {within / scrapes:.3f} "
          f"first {results[0][1]:.3f}s median {times[len(times) // 2]:.3f}s "
          f"max {times[-1]:.3f}s statuses "
          + " ".join(f"{s}:{c}" for s, c in sorted(collections.Counter(s for s, _ in results).items())))


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "flood":
        flood(port, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    else:
        scrape(port, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5].split(","))
