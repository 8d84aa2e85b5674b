"""The privacy ledger and the accountants behind it (ARCHITECTURE.md §1.1).

Sensitivity convention
----------------------
A mechanism's ``sensitivity`` Δ is the largest distance (ℓ2 for Gaussian noise, ℓ1 for Laplace
noise) between the query's values on two neighbouring inputs *under the algorithm's own
neighbouring relation* (for replace-one neighbours: the worst replacement of one unit). Its event
carries ``noise_multiplier = σ/Δ`` (Gaussian) or ``b/Δ`` (Laplace), so the privacy curve is that of
``N(0, σ²)`` against ``N(Δ, σ²)`` — a property of the pair of output distributions, whatever the
relation that produced it.

The ledger therefore always asks dp-accounting's accountants with
``NeighboringRelation.ADD_OR_REMOVE_ONE``, whose Gaussian and Laplace privacy-loss distributions
are exactly those curves. dp-accounting's ``REPLACE_ONE`` relation instead assumes the event's
sensitivity-1 query may move by 2 under replacement (dp-accounting's GitHub issue 378): using it on top of a Δ
already computed for replacement would double the sensitivity. ``tests/privacy`` checks both facts.

Speed and exactness
-------------------
Before an accountant is asked, the ledger is flattened (nested ``ComposedDpEvent`` /
``SelfComposedDpEvent`` become (event, count) pairs), identical events are grouped, and every
``GaussianDpEvent`` is merged into a single one with

    σ_eff = (Σ_i count_i / σ_i²)^(-1/2)       (σ_i the noise multipliers)

which is *exact*: composing Gaussian mechanisms with multipliers σ_i is the same pair of
distributions as one Gaussian mechanism with multiplier σ_eff (the privacy-loss random variables
are Gaussian and their means and variances add; Dong, Roth & Su 2022, Cor. 3.3), and RDP of a
Gaussian is α/(2σ²), additive in 1/σ². A ledger whose releases are all Gaussian is then
answered by the exact analytic Gaussian curve (Balle & Wang 2018, Thm. 8;
``dp_accounting.get_epsilon_gaussian``) under ``accountant="pld"``/``"auto"``: the PLD accountant
converges to it from above, so this is both faster and tighter, never looser. A ledger of Gaussian
releases and :class:`ApproxDpEvent`s (DP Q-learning's tail event, DP-LSW's smoothed release) is
also answered exactly: the (ε, δ) events' worst-case privacy-loss distributions are discrete
(:func:`_approx_losses`) and their composition with the Gaussian loss is a finite sum of exact
Gaussian hockey-stick curves (:func:`_delta_fn`). Other mixtures (e.g. Laplace with Gaussian) are
composed as pessimistic PLDs built with dp-accounting's public constructors (:func:`_pld_of`).
Under ``accountant="rdp"`` a ledger whose every event is ρ-zCDP also gets min(RDP, Bun–Steinke(Σρ)),
the same conversion as :func:`privrl.privacy.zcdp_to_approx_dp`, so that a ρ calibrated with
``approx_dp_to_zcdp`` is certified by the ledger. A ledger of pure-DP releases (Laplace,
``ApproxDpEvent`` with δ = 0) never reports more than basic composition Σ ε_i.

Only dp-accounting's public API is used, and it is imported on first use
(:mod:`privrl.privacy.events`): ``import privrl`` does not pay for it.

Events
------
All of dp-accounting's events are accepted. :class:`ApproxDpEvent` adds an (ε, δ)-DP release
whose mechanism is not one of dp-accounting's (e.g. DP-LSW's smooth-sensitivity Gaussian,
Balle et al. 2016, Lemma 1): the PLD accountant represents it by the worst-case privacy-loss
distribution of an (ε, δ)-DP mechanism; the RDP accountant cannot (δ > 0 has no finite RDP curve)
and says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._validation import check_option, check_scalar, param_error
from privrl.errors import InvalidParameterError
from privrl.privacy import events as _events
from privrl.privacy.draws import DrawLog, NoiseDeclaration
from privrl.privacy.event_json import event_from_json, event_to_json
from privrl.privacy.gaussian_curves import _delta_fn, _epsilon_from_delta_fn, gaussian_delta, gaussian_epsilon
from privrl.privacy.gaussian_curves import _gaussian_hockey_stick as _gaussian_hockey_stick  # kept importable here

# ApproxDpEvent is built on first access (module __getattr__), so ruff cannot see it
if TYPE_CHECKING:  # annotations only
    from collections.abc import Hashable
    from types import ModuleType

    from dp_accounting import DpEvent

__all__ = ["ApproxDpEvent", "Ledger", "ACCOUNTANTS", "event_from_json", "event_to_json",  # noqa: F822
           "make_accountant", "epsilon_of", "delta_of", "group_events", "gaussian_delta", "gaussian_epsilon"]

ACCOUNTANTS = ("pld", "rdp", "auto")
_INTERVAL = 1e-4  # PLD value discretisation interval (pessimistic: never under-reports ε)


def __getattr__(name: str) -> object:
    if name == "ApproxDpEvent":
        return _events.approx_event_class()
    raise AttributeError(f"module 'privrl.privacy.accounting' has no attribute {name!r}")


def _dp() -> ModuleType:
    return _events.dp()


def _approx_cls() -> type[DpEvent]:
    return _events.approx_event_class()


def make_accountant(kind: str = "pld") -> Any:
    """A fresh dp-accounting accountant (``"pld"`` or ``"rdp"``) with privrl's neighbouring
    convention (add/remove, see the module docstring). The ledger's own PLD path
    (:func:`_pld_of`) also handles :class:`ApproxDpEvent`, which dp-accounting's accountant does not."""
    check_option(kind, "accountant", ("pld", "rdp"))
    relation = _dp().NeighboringRelation.ADD_OR_REMOVE_ONE
    if kind == "pld":
        return _dp().pld.PLDAccountant(neighboring_relation=relation, value_discretization_interval=_INTERVAL)
    return _dp().rdp.RdpAccountant(neighboring_relation=relation)


