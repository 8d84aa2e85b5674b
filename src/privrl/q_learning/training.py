"""The Q-learning loop shared by DPQLearning and its baselines (Wang & Hegde 2019, Alg. 1), for one
run or many runs in lockstep.

One loop, three places where privacy enters (a :class:`Privatizer`):

* functional noise (Alg. 1 lines 12, 18–20): ``Q~(s, a) = Q_theta(s, a) + g_a(s)`` for acting,
  in the target ``y = r + gamma max_a [Q(s', a) + g_a(s')]`` and in the loss
  ``(Q(s, a) + g_a(s) - y)^2 / 2``; the noise paths never receive gradients. In the ``reference``
  configuration the target network has its own independent paths (``target_noise="separate"``,
  as in the authors' code), reset on the same schedule. The paths draw their normals in
  :mod:`privrl.q_learning.gaussian_process` from the fit's noise source (the release seam);
* input perturbation: every reward is released through the fit's releaser as it is received
  (``Privatizer.release_reward``);
* DP-SGD: per-sample clipped gradients, their sum released through the fit's releaser
  (``Privatizer.release_gradient``).

Nothing in this module draws privacy noise itself: the estimators hand it release callables and
noise paths built on their :class:`~privrl.privacy.release.Releaser`.

Many runs at once (:func:`train_many`): runs whose loops agree (the same
:class:`~privrl.q_learning.configs.TrainingConfig` but for the step size, the same spaces, the same
kind of update) advance in lockstep — one environment step of every run, then one update of every
run — with their networks stacked (:mod:`privrl.deep.networks`), their OU paths in one
:class:`~privrl.q_learning.ou_batch.OUBatch` and, for CenterWalk, their environments in one
:class:`~privrl.envs.center_walk.CenterWalkBatch`. Each run keeps its own random streams (env,
init, policy, replay, its releaser) and consumes them in the same order as alone, so a run's
episodes do not depend on the batch it ran in (tested); only floating-point rounding of the
shared vector operations may differ. A single fit is a batch of one (its 1-D OU paths an
``OUBatch`` of one run too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, SupportsFloat

import numpy as np
from numpy.typing import ArrayLike

from privrl._progress import loop_progress
from privrl._validation import param_error
from privrl.deep.networks import MLP, NumpyLearner, TorchLearner, build_network
from privrl.deep.replay import Minibatches
from privrl.envs.center_walk import CenterWalkBatch
from privrl.errors import InvalidDataError
from privrl.privacy.noise import NoiseSource
from privrl.q_learning.configs import TrainingConfig
from privrl.q_learning.gaussian_process import OUNoise, ProductKernelField
from privrl.q_learning.ou_batch import OUBatch

if TYPE_CHECKING:
    import gymnasium as gym

__all__ = ["MLP", "Privatizer", "TrainResult", "TrainingRun", "UnitMap", "train", "train_many", "build_network",
           "functional_noise"]


class NoisePaths(Protocol):
    """Functional noise paths (:func:`functional_noise`): states ``(n, d)`` → values ``(n, m)``, one
    path per action; ``reset()`` draws fresh, independent paths."""

    def __call__(self, states: np.ndarray) -> np.ndarray: ...

    def reset(self) -> None: ...


@dataclass
class Privatizer:
    """What the loop privatises. All fields default to "nothing" (non-private Q-learning).

    ``release_reward(r) -> noisy r`` and ``release_gradient(sum) -> noisy sum`` are the fit's
    releases (input perturbation, DP-SGD): the loop never draws privacy noise itself."""

    noise: NoisePaths | None = None         # callable states (n, d) -> (n, m), with reset()
    target_noise: NoisePaths | None = None  # independent paths for the target network (if separate)
    reset: str = "iteration"           # "iteration" | "episode" | "never"
    release_reward: Callable[[float], float] | None = None          # input perturbation
    clip_norm: float | None = None     # DP-SGD per-sample clipping
    release_gradient: Callable[[np.ndarray], np.ndarray] | None = None  # DP-SGD noisy clipped-gradient sum


@dataclass
class TrainResult:
    network: Any
    returns: np.ndarray
    n_updates: int
    n_samples: int
    trace: list = field(default_factory=list)


@dataclass
class TrainingRun:
    """One run of :func:`train_many`: ``rngs`` has streams env, init, policy, replay (each used only
    by its own part, so a noiseless run is identical across the privatizers); ``observe`` maps a raw
    observation to the learner's state in [0, 1]^d (default: the observation as a float vector)."""

    env: Any
    cfg: TrainingConfig
    privatizer: Privatizer
    rngs: dict[str, np.random.Generator]
    reward_bounds: tuple[float, float]
    observe: Callable[[ArrayLike], np.ndarray] | None = None
    trace: bool = False


