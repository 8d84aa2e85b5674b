"""Say what is achievable before touching the data: :func:`plan` and ``privrl plan``.

A *plan* reads public quantities only — the data's size and shape (episodes n, states S, actions A,
horizon H, features d), the declared bounds, the budget and the estimator's parameters — and
states, for every statistic the algorithm releases, the noise the estimator's own calibration adds
against the typical value that noise perturbs, then a verdict and the knobs that change it. No
data are read: a plan can be made before any are collected.

**Noise.** Each family's planning function (its ``plan`` module, next to its calibration) builds
the estimator with the public parameters and asks its calibration for the noise, through the very
code a fit runs (``DPAPVI(...).count_noise(H, S, A, n)``, ``DPVAPVI(...).linear_noise(H, d)``,
LinOpt's ``noise_plan_for(H, d1, d2)``, ``DPQLearning(...).functional_calibration(m)``,
``DPLSW(...).release_mechanism(n, F_max, S)``, ``MonteCarloMechanism.create``): never a re-derived
copy.

**Signal.** The typical value a noise perturbs is public only under a stated assumption, which
every row names (:attr:`Released.basis`): for a count, the number of visits spread evenly over the
cells it is counted in (n·H visits over the H·S·A cells of DP-APVI's ``n_sa``: n/(S·A) each); for
a mean of values in [0, F_max], the range F_max.

**Verdict** on the noise-to-signal ratio r = noise std / typical value of each row, and for the
plan on the worst row (every released statistic enters the answer):

* ``useful`` — r ≤ :data:`USEFUL` = 0.1: the released value is within ±20% of the truth with
  probability about 0.95 (2σ), so what is built on it (a transition probability, a value, a mean)
  keeps its first digit;
* ``hopeless`` — r ≥ :data:`HOPELESS` = 0.5: the ±2σ interval of the released value of a typical
  cell contains 0 — a visited cell cannot be told from an empty one — and for a mean in
  [0, F_max] a noise std of F_max/2 is no better than the constant F_max/2 (the threshold of the
  estimators' own "noise-dominated" :class:`~privrl.errors.UtilityWarning`);
* ``marginal`` — in between: the statistic is detected but carries 20–100% error.

**Knobs.** For each public knob the plan searches, with the same planning function, the setting
that makes the plan useful alone: more data (the n needed), a larger ε (or ρ), public aggregation
into G groups (the largest G), and any knob the family adds (:attr:`Planner.extra_knobs`).

A family registers a :class:`Planner` (kind ``"plan"`` of :mod:`privrl.registry`, named by the
``plans`` field of its :class:`~privrl.family.Family` record) with :func:`register_plan`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl import registry as _registry
from privrl._validation import check_array, check_scalar, param_error
from privrl.errors import InvalidParameterError, PrivrlError
from privrl.privacy.budget import PrivacyBudget

__all__ = ["USEFUL", "HOPELESS", "VERDICTS", "UNDECIDED", "INPUTS", "Public", "Released", "Assessment", "Knob", "Plan",
           "Planner", "register_plan", "all_planners", "get_planner", "plan", "verdict", "count_cells",
           "mean_range"]

#: noise-to-signal at or below which a released statistic is useful (module docstring)
USEFUL = 0.1
#: noise-to-signal at or above which it is hopeless (module docstring)
HOPELESS = 0.5
VERDICTS = ("useful", "marginal", "hopeless")
#: a family's verdict when it depends on something not public (stated in its reason)
UNDECIDED = "undecided"
#: the largest n, G or ε a knob search tries
_N_MAX = 10**12
_EPS_MAX = 1e3
_RHO_MAX = 1e6


def verdict(ratio: float) -> str:
    """``"useful"`` (r ≤ :data:`USEFUL`), ``"hopeless"`` (r ≥ :data:`HOPELESS`) or ``"marginal"``."""
    if not ratio <= HOPELESS:       # NaN or inf: hopeless
        return "hopeless"
    return "useful" if ratio <= USEFUL else ("marginal" if ratio < HOPELESS else "hopeless")


# --------------------------------------------------------------------------- public inputs
#: name -> (kind, low, help): the public inputs a planner may read (keywords of :func:`plan`,
#: options of ``privrl plan``: ``--n``, ``--states``, ``--F-max`` ...)
INPUTS: dict[str, tuple[type, float, str]] = {
    "n": (int, 1, "episodes (trajectories) in the data, or of the online run"),
    "states": (int, 1, "number of states S"),
    "actions": (int, 1, "number of actions A"),
    "horizon": (int, 1, "episode length H (the fixed horizon, or the bound on episode length)"),
    "groups": (int, 1, "G: public groups the states are aggregated into (a public map fixed without the data)"),
    "features": (int, 1, "feature dimension d (d1 for linear mixtures)"),
    "reward_features": (int, 1, "reward feature dimension d2 of a linear mixture (default d)"),
    "feature_norm": (float, 0.0, "bound B on the feature norm ‖φ‖"),
    "F_max": (float, 0.0, "public bound on a trajectory's return"),
    "r_max": (float, 0.0, "public bound on a reward"),
    "gamma": (float, 0.0, "discount factor γ (1: episodic)"),
    "visits": (float, 0.0, "assumption: what one episode visits on average — its steps before it ends "
               "(DP-APVI), its distinct states (DP-LSW, DP-LSL), its groups (DP Monte Carlo)"),
    "visit_profile": (object, 0.0, "assumption: the share of trajectories that visit each state, an (S,) array "
                      "from a public model or simulator, never from the data (DP-LSW, DP-LSL; on the command "
                      "line a .npy file)"),
    "admissible": (int, 1, "assumption: actions the logging policy uses in a state (default: all A)"),
    "next_states": (int, 1, "assumption: next states a pair reaches (transition counts spread evenly over them)"),
    "group_quality": (float, 0.0, "assumption (not public): the share of the best non-private gain that learning on "
                      "the public groups keeps — how well they describe the dynamics (DP-APVI; from a pilot or a "
                      "simulator)"),
    "clone_quality": (float, 0.0, "assumption (not public): the share of the best non-private gain that the "
                      "behaviour clone (the most logged action) keeps (DP-APVI's behaviour fallback)"),
}


@dataclass(frozen=True)
class Public:
    """The public inputs of one plan: the sizes of :data:`INPUTS` (None when not given), the
    budget and the estimator's own parameters ``params`` (``(name, value)`` pairs, sorted)."""

    budget: PrivacyBudget
    n: int | None = None
    states: int | None = None
    actions: int | None = None
    horizon: int | None = None
    groups: int | None = None
    features: int | None = None
    reward_features: int | None = None
    feature_norm: float | None = None
    F_max: float | None = None
    r_max: float | None = None
    gamma: float | None = None
    visits: float | None = None
    visit_profile: np.ndarray | None = None
    admissible: int | None = None
    next_states: int | None = None
    group_quality: float | None = None
    clone_quality: float | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def replace(self, **changes: Any) -> Public:
        return dataclasses.replace(self, **changes)

    @property
    def estimator_params(self) -> dict[str, Any]:
        return dict(self.params)

    def given(self) -> dict[str, object]:
        """The inputs that were given, JSON-able (the budget as its dict, then the parameters)."""
        out: dict[str, object] = {k: getattr(self, k) for k in INPUTS if getattr(self, k) is not None}
        if self.visit_profile is not None:   # an (S,) array: its size and the visits it implies
            out["visit_profile"] = {"states": int(self.visit_profile.size),
                                    "visits": float(self.visit_profile.sum())}
        out["budget"] = self.budget.to_dict()
        out.update(self.params)
        return out


