"""DPQLearning (Wang & Hegde 2019, Algorithm 1) and its baselines (App. E.2) as estimators.

Privacy unit: the reward function; neighbours ``||r - r'||_inf <= 1`` (Thm 5). Transitions and
visited states are public.

* :class:`DPQLearning` — functional (Gaussian-process) noise. With a finite ``budget`` it is
  calibrated by :func:`~privrl.algorithms.q_learning.calibration.calibrate_functional_noise`
  (``calibration="sound"`` or ``"paper"``), which needs Algorithm 1's own training loop
  (``config="paper"``), a fresh noise path per update (``reset="iteration"``, spec A9) and 1-D
  states; otherwise :class:`~privrl.errors.CertificationError`. With ``budget=None`` it runs with
  the given ``noise_std``/``kernel_beta`` and reports no ε (uncertified: Figure 1, other configs,
  d > 1 states). The ledger holds one Gaussian event per update, multiplier ``sigma/Delta_H``
  (Cameron–Martin: the GP mechanism has the privacy-loss distribution of the 1-D Gaussian
  mechanism with the RKHS sensitivity), plus ``ApproxDpEvent(0, delta_g)`` for the tail event in
  sound mode. The release is ``Q_theta + g`` with fresh paths (spec A11): :meth:`release_q`.
* :class:`InputPerturbationQLearning` — ``N(0, s^2)`` on every reward, ``s`` calibrated over the
  ``n_samples`` reward queries (sensitivity 1 each); sound in every configuration.
* :class:`DPSGDQLearning` — DP-SGD with q = 1: per-sample gradients clipped to ``clip_norm``;
  under sup-norm neighbours every sample's clipped gradient may change, so the sum has
  l2-sensitivity ``2 B clip_norm`` (sound; ``B clip_norm`` in paper mode, spec §5.5).
* :class:`QLearning` — the non-private counterpart (same loop, no noise).
"""

from __future__ import annotations

from typing import Any, ClassVar

import dp_accounting
import numpy as np

from privrl._rng import child_rngs
from privrl._validation import check_option, check_scalar, param_error
from privrl.algorithms.q_learning.calibration import (
    FunctionalNoiseCalibration,
    calibrate_functional_noise,
    dpsgd_noise_multiplier,
    input_perturbation_std,
)
from privrl.algorithms.q_learning.configs import get_config, planned_updates
from privrl.algorithms.q_learning.training import Privatizer, make_noise, train
from privrl.base import Estimator, check_is_fitted
from privrl.errors import CertificationError
from privrl.privacy.accounting import ApproxDpEvent, Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["QLearning", "DPQLearning", "InputPerturbationQLearning", "DPSGDQLearning"]

_STREAMS = ("env", "init", "policy", "replay", "dpsgd", "reward", "privacy", "release", "privacy_target")


