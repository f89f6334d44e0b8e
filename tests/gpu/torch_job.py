"""nccl-lens under PyTorch: two ranks of torch.distributed (NCCL backend) on
whatever GPUs there are (sharing one as two "nodes", like lens-nccl-job),
optionally with the PyTorch profiler (Kineto, which needs CUPTI) recording
at the same time. Checks, for tests/gpu/run_gpu_check.sh, that the plugin
loads inside PyTorch's NCCL and that with NCCL_LENS_CUPTI=auto it leaves
CUPTI to Kineto: the profiler must still see the GPU kernels.

Usage: python3 tests/gpu/torch_job.py [--profile [--trace-dir DIR]]
Prints one JSON line per rank. With --trace-dir, each rank also writes the
profiler's trace (Chrome trace JSON, as tensorboard_trace_handler would) to
DIR/rank<R>.json, for `nccl-lens export --format kineto --into DIR` and
`nccl-lens job` (tests/gpu/check_torch_merge.py)."""
import contextlib
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(rank, world, port, profile, trace_dir):
    ndev = torch.cuda.device_count()
    if ndev < world:
        os.environ["NCCL_HOSTID"] = f"lens-torch-node{rank}"
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dev = torch.device("cuda", rank % ndev)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    x = torch.ones(1 << 20, device=dev)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    prof = torch.profiler.profile(activities=acts) if profile else contextlib.nullcontext()
    with prof:
        for _ in range(20):
            dist.all_reduce(x)
        torch.cuda.synchronize()
    out = {"rank": rank, "pid": os.getpid(), "sum_ok": bool(x[0].item() == world ** 20)}
    if profile:
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        out["kineto_gpu_events"] = len(names)
        out["kineto_nccl_kernels"] = sum(1 for n in names if "nccl" in n.lower())
        if trace_dir:
            # while the process group lives: Kineto's distributedInfo (rank, world size) is what the
            # merge matches a file with its process's nccl-lens trace by
            path = os.path.join(trace_dir, f"rank{rank}.json")
            prof.export_chrome_trace(path)
            out["trace"] = path
    print(json.dumps(out), flush=True)
    dist.destroy_process_group()


def trace_dir_arg(argv):
    if "--trace-dir" not in argv:
        return None
    i = argv.index("--trace-dir")
    if i + 1 >= len(argv) or "--profile" not in argv:
        print("usage: torch_job.py [--profile [--trace-dir DIR]]", file=sys.stderr)
        sys.exit(2)
    os.makedirs(argv[i + 1], exist_ok=True)
    return os.path.abspath(argv[i + 1])


if __name__ == "__main__":
    mp.spawn(run, args=(2, free_port(), "--profile" in sys.argv, trace_dir_arg(sys.argv)), nprocs=2)