# --------------------------------------------------------------------------- what a plan says
@dataclass(frozen=True)
class Released:
    """One released statistic: its noise std against the typical value it perturbs.

    ``name`` (e.g. ``"n_sa"``), ``description``, ``noise_std`` (of one released entry, in the
    statistic's units), ``signal`` (its typical value under the assumption ``basis``)."""

    name: str
    description: str
    noise_std: float
    signal: float
    basis: str

    @property
    def ratio(self) -> float:
        """noise std / typical value (∞ for a zero signal)."""
        if self.noise_std == 0:
            return 0.0
        return self.noise_std / self.signal if self.signal > 0 else math.inf

    @property
    def verdict(self) -> str:
        return verdict(self.ratio)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "description": self.description, "noise_std": self.noise_std,
                "signal": self.signal, "ratio": self.ratio, "verdict": self.verdict, "basis": self.basis}


@dataclass(frozen=True)
class Assessment:
    """What a family's planning function returns: the released statistics and notes (how the
    noise was planned: the mechanism, the calibration, a worst case ...); ``verdict`` (with its
    ``reason``) when the family decides from more than the rows' noise (e.g. DP-APVI's routes:
    the fallback, the threshold, a non-public group quality — :data:`UNDECIDED`), else None."""

    rows: tuple[Released, ...]
    notes: tuple[str, ...] = ()
    verdict: str | None = None
    reason: str = ""

    @property
    def ratio(self) -> float:
        return max((r.ratio for r in self.rows), default=0.0)