# ------------------------------------------------------------------------------ observations
class UnitMap:
    """``(obs - low) / (high - low)``: raw observations to [0, 1]^d (public bounds, checked)."""

    def __init__(self, low: np.ndarray, high: np.ndarray, owner: str) -> None:
        self.low, self.span, self.owner = low, high - low, owner
        self.identity = bool(np.all(low == 0.0) and np.all(high == 1.0))

    def __call__(self, obs: ArrayLike) -> np.ndarray:
        x = np.asarray(obs, float).ravel()
        if self.identity:
            if not (np.all(x >= 0.0) and np.all(x <= 1.0)):
                raise self._outside()
            return x
        u = (x - self.low) / self.span
        if not (u.shape == self.low.shape and np.all(u >= 0.0) and np.all(u <= 1.0)):
            raise self._outside() if u.shape == self.low.shape else param_error(
                "states", self.owner, f"observations of dimension {self.low.size}", f"dimension {x.size}")
        return u

    def batch(self, states: ArrayLike) -> np.ndarray:
        x = np.asarray(states, float).reshape(-1, self.low.size)
        u = x if self.identity else (x - self.low) / self.span
        if not (np.all(u >= 0.0) and np.all(u <= 1.0)):
            raise self._outside()
        return u

    def _outside(self) -> InvalidDataError:
        return InvalidDataError(
            f"{self.owner}: an observation lies outside the declared observation bounds; the analysis is on "
            "[0, 1]^d after the map (obs - obs_low) / (obs_high - obs_low). Declare wider public bounds (the "
            "'obs_low' and 'obs_high' parameters).")


def _as_vector(obs: ArrayLike) -> np.ndarray:
    return np.asarray(obs, float).ravel()


