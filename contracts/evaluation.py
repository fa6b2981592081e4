"""Evaluation contracts: which outcome kinds are authoritative for a task type.

One YAML file per contract under ``contracts/evaluation/`` with ``task_type`` (``"*"`` for
the default) and ``authoritative_kinds`` (a subset of evaluator, human, self_report,
heuristic).
"""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple

import yaml

from contracts.tables import EVALUATOR_KINDS


class EvaluationContract(NamedTuple):
    """The contract of one task type (``"*"``: every task type without its own)."""

    task_type: str
    authoritative_kinds: tuple[str, ...]
    source: str


def load_evaluation_contracts() -> list[EvaluationContract]:
    """Every contract shipped under ``contracts/evaluation``, sorted by task type.

    Raises:
        ValueError: a file without ``task_type``, with an unknown kind, a task type given
            twice, or no default (``"*"``) contract.
    """
    found: dict[str, EvaluationContract] = {}
    folder = resources.files("contracts") / "evaluation"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith((".yaml", ".yml")):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
        task_type = data.get("task_type")
        kinds = tuple(data.get("authoritative_kinds", ()))
        if not task_type or not kinds or any(k not in EVALUATOR_KINDS for k in kinds):
            raise ValueError(f"{entry.name}: needs task_type and authoritative_kinds from {EVALUATOR_KINDS}")
        if task_type in found:
            raise ValueError(f"{entry.name}: task type {task_type!r} already has a contract ({found[task_type].source})")
        found[task_type] = EvaluationContract(task_type, kinds, entry.name)
    if "*" not in found:
        raise ValueError("no default evaluation contract (task_type: '*')")
    return sorted(found.values())
