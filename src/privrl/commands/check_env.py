"""``privrl check-env ENV_ID``: Gymnasium's environment checker, then privrl's model checks
(:func:`privrl.envs.checks.check_model`) on the exact model behind the environment."""

from __future__ import annotations

import argparse
import sys
import warnings

from privrl.commands import die, one_line
from privrl.fitters import make_env

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from privrl.envs.checks import check_model

    env = make_env(args.env_id, option="ENV_ID")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_env(env.unwrapped, skip_render_check=True)
            except (AssertionError, gymnasium.error.Error) as exc:
                return die("privrl check-env", f"{args.env_id} failed Gymnasium's checker: {exc}")
        for w in caught:
            print(f"warning: {one_line(w.message)}", file=sys.stderr)
        print(f"{args.env_id}: Gymnasium env_checker passed ({len(caught)} warning(s))")
        model = getattr(env.unwrapped, "model", None)
        if model is None and isinstance(getattr(env.unwrapped, "P", None), dict):
            from privrl.envs.tabular import from_gymnasium_toy_text

            # a toy-text table: check the exact model privrl builds from it (the discount only
            # selects the form; the checks do not depend on it)
            model = from_gymnasium_toy_text(env, gamma=0.99)
            print(f"{args.env_id}: toy-text model built from unwrapped.P")
        if model is not None:
            ran = check_model(model)
            print(f"{args.env_id}: privrl model checks passed ({', '.join(ran) or 'none applicable'})")
        else:
            print(f"{args.env_id}: no .model attribute; privrl model checks skipped")
    finally:
        env.close()
    return 0
