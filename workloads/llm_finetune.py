#!/usr/bin/env python3
"""LLM fine-tuning methods on a Llama-architecture causal LM, under DDP.

The reference LLM workload of scalescope. The model is built from a
transformers LlamaConfig with random initialisation (no weights can be
downloaded), in sizes from about 130M to 3.4B parameters (--size), trained on
synthetic pattern sequences or on byte tokens of a text (--data text: the
bundled data/training_notes.txt or --text-file). Methods:

  lora   peft LoRA adapters on q/k/v/o over a frozen bf16 base
  dpo    full-parameter policy plus a frozen bf16 reference copy, preference
         pairs (chosen, rejected), the DPO loss written out
  qlora  frozen base stored as 4-bit NF4 (own implementation, dequantised on
         the fly), LoRA adapters on q/k/v/o on top
  qat    full-parameter training with int8 fake quantisation of weights (per
         output channel) and activations (per token) in every forward

  torchrun --nproc-per-node 2 workloads/llm_finetune.py --method lora --size 1b --steps 40

bf16 autocast throughout. Prints per-iteration times, peak GPU memory and one
line 'scalescope_result workload=llm_finetune ... step_time_ms_median=X ...'.
"""

import argparse
import copy
import os
import time

import workload_common as wc  # sets the NCCL/NVSHMEM safety-net variables first

import torch
import torch.nn as nn

import llm_parts

# name: (vocab, hidden, intermediate, layers, heads, kv_heads)
kSizes = {
    "tiny": (512, 64, 176, 2, 4, 4),            # CPU smoke tests only
    "125m": (32000, 768, 2048, 12, 12, 12),     # ~134M parameters
    "350m": (32000, 1024, 2816, 24, 16, 16),    # ~370M
    "1b": (32000, 2048, 5632, 22, 32, 4),       # ~1.1B (TinyLlama's shape)
    "3b": (32000, 3200, 8640, 26, 32, 32),      # ~3.4B (OpenLLaMA-3B's shape)
}
kAttention = ("q_proj", "k_proj", "v_proj", "o_proj")
kAllLinear = kAttention + ("gate_proj", "up_proj", "down_proj")
kDefaultLr = {"lora": 1e-3, "qlora": 1e-3, "dpo": 1e-4, "qat": 1e-4}
kBundledText = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "training_notes.txt")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Llama fine-tuning methods under DDP (scalescope reference workload)")
    p.add_argument("--method", choices=["lora", "dpo", "qlora", "qat"], required=True)
    p.add_argument("--size", choices=sorted(kSizes), default="1b")
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=8,
                   help="sequences per GPU per step (dpo: batch/2 chosen-rejected pairs, so every method sees "
                        "the same tokens per step)")
    wc.add_emit_nvtx_option(p)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup-steps", type=int, default=10, help="steps left out of the steady-state figures")
    p.add_argument("--lr", type=float, default=None, help="AdamW learning rate (default per method)")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--lora-alpha", type=float, default=32.0)
    p.add_argument("--lora-dropout", type=float, default=0.05)
    p.add_argument("--lora-impl", choices=["peft", "builtin"], default="peft",
                   help="lora method: peft (default) or the builtin LoraLinear that qlora always uses")
    p.add_argument("--dpo-beta", type=float, default=0.1)
    p.add_argument("--qat-weight-bits", type=int, choices=[4, 8], default=8)
    p.add_argument("--qat-activations", choices=["on", "off"], default="on")
    p.add_argument("--data", choices=["synthetic", "text"], default="synthetic",
                   help="synthetic pattern sequences, or byte-level tokens of a text (--text-file)")
    p.add_argument("--text-file", default=None,
                   help=f"the text for --data text (default: the bundled {os.path.relpath(kBundledText)}); "
                        "giving it implies --data text")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-every", type=int, default=10, help="print the loss every N steps (0: never)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="cpu (gloo under torchrun) is for smoke tests only")
    args = p.parse_args(argv)
    if args.seq_len < 8 or args.batch_size < 1 or args.steps < 1 or args.warmup_steps < 0:
        p.error("--seq-len must be >= 8, --batch-size and --steps >= 1, --warmup-steps >= 0")
    if args.method == "dpo" and args.batch_size % 2:
        p.error("--method dpo needs an even --batch-size (pairs of chosen and rejected)")
    if args.steps <= args.warmup_steps:
        p.error(f"--steps {args.steps} leaves nothing after --warmup-steps {args.warmup_steps}")
    if args.lora_rank < 1:
        p.error("--lora-rank must be at least 1")
    if args.text_file is not None:
        args.data = "text"
    elif args.data == "text":
        args.text_file = kBundledText
    return args


# ---------------------------------------------------------------- data

