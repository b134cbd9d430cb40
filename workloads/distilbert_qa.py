"""DistilBERT-sized extractive question answering: fine-tuning a 6-layer encoder.

The encoder is BERT's (see ``bert.py``) at DistilBERT's size: 6 layers, hidden 768,
12 heads, no segment embeddings. A linear head gives a start and an end logit per token;
the loss is the mean of the cross-entropies of the true start and end positions, as in
SQuAD fine-tuning. Question/context tokens and answer spans are random, made once on the
device.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import torch
from _common import Sizes, Workload, autocast, positive_int, run_timed, set_precision
from bert import CONFIGS, Encoder, EncoderConfig, add_config_args, bert_init, model_config
from torch import nn
from torch.nn import functional as F

# DistilBERT halves BERT's depth and drops segment embeddings.
DISTIL_CONFIGS = {
    name: replace(cfg, layers=6 if name == "base" else cfg.layers, segments=0)
    for name, cfg in CONFIGS.items()
}


class QuestionAnswering(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.encoder = Encoder(cfg)
        self.span = nn.Linear(cfg.hidden, 2)
        bert_init(self.span)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.span(self.encoder(ids)).unbind(dim=-1)
        return start, end


def answer_spans(batch: int, seq: int, device: torch.device,
                 max_answer: int = 30) -> tuple[torch.Tensor, torch.Tensor]:
    """Random answer spans [start, end] inside the sequence, at most ``max_answer`` long."""
    start = torch.randint(0, seq, (batch,), device=device)
    length = torch.randint(0, max_answer, (batch,), device=device)
    return start, torch.clamp(start + length, max=seq - 1)


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "tf32", "bf16"),
                 steps=Sizes(500, 2), log_every=Sizes(25, 1), warmup=Sizes(5, 1))
    w.sized("--batch-size", positive_int, Sizes(32, 2), "question/context pairs per step")
    add_config_args(w, Sizes(384, 32))
    w.parser.add_argument("--lr", type=float, default=3e-5, help="AdamW learning rate (default: 3e-5)")
    args = w.parse(argv)
    set_precision(args.dtype, args.device)
    cfg = model_config(w, args, DISTIL_CONFIGS)
    with args.device:  # initialise the weights on the device, not on the CPU first
        model = QuestionAnswering(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    ids = torch.randint(1, cfg.vocab, (args.batch_size, args.size), device=args.device)
    starts, ends = answer_spans(args.batch_size, args.size, args.device)
    w.describe(args, layers=cfg.layers, hidden=cfg.hidden, batch_size=args.batch_size,
               seq_len=args.size, dtype=args.dtype)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        with autocast(args.dtype, args.device):
            start_logits, end_logits = model(ids)
        loss = (F.cross_entropy(start_logits.float(), starts)
                + F.cross_entropy(end_logits.float(), ends)) / 2
        loss.backward()
        opt.step()
        return loss

    run_timed(step, args, {"samples_per_s": args.batch_size,
                           "tokens_per_s": args.batch_size * args.size})


if __name__ == "__main__":
    sys.exit(main())
