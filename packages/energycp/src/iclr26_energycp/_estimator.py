"""scikit-learn's estimator contract without importing scikit-learn: ``get_params``, ``set_params``, a repr.

The parameters are the arguments of ``__init__``, stored unchanged as attributes of the same name (so
``sklearn.base.clone`` works). A parameter whose value has ``get_params`` is nested: ``name__sub``.
scikit-learn's ``BaseEstimator`` is not the base class because the core must import numpy only; these
three methods are all that ``clone``, ``GridSearchCV`` and ``sklearn.utils.estimator_checks`` need of it.
"""
from __future__ import annotations

import inspect
from typing import Any


class ParamsMixin:
    """``get_params(deep)``, ``set_params(**params)`` and a repr of the non-default parameters."""

    @classmethod
    def _param_defaults(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {k: p.default for k, p in sig.parameters.items() if k != "self"}

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments by name; ``deep`` adds ``<name>__<sub>`` for values with ``get_params``."""
        params = {k: getattr(self, k) for k in self._param_defaults()}
        if deep:
            for k, v in list(params.items()):
                if hasattr(v, "get_params") and not isinstance(v, type):
                    params.update({f"{k}__{sub}": value for sub, value in v.get_params().items()})
        return params

    def set_params(self, **params: Any):
        """Sets constructor arguments by name (``<name>__<sub>`` reaches a nested object); returns ``self``.

        Raises:
            ValueError: an unknown parameter name.
        """
        names = tuple(self._param_defaults())
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            head, sep, rest = key.partition("__")
            if head not in names or (sep and not hasattr(getattr(self, head), "set_params")):
                raise ValueError(f"{key}: expected a parameter of {type(self).__name__} {names}, got {key!r}")
            if sep:
                nested.setdefault(head, {})[rest] = value
            else:
                setattr(self, key, value)
        for head, sub in nested.items():
            getattr(self, head).set_params(**sub)
        return self

    def __repr__(self) -> str:
        defaults = self._param_defaults()
        changed = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items()
                   if not (isinstance(v, type(defaults[k])) and v == defaults[k])]
        return f"{type(self).__name__}({', '.join(changed)})"
