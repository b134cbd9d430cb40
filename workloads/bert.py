"""BERT-base encoder, masked-language-model training or inference on synthetic tokens.

The model is BERT-base (12 layers, hidden 768, 12 heads, feed-forward 3072, vocabulary
30522) in plain torch: token + position + segment embeddings, post-norm transformer
layers, and the MLM head tied to the token embedding. Tokens are random; 15 % of
positions are masked and predicted (MLM cross-entropy). ``--mode inference`` runs the
forward pass only, under ``torch.inference_mode``, and still reports the MLM loss.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import torch
from _common import Sizes, Workload, autocast, positive_int, run_timed, set_precision
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class EncoderConfig:
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int = 30522
    max_len: int = 512
    segments: int = 2  # 0 drops segment embeddings (DistilBERT)


CONFIGS = {
    "base": EncoderConfig(layers=12, hidden=768, heads=12, ffn=3072),
    "tiny": EncoderConfig(layers=2, hidden=64, heads=2, ffn=128, vocab=1000, max_len=64),
}


class Encoder(nn.Module):
    """Embeddings plus a stack of BERT (post-norm, GELU) transformer layers."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        self.positions = nn.Embedding(cfg.max_len, cfg.hidden)
        self.segments = nn.Embedding(cfg.segments, cfg.hidden) if cfg.segments else None
        self.norm = nn.LayerNorm(cfg.hidden, eps=1e-12)
        layer = nn.TransformerEncoderLayer(cfg.hidden, cfg.heads, cfg.ffn, dropout=0.1,
                                           activation="gelu", batch_first=True,
                                           layer_norm_eps=1e-12)
        self.layers = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
        self.apply(bert_init)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(pos)
        if self.segments is not None:
            x = x + self.segments(torch.zeros_like(ids))
        return self.layers(self.norm(x))


def bert_init(m: nn.Module) -> None:
    """BERT's initialisation: N(0, 0.02) weights, zero biases; torch's defaults are far
    wider for embeddings, which blows up the tied MLM logits."""
    if isinstance(m, nn.Linear | nn.Embedding):
        nn.init.normal_(m.weight, std=0.02)
    if isinstance(m, nn.Linear) and m.bias is not None:
        nn.init.zeros_(m.bias)


class MaskedLM(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.encoder = Encoder(cfg)
        self.transform = nn.Sequential(nn.Linear(cfg.hidden, cfg.hidden), nn.GELU(),
                                       nn.LayerNorm(cfg.hidden, eps=1e-12))
        self.bias = nn.Parameter(torch.zeros(cfg.vocab))
        self.transform.apply(bert_init)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.transform(self.encoder(ids))
        return F.linear(h, self.encoder.tokens.weight, self.bias)


def mlm_batch(batch: int, seq: int, vocab: int, device: torch.device,
              mask_rate: float = 0.15) -> tuple[torch.Tensor, torch.Tensor]:
    """Random tokens with ``mask_rate`` of them replaced by a [MASK] id; labels -100 elsewhere."""
    ids = torch.randint(1, vocab, (batch, seq), device=device)
    masked = torch.rand(batch, seq, device=device) < mask_rate
    masked[:, 0] = True  # at least one target per sequence keeps the loss defined
    labels = torch.where(masked, ids, torch.full_like(ids, -100))
    return ids.masked_fill(masked, 0), labels


def add_config_args(w: Workload, default_seq: Sizes) -> None:
    w.parser.add_argument("--config", choices=sorted(CONFIGS), default=None,
                          help="model size (default: base; --smoke: tiny)")
    w.sized("--size", positive_int, default_seq, "sequence length in tokens", "--seq-len")


def model_config(w: Workload, args: argparse.Namespace,
                 configs: dict[str, EncoderConfig] = CONFIGS) -> EncoderConfig:
    """The --config preset (tiny under --smoke), checked against --size."""
    name = args.config or ("tiny" if args.smoke else "base")
    cfg = configs[name]
    if args.size > cfg.max_len:
        w.error(f"--size {args.size}: longer than the {name} model's {cfg.max_len} positions")
    return cfg


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "tf32", "bf16"),
                 steps=Sizes(600, 2), log_every=Sizes(25, 1), warmup=Sizes(5, 1))
    w.parser.add_argument("--mode", choices=("train", "inference"), default="train",
                          help="train (forward, backward, AdamW) or inference (default: train)")
    w.sized("--batch-size", positive_int, Sizes(64, 2), "sequences per step")
    add_config_args(w, Sizes(128, 16))
    args = w.parse(argv)
    set_precision(args.dtype, args.device)
    cfg = model_config(w, args)
    with args.device:  # initialise the weights on the device, not on the CPU first
        model = MaskedLM(cfg)
    ids, labels = mlm_batch(args.batch_size, args.size, cfg.vocab, args.device)
    w.describe(args, mode=args.mode, layers=cfg.layers, hidden=cfg.hidden,
               batch_size=args.batch_size, seq_len=args.size, dtype=args.dtype)

    def loss_of() -> torch.Tensor:
        with autocast(args.dtype, args.device):
            logits = model(ids)
        return F.cross_entropy(logits.float().view(-1, cfg.vocab), labels.view(-1))

    if args.mode == "train":
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step() -> torch.Tensor:
            opt.zero_grad(set_to_none=True)
            loss = loss_of()
            loss.backward()
            opt.step()
            return loss
    else:
        model.eval()

        def step() -> torch.Tensor:
            with torch.inference_mode():
                return loss_of()

    tokens = args.batch_size * args.size
    run_timed(step, args, {"samples_per_s": args.batch_size, "tokens_per_s": tokens})


if __name__ == "__main__":
    sys.exit(main())
