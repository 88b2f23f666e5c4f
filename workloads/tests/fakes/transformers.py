"""Test double for the two names llm_finetune.py takes from transformers, so
its method set-up, DDP wiring, DPO step and summary can be exercised on a CPU
without the real package (which the GPU machine has). A small decoder with the
Llama layer names (q/k/v/o_proj, gate/up/down_proj); not a model to use."""

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class LlamaConfig(SimpleNamespace):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)


class _Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv, self.dim = c.num_attention_heads, c.num_key_value_heads, c.hidden_size
        head = c.hidden_size // c.num_attention_heads
        self.norm1, self.norm2 = nn.LayerNorm(c.hidden_size), nn.LayerNorm(c.hidden_size)
        self.q_proj = nn.Linear(c.hidden_size, c.hidden_size, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, self.kv * head, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, self.kv * head, bias=False)
        self.o_proj = nn.Linear(c.hidden_size, c.hidden_size, bias=False)
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.norm1(x)
        q = self.q_proj(h).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv, -1).transpose(1, 2).repeat_interleave(self.heads // self.kv, dim=1)
        v = self.v_proj(h).view(b, t, self.kv, -1).transpose(1, 2).repeat_interleave(self.heads // self.kv, dim=1)
        scores = (q @ k.transpose(-1, -2)) / (q.shape[-1] ** 0.5)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        a = scores.float().masked_fill(mask, float("-inf")).softmax(-1).to(v.dtype) @ v
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, t, -1)).to(x.dtype)
        h = self.norm2(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h)).to(x.dtype)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(_Block(config) for _ in range(config.num_hidden_layers))
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, labels=None):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(x)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        return SimpleNamespace(loss=loss, logits=logits)
