"""The core's number rules (:mod:`g2cons_plugins.errors`) as pydantic annotated types, so that the adapters'
parameters are checked by the very rule the core applies: a bool is not a number (``kappa=True`` is refused, not
taken as 1.0), a string is not a number (``kappa="0.5"`` is refused, not parsed), NaN and infinities are refused,
and the error names the parameter.

pydantic's own ``float``/``int`` in lax mode (``validate_call``, model fields) coerce ``"0.5"`` and ``True``; each
type here runs the core's check first (a ``BeforeValidator``), so the value pydantic sees is already the core's
canonical ``float``/``int``. Bounds beyond the core rule's (``Field(le=...)``) may still be added by the caller.

This module needs pydantic (both adapters depend on it; the core itself does not import this module).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo

from ...errors import non_negative_float, non_negative_int, real, unit_interval

__all__ = ["NonNegativeFloat", "NonNegativeInt", "RealNumber", "Share"]


def core_rule(check: Callable[[str, Any], Any]) -> BeforeValidator:
    """A pydantic ``BeforeValidator`` that applies the core check ``check(name, value)`` (a function of
    :mod:`g2cons_plugins.errors`), naming the parameter (pydantic's field or argument name)."""

    def run(value: Any, info: ValidationInfo) -> Any:
        return check(info.field_name or "value", value)

    return BeforeValidator(run)


RealNumber = Annotated[float, core_rule(real)]
"""A finite real (int, float, numpy scalar; not bool, not str)."""
Share = Annotated[float, core_rule(unit_interval)]
"""A finite real in [0, 1] (kappa, lambda, ...)."""
NonNegativeFloat = Annotated[float, core_rule(non_negative_float)]
"""A finite real >= 0 (a price, ...)."""
NonNegativeInt = Annotated[int, core_rule(non_negative_int)]
"""An integer >= 0 (``4000.0`` is taken as 4000; ``True`` and ``"4000"`` are refused)."""