class TokenSource:
    """Batches of token ids. Synthetic: each sequence is an arithmetic
    progression modulo the vocabulary with a random start and stride, so the
    loss can fall. Text: random windows of a file's bytes (vocabulary >= 256).
    For DPO the first half of a sequence is the prompt; the chosen response
    continues it, the rejected one is drawn from elsewhere."""

    def __init__(self, args, vocab, device, rank):
        self.vocab, self.seq, self.device = vocab, args.seq_len, device
        self.gen = torch.Generator(device=device).manual_seed(args.seed * 1000 + rank)
        self.text = None
        if args.text_file:
            try:
                with open(args.text_file, "rb") as f:
                    data = f.read()
            except OSError as e:
                wc.fail(f"{args.text_file}: cannot read ({e.strerror})")
            if vocab < 256:
                wc.fail(f"--text-file needs a vocabulary of at least 256 byte tokens (--size has {vocab})")
            if len(data) < 2 * self.seq + 1:
                wc.fail(f"{args.text_file}: {len(data)} bytes, need at least {2 * self.seq + 1} for --seq-len {self.seq}")
            self.text = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device=device, dtype=torch.int64)

    def _rand(self, high, size):
        return torch.randint(0, high, size, device=self.device, generator=self.gen)

    def _pattern(self, n, start=None, stride=None):
        start = self._rand(self.vocab, (n, 1)) if start is None else start
        stride = self._rand(7, (n, 1)) + 1 if stride is None else stride
        t = torch.arange(self.seq, device=self.device)[None, :]
        return (start + stride * t) % self.vocab, start, stride

    def _windows(self, n):
        begin = self._rand(self.text.numel() - self.seq, (n, 1))
        return self.text[begin + torch.arange(self.seq, device=self.device)[None, :]]

    def lm_batch(self, n):
        return self._windows(n) if self.text is not None else self._pattern(n)[0]

    def preference_batch(self, pairs):
        """(chosen [pairs, T], rejected [pairs, T], first response position)."""
        half = self.seq // 2
        chosen = self.lm_batch(pairs)
        rejected = chosen.clone()
        other = self.lm_batch(pairs)
        rejected[:, half:] = other[:, half:]
        return chosen, rejected, half


# ---------------------------------------------------------------- model

def build_base(args, device):
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:
        wc.fail(f"transformers is not importable ({e})")
    vocab, hidden, inter, layers, heads, kv = kSizes[args.size]
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv,
                         max_position_embeddings=max(2048, args.seq_len), use_cache=False, tie_word_embeddings=False)
    torch.manual_seed(args.seed)  # the same random weights on every rank
    try:
        with torch.device(device):  # initialise on the GPU: seconds instead of a minute on the CPU
            model = LlamaForCausalLM(config)
    except (AttributeError, TypeError):  # torch < 2.0 has no device context
        model = LlamaForCausalLM(config).to(device)
    return model, vocab


def count_params(module):
    total = sum(p.numel() for p in module.parameters())
    total += sum(b.numel() * 2 for n, b in module.named_buffers() if n.endswith("packed"))  # 2 NF4 values a byte
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    return total, trainable


def setup_method(args, model):
    """Turns the fresh fp32 model into the trained module for the method.
    Returns (trained module, frozen reference or None)."""
    if args.method in ("lora", "qlora"):
        model = model.to(torch.bfloat16)
        model.requires_grad_(False)
        if args.method == "qlora":
            llm_parts.replace_linears(model, kAllLinear, lambda lin: llm_parts.Nf4Linear(lin, torch.bfloat16))
        if args.method == "lora" and args.lora_impl == "peft":
            try:
                from peft import LoraConfig, get_peft_model
            except ImportError as e:
                wc.fail(f"peft is not importable ({e}); use --lora-impl builtin")
            config = LoraConfig(r=args.lora_rank, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                                target_modules=list(kAttention), bias="none", task_type="CAUSAL_LM")
            model = get_peft_model(model, config)
        else:
            n = llm_parts.wrap_modules(model, kAttention, lambda m: llm_parts.LoraLinear(
                m, args.lora_rank, args.lora_alpha, args.lora_dropout))
            if n == 0:
                wc.fail("found no q/k/v/o projections to adapt")
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.float()  # adapters train in fp32 under bf16 autocast
        return model, None
    if args.method == "dpo":
        reference = copy.deepcopy(model).to(torch.bfloat16).eval()
        reference.requires_grad_(False)
        return model, reference
    # qat
    activations = args.qat_activations == "on"
    n = llm_parts.replace_linears(model, kAllLinear, lambda lin: llm_parts.QatLinear(
        lin, args.qat_weight_bits, activations))
    if n == 0:
        wc.fail("found no linear layers to fake-quantise")
    return model, None


# ---------------------------------------------------------------- loop