def _pld_of(event: DpEvent) -> Any:
    """The pessimistic privacy-loss distribution of ``event`` from dp-accounting's public PLD
    constructors (Gaussian, Laplace, and :class:`ApproxDpEvent` as the worst-case PLD of an
    (ε, δ)-DP mechanism, ``from_privacy_parameters``), composed. The discretisation interval is
    1e-4·max(1, μ, L) for Gaussian releases of total μ = √(Σ n/σ²) and a largest single
    non-Gaussian loss L (1/b for Laplace, ε for ApproxDpEvent): a tiny-noise release has a loss
    spread over ~μ² or ~L, and a fixed interval would need ~10⁴·max(μ², L) points. Rounding stays
    pessimistic, so ε is never under-reported; its relative error stays ~1e-4 per release."""
    pld = _dp().pld.privacy_loss_distribution
    params = _dp().pld.common.DifferentialPrivacyParameters
    pairs = [(b, n) for b, n in _flatten(event) if not isinstance(b, _dp().NoOpDpEvent)]
    mu2 = sum(n / float(b.noise_multiplier) ** 2 for b, n in pairs if isinstance(b, _dp().GaussianDpEvent))
    # the largest single-release loss of the non-Gaussian events: 1/b (Laplace) or ε (ApproxDpEvent)
    spread = max([1.0 / float(b.noise_multiplier) for b, _ in pairs if isinstance(b, _dp().LaplaceDpEvent)]
                 + [float(b.epsilon) for b, _ in pairs if isinstance(b, _approx_cls())] + [0.0])
    step = _INTERVAL * max(1.0, math.sqrt(mu2), spread)
    out = pld.identity(value_discretization_interval=step)
    for base, n in pairs:
        if isinstance(base, _dp().GaussianDpEvent):
            one = pld.from_gaussian_mechanism(float(base.noise_multiplier), value_discretization_interval=step)
        elif isinstance(base, _dp().LaplaceDpEvent):
            one = pld.from_laplace_mechanism(float(base.noise_multiplier), value_discretization_interval=step)
        else:
            one = pld.from_privacy_parameters(params(float(base.epsilon), float(base.delta)),
                                              value_discretization_interval=step)
        out = out.compose(one if n == 1 else one.self_compose(int(n)))
    return out