class _QLearnerBase(Estimator):
    privacy_unit = PrivacyUnit.REWARD_FUNCTION
    neighboring = Neighboring.SUP_NORM_ONE
    guarantee: ClassVar[str | None] = "(epsilon, delta)-DP"
    budget: PrivacyBudget | None

    def _common_init(self, *, env, config, n_samples, learning_rate, batch_size, hidden, reward_bounds):
        self.env = env
        self.config = config
        self.n_samples = n_samples
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.hidden = hidden
        self.reward_bounds = reward_bounds

    @property
    def is_private(self) -> bool:
        budget = getattr(self, "budget", None)
        return self.guarantee is not None and budget is not None and budget.is_private

    def _setup(self, env: Any):
        owner = type(self).__name__
        import gymnasium as gym

        from privrl.envs.center_walk import make_unit_env

        env = self.env if env is None else env
        if isinstance(env, str):
            env = make_unit_env(env)
        elif not isinstance(env, gym.Env):
            raise param_error("env", owner, "a gymnasium id or a gymnasium.Env", type(env).__name__)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise param_error("env", owner, "an environment with discrete actions", type(env.action_space).__name__)
        n = None if self.n_samples is None else check_scalar(self.n_samples, "n_samples", owner=owner, kind=int, low=1)
        lr = None if self.learning_rate is None else check_scalar(
            self.learning_rate, "learning_rate", owner=owner, low=0.0, closed="neither")
        b = None if self.batch_size is None else check_scalar(self.batch_size, "batch_size", owner=owner, kind=int, low=1)
        hidden = tuple(check_scalar(h, "hidden", owner=owner, kind=int, low=1) for h in self.hidden)
        check_option(self.config, "config", ("paper", "reference"), owner=owner)
        cfg = get_config(self.config, n_samples=n, learning_rate=lr, batch_size=b, hidden=hidden)
        lo, hi = (check_scalar(v, "reward_bounds", owner=owner) for v in self.reward_bounds)
        if not lo <= hi:
            raise param_error("reward_bounds", owner, "a pair (low, high) with low <= high", self.reward_bounds)
        return env, cfg, (lo, hi)

    def _budget(self) -> PrivacyBudget | None:
        b = self.budget
        if b is not None and not isinstance(b, PrivacyBudget):
            raise param_error("budget", type(self).__name__, "a PrivacyBudget or None", b)
        if b is not None and b.is_zcdp:
            raise param_error("budget", type(self).__name__, "an (epsilon, delta) budget", b)
        if b is not None and b.is_private and b.delta == 0:
            raise param_error("budget", type(self).__name__, "a budget with delta > 0", b)
        return b

    _backend = "numpy"   # "torch": the PyTorch reference learner (same draws; benchmarks and tests)

    def _run(self, env, cfg, privatizer, rngs, bounds, trace=False):
        res = train(env, cfg, privatizer, rngs, reward_bounds=bounds, trace=trace, backend=self._backend)
        self._network = res.network
        self.returns_ = res.returns
        self.n_updates_ = res.n_updates
        self.training_config_ = cfg
        self.n_actions_ = int(env.action_space.n)
        self.obs_dim_ = int(np.prod(env.observation_space.shape))
        self._trace = res.trace
        return res

    def _q(self, states: Any) -> np.ndarray:
        check_is_fitted(self, "returns_")
        return self._network(np.asarray(states, float).reshape(-1, self.obs_dim_))

    def release_q(self, states: Any) -> np.ndarray:
        """The released Q-function at ``states``: ``(n, m)``. For baselines whose privacy comes
        from training (input perturbation, DP-SGD) Q_theta is post-processing and released as is."""
        return self._q(states)

    def greedy_action(self, states: Any) -> np.ndarray:
        return np.argmax(self.release_q(states), axis=1)


class QLearning(_QLearnerBase):
    """Non-private deep Q-learning in either configuration (the σ = 0 counterpart)."""

    guarantee = None
    privacy_unit = PrivacyUnit.REWARD_FUNCTION
    neighboring = Neighboring.SUP_NORM_ONE

    def __init__(self, *, env: Any = "privrl/CenterWalk-v0", config: str = "reference",
                 n_samples: int | None = None, learning_rate: float | None = None,
                 batch_size: int | None = None, hidden: tuple[int, ...] = (16, 16),
                 reward_bounds: tuple[float, float] = (-1.0, 1.0)) -> None:
        self._common_init(env=env, config=config, n_samples=n_samples, learning_rate=learning_rate,
                          batch_size=batch_size, hidden=hidden, reward_bounds=reward_bounds)

    def fit(self, env: Any = None, *, rng: Any = None) -> QLearning:
        env, cfg, bounds = self._setup(env)
        self._run(env, cfg, Privatizer(), child_rngs(rng, *_STREAMS), bounds)
        self.privacy_ledger_ = Ledger()
        return self