def main():
    args = parse_args()
    init_t = time.time()
    dist_info = wc.Dist(args.device)
    log = wc.MLLogger(dist_info.is_main, __file__)
    log.start("init_start")
    device = dist_info.device

    base, vocab = build_base(args, device)
    model, reference = setup_method(args, base)
    del base
    total_params, trainable_params = count_params(model)
    if dist_info.enabled:
        ids = [dist_info.local_rank] if dist_info.is_cuda else None
        # No buffer broadcast each step: NF4 weights are buffers and never change.
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids, broadcast_buffers=False)
    params = [p for p in model.parameters() if p.requires_grad]
    lr = args.lr if args.lr is not None else kDefaultLr[args.method]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    data = TokenSource(args, vocab, device, dist_info.rank)
    if dist_info.is_cuda:
        torch.cuda.empty_cache()
        static_mib = dist_info.all_reduce_max(torch.cuda.memory_allocated(device) / 2**20)
        torch.cuda.reset_peak_memory_stats(device)
    else:
        static_mib = float("nan")

    log.event("submission_benchmark", f"llm_finetune_{args.method}_{args.size}")
    log.event("global_batch_size", args.batch_size * dist_info.world_size)
    log.event("opt_base_learning_rate", lr)
    log.event("number_of_ranks", dist_info.world_size)
    dist_info.barrier()
    log.end("init_stop", metadata={"init_seconds": round(time.time() - init_t, 3)})
    log.start("run_start")

    timer = wc.StepTimer(dist_info.is_cuda, args.warmup_steps)
    amp_device = device.type
    first_loss, loss_value, pref_acc, t_steady = None, float("nan"), float("nan"), None
    for step in range(args.steps):
        with wc.StepRange(dist_info.is_cuda, step, args.emit_nvtx):
            if step == args.warmup_steps:
                if dist_info.is_cuda:
                    torch.cuda.synchronize()
                t_steady = time.perf_counter()
            timer.mark()
            with torch.autocast(device_type=amp_device, dtype=torch.bfloat16):
                if args.method == "dpo":
                    chosen, rejected, first = data.preference_batch(args.batch_size // 2)
                    both = torch.cat([chosen, rejected])
                    with torch.no_grad():
                        ref_logp = llm_parts.sequence_logprobs(reference(input_ids=both).logits, both, first)
                    logp = llm_parts.sequence_logprobs(model(input_ids=both).logits, both, first)
                    pairs = chosen.shape[0]
                    loss, acc = llm_parts.dpo_loss(logp[:pairs], logp[pairs:], ref_logp[:pairs], ref_logp[pairs:],
                                                   args.dpo_beta)
                else:
                    tokens = data.lm_batch(args.batch_size)
                    loss = model(input_ids=tokens, labels=tokens).loss
                    acc = None
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        if step == 0 or (args.log_every and (step + 1) % args.log_every == 0) or step + 1 == args.steps:
            loss_value = float(loss.detach())
            if acc is not None:
                pref_acc = float(acc)
            if first_loss is None:
                first_loss = loss_value
            if dist_info.is_main:
                extra = f" preference_accuracy={pref_acc:.3f}" if acc is not None else ""
                print(f"step={step + 1} loss={loss_value:.4f}{extra}", flush=True)
    timer.mark()
    if dist_info.is_cuda:
        torch.cuda.synchronize()
    steady_s = dist_info.all_reduce_max(time.perf_counter() - t_steady)
    ok = loss_value == loss_value and abs(loss_value) != float("inf")
    log.end("run_stop", metadata={"status": "success" if ok else "aborted"})

    times = timer.step_times_ms()
    tokens = (args.steps - args.warmup_steps) * args.batch_size * args.seq_len * dist_info.world_size
    alloc, reserved = wc.peak_memory_mib(dist_info)
    if dist_info.is_main:
        print(wc.format_summary("llm_finetune", {
            "method": args.method, "size": args.size, "world_size": dist_info.world_size, "device": device.type,
            "params_total": total_params, "params_trainable": trainable_params,
            "seq_len": args.seq_len, "batch_size": args.batch_size, "steps": args.steps,
            "warmup_steps": args.warmup_steps, "data": args.data,
            "step_time_ms_median": wc.percentile(times, 50), "step_time_ms_p10": wc.percentile(times, 10),
            "step_time_ms_p90": wc.percentile(times, 90), "tokens_per_s": tokens / steady_s,
            "seconds_per_mtok": 1e6 * steady_s / tokens,  # fixed work at any GPU count
            "steady_seconds": steady_s, "static_mem_mib": static_mib, "peak_mem_alloc_mib": alloc,
            "peak_mem_reserved_mib": reserved, "first_loss": first_loss, "final_loss": loss_value,
            "preference_accuracy": pref_acc, "status": "success" if ok else "aborted"}), flush=True)
    dist_info.close()
    dist_info.finish(0 if ok else 3)


if __name__ == "__main__":
    wc.run_main(main)
