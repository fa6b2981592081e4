"""Figures in words: numbers as the reasons print them, to their significant digits.

A float rounded to 3 significant digits is still a binary float (``9.4e-26`` is stored as
``9.400000000000001e-26``), so printing the rounded value prints its noise. :func:`figures`
formats the decimal digits instead: ``9.4e-26``, ``0.0123``, ``2,475``, ``+2,000``; thousands
separated, exponent notation only below ``1e-4`` and from ``1e15`` on, trailing zeros dropped.
Vectorised over NumPy arrays (one ``str.format`` per element, no Python arithmetic per row).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

__all__ = ["figures", "figure", "figure_column", "truncated"]

UNDEFINED = "undefined"
"""How a missing or non-finite figure reads."""


def figure(value: float | None, digits: int = 3, signed: bool = False) -> str:
    """One figure to ``digits`` significant digits (see the module docstring).

    Examples:
        >>> figure(9.400000000000001e-26), figure(2475.3, 4, signed=True), figure(0.012345), figure(-0.0)
        ('9.4e-26', '+2,475', '0.0123', '0')
        >>> figure(1234567.0, 4), figure(float("nan")), figure(5e-05, 2), figure(2000.0, 4, signed=True)
        ('1,235,000', 'undefined', '5e-5', '+2,000')
    """
    if value is None or not math.isfinite(value):
        return UNDEFINED
    if value == 0:
        return "0"
    magnitude = abs(value)
    sign = "+" if signed and value > 0 else ""
    if magnitude < 1e-4 or magnitude >= 1e15:
        mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        return f"{sign}{mantissa}e{int(exponent)}"
    exponent = math.floor(math.log10(magnitude))
    rounded = round(value, digits - 1 - exponent)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent:  # 9.996 -> 10.0: one digit fewer
        exponent += 1
        rounded = round(value, digits - 1 - exponent)
    decimals = max(0, digits - 1 - exponent)
    text = f"{rounded:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return sign + text


def figures(values, digits: int = 3, signed: bool = False) -> np.ndarray:
    """:func:`figure` of every element (object array of strings, the input's shape)."""
    arr = np.asarray(values, dtype=float)
    out = np.empty(arr.shape, dtype=object)
    flat, target = arr.ravel(), out.ravel()
    for i, v in enumerate(flat.tolist()):
        target[i] = figure(v, digits, signed)
    return out


def figure_column(values, name: str, digits: int = 3, signed: bool = False) -> pl.Series:
    """:func:`figures` as a polars String series named ``name``."""
    return pl.Series(name, figures(values, digits, signed).tolist(), dtype=pl.String)


def truncated(values, decimals: int = 2) -> np.ndarray:
    """Values cut (toward zero) to ``decimals`` places, so a figure read beside a threshold never
    crosses it in print (6.996 days reads 6.99, not 7.00, beside "fewer than 7 days")."""
    arr = np.asarray(values, dtype=float)
    scale = 10.0**decimals
    with np.errstate(invalid="ignore"):
        return np.trunc(arr * scale) / scale