@dataclass(frozen=True)
class Knob:
    """One public knob: ``setting`` (what to do, in words) reaching ``ratio`` (the plan's worst
    noise-to-signal there; None when no setting in the searched range is useful), ``value`` the
    setting as a number (n, ε, ρ or G), ``option`` the input it sets."""

    name: str
    option: str
    setting: str
    value: float | None
    ratio: float | None

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Plan:
    """A plan (module docstring): the released statistics, the verdict and the knobs."""

    algorithm: str
    estimator: str
    public: dict[str, Any]
    rows: tuple[Released, ...]
    knobs: tuple[Knob, ...] = ()
    notes: tuple[str, ...] = ()
    decided: str | None = None
    reason: str = ""

    @property
    def ratio(self) -> float:
        """The worst noise-to-signal of the released statistics."""
        return max((r.ratio for r in self.rows), default=0.0)

    @property
    def verdict(self) -> str:
        """The family's verdict when it gave one (``decided``), else that of the worst row."""
        return self.decided if self.decided is not None else verdict(self.ratio)

    def row(self, name: str) -> Released:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    def knob(self, option: str) -> Knob:
        for k in self.knobs:
            if k.option == option:
                return k
        raise KeyError(option)

    def to_dict(self) -> dict[str, object]:
        return {"algorithm": self.algorithm, "estimator": self.estimator, "public": self.public,
                "verdict": self.verdict, "reason": self.reason,
                "ratio": self.ratio, "thresholds": {"useful": USEFUL, "hopeless": HOPELESS},
                "released": [r.to_dict() for r in self.rows], "knobs": [k.to_dict() for k in self.knobs],
                "notes": list(self.notes)}

    def text(self) -> str:
        """The plan as a table, the verdict and the knobs (what ``privrl plan`` prints)."""
        given = ", ".join(f"{k} = {_fmt(v)}" for k, v in self.public.items() if k != "budget")
        budget = PrivacyBudget.from_dict(self.public["budget"])
        lines = [f"plan for {self.algorithm} ({self.estimator}) at {budget}: {given}", ""]
        head = ("released statistic", "noise std", "typical value", "noise/signal", "verdict")
        body = [(f"{r.name}: {r.description}", _fmt(r.noise_std), _fmt(r.signal), _fmt(r.ratio), r.verdict)
                for r in self.rows]
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
        for row in [head, *body]:
            lines.append("  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]))
        lines.append("")
        for r in self.rows:
            lines.append(f"typical value of {r.name}: {r.basis}")
        for note in self.notes:
            lines.append(f"note: {note}")
        lines.append("")
        lines.append(f"verdict: {self.verdict.upper()} (worst noise/signal {_fmt(self.ratio)}; useful <= {USEFUL:g}, "
                     f"hopeless >= {HOPELESS:g})" + (f": {self.reason}" if self.decided is not None else ""))
        if self.knobs:
            lines.append("what makes it useful (each knob alone):")
            width = max(len(k.name) for k in self.knobs)
            for k in self.knobs:
                tail = "" if k.ratio is None else f"  -> noise/signal {_fmt(k.ratio)}"
                lines.append(f"  {k.name.ljust(width)}  {k.setting}{tail}")
        return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}".replace(",", " ") if abs(value) >= 10**4 else str(value)
    if math.isinf(value):
        return "inf"
    return f"{value:.3g}"


