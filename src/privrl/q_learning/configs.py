"""The two training configurations of DP Q-learning (spec §5.2, A20)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from privrl._validation import check_option

__all__ = ["TrainingConfig", "CONFIGS", "get_config"]


@dataclass(frozen=True)
class TrainingConfig:
    """Everything the learner does apart from the privacy mechanism.

    ``update_every="batch"``: one SGD step per ``batch_size`` fresh samples (Alg. 1 line 21);
    ``"step"``: one step per environment step on a replay minibatch once it holds ``batch_size``.
    ``exploration=(start, end, decay)``: epsilon-greedy ``end + (start-end) exp(-t/decay)``
    (post-processing of the noisy Q, [N §3.3]); ``None``: greedy on the noisy Q (Alg. 1 line 12).
    """

    name: str
    n_samples: int
    batch_size: int
    learning_rate: float
    optimizer: str            # "sgd" | "rmsprop"
    loss: str                 # "squared" (Alg. 1 line 20) | "huber"
    update_every: str         # "batch" | "step"
    replay_size: int | None
    target_sync_episodes: int | None
    gamma: float
    exploration: tuple[float, float, float] | None
    hidden: tuple[int, ...]
    grad_clamp: float | None
    target_noise: str = "shared"   # "shared": one set of paths (Alg. 1); "separate": the target
                                   # network has its own independent paths (authors' code)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


CONFIGS = {
    # Algorithm 1 literally with App. E.3's numbers (gamma is not given in the paper: 0.999 as the code).
    "paper": TrainingConfig("paper", 5000, 64, 3e-4, "sgd", "squared", "batch", None, None, 0.999,
                            None, (16, 16), None),
    # the authors' released code (spec §5.2, §5.7)
    "reference": TrainingConfig("reference", 5000, 128, 0.01, "rmsprop", "huber", "step", 10_000, 10,
                                0.999, (0.9, 0.05, 200.0), (16, 16), 1.0, "separate"),
}


def get_config(name: str, **overrides: Any) -> TrainingConfig:
    check_option(name, "config", tuple(CONFIGS))
    return replace(CONFIGS[name], **{k: v for k, v in overrides.items() if v is not None})


def planned_updates(cfg: TrainingConfig) -> int:
    """Number of gradient steps a run of ``cfg`` makes (known before training)."""
    if cfg.update_every == "batch":
        return -(-cfg.n_samples // cfg.batch_size)
    return max(0, cfg.n_samples - cfg.batch_size + 1)
