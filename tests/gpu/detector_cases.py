# SPDX-License-Identifier: Apache-2.0
"""GPU workloads for validating neutracerd's detectors: faults that must be detected and
healthy jobs that must stay silent. Run by detectors.py, one process per case:

    python3 detector_cases.py CASE SECONDS

Each case prints `READY <pid>` once torch has loaded the driver (and, when NT_GO_FILE is set,
waits for that file to exist), then `FAULT <unix time>`
when its faulty behaviour starts (faulty cases only), then runs for SECONDS (or until its
fault has happened) and prints `DONE`. Standard library and PyTorch/Triton only.
"""
import os
import random
import sys
import time

MiB = 1 << 20
GiB = 1 << 30


def say(line):
    print(line, flush=True)


def start():
    import torch

    torch.cuda.init()
    torch.zeros(1, device="cuda")  # context and allocator exist before the fault starts
    say(f"READY {os.getpid()}")
    go = os.environ.get("NT_GO_FILE")  # python_sites.py: start once the daemon knows us
    while go and not os.path.exists(go):
        time.sleep(0.01)
    return torch


def sawtooth_step(torch, buffers=8, size=8 * MiB):
    """A training-like step: temporaries allocated and freed (the caching allocator's shape)."""
    tmp = [torch.empty(size // 4, device="cuda") for _ in range(buffers)]
    s = sum(t.fill_(1.0).sum() for t in tmp)
    del tmp
    return s


def leak_list(seconds):
    """Tensors kept in a list, a few of them freed each round: two 4 MiB tensors kept and one
    random kept tensor dropped every 0.2 s (net 20 MiB/s), with a training sawtooth on top."""
    torch = start()
    kept = []
    rng = random.Random(11)
    say(f"FAULT {time.time()}")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        kept.append(torch.randn(MiB, device="cuda"))  # 4 MiB of float32; a leaking line
        kept.append(torch.randn(MiB, device="cuda"))  # a leaking line
        kept.pop(rng.randrange(len(kept)))
        sawtooth_step(torch)
        torch.cuda.synchronize()
        time.sleep(0.2)


def leak_graph(seconds):
    """The seeds' `val += value.requires_grad_()` leak: a running sum that keeps every step's
    autograd graph (and its saved 4 MiB inputs) alive."""
    torch = start()
    val = torch.zeros(1, device="cuda")
    say(f"FAULT {time.time()}")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = torch.randn(MiB, device="cuda").requires_grad_()  # a leaking line
        val = val + (value * value).sum()  # mul saves `value` for backward
        torch.cuda.synchronize()
        time.sleep(0.2)


def leak_varying(seconds):
    """A training step whose batch size varies from step to step, so the caching allocator's
    pool grows in segments of varying sizes, with a 4 MiB tensor kept on the side at each step
    (about 30 MiB/s): the leak the driver view's steadiness rule hides (issue 30)."""
    torch = start()
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rng = random.Random(5)
    kept = []
    say(f"FAULT {time.time()}")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        batch = rng.choice([64, 256, 1024, 4096, 8192])
        opt.zero_grad()
        model(torch.randn(batch, 1024, device="cuda")).square().mean().backward()
        opt.step()
        kept.append(torch.randn(MiB, device="cuda"))  # 4 MiB of float32; a leaking line
        torch.cuda.synchronize()
        time.sleep(0.1)


def train_varying(seconds):
    """leak_varying without the leak: the same step of varying batch size, nothing kept. Its pool
    grows in segments of varying sizes for a while and then holds; it must stay silent."""
    torch = start()
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rng = random.Random(5)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        batch = rng.choice([64, 256, 1024, 4096, 8192])
        opt.zero_grad()
        model(torch.randn(batch, 1024, device="cuda")).square().mean().backward()
        opt.step()
        torch.cuda.synchronize()
        time.sleep(0.1)


def oom_capacity(seconds):
    """1 GiB tensors until the GPU is full: a capacity OOM."""
    torch = start()
    kept = []
    say(f"FAULT {time.time()}")
    try:
        while True:
            kept.append(torch.empty(GiB // 4, device="cuda"))
    except torch.cuda.OutOfMemoryError:
        say(f"OOM after {len(kept)} GiB")
    time.sleep(min(seconds, 10))


def fragmentation(seconds):
    """Many 1 MiB tensors (2 MiB small-pool segments), half freed at random, then one large
    request: the process holds plenty of memory, but only in small pieces."""
    torch = start()
    free, total = torch.cuda.mem_get_info()
    count = int(free * 0.85) // MiB
    small = [torch.empty(MiB // 4, device="cuda") for _ in range(count)]
    random.seed(7)
    for i in random.sample(range(count), count // 2):
        small[i] = None
    held = torch.cuda.memory_reserved()
    request = int(total * 0.6)
    say(f"FAULT {time.time()}")
    try:
        torch.empty(request // 4, device="cuda")
        say("large request unexpectedly succeeded")
    except torch.cuda.OutOfMemoryError:
        say(f"OOM request={request} reserved={held} allocated={torch.cuda.memory_allocated()}")
    time.sleep(min(seconds, 10))


def hang(seconds):
    """A kernel that spins on a flag that never comes; the host waits in synchronize."""
    torch = start()
    import triton
    import triton.language as tl

    @triton.jit
    def spin(flag_ptr):
        while tl.load(flag_ptr, volatile=True) == 0:
            pass

    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    spin[(1,)](flag)  # compiles, then spins on the GPU
    say(f"FAULT {time.time()}")
    torch.cuda.synchronize()  # never returns; the runner kills this process


def cnn_train(seconds):
    """A small CNN trained on random CIFAR-sized batches."""
    torch = start()
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    end = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < end:
        x = torch.randn(128, 3, 32, 32, device="cuda")
        y = torch.randint(0, 10, (128,), device="cuda")
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        steps += 1
        if steps % 50 == 0:
            loss.item()
    say(f"steps {steps}")


def inference(seconds):
    """An inference server: requests of random batch size through a small MLP, no grad."""
    torch = start()
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda().eval()
    random.seed(3)
    end = time.monotonic() + seconds
    with torch.no_grad():
        while time.monotonic() < end:
            batch = random.choice([1, 2, 4, 8, 16, 32, 64, 128])
            model(torch.randn(batch, 1024, device="cuda")).sum().item()
            time.sleep(0.005)


def warmup_steady(seconds):
    """A job whose memory grows while it warms up (batch size ramps for 40 s) and then stays
    at a plateau: the caching allocator keeps what it reserved."""
    torch = start()
    nn = torch.nn
    model = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 2048)).cuda()
    opt = torch.optim.Adam(model.parameters())
    begin = time.monotonic()
    end = begin + seconds
    while time.monotonic() < end:
        ramp = min(1.0, (time.monotonic() - begin) / 40)
        batch = int(256 + ramp * 8192)
        opt.zero_grad()
        model(torch.randn(batch, 2048, device="cuda")).square().mean().backward()
        opt.step()
        torch.cuda.synchronize()


def transformer(seconds):
    """A small transformer encoder trained with AdamW on random token batches."""
    torch = start()
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                       batch_first=True)
    model = nn.Sequential(nn.Embedding(8192, 512), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(512, 8192)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    end = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < end:
        tokens = torch.randint(0, 8192, (16, 256), device="cuda")
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(tokens).flatten(0, 1), tokens.flatten())
        loss.backward()
        opt.step()
        steps += 1
        if steps % 20 == 0:
            loss.item()
    say(f"steps {steps}")


CASES = {f.__name__: f for f in [leak_list, leak_graph, leak_varying, train_varying, oom_capacity, fragmentation, hang,
                                  cnn_train, inference, warmup_steady, transformer]}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        print(f"usage: {sys.argv[0]} {{{','.join(CASES)}}} SECONDS", file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[1]](float(sys.argv[2]))
    say("DONE")