# --------------------------------------------------------------------------- assumptions shared by families
def count_cells(n: float, cells: float, *, per_episode: float = 1.0) -> float:
    """The typical count of a cell when n episodes contribute ``per_episode`` visits each, spread
    evenly over ``cells`` cells: n·per_episode/cells (the average count: exact on average,
    an assumption for a given cell)."""
    return float(n) * float(per_episode) / float(cells)


def mean_range(F_max: float) -> float:
    """The typical value of a mean of values in [0, F_max]: its range F_max (public; a noise std
    of F_max/2 makes the mean no better than the constant F_max/2)."""
    return float(F_max)


# --------------------------------------------------------------------------- planners
@dataclass(frozen=True)
class Planner:
    """One algorithm's planning function, as the family registers it.

    ``name``: the algorithm's command-line name (as ``privrl fit``'s); ``estimator``: the class
    name; ``evaluate(public) -> Assessment`` — the family's planning function, which must get every
    noise scale from the estimator's own calibration; ``required`` / ``optional``: the inputs of
    :data:`INPUTS` it reads (any other is refused); ``knobs``: the inputs searched for the knob
    table, among ``"n"``, ``"budget"`` and ``"groups"`` (``"groups"``: the largest number of groups
    that is useful, fewer groups meaning larger counts); ``extra_knobs(public, evaluate) ->
    [Knob]``: the family's own (e.g. time-homogeneous pooling); ``budgets``: the budget kinds the
    estimator accepts among ``"epsilon"`` (pure), ``"epsilon_delta"`` and ``"rho"``."""

    name: str
    estimator: str
    help: str
    evaluate: Callable[[Public], Assessment]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    knobs: tuple[str, ...] = ("n", "budget")
    extra_knobs: Callable[[Public, Callable[[Public], float]], list[Knob]] | None = None
    budgets: tuple[str, ...] = ("epsilon", "epsilon_delta", "rho")

    def __post_init__(self) -> None:
        for name in (*self.required, *self.optional):
            if name not in INPUTS:
                raise ValueError(f"Planner {self.name!r}: unknown input {name!r} (known: {', '.join(INPUTS)})")
        if set(self.knobs) - {"n", "budget", "groups"}:
            raise ValueError(f"Planner {self.name!r}: knobs must be among 'n', 'budget', 'groups'")

    @property
    def inputs(self) -> tuple[str, ...]:
        return (*self.required, *self.optional)


def register_plan(planner: Planner) -> Planner:
    """Register ``planner`` under its name (kind ``"plan"`` of :mod:`privrl.registry`)."""
    return _registry.register("plan", planner.name, planner, replace=True, stacklevel=2)


def all_planners() -> dict[str, Planner]:
    """Every registered planner, sorted by name."""
    return dict(sorted(_registry.entries("plan").items()))


def get_planner(algorithm: str | type) -> Planner:
    """The planner of ``algorithm``: its name (``"dp-apvi"``), its estimator's class name
    (``"DPAPVI"``) or the class itself; anything else is a one-line error listing the known names."""
    planners = all_planners()
    name = getattr(algorithm, "__name__", algorithm)
    if isinstance(name, str):
        if name in planners:
            return planners[name]
        for planner in planners.values():
            if planner.estimator == name:
                return planner
    raise InvalidParameterError(f"Unknown plan algorithm {name!r}. Known: {', '.join(planners) or '(none)'}.")


