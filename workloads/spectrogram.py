"""Audio spectrograms with ``torch.stft``: framing, windowed FFTs and a log-power map.

Each step turns ``--batch-size`` mono signals of ``--seconds`` at ``--sample-rate`` into
log-power spectrograms: short-time Fourier transform with a Hann window of ``--n-fft``
samples and hop ``--hop``, then ``10 log10(|X|^2 + eps)``. The signals are synthetic
(a chirp plus noise) and live on the device. Work is counted in seconds of audio
processed per second (``throughput_audio_s_per_s``) and in signals per second.
"""

from __future__ import annotations

import sys

import torch
from _common import Sizes, Workload, positive_float, positive_int, run_timed, set_precision


def chirps(batch: int, samples: int, rate: int, device: torch.device,
           dtype: torch.dtype) -> torch.Tensor:
    """Linear chirps from 100 Hz up to a quarter of the sample rate, plus white noise."""
    t = torch.arange(samples, device=device, dtype=dtype) / rate
    sweep = (rate / 4 - 100) / (samples / rate)
    phase = 2 * torch.pi * (100 * t + 0.5 * sweep * t * t)
    return torch.sin(phase).expand(batch, -1) + 0.1 * torch.randn(batch, samples, device=device,
                                                                   dtype=dtype)


def main(argv: list[str] | None = None) -> None:
    w = Workload(__doc__.splitlines()[0], dtypes=("fp32", "fp64"),
                 steps=Sizes(5000, 3), log_every=Sizes(250, 1), warmup=Sizes(10, 1))
    w.sized("--batch-size", positive_int, Sizes(128, 2), "signals per step")
    w.sized("--seconds", positive_float, Sizes(30.0, 0.5), "length of each signal in seconds",
            "--size")
    w.parser.add_argument("--sample-rate", type=positive_int, default=16000,
                          help="samples per second (default: 16000)")
    w.parser.add_argument("--n-fft", type=positive_int, default=1024,
                          help="FFT window length in samples (default: 1024)")
    w.parser.add_argument("--hop", type=positive_int, default=256,
                          help="samples between windows (default: 256)")
    args = w.parse(argv)
    samples = int(args.seconds * args.sample_rate)
    if samples < args.n_fft:
        w.error(f"--seconds {args.seconds}: {samples} samples at --sample-rate "
                f"{args.sample_rate} is shorter than --n-fft {args.n_fft}")
    if args.hop > args.n_fft:
        w.error(f"--hop {args.hop}: larger than --n-fft {args.n_fft} would skip samples")
    dtype = set_precision(args.dtype, args.device)
    audio = chirps(args.batch_size, samples, args.sample_rate, args.device, dtype)
    window = torch.hann_window(args.n_fft, device=args.device, dtype=dtype)
    w.describe(args, batch_size=args.batch_size, samples=samples, n_fft=args.n_fft,
               hop=args.hop, dtype=args.dtype)

    def step() -> None:
        spec = torch.stft(audio, args.n_fft, hop_length=args.hop, window=window,
                          return_complex=True)
        10 * torch.log10(spec.real.square() + spec.imag.square() + 1e-10)

    run_timed(step, args, {"audio_s_per_s": args.batch_size * samples / args.sample_rate,
                           "signals_per_s": args.batch_size})


if __name__ == "__main__":
    sys.exit(main())
