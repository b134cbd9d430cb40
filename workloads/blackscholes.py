"""Black-Scholes pricing of European options: element-wise, memory-bandwidth bound.

Each step prices ``--size`` independent options (spot, strike, expiry, rate and
volatility drawn once on the device) with the closed-form Black-Scholes formula, giving
a call and a put price per option. Every option is independent, so the work is a chain of
element-wise kernels streaming through memory. Put-call parity
(C - P = S - K e^{-rT}) is checked after each block as ``parity_error``.
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision


def random_options(n: int, device: torch.device, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """``n`` options: spot, strike and expiry in the CUDA SDK sample's ranges, and rates and
    volatilities varied per option (the sample fixes them)."""
    def uniform(low: float, high: float) -> torch.Tensor:
        return torch.empty(n, device=device, dtype=dtype).uniform_(low, high)

    return {"spot": uniform(5.0, 30.0), "strike": uniform(1.0, 100.0),
            "expiry": uniform(0.25, 10.0), "rate": uniform(0.01, 0.05),
            "vol": uniform(0.1, 0.5)}


def black_scholes(spot: torch.Tensor, strike: torch.Tensor, expiry: torch.Tensor,
                  rate: torch.Tensor, vol: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Call and put prices of European options, element by element."""
    sqrt_t = torch.sqrt(expiry)
    d1 = (torch.log(spot / strike) + (rate + 0.5 * vol * vol) * expiry) / (vol * sqrt_t)
    d2 = d1 - vol * sqrt_t
    discounted = strike * torch.exp(-rate * expiry)
    call = spot * torch.special.ndtr(d1) - discounted * torch.special.ndtr(d2)
    put = discounted * torch.special.ndtr(-d2) - spot * torch.special.ndtr(-d1)
    return call, put


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "fp64"),
                 steps=Sizes(10000, 3), log_every=Sizes(500, 1), warmup=Sizes(10, 1))
    w.sized("--size", positive_int, Sizes(1 << 25, 4096), "options priced per step",
            "--options")
    args = w.parse(argv)
    dtype = set_precision(args.dtype, args.device)
    opts = random_options(args.size, args.device, dtype)
    # The latest prices, kept for the parity check at the end of each block.
    prices: list[tuple[torch.Tensor, torch.Tensor]] = []
    w.describe(args, options=args.size, dtype=args.dtype)

    def step() -> None:
        prices[:] = [black_scholes(**opts)]

    def parity() -> dict[str, float]:
        call, put = prices[0]
        forward = opts["spot"] - opts["strike"] * torch.exp(-opts["rate"] * opts["expiry"])
        return {"parity_error": float((call - put - forward).abs().max())}

    run_timed(step, args, {"options_per_s": args.size}, extra=parity)


if __name__ == "__main__":
    sys.exit(main())
