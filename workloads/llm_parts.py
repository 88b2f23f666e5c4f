"""Model surgery for llm_finetune.py, in plain torch (no bitsandbytes here):
NF4 4-bit storage with on-the-fly dequantisation (QLoRA), LoRA adapters over
any linear layer, int8 fake quantisation with a straight-through estimator
(QAT), and the DPO loss written out. Unit-tested on CPU in test_workloads.py.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# The 16 NormalFloat-4 code values of the QLoRA paper (Dettmers et al. 2023):
# quantiles of N(0, 1) scaled to [-1, 1], with an exact zero.
kNf4Codes = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)
kNf4BlockSize = 64


_codes_by_device = {}


def nf4_codes(device):
    """The code table on device, made once: building it per call would be a
    pageable host-to-device copy (and a stream synchronisation) in every
    forward and backward of every layer."""
    key = str(device)
    codes = _codes_by_device.get(key)
    if codes is None:
        codes = torch.tensor(kNf4Codes, dtype=torch.float32, device=device)
        _codes_by_device[key] = codes
    return codes


def quantize_nf4(weight, block_size=kNf4BlockSize):
    """weight (any shape, numel divisible by block_size, block_size even) ->
    (packed uint8 [numel/2], absmax float32 [numel/block_size]). Each block is
    scaled by its absolute maximum and every value mapped to the nearest NF4
    code; two 4-bit indices share a byte (first value in the high nibble)."""
    if block_size % 2 or weight.numel() % block_size:
        raise ValueError(f"NF4: {weight.numel()} values do not split into blocks of {block_size}")
    blocks = weight.detach().reshape(-1, block_size).float()
    absmax = blocks.abs().amax(dim=1).clamp_(min=torch.finfo(torch.float32).tiny)
    normalised = blocks / absmax[:, None]
    codes = nf4_codes(weight.device)
    midpoints = (codes[1:] + codes[:-1]) / 2
    idx = torch.bucketize(normalised.reshape(-1), midpoints).to(torch.uint8).reshape(-1, 2)
    packed = (idx[:, 0] << 4) | idx[:, 1]
    return packed.contiguous(), absmax.contiguous()


def dequantize_nf4(packed, absmax, shape, dtype, block_size=kNf4BlockSize):
    """The inverse of quantize_nf4, materialised in dtype."""
    idx = torch.stack(((packed >> 4), (packed & 0x0F)), dim=1).reshape(-1).long()
    values = nf4_codes(packed.device)[idx].reshape(-1, block_size) * absmax[:, None]
    return values.reshape(shape).to(dtype)


class _Nf4LinearFunction(torch.autograd.Function):
    """y = x W^T with W dequantised in forward and again in backward, so only
    the 4-bit weights stay resident between the two (the QLoRA memory trade)."""

    @staticmethod
    def forward(ctx, x, packed, absmax, shape, compute_dtype):
        ctx.save_for_backward(packed, absmax)
        ctx.shape, ctx.compute_dtype, ctx.x_dtype = shape, compute_dtype, x.dtype
        w = dequantize_nf4(packed, absmax, shape, compute_dtype)
        return x.to(compute_dtype) @ w.t()

    @staticmethod
    def backward(ctx, grad_out):
        packed, absmax = ctx.saved_tensors
        grad_x = None
        if ctx.needs_input_grad[0]:
            w = dequantize_nf4(packed, absmax, ctx.shape, ctx.compute_dtype)
            grad_x = (grad_out.to(ctx.compute_dtype) @ w).to(ctx.x_dtype)
        return grad_x, None, None, None, None


class Nf4Linear(nn.Module):
    """A frozen linear layer whose weight is stored as NF4 (0.5 byte per value
    plus one float32 absmax per 64 values) and dequantised on the fly."""

    def __init__(self, linear, compute_dtype=torch.bfloat16):
        super().__init__()
        if linear.bias is not None:
            raise ValueError("Nf4Linear: layers with a bias are not supported (Llama has none)")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.compute_dtype = compute_dtype
        packed, absmax = quantize_nf4(linear.weight)
        self.register_buffer("packed", packed)
        self.register_buffer("absmax", absmax)

    def dequantized_weight(self):
        return dequantize_nf4(self.packed, self.absmax, (self.out_features, self.in_features), self.compute_dtype)

    def forward(self, x):
        return _Nf4LinearFunction.apply(x, self.packed, self.absmax, (self.out_features, self.in_features),
                                        self.compute_dtype)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, nf4 block={kNf4BlockSize}"


class LoraLinear(nn.Module):
    """base(x) + B(A(dropout(x))) * alpha/r over a frozen base layer (nn.Linear
    or Nf4Linear). B starts at zero so the wrapped model starts equal to the base."""

    def __init__(self, base, rank, alpha, dropout=0.0):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        device = next(iter(list(base.parameters()) + list(base.buffers()))).device
        self.lora_a = nn.Linear(base.in_features, rank, bias=False, device=device, dtype=torch.float32)
        self.lora_b = nn.Linear(rank, base.out_features, bias=False, device=device, dtype=torch.float32)
        nn.init.kaiming_uniform_(self.lora_a.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_b.weight)
        self.scaling = alpha / rank
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    @property
    def in_features(self):
        return self.base.in_features

    @property
    def out_features(self):
        return self.base.out_features

    def forward(self, x):
        out = self.base(x)
        return out + self.lora_b(self.lora_a(self.dropout(x))).to(out.dtype) * self.scaling


def fake_quantize_symmetric(x, bits, dim):
    """Symmetric fake quantisation with one scale per slice along dim (the
    reduced dimension), straight-through gradient: forward sees the rounded
    values, backward passes the gradient unchanged."""
    qmax = 2 ** (bits - 1) - 1
    scale = x.detach().abs().amax(dim=dim, keepdim=True).clamp(min=1e-8) / qmax
    q = torch.clamp(torch.round(x / scale), -qmax - 1, qmax) * scale
    return x + (q - x).detach()


class QatLinear(nn.Module):
    """Quantisation-aware training: the weight is fake-quantised per output
    channel (int{weight_bits}) and, optionally, activations per token (int8,
    dynamic) in every forward; the float weight stays the trained parameter."""

    def __init__(self, linear, weight_bits=8, quantize_activations=True):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = nn.Parameter(linear.weight.detach().clone())
        self.bias = nn.Parameter(linear.bias.detach().clone()) if linear.bias is not None else None
        self.weight_bits, self.quantize_activations = weight_bits, quantize_activations

    def forward(self, x):
        if self.quantize_activations:
            x = fake_quantize_symmetric(x, 8, dim=-1)
        w = fake_quantize_symmetric(self.weight, self.weight_bits, dim=1)
        return F.linear(x, w, self.bias)


def replace_linears(model, names, factory):
    """Replaces every nn.Linear child whose attribute name is in names by
    factory(old); returns how many were replaced."""
    targets = []
    for parent in model.modules():
        for child_name, child in parent.named_children():
            if child_name in names and isinstance(child, nn.Linear):
                targets.append((parent, child_name, child))
    for parent, child_name, child in targets:
        setattr(parent, child_name, factory(child))
    return len(targets)


def wrap_modules(model, names, factory):
    """Like replace_linears, for children of any type that have in/out features."""
    targets = [(parent, n, c) for parent in model.modules() for n, c in parent.named_children()
               if n in names and hasattr(c, "in_features")]
    for parent, child_name, child in targets:
        setattr(parent, child_name, factory(child))
    return len(targets)


def sequence_logprobs(logits, tokens, first_response):
    """Sum of log p(token_t | tokens_<t) over response positions t >= first_response,
    per sequence. logits [B, T, V] from a causal LM on tokens [B, T]."""
    pred = logits[:, :-1].float()
    target = tokens[:, 1:]
    token_logp = -F.cross_entropy(pred.reshape(-1, pred.shape[-1]), target.reshape(-1), reduction="none")
    token_logp = token_logp.reshape(target.shape)
    positions = torch.arange(1, tokens.shape[1], device=tokens.device)
    mask = (positions >= first_response).to(token_logp.dtype)
    return (token_logp * mask).sum(dim=1)


def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    """Direct Preference Optimisation (Rafailov et al. 2023), per pair:
    -log sigmoid(beta * ((pi_c - ref_c) - (pi_r - ref_r))), averaged. Also
    returns the fraction of pairs whose implicit reward prefers the chosen."""
    margin = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)
    losses = -F.logsigmoid(beta * margin)
    return losses.mean(), (margin > 0).float().mean()
