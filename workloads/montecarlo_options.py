"""Monte Carlo option pricing: batched random paths, bound by random-number generation.

Each step prices ``--options`` European and arithmetic-average (Asian) call options at
once by simulating ``--paths`` geometric-Brownian-motion paths of ``--time-steps`` steps
per option: normal draws, an exponential update and running sums over an
(options x paths) tensor per time step, then the discounted mean payoff per option.
After each block the European prices are compared with the Black-Scholes closed form
(``mc_rel_error``, mean relative error), which shrinks as 1/sqrt(paths).
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_int, run_timed, set_precision
from blackscholes import black_scholes, random_options


def simulate(opts: dict[str, torch.Tensor], paths: int, time_steps: int,
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """Discounted European and Asian call prices of every option, by simulation."""
    spot, strike, expiry, rate, vol = (opts[k].unsqueeze(1)
                                       for k in ("spot", "strike", "expiry", "rate", "vol"))
    dt = expiry / time_steps
    drift = (rate - 0.5 * vol * vol) * dt
    diffusion = vol * torch.sqrt(dt)
    price = spot.expand(-1, paths).clone()
    running = torch.zeros_like(price)
    for _ in range(time_steps):
        shocks = torch.randn_like(price)
        price = price * torch.exp(drift + diffusion * shocks)
        running += price
    discount = torch.exp(-rate * expiry).squeeze(1)
    european = (price - strike).clamp_min(0).mean(dim=1) * discount
    asian = (running / time_steps - strike).clamp_min(0).mean(dim=1) * discount
    return european, asian


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "fp64"),
                 steps=Sizes(1000, 2), log_every=Sizes(50, 1), warmup=Sizes(3, 1))
    w.sized("--size", positive_int, Sizes(1024, 16), "options priced per step", "--options")
    w.sized("--paths", positive_int, Sizes(32768, 256), "simulated paths per option")
    w.sized("--time-steps", positive_int, Sizes(64, 8), "time steps per path")
    args = w.parse(argv)
    dtype = set_precision(args.dtype, args.device)
    opts = random_options(args.size, args.device, dtype)
    # Short expiries keep the sampling error of a fixed path count comparable across options.
    opts["expiry"] = torch.empty_like(opts["expiry"]).uniform_(0.25, 2.0)
    # Strikes near the spot: deep out-of-the-money calls have ~0 value, making relative
    # errors meaningless.
    opts["strike"] = opts["spot"] * torch.empty_like(opts["spot"]).uniform_(0.8, 1.2)
    exact_call, _ = black_scholes(**opts)
    latest: list[torch.Tensor] = []  # European prices of the last step, for the error check
    w.describe(args, options=args.size, paths=args.paths, time_steps=args.time_steps,
               dtype=args.dtype)

    def step() -> None:
        european, _asian = simulate(opts, args.paths, args.time_steps)
        latest[:] = [european]

    def error() -> dict[str, float]:
        rel = (latest[0] - exact_call).abs() / exact_call
        return {"mc_rel_error": float(rel.mean())}

    path_steps = args.size * args.paths * args.time_steps
    run_timed(step, args, {"options_per_s": args.size, "path_steps_per_s": path_steps},
              extra=error)


if __name__ == "__main__":
    sys.exit(main())
