#!/usr/bin/env python3
"""Image classification under DDP: torchvision MobileNetV2 on Fashion-MNIST.

The reference image workload of scalescope. One process per GPU under
torchrun, or a single plain process. Fashion-MNIST 28x28 grey images are turned
into 3 channels, upsampled to --image-size and normalised, either per sample in
DataLoader workers (--loader cpu) or per batch on the GPU from raw uint8
batches (--loader gpu, the DALI-style pipeline). See workloads/README.md.

  torchrun --nproc-per-node 2 workloads/image_ddp.py --image-size 112 \
      --precision bf16 --channels-last --pin-memory --loader gpu --epochs 10

Prints MLPerf-style ':::MLLOG' lines and ends with one line
'scalescope_result workload=image_ddp ... throughput_images_per_s=X ...'.
"""

import argparse
import gzip
import math
import os
import struct
import time

import workload_common as wc  # sets the NCCL/NVSHMEM safety-net variables first

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

# Fashion-MNIST training-set statistics of pixel/255 (mean, std).
kMean = 0.2860
kStd = 0.3530
kNumClasses = 10
kIdxFiles = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def on_off(text):
    """'--pin-memory' alone means on; '--pin-memory on|off' lets a sweep vary it."""
    t = str(text).lower()
    if t in ("on", "1", "true", "yes"):
        return True
    if t in ("off", "0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got '{text}'")


