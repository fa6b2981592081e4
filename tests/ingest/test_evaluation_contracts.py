"""Loading the evaluation contracts from a contract folder other than the shipped one.

Only ``default.yaml`` ships, so the loader's handling of several files (order, ``.yml``,
duplicates, a missing default, the file encoding) is tried on a temporary folder put in
place of ``contracts/evaluation``.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from contracts import evaluation
from contracts.evaluation import EvaluationContract, load_evaluation_contracts
from contracts.tables import EVALUATOR_KINDS


class _LatinLocalePath(type(Path())):
    """A file whose text, read without an explicit encoding, is decoded as on a machine whose
    locale encoding is Latin-1 (as ``open`` does there)."""

    def read_text(self, encoding=None, errors=None):
        return self.read_bytes().decode(encoding or "latin-1")


def _use_folder(monkeypatch, folder: Path) -> None:
    contracts_root = folder.parent
    monkeypatch.setattr(evaluation, "resources",
                        SimpleNamespace(files=lambda package: _LatinLocalePath(contracts_root)))


def _write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(text.encode("utf-8"))


def test_several_contracts_load_sorted_by_task_type_with_yml_files_and_utf8_names(tmp_path, monkeypatch):
    folder = tmp_path / "evaluation"
    _write(folder, "default.yaml", 'task_type: "*"\nauthoritative_kinds: [evaluator, human]\n')
    _write(folder, "a_review.yml", "task_type: révision\nauthoritative_kinds: [human]\n")
    _write(folder, "bugfix.yaml", "task_type: bugfix\nauthoritative_kinds: [evaluator]\n")
    _write(folder, "README.md", "not a contract")  # read first (it sorts first) and passed over
    _write(folder, "notes.txt", "not a contract")
    _use_folder(monkeypatch, folder)
    assert load_evaluation_contracts() == [
        EvaluationContract("*", ("evaluator", "human"), "default.yaml"),
        EvaluationContract("bugfix", ("evaluator",), "bugfix.yaml"),
        # the task type is read as UTF-8 whatever the machine's locale (here Latin-1)
        EvaluationContract("révision", ("human",), "a_review.yml"),
    ]


def test_a_task_type_given_twice_names_the_file_read_first(tmp_path, monkeypatch):
    folder = tmp_path / "evaluation"
    _write(folder, "default.yaml", 'task_type: "*"\nauthoritative_kinds: [evaluator]\n')
    # files are read in name order: b_second.yaml, then c_third.yaml repeats its task type
    _write(folder, "c_third.yaml", "task_type: bugfix\nauthoritative_kinds: [human]\n")
    _write(folder, "b_second.yaml", "task_type: bugfix\nauthoritative_kinds: [evaluator]\n")
    _use_folder(monkeypatch, folder)
    with pytest.raises(ValueError, match=r"^c_third.yaml: task type 'bugfix' already has a contract \(b_second.yaml\)$"):
        load_evaluation_contracts()


@pytest.mark.parametrize("text", [
    "authoritative_kinds: [human]\n",
    "task_type: bugfix\n",
    "task_type: bugfix\nauthoritative_kinds: [oracle]\n",
    "task_type: bugfix\nauthoritative_kinds: [human, oracle]\n",
    "",
])
def test_a_contract_without_task_type_or_with_an_unknown_kind_is_refused(tmp_path, monkeypatch, text):
    folder = tmp_path / "evaluation"
    _write(folder, "default.yaml", 'task_type: "*"\nauthoritative_kinds: [evaluator]\n')
    _write(folder, "bad.yaml", text)
    _use_folder(monkeypatch, folder)
    message = f"bad.yaml: needs task_type and authoritative_kinds from {EVALUATOR_KINDS}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_evaluation_contracts()


def test_no_default_contract_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "evaluation"
    _write(folder, "bugfix.yaml", "task_type: bugfix\nauthoritative_kinds: [evaluator]\n")
    _use_folder(monkeypatch, folder)
    with pytest.raises(ValueError, match=r"^no default evaluation contract \(task_type: .\*.\)$"):
        load_evaluation_contracts()