def _budget(epsilon: float | None, delta: float | None, rho: float | None, budget: object,
            planner: Planner) -> PrivacyBudget:
    owner = f"plan {planner.name}"
    if budget is not None:
        if epsilon is not None or delta is not None or rho is not None:
            raise param_error("budget", owner, "given alone (not with epsilon, delta or rho)", budget)
        if not isinstance(budget, PrivacyBudget):
            raise param_error("budget", owner, "a PrivacyBudget", budget)
    elif epsilon is None and rho is None:
        raise InvalidParameterError(f"The plan of {planner.name} needs a budget: 'epsilon' (and 'delta') or 'rho'.")
    elif rho is not None:
        if epsilon is not None or delta is not None:
            raise param_error("rho", owner, "given without epsilon and delta", rho)
        budget = PrivacyBudget(rho=rho)
    else:
        budget = PrivacyBudget(epsilon=epsilon, delta=delta)
    if not budget.is_private:
        raise param_error("budget", owner, "a finite budget (an infinite one adds no noise: nothing to plan)",
                          budget)
    kind = "rho" if budget.rho is not None else ("epsilon_delta" if budget.delta else "epsilon")
    if kind not in planner.budgets:
        wants = {"rho": "a rho budget", "epsilon": "a pure epsilon budget",
                 "epsilon_delta": "an (epsilon, delta) budget with delta > 0"}
        raise param_error("budget", owner, " or ".join(wants[k] for k in planner.budgets), budget)
    return budget


def _check_inputs(planner: Planner, values: Mapping[str, Any]) -> dict[str, Any]:
    owner = f"plan {planner.name}"
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if name not in planner.inputs:
            accepted = ", ".join(repr(i) for i in planner.inputs)
            raise InvalidParameterError(f"The plan of {planner.name} does not read {name!r} (it reads: {accepted}).")
        kind, low, _ = INPUTS[name]
        closed = "left" if kind is int else "neither"
        if kind is object:
            out[name] = check_array(value, name, owner=owner, ndim=1, low=0.0, high=1.0)
        elif name in ("gamma", "group_quality", "clone_quality"):
            out[name] = check_scalar(value, name, owner=owner, low=0.0, high=1.0)
        else:
            out[name] = check_scalar(value, name, owner=owner, kind=kind, low=low, closed=closed)
    missing = [name for name in planner.required if name not in out]
    if missing:
        raise InvalidParameterError(f"The plan of {planner.name} needs {', '.join(repr(m) for m in missing)} "
                                    "(public sizes).")
    return out


def plan(algorithm: str | type, *, epsilon: float | None = None, delta: float | None = None, rho: float | None = None,
         budget: PrivacyBudget | None = None, params: Mapping[str, Any] | None = None, knobs: bool = True,
         **public: Any) -> Plan:
    """The :class:`Plan` of ``algorithm`` (a name such as ``"dp-apvi"``, an estimator class or its
    name) for the public inputs ``public`` (:data:`INPUTS`: ``n``, ``states``, ``actions``,
    ``horizon``, ``groups``, ...) and a budget (``epsilon`` [``delta``], ``rho`` or ``budget``).
    ``params``: the estimator's own parameters (``{"calibration": "sound"}``), validated by it.
    ``knobs=False`` skips the knob searches. Reads no data.

    >>> p = plan("dp-apvi", n=10**5, states=750, actions=25, horizon=20, epsilon=1.0, delta=1e-6)
    >>> p.verdict, p.row("n_sa").signal                                    # doctest: +SKIP
    ('hopeless', 5.333333333333333)
    """
    planner = get_planner(algorithm)
    values = _check_inputs(planner, public)
    b = _budget(epsilon, delta, rho, budget, planner)
    items = tuple(sorted((params or {}).items()))
    for name, _ in items:
        if name in ("budget",):
            raise param_error("params", f"plan {planner.name}", "estimator parameters other than the budget",
                              name)
    pub = Public(budget=b, params=items, **values)
    assessment = planner.evaluate(pub)
    knob_list = _knobs(planner, pub, assessment.ratio) if knobs else []
    return Plan(planner.name, planner.estimator, pub.given(), tuple(assessment.rows), tuple(knob_list),
                tuple(assessment.notes), assessment.verdict, assessment.reason)


# --------------------------------------------------------------------------- knob searches
def _ratio_of(planner: Planner) -> Callable[[Public], float]:
    def ratio(pub: Public) -> float:
        try:
            return planner.evaluate(pub).ratio
        except PrivrlError:
            return math.inf
    return ratio


