"""Smoothed-sensitivity weighted least squares on per-state statistics (Balle, Gomrokchi & Precup,
ICML 2016): a shared layer below the families.

* :mod:`~privrl.least_squares.statistics` — first-visit statistics of a batch (eq. 4): the signature
  ⟨X⟩ (visit counts) and the mean first-visit returns F_X;
* :mod:`~privrl.least_squares.smooth_sensitivity` — the smooth bounds ψ^w, ψ^λ and the printed
  constants of Lemma 1 / Lemma 14;
* :mod:`~privrl.least_squares.calibration` — certified (α, β): paper / sound / tight;
* :mod:`~privrl.least_squares.diagnostics` — utility diagnostics of a release from public
  quantities (noise-dominated, no better than zero, shrunk);
* :mod:`~privrl.least_squares.mechanism` — the solvers (θ^w_X, θ^λ_X), the release steps
  ``DPLSWMechanism`` / ``DPLSLMechanism`` (θ_X + N(0, σ_X² I_d), drawn through the release seam)
  and their warnings (``warn_if_overspent``, ``release_utility`` / ``warn_utility``).

The policy-evaluation family's estimators (DP-LSW, DP-LSL) and Wang & Hegde's Balle-style baseline
(:mod:`privrl.q_learning.balle`: DP-LSW regressions inside policy iteration) both stand on it; it
knows no family.
"""