class DPQLearning(_QLearnerBase):
    """Algorithm 1 of Wang & Hegde (2019): Q-learning with functional noise (module docstring).

    ``noise_std`` and ``kernel_beta`` are used only when ``budget is None`` (uncertified runs);
    with a budget, sigma and beta come from the calibration (an infinite budget means no noise).
    """

    def __init__(self, *, budget: PrivacyBudget | None = None, noise_std: float = 0.0,
                 kernel_beta: float | None = None, calibration: str = "sound", kappa: float | str = "auto",
                 lipschitz: float = 4.0, reset: str = "iteration", env: Any = "privrl/CenterWalk-v0",
                 config: str = "paper", n_samples: int | None = None, learning_rate: float | None = None,
                 batch_size: int | None = None, hidden: tuple[int, ...] = (16, 16),
                 reward_bounds: tuple[float, float] = (-1.0, 1.0)) -> None:
        self.budget = budget
        self.noise_std = noise_std
        self.kernel_beta = kernel_beta
        self.calibration = calibration
        self.kappa = kappa
        self.lipschitz = lipschitz
        self.reset = reset
        self._common_init(env=env, config=config, n_samples=n_samples, learning_rate=learning_rate,
                          batch_size=batch_size, hidden=hidden, reward_bounds=reward_bounds)

    def fit(self, env: Any = None, *, rng: Any = None, trace: bool = False) -> DPQLearning:
        owner = "DPQLearning"
        env, cfg, bounds = self._setup(env)
        check_option(self.calibration, "calibration", ("sound", "paper"), owner=owner)
        check_option(self.reset, "reset", ("iteration", "episode", "never"), owner=owner)
        budget = self._budget()
        m = int(env.action_space.n)
        dim = int(np.prod(env.observation_space.shape))
        cal: FunctionalNoiseCalibration | None = None
        ledger = Ledger()
        if budget is None:  # uncertified: sigma and beta as given
            sigma = check_scalar(self.noise_std, "noise_std", owner=owner, low=0.0)
            beta = 1.0 if self.kernel_beta is None else check_scalar(
                self.kernel_beta, "kernel_beta", owner=owner, low=0.0, closed="neither")
        elif not budget.is_private:
            sigma, beta = 0.0, 1.0
        else:
            why = []
            if self.config != "paper":
                why.append("the analysis covers Algorithm 1's plain SGD loop only (config='paper'), "
                           f"not config={self.config!r}")
            if self.reset != "iteration":
                why.append("composition over updates needs a fresh noise path per update "
                           f"(reset='iteration', spec A9), not reset={self.reset!r}")
            if dim != 1:
                why.append(f"the sensitivity is derived for 1-D states only (got dimension {dim}); "
                           "use budget=None with noise_std for an uncertified run")
            if why:
                raise CertificationError("DPQLearning cannot certify this run: " + "; ".join(why) + ".")
            lipschitz = check_scalar(self.lipschitz, "lipschitz", owner=owner, low=0.0, closed="neither")
            cal = calibrate_functional_noise(
                float(budget.epsilon or 0.0), float(budget.delta or 0.0), n_samples=cfg.n_samples, batch_size=cfg.batch_size,
                learning_rate=cfg.learning_rate, lipschitz=lipschitz, n_actions=m,
                calibration=self.calibration, kappa=self.kappa)
            sigma, beta = cal.sigma, cal.beta
        rngs = child_rngs(rng, *_STREAMS)
        noise = make_noise(dim, m, beta, sigma, rngs["privacy"]) if sigma > 0 else None
        t_noise = make_noise(dim, m, beta, sigma, rngs["privacy_target"]) \
            if sigma > 0 and cfg.target_noise == "separate" else None
        res = self._run(env, cfg, Privatizer(noise=noise, target_noise=t_noise, reset=self.reset), rngs,
                        bounds, trace=trace)
        if budget is None:
            ledger.append(dp_accounting.NonPrivateDpEvent())  # uncertified: no epsilon is claimed
        elif budget.is_private and cal is not None:
            ledger.append(dp_accounting.SelfComposedDpEvent(
                dp_accounting.GaussianDpEvent(sigma / cal.sensitivity), res.n_updates))
            if cal.calibration == "sound":
                ledger.append(ApproxDpEvent(0.0, cal.delta_g))
        self.privacy_ledger_ = ledger
        self.calibration_ = cal
        self.noise_std_ = sigma
        self.kernel_beta_ = beta
        self.certified_ = budget is not None and budget.is_private
        self._release_noise = make_noise(dim, m, beta, sigma, rngs["release"]) if sigma > 0 else None
        return self

    def release_q(self, states: Any) -> np.ndarray:
        """``Q_theta(s, .) + g(s)`` with fresh paths independent of training (spec A11), lazily and
        consistently evaluated: the same state always gets the same value."""
        q = self._q(states)
        if self._release_noise is None:
            return q
        return q + self._release_noise(np.asarray(states, float).reshape(-1, self.obs_dim_))