class _Observer:
    """The runs' observation maps applied to ``(R, d)`` raw observations: one vector operation when
    every map is a :class:`UnitMap` on [0, 1]^d (CenterWalk), else each run's map."""

    def __init__(self, maps: Sequence[Callable[[ArrayLike], np.ndarray] | None]) -> None:
        self.maps = [_as_vector if f is None else f for f in maps]
        self.identity = all(isinstance(f, UnitMap) and f.identity for f in self.maps)

    def __call__(self, raw: np.ndarray | Sequence[ArrayLike],
                 rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        maps = self.maps if rows is None else [self.maps[r] for r in rows]
        if self.identity and isinstance(raw, np.ndarray):
            if (raw >= 0.0).all() and (raw <= 1.0).all():
                return raw
            bad = int(np.flatnonzero(~((raw >= 0.0) & (raw <= 1.0)).all(1))[0])
            maps[bad](raw[bad])      # raises the run's own error
        if len(maps) == 1:
            return maps[0](raw[0])[None]
        return np.stack([f(o) for f, o in zip(maps, raw)])


# ------------------------------------------------------------------------------ environments
class _GymRows:
    """The runs' Gymnasium environments, stepped one by one (the general case)."""

    def __init__(self, envs: Sequence[gym.Env]) -> None:
        self.envs = list(envs)

    def reset(self, seeds: list[int]) -> list[ArrayLike]:
        return [env.reset(seed=seed)[0] for env, seed in zip(self.envs, seeds)]

    def step(self, actions: np.ndarray) -> tuple[list[ArrayLike], list[SupportsFloat], np.ndarray, np.ndarray]:
        out = [env.step(int(a)) for env, a in zip(self.envs, actions.tolist())]
        return ([o[0] for o in out], [o[1] for o in out], np.array([bool(o[2]) for o in out]),
                np.array([bool(o[3]) for o in out]))

    def reset_rows(self, rows: np.ndarray) -> list[ArrayLike]:
        return [self.envs[r].reset()[0] for r in rows.tolist()]

    def close(self) -> None:
        pass


def _env_rows(envs: Sequence[gym.Env], n_steps: int) -> CenterWalkBatch | _GymRows:
    """Several CenterWalk environments: one vectorised batch; else (and for one run, where the
    environment's own step is cheaper) each environment itself."""
    return (CenterWalkBatch.of(list(envs), n_steps) if len(envs) > 1 else None) or _GymRows(envs)


# ------------------------------------------------------------------------------ noise paths
class _OUNoise1D:
    """Functional noise for 1-D states: an :class:`~privrl.q_learning.gaussian_process.OUNoise`
    (one path per action) taking ``(n, 1)`` states; the training loop queries the paths of its runs
    (one or many) through one :class:`~privrl.q_learning.ou_batch.OUBatch` built from them."""

    def __init__(self, n_paths: int, beta: float, sigma: float, noise: NoiseSource) -> None:
        self.paths = OUNoise(n_paths=n_paths, beta=beta, sigma=sigma, noise=noise)

    def reset(self) -> None:
        """Fresh, independent paths (as :class:`~privrl.q_learning.gaussian_process.ProductKernelField`)."""
        self.paths.reset()

    def __call__(self, states: np.ndarray) -> np.ndarray:
        return self.paths(np.asarray(states, float)[:, 0])


def functional_noise(dim: int, n_actions: int, beta: float, sigma: float, noise: NoiseSource) -> NoisePaths:
    """Functional noise ``g_a ~ G(0, sigma^2 K)`` for the ``n_actions`` actions, its standard normals
    drawn from ``noise`` (a :class:`~privrl.privacy.noise.NoiseSource`: the fit's ``rel.noise``):
    OU paths for 1-D states (one spawned source per action); the exact product-kernel field for d > 1."""
    if dim == 1:
        return _OUNoise1D(n_actions, beta, sigma, noise)
    return ProductKernelField(dim=dim, beta=beta, sigma=sigma, n_paths=n_actions, noise=noise)


class _PathRows:
    """The noise paths of the runs ``rows`` (indices into the batch) that have some: one
    :class:`~privrl.q_learning.ou_batch.OUBatch` when they are all 1-D OU noises (also for one run:
    its compiled queries are several times cheaper than ``OUNoise``'s vector code, with the same
    normals at the same states, so the same values up to rounding), else each run's own object.
    ``point``: ``(len(rows), d)`` states → ``(len(rows), m)``; ``query``: ``(len(rows), n, d)`` →
    ``(len(rows), n, m)``."""

    def __init__(self, rows: np.ndarray, objects: list[NoisePaths]) -> None:
        self.rows = rows
        self.objects = objects
        self.batch = OUBatch.from_paths([o.paths for o in objects if isinstance(o, _OUNoise1D)]) \
            if all(isinstance(o, _OUNoise1D) for o in objects) else None

    @classmethod
    def of(cls, objects: Sequence[NoisePaths | None]) -> _PathRows | None:
        present = [(i, o) for i, o in enumerate(objects) if o is not None]
        return cls(np.array([i for i, _ in present], np.intp), [o for _, o in present]) if present else None

    def point(self, states: np.ndarray) -> np.ndarray:
        if self.batch is not None:
            return self.batch.point(states[:, 0])
        return np.stack([o(x[None, :])[0] for o, x in zip(self.objects, states)])

    def query(self, states: np.ndarray) -> np.ndarray:
        if self.batch is not None:
            return self.batch.query(states[..., 0])
        return np.stack([o(x) for o, x in zip(self.objects, states)])

    def reset(self, mask: np.ndarray | None = None) -> None:
        """Fresh paths for the runs where ``mask`` (over the whole batch) is True (all by default)."""
        flags = np.ones(len(self.rows), bool) if mask is None else mask[self.rows]
        if not flags.any():
            return
        if self.batch is not None:
            self.batch.reset(flags)
            return
        for o, flag in zip(self.objects, flags.tolist()):
            if flag:
                o.reset()


# ------------------------------------------------------------------------------ the loop
def _check_rewards(r: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
    if not ((low <= r) & (r <= high)).all():
        bad = int(np.flatnonzero(~((low <= r) & (r <= high)))[0])
        # the reward is private: the message never shows it
        raise InvalidDataError(
            f"A received reward is outside the declared reward_bounds {(float(low[bad]), float(high[bad]))}; the "
            "analysis relies on this bound. Declare bounds that contain every reward the environment can give "
            "(the 'reward_bounds' parameter).")


def _max_over_actions(q: np.ndarray) -> np.ndarray:
    """``q.max(-1)`` for a few actions as elementwise maxima of the action slices: NumPy reduces a
    short contiguous last axis one output at a time (about 40 times slower at ``(60, 128, 2)``).
    The same values (NaN propagates as in ``max``)."""
    out = q[..., 0].copy()
    for j in range(1, q.shape[-1]):
        np.maximum(out, q[..., j], out=out)
    return out


def train(env: gym.Env, cfg: TrainingConfig, privatizer: Privatizer, rngs: dict[str, np.random.Generator], *,
          reward_bounds: tuple[float, float], trace: bool = False, backend: str = "numpy",
          observe: Callable[[ArrayLike], np.ndarray] | None = None) -> TrainResult:
    """Run ``cfg.n_samples`` environment steps of one run (:class:`TrainingRun`). ``backend="torch"``
    runs the PyTorch reference learner (same draws)."""
    return train_many([TrainingRun(env, cfg, privatizer, rngs, reward_bounds, observe, trace)], backend=backend)[0]


def _lockstep_key(run: TrainingRun) -> tuple:
    env = run.env
    return (replace(run.cfg, learning_rate=0.0), int(np.prod(env.observation_space.shape)),
            int(env.action_space.n), run.privatizer.clip_norm is None)


def train_many(runs: Sequence[TrainingRun], *, backend: str = "numpy") -> list[TrainResult]:
    """Train every run; runs whose loops agree (:func:`_lockstep_key`: the configuration but for
    the step size, the spaces, TD or DP-SGD updates) advance in lockstep, each on its own streams.
    ``backend="torch"`` trains each run alone on the PyTorch reference learner."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, run in enumerate(runs):
        groups.setdefault((i,) if backend == "torch" else _lockstep_key(run), []).append(i)
    out: dict[int, TrainResult] = {}
    for idx in groups.values():
        for i, res in zip(idx, _train_lockstep([runs[i] for i in idx], backend)):
            out[i] = res
    return [out[i] for i in range(len(runs))]


def _train_lockstep(runs: Sequence[TrainingRun], backend: str) -> list[TrainResult]:
    return _Lockstep(runs, backend).run()


class _Lockstep:
    """Runs that agree (:func:`_lockstep_key`) advancing together: one environment step of every
    run (:meth:`step`), then, on the configuration's schedule, one update of every run
    (:meth:`update`). Each run's streams are drawn in the order of a run alone."""

    def __init__(self, runs: Sequence[TrainingRun], backend: str) -> None:
        self.cfg = cfg = runs[0].cfg
        self.R = R = len(runs)
        envs = [run.env for run in runs]
        self.d = obs_dim = int(np.prod(envs[0].observation_space.shape))
        self.m = int(envs[0].action_space.n)
        self.learner: Any = (TorchLearner if backend == "torch" else NumpyLearner)(
            (obs_dim, *cfg.hidden, self.m), [run.rngs["init"] for run in runs], cfg, bool(cfg.target_sync_episodes),
            [run.cfg.learning_rate for run in runs])
        self._privatize([run.privatizer for run in runs])
        self.low = np.array([float(run.reward_bounds[0]) for run in runs])
        self.high = np.array([float(run.reward_bounds[1]) for run in runs])
        self.observe = _Observer([run.observe for run in runs])
        self.traced = [r for r, run in enumerate(runs) if run.trace]
        self.logs: list[list] = [[] for _ in runs]

        self.cap = cap = cfg.replay_size or cfg.batch_size
        # the replay buffers, one row per run: each transition is (s, s', a, r, terminal) in one array,
        # so that a minibatch is one gather (actions are small integers, exact as floats)
        self.memory = np.zeros((R, cap, 2 * obs_dim + 3))
        self.size = self.ptr = 0
        self.env_rows = _env_rows(envs, cfg.n_samples)
        self.obs = self.observe(self.env_rows.reset([int(run.rngs["env"].integers(0, 2**31 - 1)) for run in runs]))
        self.returns: list[list[float]] = [[] for _ in runs]
        self.ep_ret = np.zeros(R)
        self.episodes = np.zeros(R, np.int64)
        self.updates = 0
        self.policy_rngs = [run.rngs["policy"] for run in runs]
        if cfg.update_every == "step":   # a replay minibatch at every step once the buffer holds batch_size
            sizes = np.minimum(np.arange(1, cfg.n_samples + 1), cap)
            self.minibatches = Minibatches([run.rngs["replay"] for run in runs], cfg.batch_size,
                                           sizes[sizes >= cfg.batch_size])
        # a minibatch's rows of the buffers: one take from the flat view (several times faster than
        # memory[runs, idx], NumPy's general advanced indexing)
        self.transitions, self.first_row = self.memory.reshape(R * cap, -1), np.arange(R)[:, None] * cap
        self._reset_paths()

    def _privatize(self, privs: list[Privatizer]) -> None:
        """The runs' noise paths (acting, and the target's own when separate), their reset schedules,
        reward releases and DP-SGD clipping."""
        self.noise = noise = _PathRows.of([p.noise for p in privs])
        self.t_noise = t_noise = _PathRows.of([p.target_noise if p.noise is not None else None for p in privs]) \
            if self.cfg.target_noise == "separate" else None
        self.sep = None if t_noise is None or noise is None else np.searchsorted(noise.rows, t_noise.rows)
        self.iteration = np.array([p.reset == "iteration" for p in privs])
        self.episode = np.array([p.reset == "episode" for p in privs])
        self.releases_r = [(r, p.release_reward) for r, p in enumerate(privs) if p.release_reward is not None]
        self.dpsgd = privs[0].clip_norm is not None
        self.clip_norms = np.array([float(p.clip_norm or 0.0) for p in privs])
        self.releases_g = [p.release_gradient for p in privs]

    def _reset_paths(self, mask: np.ndarray | None = None) -> None:
        for paths in (self.noise, self.t_noise):
            if paths is not None:
                paths.reset(mask)

    def run(self) -> list[TrainResult]:
        cfg = self.cfg
        with loop_progress(cfg.n_samples, "sample") as bar:
            for t in range(cfg.n_samples):
                self.step(t)
                if cfg.update_every == "batch":
                    if self.size == self.cap or t == cfg.n_samples - 1:
                        self.update(slice(0, self.size))
                        self.size = self.ptr = 0
                elif self.size >= cfg.batch_size:
                    self.update(next(self.minibatches))
                bar.update(1)
        self.env_rows.close()
        return [TrainResult(self.learner.network(r), np.asarray(self.returns[r]), self.updates, cfg.n_samples,
                            self.logs[r]) for r in range(self.R)]

    def act(self, t: int) -> np.ndarray:
        """Every run's action at step ``t``: greedy in ``Q~ = Q + g`` (Alg. 1 line 12), epsilon-greedy
        on the run's policy stream when the configuration explores."""
        noise, obs = self.noise, self.obs
        q = self.learner.act_q(obs)
        if noise is not None:
            if len(noise.rows) == self.R:
                q += noise.point(obs)
            else:
                q[noise.rows] += noise.point(obs[noise.rows])
        actions = q.argmax(1)
        if self.cfg.exploration is not None:
            start, end, decay = self.cfg.exploration
            eps = end + (start - end) * math.exp(-t / decay)
            for r, prng in enumerate(self.policy_rngs):
                if prng.random() < eps:
                    actions[r] = prng.integers(self.m)
        return actions

    def step(self, t: int) -> None:
        """One environment step of every run: act, check and release the rewards, store the
        transitions, and restart the runs whose episodes ended."""
        d, ptr = self.d, self.ptr
        actions = self.act(t)
        raw2, rew, term, trunc = self.env_rows.step(actions)
        obs2 = self.observe(raw2)
        rew = np.asarray(rew, float)
        _check_rewards(rew, self.low, self.high)
        self.ep_ret += rew
        if self.releases_r:
            rew = rew.copy()
            for r, release in self.releases_r:
                rew[r] = release(float(rew[r]))
        memory = self.memory
        memory[:, ptr, :d], memory[:, ptr, d:2 * d] = self.obs, obs2
        memory[:, ptr, 2 * d], memory[:, ptr, 2 * d + 1], memory[:, ptr, 2 * d + 2] = actions, rew, term
        self.ptr = (ptr + 1) % self.cap
        self.size = min(self.size + 1, self.cap)
        done = term | trunc
        if done.any():
            obs2 = self._end_episodes(done, obs2)
        self.obs = obs2

    def _end_episodes(self, done: np.ndarray, obs2: np.ndarray) -> np.ndarray:
        """Record the returns of the runs whose episodes ended, reset their environments (their
        first observations replace ``obs2``'s rows), their per-episode noise paths and, on schedule,
        their target networks."""
        ended = np.flatnonzero(done)
        for r in ended.tolist():
            self.returns[r].append(float(self.ep_ret[r]))
        self.ep_ret[ended] = 0.0
        self.episodes[ended] += 1
        obs2 = obs2.copy()
        obs2[ended] = self.observe(self.env_rows.reset_rows(ended), ended)
        self._reset_paths(done & self.episode)
        if self.cfg.target_sync_episodes:
            self.learner.sync_target(ended[self.episodes[ended] % self.cfg.target_sync_episodes == 0])
        return obs2

    def update(self, idx: slice | np.ndarray) -> None:
        """One update of every run on the buffer rows ``idx``: target ``y = r + gamma (1 - terminal)
        max_a [Q'(s', a) + g_a(s')]`` and a TD or DP-SGD step (Alg. 1 lines 18–20)."""
        d = self.d
        batch = self.memory[:, idx] if isinstance(idx, slice) else \
            self.transitions.take(self.first_row + idx, axis=0)  # (R, n, 2d+3)
        s, s2 = np.ascontiguousarray(batch[..., :d]), np.ascontiguousarray(batch[..., d:2 * d])
        rew, term = batch[..., 2 * d + 1], batch[..., 2 * d + 2]
        a = batch[..., 2 * d].astype(np.int64)
        nxt = self.learner.target_q(s2)
        g_sa = self._add_noise(s, s2, a, nxt)
        y = rew + self.cfg.gamma * (1.0 - term) * _max_over_actions(nxt)
        for r in self.traced:
            self.logs[r].append({"update": self.updates, "g_sa": g_sa[r].copy(), "states": s[r].copy()})
        if self.dpsgd:
            self.learner.dpsgd_step(s, a, y, self.clip_norms, self.releases_g)
        else:
            self.learner.td_step(s, a, y, g_sa)
        self.updates += 1
        self._reset_paths(self.iteration)

    def _add_noise(self, s: np.ndarray, s2: np.ndarray, a: np.ndarray, nxt: np.ndarray) -> np.ndarray:
        """Add ``g(s')`` (the target's own paths when separate) to the target values ``nxt`` in place
        and return ``g_a(s)`` of the taken actions ``(R, n)`` (zero for runs without noise)."""
        noise, t_noise, R = self.noise, self.t_noise, self.R
        n = a.shape[1]
        g_sa = np.zeros((R, n))
        if noise is None:
            return g_sa
        # one batch query: the law does not depend on the order
        nr = noise.rows
        every = len(nr) == R      # (a single fit, or a batch of noisy runs: no row selection)
        g = noise.query(np.concatenate([s, s2] if every else [s[nr], s2[nr]], axis=1))
        g_next = g[:, n:]
        if t_noise is not None:
            g_t = t_noise.query(s2 if len(t_noise.rows) == R else s2[t_noise.rows])
            if len(t_noise.rows) == len(nr):
                g_next = g_t
            else:
                g_next = g_next.copy()
                g_next[self.sep] = g_t
        g_taken = g[np.arange(len(nr))[:, None], np.arange(n), a if every else a[nr]]
        if every:
            nxt += g_next
            return g_taken
        nxt[nr] = nxt[nr] + g_next
        g_sa[nr] = g_taken
        return g_sa
