"""The families' estimators in the flat API: ``name -> the family package that exports it``.

Generated from the families' records (:func:`privrl.family.public_api` over
:func:`privrl.registry.families`) by ``PYTHONPATH=tests python tests/test_families.py --update``;
``tests/test_families.py`` checks that it is current. It is a file rather than a computation so
that ``import privrl`` imports no family package.
"""

FAMILY_ESTIMATORS: dict[str, str] = {
    "LSW": "privrl.policy_evaluation",
    "LSL": "privrl.policy_evaluation",
    "DPLSW": "privrl.policy_evaluation",
    "DPLSL": "privrl.policy_evaluation",
    "MonteCarlo": "privrl.policy_evaluation",
    "DPMonteCarlo": "privrl.policy_evaluation",
    "APVI": "privrl.offline",
    "DPAPVI": "privrl.offline",
    "PEVI": "privrl.offline",
    "VAPVI": "privrl.offline",
    "DPVAPVI": "privrl.offline",
    "DPOneStep": "privrl.offline",
    "LinOptVI": "privrl.linear_mixture",
    "LinOptPO": "privrl.linear_mixture",
    "DPQLearning": "privrl.q_learning",
    "QLearning": "privrl.q_learning",
    "InputPerturbationQLearning": "privrl.q_learning",
    "DPSGDQLearning": "privrl.q_learning",
    "BalleQLearning": "privrl.q_learning",
    "UCBVI": "privrl.tabular_online",
    "DPUCBVI": "privrl.tabular_online",
    "PrivateUCBVI": "privrl.tabular_online",
    "PrivateUCBPO": "privrl.tabular_online",
    "BC": "privrl.deep_offline",
    "DPBC": "privrl.deep_offline",
    "IQL": "privrl.deep_offline",
    "DPIQL": "privrl.deep_offline",
    "TD3BC": "privrl.deep_offline",
    "DPTD3BC": "privrl.deep_offline",
}