class InputPerturbationQLearning(_QLearnerBase):
    """Gaussian noise on every reward ([Ven13]-style baseline of App. E.2; spec §5.5)."""

    def __init__(self, *, budget: PrivacyBudget | None = None, calibration: str = "sound",
                 env: Any = "privrl/CenterWalk-v0", config: str = "reference", n_samples: int | None = None,
                 learning_rate: float | None = None, batch_size: int | None = None,
                 hidden: tuple[int, ...] = (16, 16), reward_bounds: tuple[float, float] = (-1.0, 1.0)) -> None:
        self.budget = budget
        self.calibration = calibration
        self._common_init(env=env, config=config, n_samples=n_samples, learning_rate=learning_rate,
                          batch_size=batch_size, hidden=hidden, reward_bounds=reward_bounds)

    def fit(self, env: Any = None, *, rng: Any = None) -> InputPerturbationQLearning:
        env, cfg, bounds = self._setup(env)
        check_option(self.calibration, "calibration", ("sound", "paper"), owner=type(self).__name__)
        budget = self._budget()
        std = 0.0
        if budget is not None and budget.is_private:
            std = input_perturbation_std(float(budget.epsilon or 0.0), float(budget.delta or 0.0), cfg.n_samples, self.calibration)
        self._run(env, cfg, Privatizer(reward_std=std), child_rngs(rng, *_STREAMS), bounds)
        self.reward_noise_std_ = std
        self.privacy_ledger_ = Ledger(
            [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(std), cfg.n_samples)]
            if std > 0 else [])
        return self


class DPSGDQLearning(_QLearnerBase):
    """DP-SGD baseline ([ACG+16], App. E.2) with sampling rate q = 1 (spec §5.5)."""

    def __init__(self, *, budget: PrivacyBudget | None = None, calibration: str = "sound",
                 clip_norm: float = 1.0, env: Any = "privrl/CenterWalk-v0", config: str = "reference",
                 n_samples: int | None = None, learning_rate: float | None = None,
                 batch_size: int | None = None, hidden: tuple[int, ...] = (16, 16),
                 reward_bounds: tuple[float, float] = (-1.0, 1.0)) -> None:
        self.budget = budget
        self.calibration = calibration
        self.clip_norm = clip_norm
        self._common_init(env=env, config=config, n_samples=n_samples, learning_rate=learning_rate,
                          batch_size=batch_size, hidden=hidden, reward_bounds=reward_bounds)

    def fit(self, env: Any = None, *, rng: Any = None) -> DPSGDQLearning:
        owner = type(self).__name__
        env, cfg, bounds = self._setup(env)
        check_option(self.calibration, "calibration", ("sound", "paper"), owner=owner)
        clip = check_scalar(self.clip_norm, "clip_norm", owner=owner, low=0.0, closed="neither")
        budget = self._budget()
        n_steps = planned_updates(cfg)
        multiplier = 0.0
        if budget is not None and budget.is_private:
            multiplier = dpsgd_noise_multiplier(float(budget.epsilon or 0.0), float(budget.delta or 0.0), max(n_steps, 1), self.calibration)
        # l2-sensitivity of the clipped-gradient sum under sup-norm neighbours (all B samples change)
        sens = (2.0 if self.calibration == "sound" else 1.0) * cfg.batch_size * clip
        res = self._run(env, cfg, Privatizer(clip_norm=clip, grad_noise_std=multiplier * sens),
                        child_rngs(rng, *_STREAMS), bounds)
        self.noise_multiplier_ = multiplier
        self.privacy_ledger_ = Ledger(
            [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(multiplier), res.n_updates)]
            if multiplier > 0 and res.n_updates else [])
        return self
