"""The ``sharing`` words (radtrack/analysis/sharing.py, radtrack/spec.py sharing_text) say what
a co-located run really shared: a GPU another row had too, or only the host (each row on
GPUs of its own, the power-variation study's space-sharing), from the launcher's
``radtrack.shared_gpus`` tag."""

from __future__ import annotations

from radtrack.analysis.sharing import colocation_text
from radtrack.vocab import schema

OTHERS = "pv-6 A,pv-6 C,pv-6 D"
GPU = {"metric.summary/smi/gpu0/proc_mem_used_mib/max": 2010.0}  # its processes used its GPU


def _row(**tags: str) -> dict[str, object]:
    return {"collocation": "-", f"tag.{schema.COLOCATED_WITH}": OTHERS, **GPU,
            **{f"tag.{k}": v for k, v in tags.items()}}


def test_rows_on_gpus_of_their_own_shared_only_the_host() -> None:
    assert colocation_text(_row(**{schema.SHARED_GPUS: ""})) == "own GPU, host shared with 3"
    # alone on its GPU by accounting (its uuid tag beside), the host's CPU split by CPU time
    alone = _row(**{schema.SHARED_GPUS: "", f"{schema.ATTRIBUTION_TAG_PREFIX}gpu0": "solo",
                    f"{schema.ATTRIBUTION_TAG_PREFIX}gpu0.uuid": "GPU-1234",
                    f"{schema.ATTRIBUTION_TAG_PREFIX}pkg0": "process-cpu-time"})
    assert colocation_text(alone) == "own GPU, host shared with 3"


def test_a_gpu_another_row_had_too_is_time_sliced() -> None:
    assert colocation_text(_row(**{schema.SHARED_GPUS: "0"})) == "GPU time-slicing with 3"
    assert colocation_text(_row(**{schema.SHARED_GPUS: "*"})) == "GPU time-slicing with 3"


def test_without_the_launchers_word_or_with_a_followed_gpu_nothing_is_promised() -> None:
    # a run recorded before the tag existed: as before
    assert colocation_text(_row()) == "GPU time-slicing with 3"
    # a GPU followed outside its Devices may be another row's: not "its own"
    followed = _row(**{schema.SHARED_GPUS: "", "radtrack.listener.smi.gpu1.followed": "1795800000.0"})
    assert colocation_text(followed) == "GPU time-slicing with 3"
    # its GPU was split with another run by co-location accounting (one followed onto it)
    split = _row(**{schema.SHARED_GPUS: "", f"{schema.ATTRIBUTION_TAG_PREFIX}gpu0": "sm_share"})
    assert colocation_text(split) == "GPU time-slicing with 3"
    # co-located, but its processes used no GPU
    cpu = {"collocation": "-", f"tag.{schema.COLOCATED_WITH}": "x", f"tag.{schema.SHARED_GPUS}": "",
           "metric.summary/smi/gpu0/proc_mem_used_mib/max": 0.0}
    assert colocation_text(cpu) == "CPU only, shared with 1"