def _own_pld_supports(event: DpEvent) -> bool:
    """Whether :func:`_pld_of` handles every base event (else dp-accounting's PLD accountant is
    asked, which supports sampled mechanisms but not :class:`ApproxDpEvent`)."""
    ok = (_dp().NoOpDpEvent, _dp().GaussianDpEvent, _dp().LaplaceDpEvent, _approx_cls())
    return all(isinstance(base, ok) for base, _ in _flatten(event))


def _supports(kind: str, event: DpEvent) -> bool:
    if kind == "pld" and _own_pld_supports(event):
        return not (_zero_noise(event) or _contains(event, _dp().NonPrivateDpEvent))
    return make_accountant(kind).supports(event)


def _resolve(kind: str, event: DpEvent) -> str:
    check_option(kind, "accountant", ACCOUNTANTS)
    if kind != "auto":
        return kind
    for candidate in ("pld", "rdp"):
        if _supports(candidate, event):
            return candidate
    raise InvalidParameterError(
        f"No accountant can account for this ledger ({_describe(event)}): the PLD accountant "
        "does not support zCDP or tree-aggregation events, the RDP accountant does not support "
        "ApproxDpEvent (delta > 0). Record these releases in separate ledgers and combine the "
        "results by basic composition."
    )


def _unsupported(kind: str, event: DpEvent) -> InvalidParameterError:
    return InvalidParameterError(
        f"The '{kind}' accountant cannot account for this ledger ({_describe(event)}). "
        "Use accountant='pld' for (epsilon, delta) events such as ApproxDpEvent and 'rdp' for "
        "zCDP events, or accountant='auto'."
    )


def _epsilon_delta_fns(event: DpEvent, kind: str) -> tuple[Callable[[float], float], Callable[[float], float]]:
    """(ε(δ), δ(ε)) of ``event`` under one accountant, without shortcuts."""
    if kind == "pld" and _own_pld_supports(event):
        pld = _pld_of(event)

        def eps_fn(d: float) -> float:
            with np.errstate(over="ignore", divide="ignore"):  # huge losses overflow e^loss harmlessly
                return float(pld.get_epsilon_for_delta(d))

        def delta_fn(e: float) -> float:
            with np.errstate(over="ignore", divide="ignore"):
                return float(pld.get_delta_for_epsilon(e))

        return eps_fn, delta_fn
    acc = make_accountant(kind)
    if not acc.supports(event):
        raise _unsupported(kind, event)
    acc.compose(event)
    return (lambda d: float(acc.get_epsilon(d)), lambda e: float(acc.get_delta(e)))


def epsilon_of(event: object, delta: float, accountant: str = "auto") -> float:
    """ε(δ) of one (possibly composed) event, exactly as the chosen accountant reports it (no
    Gaussian merging or exact shortcut; :meth:`Ledger.epsilon` adds those)."""
    delta = check_scalar(delta, "delta", low=0.0, high=1.0, closed="neither")
    return _epsilon_delta_fns(event, _resolve(accountant, event))[0](delta)


def delta_of(event: object, epsilon: float, accountant: str = "auto") -> float:
    """δ(ε) of one (possibly composed) event."""
    epsilon = check_scalar(epsilon, "epsilon", low=0.0)
    return _epsilon_delta_fns(event, _resolve(accountant, event))[1](epsilon)


