"""Exploration budgets per organization, read from YAML shipped inside the package.

The packaged file (``zcl_assets/funnel/budgets.yaml``) holds the documented defaults; a file
of the same shape given by path replaces it (asset config ``budgets_file``). Keys and their
defaults are the fields of :class:`BudgetPolicy`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from importlib import resources
from pathlib import Path

import polars as pl
import yaml


@dataclass(frozen=True)
class BudgetPolicy:
    """The budget and exploration rate of one organization.

    Attributes:
        launch_cap_per_day: launches per UTC day (charged at ``launched``), >= 0.
        attempt_cap_per_day: admissions per UTC day (charged at ``admitted``), >= 0.
        eligible_arms: arms an admission may pick; empty: the arms attempted up to that day.
        stall_after_hours: hours after which an admission still ``admitted`` or ``consumed``
            is stalled, > 0.
        exploration_base_rate: share of sessions explored with no uncertainty, in [0, 1].
        exploration_uncertainty_multiplier: weight of the uncertainty bonus, >= 0.
        exploration_cap: largest exploration probability, in [base rate, 1].
    """

    launch_cap_per_day: int = 4
    attempt_cap_per_day: int = 4
    eligible_arms: tuple[str, ...] = ()
    stall_after_hours: float = 1.0
    exploration_base_rate: float = 0.2
    exploration_uncertainty_multiplier: float = 0.5
    exploration_cap: float = 0.4

    def __post_init__(self) -> None:
        for name in ("launch_cap_per_day", "attempt_cap_per_day"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
        if not self.stall_after_hours > 0:
            raise ValueError(f"stall_after_hours must be > 0, got {self.stall_after_hours!r}")
        if not 0 <= self.exploration_base_rate <= self.exploration_cap <= 1:
            raise ValueError(
                "need 0 <= exploration_base_rate <= exploration_cap <= 1, got "
                f"{self.exploration_base_rate!r} and {self.exploration_cap!r}"
            )
        if not self.exploration_uncertainty_multiplier >= 0:
            raise ValueError(f"exploration_uncertainty_multiplier must be >= 0, got {self.exploration_uncertainty_multiplier!r}")


@dataclass(frozen=True)
class Budgets:
    """Defaults plus per-organization overrides, and the file they came from."""

    defaults: BudgetPolicy
    organizations: dict[str, BudgetPolicy]
    source: str

    def policy(self, org_id: str) -> BudgetPolicy:
        """The policy of ``org_id`` (the defaults when it has no entry)."""
        return self.organizations.get(org_id, self.defaults)

    def caps_frame(self) -> pl.DataFrame:
        """One row per configured organization: org_id, launch_cap, attempt_cap, stall_after_hours."""
        orgs = sorted(self.organizations)
        return pl.DataFrame(
            {
                "org_id": orgs,
                "launch_cap": [self.organizations[o].launch_cap_per_day for o in orgs],
                "attempt_cap": [self.organizations[o].attempt_cap_per_day for o in orgs],
                "stall_after_hours": [float(self.organizations[o].stall_after_hours) for o in orgs],
            },
            schema={"org_id": pl.String, "launch_cap": pl.Int64, "attempt_cap": pl.Int64, "stall_after_hours": pl.Float64},
        )

    def eligible_arms_frame(self) -> pl.DataFrame:
        """(org_id, arm) for every organization with configured eligible arms."""
        rows = [(o, arm) for o, p in sorted(self.organizations.items()) for arm in p.eligible_arms]
        return pl.DataFrame(rows, schema={"org_id": pl.String, "arm": pl.String}, orient="row")


_KEYS = {f.name for f in fields(BudgetPolicy)}


def _policy(data: object, base: BudgetPolicy, where: str) -> BudgetPolicy:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of budget keys, got {type(data).__name__}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; known: {sorted(_KEYS)}")
    values = dict(data)
    if "eligible_arms" in values:
        values["eligible_arms"] = tuple(str(a) for a in (values["eligible_arms"] or ()))
    try:
        return replace(base, **values)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc


def load_budgets(path: str | Path | None = None) -> Budgets:
    """Read budgets from ``path``, or from the file shipped in the package when ``path`` is empty.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: not YAML, not a mapping, unknown keys, a negative cap, rates out of order,
            eligible arms in ``defaults`` (they are specific to an organization).
    """
    if path:
        source = Path(path)
        text = source.read_text(encoding="utf-8")
    else:
        node = resources.files(__package__) / "budgets.yaml"
        source, text = Path(str(node)), node.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{source}: not YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of defaults and organizations, got {type(data).__name__}")
    unknown = sorted(set(data) - {"defaults", "organizations"})
    if unknown:
        raise ValueError(f"{source}: unknown sections {unknown}; expected defaults and organizations")
    defaults = _policy(data.get("defaults") or {}, BudgetPolicy(), f"{source}: defaults")
    if defaults.eligible_arms:
        raise ValueError(f"{source}: defaults: eligible_arms can only be configured per organization")
    entries = data.get("organizations") or {}
    if not isinstance(entries, dict):
        raise ValueError(f"{source}: organizations: expected a mapping of organization ids, got {type(entries).__name__}")
    orgs = {str(org): _policy(entry or {}, defaults, f"{source}: organizations.{org}") for org, entry in entries.items()}
    return Budgets(defaults=defaults, organizations=orgs, source=str(source))