def smallest_useful(ratio: Callable[[float], float], start: float, limit: float, *, integer: bool) -> float | None:
    """The smallest x in (0, limit] (integers: [1, limit]) with ratio(x) <= USEFUL, for a ratio
    non-increasing in x: doubling (or halving) from ``start``, then bisection — exact for
    integers, to 1% otherwise. None when ``limit`` is not enough."""
    def ok(x: float) -> bool:
        return ratio(x) <= USEFUL

    floor = 1.0 if integer else start * 1e-6
    if ok(start):
        hi, lo = start, max(floor, start / 2.0)
        while ok(lo):
            if lo <= floor:
                return lo
            hi, lo = lo, max(floor, lo / 2.0)
    else:
        lo, hi = start, min(limit, start * 2.0)
        while not ok(hi):
            if hi >= limit:
                return None
            lo, hi = hi, min(limit, hi * 2.0)
    while hi - lo > 1 if integer else hi / lo > 1.01:
        mid = math.floor((lo + hi) / 2) if integer else math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return float(math.ceil(hi)) if integer else hi


def largest_useful(ratio: Callable[[int], float], high: int) -> int | None:
    """The largest integer G in [1, high] with ratio(G) <= USEFUL for a ratio non-decreasing in
    G, or None."""
    if ratio(1) > USEFUL:
        return None
    lo, hi = 1, high
    if ratio(hi) <= USEFUL:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ratio(mid) <= USEFUL:
            lo = mid
        else:
            hi = mid
    return lo


def _round_up(x: float) -> float:
    """x rounded up to two significant digits."""
    if x <= 0:
        return x
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / scale - 1e-9) * scale


def _knobs(planner: Planner, pub: Public, current: float) -> list[Knob]:
    ratio = _ratio_of(planner)
    out: list[Knob] = []
    if "n" in planner.knobs and pub.n is not None:
        n = smallest_useful(lambda x: ratio(pub.replace(n=int(math.ceil(x)))), float(pub.n), _N_MAX, integer=True)
        if n is None:
            out.append(Knob("more data", "n", f"no n up to {_N_MAX:.0e} is enough alone", None, None))
        else:
            need = int(_round_up(n))
            out.append(Knob("more data", "n", f"n >= {_fmt(need)} ({need / pub.n:.3g}x the data)", need,
                            ratio(pub.replace(n=need))))
    if "budget" in planner.knobs:
        b = pub.budget
        if b.rho is not None:
            x = smallest_useful(lambda r: ratio(pub.replace(budget=PrivacyBudget(rho=r))), float(b.rho), _RHO_MAX,
                                integer=False)
            key, label, limit = "rho", "rho", _RHO_MAX
        else:
            x = smallest_useful(lambda e: ratio(pub.replace(budget=PrivacyBudget(epsilon=e, delta=b.delta))),
                                float(b.epsilon), _EPS_MAX, integer=False)  # type: ignore[arg-type]
            key, label, limit = "epsilon", "epsilon", _EPS_MAX
        if x is None:
            out.append(Knob(f"larger {label}", key, f"no {label} up to {limit:g} is enough alone", None, None))
        else:
            x = _round_up(x)
            new = PrivacyBudget(rho=x) if key == "rho" else PrivacyBudget(epsilon=x, delta=b.delta)
            at = f" (delta = {b.delta:g})" if key == "epsilon" and b.delta else ""
            out.append(Knob(f"larger {label}", key, f"{label} >= {x:.3g}{at}", x, ratio(pub.replace(budget=new))))
    if "groups" in planner.knobs:
        high = pub.groups or pub.states or 1
        # G >= 2: one group for all states is no model of the dynamics
        g = largest_useful(lambda k: ratio(pub.replace(groups=int(k) + 1)), int(high) - 1) if high >= 2 else None
        g = None if g is None else g + 1
        if g is None:
            out.append(Knob("public groups", "groups", "no grouping into 2 or more public groups is enough alone",
                            None, None))
        else:
            out.append(Knob("public groups", "groups", f"aggregate the states into at most {g} public groups "
                            "(a map fixed without the data)", g, ratio(pub.replace(groups=g))))
    if planner.extra_knobs is not None:
        out.extend(planner.extra_knobs(pub, ratio))
    return out