def _describe(event: object) -> str:
    names = sorted({type(base).__name__ for base, _ in _flatten(event)})
    return "events: " + ", ".join(names) if names else type(event).__name__


def _flatten(event: DpEvent, count: int = 1) -> list[tuple[DpEvent, int]]:
    """``event`` as (base event, count) pairs: nested Composed/SelfComposed events unrolled."""
    if isinstance(event, _dp().ComposedDpEvent):
        return [pair for e in event.events for pair in _flatten(e, count)]
    if isinstance(event, _dp().SelfComposedDpEvent):
        return _flatten(event.event, count * int(event.count))
    return [(event, count)]


def _key(event: DpEvent) -> Hashable:
    """A hashable identity for grouping (some dp-accounting events hold lists)."""
    try:
        hash(event)
        return event
    except TypeError:
        return json.dumps(event_to_json(event), sort_keys=True)


def _repeats(events: Iterable[DpEvent]) -> list[tuple[DpEvent, int]]:
    """``events`` as (event, times) with consecutive repeats of one object counted once (a loop that
    appends the same event object per release: thousands of entries, one to examine)."""
    out: list[list[Any]] = []
    for event in events:
        if out and out[-1][0] is event:
            out[-1][1] += 1
        else:
            out.append([event, 1])
    return [(e, n) for e, n in out]


def group_events(events: Iterable[DpEvent], *, merge_gaussians: bool = False) -> DpEvent:
    """One ``ComposedDpEvent`` equivalent to composing ``events``: flattened, identical events
    grouped into ``SelfComposedDpEvent``s (first-seen order), ``NoOpDpEvent``s dropped, and with
    ``merge_gaussians`` every ``GaussianDpEvent`` merged into one with
    σ_eff = (Σ count/σ²)^(-1/2) (exact; see the module docstring)."""
    counts: dict[Hashable, int] = {}
    bases: dict[Hashable, DpEvent] = {}
    inv_var = 0.0
    gaussian_at: int | None = None
    for event, times in _repeats(events):
        for base, n in _flatten(event):
            if isinstance(base, _dp().NoOpDpEvent):
                continue
            if merge_gaussians and isinstance(base, _dp().GaussianDpEvent) and base.noise_multiplier > 0:
                for _ in range(times):      # one addition per event, in order: the same sum as unrolled
                    inv_var += n / float(base.noise_multiplier) ** 2
                if gaussian_at is None:
                    gaussian_at = len(bases)
                    bases["__gaussian__"] = base
                    counts["__gaussian__"] = 1
                continue
            k = _key(base)
            if k not in counts:
                bases[k] = base
                counts[k] = 0
            counts[k] += n * times
    grouped = []
    for k, base in bases.items():
        if k == "__gaussian__":
            grouped.append(_dp().GaussianDpEvent(1.0 / math.sqrt(inv_var)))
        else:
            grouped.append(base if counts[k] == 1 else _dp().SelfComposedDpEvent(base, counts[k]))
    return _dp().ComposedDpEvent(grouped)


def _pure_epsilon(event: DpEvent) -> float | None:
    """Σ count·ε_i (basic composition) when every event is pure DP (Laplace: ε = 1/multiplier;
    ApproxDpEvent with δ = 0), else None. Always a valid ε at any δ."""
    total = 0.0
    for base, n in _flatten(event):
        if isinstance(base, _dp().LaplaceDpEvent):
            total += n / float(base.noise_multiplier)
        elif isinstance(base, _approx_cls()) and base.delta == 0:
            total += n * float(base.epsilon)
        else:
            return None
    return total


_MAX_ATOMS = 20_000