def default_data_dir():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for candidate in (os.environ.get("SCALESCOPE_DATA_DIR", ""),
                      os.path.join(repo, ".devcarry", "fashion-mnist"),
                      "/usr/share/datasets/fashion-mnist"):
        if candidate and os.path.isdir(candidate):
            return candidate
    return os.path.join(repo, ".devcarry", "fashion-mnist")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="MobileNetV2 on Fashion-MNIST under DDP (scalescope reference workload)")
    p.add_argument("--data-dir", default=default_data_dir(),
                   help="folder with the four Fashion-MNIST idx .gz files")
    p.add_argument("--synthetic", action="store_true",
                   help="random uint8 images and labels of the same shape instead of Fashion-MNIST")
    p.add_argument("--image-size", type=int, default=224, help="side after upsampling (100..500; >= 32 for CPU smoke tests)")
    p.add_argument("--precision", choices=["fp64", "fp32", "fp16", "bf16"], default="fp32",
                   help="fp64: model.double(); fp16/bf16: autocast (fp16 with a GradScaler)")
    p.add_argument("--pin-memory", type=on_off, nargs="?", const=True, default=False, metavar="on|off")
    p.add_argument("--channels-last", type=on_off, nargs="?", const=True, default=False, metavar="on|off",
                   help="NHWC memory format for the model and the inputs")
    p.add_argument("--loader", choices=["cpu", "gpu"], default="cpu",
                   help="cpu: DataLoader workers resize and normalise each sample; gpu: raw uint8 batches resized on the GPU")
    p.add_argument("--workers", type=int, default=4, help="DataLoader worker processes per rank (cpu loader)")
    p.add_argument("--sample-cpu-us", type=float, default=0.0,
                   help="extra CPU time per sample in the DataLoader workers, microseconds (cpu loader): a slow "
                        "decode, to make an input-bound run on purpose")
    p.add_argument("--batch-size", type=int, default=128, help="per GPU")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=int, default=None)
    length.add_argument("--steps", type=int, default=None, help="total training steps (overrides --epochs)")
    p.add_argument("--warmup-steps", type=int, default=10, help="steps left out of the steady-state figures")
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate of the one-cycle schedule "
                   "(default: sgd 0.1 x global_batch/256, adamw 2e-3)")
    p.add_argument("--weight-decay", type=float, default=5e-5)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--no-augment", action="store_true", help="no random horizontal flip")
    p.add_argument("--eval", type=on_off, nargs="?", const=True, default=None, metavar="on|off",
                   help="test accuracy at the end (default: on with --epochs, off with --steps)")
    p.add_argument("--eval-each-epoch", action="store_true")
    p.add_argument("--target-accuracy", type=float, default=0.90,
                   help="run_stop status is success when the final test accuracy reaches it (0: no target)")
    p.add_argument("--max-train-samples", type=int, default=0, help="use only the first N training images (smoke tests)")
    p.add_argument("--max-test-samples", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-every", type=int, default=100, help="print the loss every N steps (0: never)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="cpu (gloo under torchrun) is for smoke tests only")
    wc.add_emit_nvtx_option(p)
    p.add_argument("--cudnn-benchmark", type=on_off, nargs="?", const=True, default=True, metavar="on|off")
    p.add_argument("--tf32", type=on_off, nargs="?", const=True, default=None, metavar="on|off",
                   help="TF32 tensor cores for FP32 convolutions and matrix multiplies (default: PyTorch's)")
    args = p.parse_args(argv)
    if args.epochs is None and args.steps is None:
        args.epochs = 1
    if not 32 <= args.image_size <= 500:
        p.error(f"--image-size {args.image_size} is outside 32..500")
    for name in ("batch_size", "epochs", "steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.workers < 0 or args.warmup_steps < 0:
        p.error("--workers and --warmup-steps must not be negative")
    if not 0 <= args.sample_cpu_us <= 1e6:
        p.error(f"--sample-cpu-us {args.sample_cpu_us:g} is outside 0..1000000")
    if args.sample_cpu_us > 0 and args.loader != "cpu":
        p.error("--sample-cpu-us needs --loader cpu (the GPU loader has no per-sample CPU work)")
    if args.eval is None:
        args.eval = args.steps is None
    return args


# ---------------------------------------------------------------- data

def read_idx(path, expected_magic, expected_dims):
    """Reads one idx file (gzip): big-endian magic, dims, then uint8 data."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        wc.fail(f"{path}: no such file (set --data-dir, or run bench/study/stage_data.sh, or use --synthetic)")
    except (OSError, EOFError) as e:
        wc.fail(f"{path}: not a readable gzip file ({e})")
    header = 4 + 4 * expected_dims
    if len(raw) < header:
        wc.fail(f"{path}: truncated idx header ({len(raw)} bytes)")
    magic = struct.unpack(">I", raw[:4])[0]
    if magic != expected_magic:
        wc.fail(f"{path}: idx magic {magic:#x}, expected {expected_magic:#x}")
    dims = struct.unpack(f">{expected_dims}I", raw[4:header])
    count = int(np.prod(dims))
    if len(raw) - header != count:
        wc.fail(f"{path}: {len(raw) - header} data bytes for dimensions {dims} (expected {count})")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_split(args, split, limit):
    """(images uint8 [N,28,28], labels int64 [N]) of one split, as CPU tensors."""
    if args.synthetic:
        n = 60000 if split == "train" else 10000
        if limit:
            n = min(n, limit)
        g = torch.Generator().manual_seed(args.seed + (0 if split == "train" else 1))
        return (torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8, generator=g),
                torch.randint(0, kNumClasses, (n,), dtype=torch.int64, generator=g))
    image_file, label_file = kIdxFiles[split]
    images = read_idx(os.path.join(args.data_dir, image_file), 0x803, 3)
    labels = read_idx(os.path.join(args.data_dir, label_file), 0x801, 1)
    if images.shape[0] != labels.shape[0]:
        wc.fail(f"{args.data_dir}: {split} has {images.shape[0]} images but {labels.shape[0]} labels")
    if images.shape[1:] != (28, 28):
        wc.fail(f"{args.data_dir}/{image_file}: images are {images.shape[1:]}, expected 28x28")
    if labels.size and int(labels.max()) >= kNumClasses:
        wc.fail(f"{args.data_dir}/{label_file}: label {int(labels.max())} out of range 0..9")
    if limit:
        images, labels = images[:limit], labels[:limit]
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64))


def preprocess(raw, size):
    """uint8 [B,28,28] -> normalised float32 [B,3,size,size]; the same maths on
    CPU (per sample, B=1) and GPU (per batch) so both loaders feed equal data."""
    x = raw.unsqueeze(1).float().div_(255.0)
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x.sub_(kMean).div_(kStd)
    return x.expand(-1, 3, -1, -1)


class CpuSampleDataset(torch.utils.data.Dataset):
    """Per-sample work in DataLoader workers: flip, resize, normalise, 3 channels."""

    def __init__(self, images, labels, size, augment, cpu_us=0.0):
        self.images, self.labels, self.size, self.augment = images, labels, size, augment
        self.cpu_s = cpu_us / 1e6

    def __len__(self):
        return self.images.shape[0]

    def __getitem__(self, i):
        if self.cpu_s > 0:  # --sample-cpu-us: CPU work, as a slow decode would do (not a sleep)
            end = time.perf_counter() + self.cpu_s
            while time.perf_counter() < end:
                pass
        img = self.images[i]
        if self.augment and torch.rand(()) < 0.5:
            img = img.flip(-1)
        return preprocess(img.unsqueeze(0), self.size)[0].contiguous(), self.labels[i]


def make_sampler(n, dist_info, seed):
    if dist_info.enabled:
        return torch.utils.data.distributed.DistributedSampler(
            range(n), num_replicas=dist_info.world_size, rank=dist_info.rank, shuffle=True, seed=seed, drop_last=True)
    return _EpochShuffle(n, seed)


class _EpochShuffle:
    """Single-process stand-in for DistributedSampler: a seeded shuffle per epoch."""

    def __init__(self, n, seed):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.n, generator=g).tolist())

    def __len__(self):
        return self.n


class CpuLoader:
    """The plain pipeline: DataLoader workers produce float batches, the main
    process copies them to the device (non-blocking only from pinned memory)."""

    def __init__(self, args, images, labels, dist_info):
        self.sampler = make_sampler(images.shape[0], dist_info, args.seed)
        kwargs = {}
        if args.workers > 0:
            kwargs = {"persistent_workers": True, "prefetch_factor": 4}
        self.loader = torch.utils.data.DataLoader(
            CpuSampleDataset(images, labels, args.image_size, not args.no_augment, args.sample_cpu_us),
            batch_size=args.batch_size,
            sampler=self.sampler, num_workers=args.workers, pin_memory=args.pin_memory and dist_info.is_cuda,
            drop_last=True, **kwargs)
        self.device, self.pin = dist_info.device, args.pin_memory
        self.dtype = torch.float64 if args.precision == "fp64" else torch.float32
        self.memory_format = torch.channels_last if args.channels_last else torch.contiguous_format

    def __len__(self):
        return len(self.loader)

    def epoch(self, epoch):
        self.sampler.set_epoch(epoch)
        for x, y in self.loader:
            x = x.to(self.device, non_blocking=self.pin).to(dtype=self.dtype, memory_format=self.memory_format)
            yield x, y.to(self.device, non_blocking=self.pin)


class GpuLoader:
    """The DALI-style pipeline: raw uint8 batches (784 bytes per image) are
    gathered on the host, copied, and flipped/resized/normalised on the device.
    On CUDA the next batch is prepared on a side stream while the current one
    trains; with --pin-memory the copy is asynchronous from pinned staging."""

    def __init__(self, args, images, labels, dist_info):
        self.sampler = make_sampler(images.shape[0], dist_info, args.seed)
        self.images, self.labels = images, labels
        self.batch, self.size, self.augment = args.batch_size, args.image_size, not args.no_augment
        self.device, self.is_cuda = dist_info.device, dist_info.is_cuda
        self.pin = args.pin_memory and self.is_cuda
        self.dtype = torch.float64 if args.precision == "fp64" else torch.float32
        self.memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
        self.stream = torch.cuda.Stream(self.device) if self.is_cuda else None
        # Two staging slots so slot k is refilled only after its copy finished.
        self.staging = [(torch.empty((self.batch, 28, 28), dtype=torch.uint8, pin_memory=self.pin),
                         torch.empty((self.batch,), dtype=torch.int64, pin_memory=self.pin)) for _ in range(2)]
        self.copied = [None, None]
        self.gen = torch.Generator(device=self.device) if self.is_cuda else torch.Generator()
        self.gen.manual_seed(args.seed + dist_info.rank)

    def __len__(self):
        return len(self.sampler) // self.batch

    def _prepare(self, slot, idx):
        raw_host, lab_host = self.staging[slot]
        if self.copied[slot] is not None:
            self.copied[slot].synchronize()
        torch.index_select(self.images, 0, idx, out=raw_host)
        torch.index_select(self.labels, 0, idx, out=lab_host)
        ctx = torch.cuda.stream(self.stream) if self.is_cuda else _null_context()
        with ctx:
            raw = raw_host.to(self.device, non_blocking=self.pin)
            y = lab_host.to(self.device, non_blocking=self.pin)
            if self.is_cuda:
                self.copied[slot] = torch.cuda.Event()
                self.copied[slot].record(self.stream)
            else:
                y = y.clone()  # .to(cpu) aliases the staging slot that is refilled two batches later
            if self.augment:
                flip = torch.rand((raw.shape[0], 1, 1), device=self.device, generator=self.gen) < 0.5
                raw = torch.where(flip, raw.flip(-1), raw)
            x = preprocess(raw, self.size).to(dtype=self.dtype, memory_format=self.memory_format)
        return x, y

    def epoch(self, epoch):
        self.sampler.set_epoch(epoch)
        order = torch.tensor(list(iter(self.sampler)), dtype=torch.int64)
        batches = [order[i * self.batch:(i + 1) * self.batch] for i in range(len(self))]
        if not batches:
            return
        pending = self._prepare(0, batches[0])
        for i in range(len(batches)):
            if self.is_cuda:
                torch.cuda.current_stream(self.device).wait_stream(self.stream)
                for t in pending:
                    t.record_stream(torch.cuda.current_stream(self.device))
            current = pending
            if i + 1 < len(batches):
                pending = self._prepare((i + 1) % 2, batches[i + 1])
            yield current


class _null_context:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------- model and loop

def build_model(args, dist_info):
    import torchvision
    try:
        model = torchvision.models.mobilenet_v2(weights=None, num_classes=kNumClasses)
    except TypeError:  # torchvision < 0.13
        model = torchvision.models.mobilenet_v2(pretrained=False, num_classes=kNumClasses)
    model = model.to(dist_info.device)
    if args.precision == "fp64":
        model = model.double()
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    if dist_info.enabled:
        device_ids = [dist_info.local_rank] if dist_info.is_cuda else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=device_ids, gradient_as_bucket_view=True)
    return model


def build_optimizer(args, model, total_steps, global_batch):
    if args.optimizer == "sgd":
        lr = args.lr if args.lr is not None else 0.1 * global_batch / 256
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=args.weight_decay)
    else:
        lr = args.lr if args.lr is not None else 2e-3
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=args.weight_decay)
    # At least 20 schedule steps: OneCycleLR divides by zero on a warm-up phase of 0 steps.
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(total_steps, 20), pct_start=0.25)
    return opt, sched, lr


def evaluate(args, model, images, labels, dist_info):
    """Test accuracy over the whole test set: each rank predicts a strided share
    (no padding, no duplicates), and the (index, prediction) pairs of all ranks
    are gathered so the accuracy counts each test image exactly once."""
    # The inner module: a DDP forward is a collective (buffer broadcast), and the
    # ranks may run different numbers of evaluation batches.
    model = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    model.eval()
    n = images.shape[0]
    mine = torch.arange(dist_info.rank, n, dist_info.world_size)
    preds = []
    dtype = torch.float64 if args.precision == "fp64" else torch.float32
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    amp = wc.autocast_dtype(args.precision)
    with torch.no_grad():
        for start in range(0, mine.numel(), 256):
            idx = mine[start:start + 256]
            x = preprocess(images[idx].to(dist_info.device), args.image_size).to(dtype=dtype, memory_format=fmt)
            with torch.autocast(device_type=dist_info.device.type, dtype=amp or torch.bfloat16, enabled=amp is not None):
                preds.append(model(x).argmax(dim=1).to(torch.int64))
    local = torch.stack([mine.to(dist_info.device), torch.cat(preds) if preds else mine.to(dist_info.device)], dim=1)
    if dist_info.enabled:
        width = math.ceil(n / dist_info.world_size)
        padded = torch.full((width, 2), -1, dtype=torch.int64, device=dist_info.device)
        padded[:local.shape[0]] = local
        gathered = [torch.empty_like(padded) for _ in range(dist_info.world_size)]
        dist.all_gather(gathered, padded)
        local = torch.cat(gathered)
        local = local[local[:, 0] >= 0]
    idx, pred = local[:, 0].cpu(), local[:, 1].cpu()
    if idx.unique().numel() != n:
        wc.fail(f"evaluation gathered {idx.unique().numel()} distinct test images, expected {n}")
    model.train()
    return float((pred == labels[idx]).double().mean())


def main():
    args = parse_args()
    init_t = time.time()
    dist_info = wc.Dist(args.device)
    log = wc.MLLogger(dist_info.is_main, __file__)
    log.start("init_start")
    torch.manual_seed(args.seed)
    if dist_info.is_cuda:
        torch.backends.cudnn.benchmark = args.cudnn_benchmark
        if args.tf32 is not None:  # off: FP32 without tensor cores, as on GPUs before Ampere
            torch.backends.cudnn.allow_tf32 = args.tf32
            torch.backends.cuda.matmul.allow_tf32 = args.tf32
    if args.precision == "fp16" and not dist_info.is_cuda:
        wc.fail("--precision fp16 needs CUDA (CPU autocast supports bf16 only)")

    train_x, train_y = load_split(args, "train", args.max_train_samples)
    test_x, test_y = load_split(args, "test", args.max_test_samples) if args.eval else (None, None)
    loader_cls = GpuLoader if args.loader == "gpu" else CpuLoader
    loader = loader_cls(args, train_x, train_y, dist_info)
    steps_per_epoch = len(loader)
    if steps_per_epoch == 0:
        wc.fail(f"{train_x.shape[0]} training images give no full batch of {args.batch_size} "
                f"per rank on {dist_info.world_size} ranks")
    total_steps = args.steps if args.steps is not None else args.epochs * steps_per_epoch
    if total_steps <= args.warmup_steps:
        wc.fail(f"{total_steps} steps leave nothing after --warmup-steps {args.warmup_steps}")
    global_batch = args.batch_size * dist_info.world_size

    model = build_model(args, dist_info)
    opt, sched, lr = build_optimizer(args, model, total_steps, global_batch)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    amp = wc.autocast_dtype(args.precision)
    scaler = wc.make_grad_scaler(args.precision == "fp16")

    log.event("submission_benchmark", "image_ddp_mobilenetv2_fashion_mnist")
    log.event("global_batch_size", global_batch)
    log.event("opt_name", args.optimizer)
    log.event("opt_base_learning_rate", lr)
    log.event("train_samples", int(train_x.shape[0]))
    log.event("eval_samples", int(test_x.shape[0]) if test_x is not None else 0)
    log.event("number_of_ranks", dist_info.world_size)
    dist_info.barrier()
    log.end("init_stop", metadata={"init_seconds": round(time.time() - init_t, 3)})
    log.start("run_start")

    timer = wc.StepTimer(dist_info.is_cuda, args.warmup_steps)
    step, epoch, t_steady, accuracy, loss_value = 0, 0, None, float("nan"), float("nan")
    while step < total_steps:
        log.start("epoch_start", metadata={"epoch_num": epoch})
        batches = loader.epoch(epoch)
        # Exactly the batches the epoch has (both loaders drop the last partial
        # one), so every ProfilerStep range holds one real step.
        for _ in range(min(steps_per_epoch, total_steps - step)):
            with wc.StepRange(dist_info.is_cuda, step, args.emit_nvtx):
                if step == args.warmup_steps:
                    if dist_info.is_cuda:
                        torch.cuda.synchronize()
                    t_steady = time.perf_counter()
                timer.mark()
                x, y = next(batches)
                with torch.autocast(device_type=dist_info.device.type, dtype=amp or torch.bfloat16,
                                    enabled=amp is not None):
                    out = model(x)
                loss = criterion(out.float(), y)
                opt.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                sched.step()
            if args.log_every and (step + 1) % args.log_every == 0:
                loss_value = float(loss.detach())
                if dist_info.is_main:
                    print(f"step={step + 1} epoch={epoch} loss={loss_value:.4f}", flush=True)
            step += 1
        batches.close()
        log.end("epoch_stop", metadata={"epoch_num": epoch})
        if args.eval and args.eval_each_epoch and step < total_steps:
            acc = evaluate(args, model, test_x, test_y, dist_info)
            log.event("eval_accuracy", round(acc, 5), metadata={"epoch_num": epoch})
        epoch += 1
    timer.mark()
    if dist_info.is_cuda:
        torch.cuda.synchronize()
    steady_s = dist_info.all_reduce_max(time.perf_counter() - t_steady)
    loss_value = float(loss.detach())

    if args.eval:
        accuracy = evaluate(args, model, test_x, test_y, dist_info)
        log.event("eval_accuracy", round(accuracy, 5), metadata={"epoch_num": epoch - 1})
    reached = not args.eval or args.synthetic or args.target_accuracy <= 0 or accuracy >= args.target_accuracy
    status = "success" if reached else "aborted"
    log.end("run_stop", metadata={"status": status})

    times = timer.step_times_ms()
    steady_images = (total_steps - args.warmup_steps) * global_batch
    alloc, reserved = wc.peak_memory_mib(dist_info)
    if dist_info.is_main:
        print(wc.format_summary("image_ddp", {
            "world_size": dist_info.world_size, "device": dist_info.device.type, "precision": args.precision,
            "pin_memory": "on" if args.pin_memory else "off", "channels_last": "on" if args.channels_last else "off",
            "loader": args.loader, "workers": args.workers, "batch_size": args.batch_size,
            "global_batch": global_batch, "image_size": args.image_size, "data": "synthetic" if args.synthetic else "fashion-mnist",
            "steps": total_steps, "warmup_steps": args.warmup_steps, "epochs_run": epoch,
            "throughput_images_per_s": steady_images / steady_s,
            # Seconds per 60,000 images at the steady rate: fixed work at any GPU
            # count, so a sweep's speedup and efficiency can use it directly.
            "epoch_time_s": 60000.0 * steady_s / steady_images,
            "step_time_ms_median": wc.percentile(times, 50), "step_time_ms_p10": wc.percentile(times, 10),
            "step_time_ms_p90": wc.percentile(times, 90), "steady_seconds": steady_s,
            "peak_mem_alloc_mib": alloc, "peak_mem_reserved_mib": reserved,
            "final_loss": loss_value, "test_accuracy": accuracy, "status": status}), flush=True)
    dist_info.close()
    dist_info.finish(0 if status == "success" else 3)


if __name__ == "__main__":
    wc.run_main(main)
