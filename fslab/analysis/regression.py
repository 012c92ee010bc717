"""Study S2's regression view: how much of a metric do (level, workload) explain?

Linear regression, a decision tree and a random forest on one-hot (level, workload),
each scored by R² on held-out rows (a seeded 25% split). With categorical inputs only,
R² near the cell-means ceiling says the levels and workloads explain the metric; the
models differ only in how they can combine the two.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np
import pandas as pd

from fslab.system import forked

MODELS = ("linear", "decision tree", "random forest")
MIN_ROWS = 12          # below this a 25% hold-out has too few rows to score
MAX_ROWS = 1000        # larger groups are subsampled (seeded): R² barely moves, fits much faster


def regression_in_background(data: pd.DataFrame, keys: list[str],
                             seed: int = 0) -> Callable[[], pd.DataFrame]:
    """regression_view, started now in a forked child on a multi-core machine: the fits
    are a third of a large report's analysis and need nothing from the pairwise tests.
    Call the result to collect the table."""
    run = forked.start if forked.worth_it("analysis", len(data)) else forked.now
    return run(regression_view, data, keys, seed)


def regression_view(data: pd.DataFrame, keys: list[str], seed: int = 0) -> pd.DataFrame:
    """One row per (keys without case/params, metric) and model: held-out R², rows used.

    `data` has the engine's columns (level, value, case, params ...); the workload is
    case + params, so the model sees what S2 called the fio job.
    """
    from sklearn.model_selection import train_test_split

    by = [k for k in keys if k not in ("case", "params")]
    rows: list[dict[str, Any]] = []
    for key, g in data.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        base = dict(zip(by, key))
        if len(g) > MAX_ROWS:
            g = g.sample(MAX_ROWS, random_state=seed)
        workload = g["case"].astype(str) + " " + g["params"].astype(str)
        X = pd.get_dummies(pd.DataFrame({"level": g["level"], "workload": workload}),
                           dtype=float).to_numpy()
        y = g["value"].to_numpy(dtype=float)
        if len(y) < MIN_ROWS or g["level"].nunique() < 2 or np.ptp(y) == 0:
            rows.extend({**base, "model": m, "r2_heldout": math.nan, "rows": len(y),
                         "note": "too few rows or levels, or a constant metric"} for m in MODELS)
            continue
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=seed)
        for name in MODELS:
            model = _model(name, seed).fit(X_tr, y_tr)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # R² of a constant test set is undefined
                r2 = float(model.score(X_te, y_te))
            rows.append({**base, "model": name, "r2_heldout": r2, "rows": len(y),
                         "note": f"a seeded sample of {MAX_ROWS} rows" if len(y) == MAX_ROWS else ""})
    return pd.DataFrame(rows)


def _model(name: str, seed: int) -> Any:          # an sklearn regressor
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.tree import DecisionTreeRegressor
    if name == "linear":
        return LinearRegression()
    if name == "decision tree":
        return DecisionTreeRegressor(random_state=seed)
    return RandomForestRegressor(n_estimators=25, random_state=seed, n_jobs=1)