def _approx_losses(others: object) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The exact privacy-loss distribution of a composition of :class:`ApproxDpEvent`s: (finite
    losses, their masses, mass at +∞), or None when ``others`` holds other events (or too many
    atoms). One (ε, δ) event's worst-case pair (Kairouz, Oh & Viswanath 2015) has loss +∞ with
    mass δ, +ε with mass (1−δ)e^ε/(1+e^ε) and −ε with mass (1−δ)/(1+e^ε); it is symmetric in the
    two neighbouring directions, and independent losses add."""
    losses: np.ndarray = np.zeros(1)
    probs: np.ndarray = np.ones(1)   # float64 (np.bincount with weights; its stub says intp)
    inf_mass = 0.0
    for base, n in _flatten(others):
        if isinstance(base, _dp().NoOpDpEvent):
            continue
        if not isinstance(base, _approx_cls()):
            return None
        eps, dlt = float(base.epsilon), float(base.delta)
        from scipy import special

        up = (1.0 - dlt) * special.expit(eps)
        down = (1.0 - dlt) * special.expit(-eps)
        for _ in range(int(n)):
            inf_mass = inf_mass + (1.0 - inf_mass) * dlt
            if eps == 0.0:
                probs = probs * (1.0 - dlt)
                continue
            losses = np.concatenate([losses + eps, losses - eps])
            probs = np.concatenate([probs * up, probs * down])
            losses, idx = np.unique(np.round(losses, 12), return_inverse=True)
            probs = np.bincount(idx, weights=probs)
            if losses.size > _MAX_ATOMS:
                return None
    return losses, probs, inf_mass


def _exact_delta_fn(event: DpEvent) -> tuple[float | None, Callable[[float], float]] | None:
    """For a grouped ledger that is Gaussian releases plus :class:`ApproxDpEvent`s only: (σ of the
    merged Gaussian when it is the only event, else None; the exact δ(ε)). None otherwise."""
    sigma, others = _split_gaussian(event)
    parts = _approx_losses(others)
    if parts is None:
        return None
    only_gaussian = sigma is not None and not any(
        not isinstance(base, _dp().NoOpDpEvent) for base, _ in _flatten(others))
    return (sigma if only_gaussian else None), _delta_fn(sigma, parts)


def _split_gaussian(event: DpEvent) -> tuple[float | None, object]:
    """(σ of the merged Gaussian or None, the other events) of :func:`group_events` output."""
    sigma, others = None, []
    for e in event.events:
        if isinstance(e, _dp().GaussianDpEvent) and sigma is None:
            sigma = float(e.noise_multiplier)
        else:
            others.append(e)
    return sigma, _dp().ComposedDpEvent(others)


# --------------------------------------------------------------------------- ledger
class Ledger:
    """An ordered record of every :class:`~dp_accounting.DpEvent` an algorithm released.

    ``epsilon(delta)`` composes them with the PLD (default where supported) or RDP accountant;
    identical events are grouped into one ``SelfComposedDpEvent`` first, so a ledger of 10⁴
    identical Gaussian releases costs one PLD self-composition.

    >>> from dp_accounting import GaussianDpEvent
    >>> led = Ledger([GaussianDpEvent(10.0)] * 100)
    >>> round(led.epsilon(1e-5, accountant="pld"), 2)
    4.38
    """

    def __init__(self, events: Iterable[DpEvent] = ()) -> None:
        self._events: list[object] = []
        self._declarations: list[NoiseDeclaration | None] = []
        #: what the fit's noise source drew (the release invariant, :mod:`privrl.privacy.draws`)
        self.draws = DrawLog()
        for e in events:
            self.append(e)

    # -- recording
    def append(self, event: DpEvent, label: str | None = None, *, noise: NoiseDeclaration | None = None) -> None:
        """Record ``event``; ``noise`` declares what its release drew (:mod:`privrl.privacy.draws`)."""
        if not isinstance(event, _dp().DpEvent):
            raise param_error("event", "Ledger.append", "a dp_accounting DpEvent", event)
        if noise is not None and not isinstance(noise, NoiseDeclaration):
            raise param_error("noise", "Ledger.append", "a NoiseDeclaration or None", noise)
        self._events.append(event)
        self._declarations.append(noise)

    @property
    def declarations(self) -> tuple[NoiseDeclaration | None, ...]:
        """The noise declaration of each event (None where none was given)."""
        return tuple(self._declarations)

    def extend(self, events: Iterable[object]) -> None:
        for e in events:
            self.append(e)

    @property
    def events(self) -> tuple[DpEvent, ...]:
        return tuple(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[DpEvent]:
        return iter(self._events)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ledger) and self._events == other._events

    def __repr__(self) -> str:
        return f"Ledger({len(self)} events)"

    # -- queries
    @property
    def is_empty(self) -> bool:
        return all(isinstance(e, _dp().NoOpDpEvent) for e, _ in _repeats(self._events))

    @property
    def is_non_private(self) -> bool:
        """True when some release was made without noise (ε = ∞)."""
        return any(_contains(e, _dp().NonPrivateDpEvent) or _zero_noise(e) for e, _ in _repeats(self._events))

    def leaves(self) -> list[tuple[DpEvent, int]]:
        """Every base release as (event, count): nested compositions unrolled, no-ops dropped."""
        return [(base, n) for event in self._events for base, n in _flatten(event)
                if not isinstance(base, _dp().NoOpDpEvent)]

    def pure_epsilon(self) -> float | None:
        """Σ count·ε_i (basic composition, exact for pure DP) when every release is pure DP
        (Laplace, ApproxDpEvent with δ = 0); None otherwise; 0 for an empty ledger."""
        if self.is_empty:
            return 0.0
        return _pure_epsilon(self.composed_event())

    def composed_event(self, *, merge_gaussians: bool = False) -> DpEvent:
        """All events as one ``ComposedDpEvent``: nested compositions flattened, identical events
        grouped, no-ops dropped; with ``merge_gaussians`` all Gaussian releases merged into one
        (exact, see the module docstring)."""
        return group_events(self._events, merge_gaussians=merge_gaussians)

    def epsilon(self, delta: float, accountant: str = "auto") -> float:
        """The ε at which every release so far is jointly (ε, δ)-DP.

        ``accountant`` is ``"pld"`` (tight numerical composition), ``"rdp"`` (Rényi DP, needed for
        zCDP events) or ``"auto"`` (PLD when it supports every event, else RDP). An empty ledger
        spends 0; a ledger with a noiseless release spends ∞. A ledger of Gaussian releases only
        is answered exactly under ``"pld"``/``"auto"`` (see the module docstring).

        At ``delta = 0`` the answer is the pure ε: Σ ε_i (basic composition, exact) when every
        release is pure DP, else ∞ (no finite ε holds at δ = 0 for a Gaussian, zCDP or
        approximate-DP release; the accountants agree), whatever ``accountant`` says.
        """
        delta = check_scalar(delta, "delta", owner="Ledger.epsilon", low=0.0, high=1.0, closed="left")
        check_option(accountant, "accountant", ACCOUNTANTS, owner="Ledger.epsilon")
        if self.is_empty:
            return 0.0
        if self.is_non_private:
            return math.inf
        event = self.composed_event(merge_gaussians=True)
        pure = _pure_epsilon(event)
        if delta == 0.0:
            return math.inf if pure is None else pure
        kind = _resolve(accountant, event)
        if kind == "pld":
            exact = _exact_delta_fn(event)
            if exact is None:
                eps = _epsilon_delta_fns(event, kind)[0](delta)
            elif exact[0] is not None:
                return gaussian_epsilon(exact[0], delta)
            else:
                eps = _epsilon_from_delta_fn(exact[1], delta)
        else:
            if pure is not None and not make_accountant(kind).supports(event):
                return pure  # e.g. RDP with a pure ApproxDpEvent: basic composition still holds
            eps = _epsilon_delta_fns(event, kind)[0](delta)
            if self._all_zcdp():
                rho = self.zcdp_rho()
                eps = min(eps, rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)))
        return eps if pure is None else min(eps, pure)

    def delta(self, epsilon: float, accountant: str = "auto") -> float:
        """The δ at which every release so far is jointly (ε, δ)-DP (exact for Gaussian-only
        ledgers under ``"pld"``/``"auto"``)."""
        epsilon = check_scalar(epsilon, "epsilon", owner="Ledger.delta", low=0.0)
        check_option(accountant, "accountant", ACCOUNTANTS, owner="Ledger.delta")
        if self.is_empty:
            return 0.0
        if self.is_non_private:
            return 1.0
        event = self.composed_event(merge_gaussians=True)
        kind = _resolve(accountant, event)
        pure = _pure_epsilon(event)
        if pure is not None and epsilon >= pure:
            return 0.0
        exact = _exact_delta_fn(event) if kind == "pld" else None
        if exact is not None:
            return exact[1](epsilon)
        return _epsilon_delta_fns(event, kind)[1](epsilon)

    def _all_zcdp(self) -> bool:
        try:
            self.zcdp_rho()
        except InvalidParameterError:
            return False
        return True

    def zcdp_rho(self) -> float:
        """Total ρ when every event is ρ-zCDP (ZCDp, Gaussian: ρ = 1/(2·multiplier²)); zCDP
        composes additively (Bun & Steinke 2016, Lemma 2.3). Raises ``InvalidParameterError``
        naming the first event that is not zCDP (e.g. Laplace, ApproxDpEvent)."""
        total = 0.0
        for e in self._events:
            total += _rho(e)
        return total

    # -- serialisation
    def to_json(self) -> str:
        return json.dumps({"format": "privrl.Ledger", "version": 1,
                           "events": [event_to_json(e) for e in self._events]})

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as exc:
            raise InvalidParameterError(f"Not a privrl ledger: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != "privrl.Ledger":
            raise InvalidParameterError("Not a privrl ledger: missing format marker.")
        return cls(event_from_json(e) for e in data.get("events", []))


def _contains(event: DpEvent, kind: type) -> bool:
    if isinstance(event, kind):
        return True
    if isinstance(event, _dp().SelfComposedDpEvent):
        return _contains(event.event, kind)
    if isinstance(event, _dp().ComposedDpEvent):
        return any(_contains(e, kind) for e in event.events)
    return False


def _zero_noise(event: DpEvent) -> bool:
    if isinstance(event, (_dp().GaussianDpEvent, _dp().LaplaceDpEvent)):
        return event.noise_multiplier == 0
    if isinstance(event, _approx_cls()):
        return math.isinf(event.epsilon) or event.delta >= 1
    if isinstance(event, _dp().ZCDpEvent):
        return math.isinf(event.rho)
    if isinstance(event, _dp().SelfComposedDpEvent):
        return _zero_noise(event.event)
    if isinstance(event, _dp().ComposedDpEvent):
        return any(_zero_noise(e) for e in event.events)
    return False


def _rho(event: DpEvent) -> float:
    if isinstance(event, _dp().NoOpDpEvent):
        return 0.0
    if isinstance(event, _dp().ZCDpEvent):
        return float(event.rho)
    if isinstance(event, _dp().GaussianDpEvent):
        return math.inf if event.noise_multiplier == 0 else 1.0 / (2.0 * event.noise_multiplier**2)
    if isinstance(event, _dp().SelfComposedDpEvent):
        return event.count * _rho(event.event)
    if isinstance(event, _dp().ComposedDpEvent):
        return sum(_rho(e) for e in event.events)
    raise InvalidParameterError(
        f"The ledger holds a {type(event).__name__}, which is not zCDP; use Ledger.epsilon(delta)."
    )


def compose_all(events: Sequence[object]) -> object:
    """One event for a sequence of events."""
    return group_events(events)
