"""Mutation testing: how many planted bugs the test suite catches, per folder.

Two kinds of mutant, one report:

- Python (``zcl_assets/stats``, ``zcl_assets/analysis``, ``contracts``): mutmut 3 (configured
  in ``[tool.mutmut]`` of ``pyproject.toml``) makes every small change its operators know
  (an operator swapped, a constant moved by one, an argument dropped, a string altered) in
  every function of those folders. It runs the suite once to learn which tests call which
  function, then runs each mutant in a forked process against only those tests.
- SQL (``sql/``): the planted changes listed in ``benchmarks/planted_bugs.py`` (a join key
  flipped, a filter dropped, ``<`` made ``<=``, a rule left out), applied one at a time to a
  copy of the file; each runs the tests named beside it (fastest first, stopping at the first
  failure).
- Wiring (``--folders wiring``, reported apart from the four folders): the bug each kind of
  varied test data exists to catch (``WIRING_BUGS`` there), each run against the synthetic
  end-to-end test alone.

A mutant is killed when a test fails (a timeout counts as killed: the change was noticed;
timeouts are also counted apart). Equivalent mutants (no test can tell them apart from the
original) are not made where their line carries ``# pragma: no mutate`` (in ``zcl_assets/stats``
and ``zcl_assets/analysis``; the reason of each was recorded in the commit that marked it);
those in other folders are listed in ``benchmarks/equivalent_mutants.json`` with their change
and reason, and a survivor matching one is reported as equivalent: the score is printed
raw (killed / run) and beside it without them. Property tests run without Hypothesis's shrink
phase (profile ``mutation`` of ``tests/conftest.py``, which also orders a mutant's tests
cheapest level first): a mutant is killed by the first failing example.
Everything runs in a scratch copy of the project (``data/mutation/project``) so the working
tree is never changed; the shared data folder (``../shared/data``) is passed to the copy's
tests through ``ZCL_SHARED_DATA``. The figures and the surviving mutants (with their diffs)
are printed and written to ``data/mutation/report.json`` and ``data/mutation/report.md``.

Run: ``make mutation`` or ``python benchmarks/mutation.py [--folders stats analysis contracts
sql wiring] [--sample N --seed S] [--max-children N]`` (default: every mutant of the four
folders). It takes tens of minutes on 2 cores (``docs/testing.md``); it is not part of
``make test``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from benchmarks.planted_bugs import SQL_MUTANTS, WIRING_BUGS, PlantedChange  # noqa: E402

PYTHON_FOLDERS = {"stats": "zcl_assets/stats", "analysis": "zcl_assets/analysis", "contracts": "contracts"}
PLANTED = {"sql": SQL_MUTANTS, "wiring": WIRING_BUGS}
ALL_FOLDERS = (*PYTHON_FOLDERS, *PLANTED)
DEFAULT_FOLDERS = (*PYTHON_FOLDERS, "sql")
KILLED = {"killed", "timeout"}

EQUIVALENTS = PROJECT / "benchmarks" / "equivalent_mutants.json"
"""Mutants no test can tell apart from the original, in lines that cannot carry a ``# pragma: no
mutate`` (files of other folders): each with its function, its change (the diff lines of
``mutmut show``) and why. Equivalents in ``zcl_assets/stats`` and ``zcl_assets/analysis`` are
marked on their line instead."""


def copy_project(dest: Path) -> None:
    """Copy the project's tracked and untracked, not ignored files into ``dest`` (replaced)."""
    if dest.exists():
        shutil.rmtree(dest)
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=PROJECT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = PROJECT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def test_environment(copy: Path) -> dict[str, str]:
    """Environment of the copy's test runs: its own packages first, the shared data folder."""
    env = dict(os.environ)
    env.pop("CI", None)  # a missing shared file skips the test rather than failing the baseline
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), env.get("PYTHONPATH")]))
    env["ZCL_SHARED_DATA"] = str(PROJECT.parent / "shared" / "data")
    env["ZCL_HYPOTHESIS_PROFILE"] = "mutation"  # no shrinking: the first failing example kills
    env.pop("ZCL_LANDING_DIR", None)
    env.pop("ZCL_WAREHOUSE", None)
    return env


def folder_of(mutant: str) -> str | None:
    """The reported folder of a mutmut mutant name such as ``zcl_assets.stats.srm.x_f__mutmut_3``."""
    for folder, path in PYTHON_FOLDERS.items():
        if mutant.startswith(path.replace("/", ".") + "."):
            return folder
    return None


# A first run of the mutants of one small function makes mutmut generate every mutant and
# record which tests call which function; the sample is drawn from the names it lists then.
SEED_MUTANTS = "zcl_assets.stats.multiplicity.x_alpha_slot__mutmut_*"


def sample_mutants(copy: Path, folders: list[str], size: int, seed: int, max_children: int, log: Path,
                   resume: bool = False) -> dict:
    """Generate every mutant; return ``{"all": {folder: count}, "sample": [names]}``, a seeded
    random sample of ``size`` mutants per folder (all of a folder's mutants when it has fewer).
    ``resume``: the mutants of an earlier run in ``copy`` are kept."""
    if not (resume and (copy / "mutants").exists()):
        with log.open("w") as out:
            subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), SEED_MUTANTS],
                           cwd=copy, env=test_environment(copy), stdout=out, stderr=subprocess.STDOUT, check=True)
    names = sorted(mutmut_results(copy))
    rng = random.Random(seed)
    counts, chosen = {}, []
    for folder in folders:
        mine = sorted(n for n in names if folder_of(n) == folder)
        counts[folder] = len(mine)
        chosen += rng.sample(mine, min(size, len(mine)))
    return {"all": counts, "sample": chosen}


def mutmut_results(copy: Path) -> dict[str, str]:
    """Status of every mutant in ``copy`` (``not checked`` before it ran)."""
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"],
                             cwd=copy, env=test_environment(copy), capture_output=True, text=True, check=True).stdout
    return {m[1]: m[2].strip() for m in re.finditer(r"(?m)^\s*(\S+): (.+)$", listing)}


def run_python_mutants(copy: Path, folders: list[str], max_children: int, log: Path,
                       names: list[str] | None = None, run: bool = True, rerun: bool = False) -> list[dict]:
    """Run mutmut in ``copy`` (on ``names`` only, if given, and of those only the ones not
    checked yet; ``run=False``: nothing, the results so far are read); return one record per
    mutant of ``folders`` that has run: name, folder, status, and the diff of a survivor."""
    env = test_environment(copy)
    todo = names
    if names:
        status = mutmut_results(copy)
        # a timeout is run again: a changed timeout setting makes mutmut forget it
        todo = [n for n in names if rerun or status.get(n, "not checked") in ("not checked", "timeout")]
    if run and (todo or not names):
        with log.open("a") as out:
            subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *(todo or [])],
                           cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT, check=True)
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"],
                             cwd=copy, env=env, capture_output=True, text=True, check=True).stdout
    wanted = set(names) if names else None
    records = []
    for line in listing.splitlines():
        match = re.fullmatch(r"\s*(\S+): (.+)", line)
        if not match or folder_of(match[1]) not in folders or (wanted is not None and match[1] not in wanted):
            continue
        if match[2].strip() == "not checked":  # not run (yet): an interrupted run reports what ran
            continue
        records.append({"name": match[1], "folder": folder_of(match[1]), "status": match[2].strip()})
    for record in records:
        if record["status"] not in KILLED:
            shown = subprocess.run([sys.executable, "-m", "mutmut", "show", record["name"]],
                                   cwd=copy, env=env, capture_output=True, text=True).stdout
            record["diff"] = "\n".join(line for line in shown.splitlines()
                                       if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return records


def wilson(killed: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson 95% interval of a proportion (Wilson 1927), for a sampled score."""
    if n == 0:
        return float("nan"), float("nan")
    p = killed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def apply_change(text: str, change: PlantedChange) -> str:
    """``text`` with the planted change made; raises ``ValueError`` unless it matches once."""
    count = text.count(change.find)
    if count != 1:
        raise ValueError(f"{change.name}: the text to change occurs {count} times in {change.file}, not once")
    return text.replace(change.find, change.replace)


def run_planted(copy: Path, folder: str, log: Path, only: list[str] | None = None) -> list[dict]:
    """Apply each planted change of ``folder`` in ``copy`` alone, run its tests, restore the file.

    A kill counts only when the test that failed passes on the unchanged copy: the failing
    tests are run once more at the end, unchanged (cheaper than running every test of the
    groups first, since most mutants are killed by the same few tests)."""
    env = test_environment(copy)
    records = []
    with log.open("w") as out:
        for change in PLANTED[folder]:
            if only and change.name not in only:
                continue
            path = copy / change.file
            original = path.read_text()
            path.write_text(apply_change(original, change))
            started = time.perf_counter()
            try:
                run = subprocess.run(
                    [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", "-p", "no:randomly",
                     *change.tests],
                    cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                )
            finally:
                path.write_text(original)
            out.write(f"===== {change.name}\n{run.stdout}\n")
            out.flush()
            status = {0: "survived", 1: "killed"}.get(run.returncode, f"error (pytest exit {run.returncode})")
            seconds = time.perf_counter() - started
            killer = re.findall(r"(?m)^(?:FAILED|ERROR) (\S+)", run.stdout)
            print(f"  {folder} {change.name}: {status} ({seconds:.0f} s){' by ' + killer[0] if killer else ''}",
                  flush=True)
            records.append({"name": change.name, "folder": folder, "status": status, "seconds": round(seconds, 1),
                            "killed_by": killer[0] if killer else None,
                            "diff": f"{change.file}: {change.find!r} -> {change.replace!r}", "why": change.why})
        killers = sorted({r["killed_by"] for r in records if r["status"] == "killed" and r["killed_by"]})
        unnamed = [r["name"] for r in records if r["status"] == "killed" and not r["killed_by"]]
        for r in records:
            if r["name"] in unnamed:
                r["status"] = "error (no failing test named)"
        if killers:
            check = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *killers],
                                   cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out.write(f"===== the killing tests on the unchanged copy\n{check.stdout}\n")
            failing = set(re.findall(r"(?m)^(?:FAILED|ERROR) (\S+)", check.stdout))
            if check.returncode not in (0, 1):
                failing = set(killers)
            for r in records:
                if r["status"] == "killed" and r["killed_by"] in failing:
                    r["status"] = "error (its test fails unchanged)"
            print(f"  the {len(killers)} killing tests on the unchanged copy: "
                  f"{'all pass' if not failing else 'failing: ' + ', '.join(sorted(failing))}", flush=True)
    return records


def check_applicable(copy: Path, folder: str) -> None:
    """Every planted change of ``folder`` must find its text once (``apply_change`` raises)."""
    for change in PLANTED[folder]:
        apply_change((copy / change.file).read_text(), change)


def function_of(mutant: str) -> str:
    """The mutated function of a mutant's name (``module.x_function`` without ``__mutmut_N``)."""
    return mutant.rsplit("__mutmut_", 1)[0]


def load_equivalents(copy: Path) -> dict[tuple[str, str], str]:
    """``(function, change) -> why`` of the listed equivalents; raises ``ValueError`` naming an
    entry whose original line is gone from its file (the entry no longer applies)."""
    listed = {}
    for entry in json.loads(EQUIVALENTS.read_text()):
        module = entry["function"].split(".x", 1)[0]
        source = (copy / (module.replace(".", "/") + ".py")).read_text()
        removed = [line[1:].strip() for line in entry["change"].splitlines() if line.startswith("-")]
        if not removed or not all(line in source for line in removed):
            raise ValueError(f"{EQUIVALENTS.name}: the original line of {entry['function']} is gone; remove the entry")
        listed[(entry["function"], entry["change"].strip())] = entry["why"]
    return listed


def mark_equivalents(records: list[dict], listed: dict[tuple[str, str], str]) -> None:
    """Set the status of each surviving mutant whose function and change are those of a listed
    equivalent to ``equivalent``. The match ignores the mutant's number: mutmut numbers a
    function's mutants anew whenever any line of it changes."""
    for record in records:
        why = listed.get((function_of(record["name"]), record.get("diff", "").strip()))
        if why is not None and record["status"] not in KILLED:
            record["status"], record["why"] = "equivalent", why


def summarize(records: list[dict], folders: list[str], population: dict[str, int]) -> list[dict]:
    """Killed / run and its Wilson interval, the same without the listed equivalents, timeouts
    (counted as killed) apart, and the folder's mutant count."""
    rows = []
    for folder in folders:
        mine = [r for r in records if r["folder"] == folder]
        killed = sum(r["status"] in KILLED for r in mine)
        equivalent = sum(r["status"] == "equivalent" for r in mine)
        low, high = wilson(killed, len(mine))
        net = len(mine) - equivalent
        net_low, net_high = wilson(killed, net)
        rows.append({"folder": PYTHON_FOLDERS.get(folder, folder), "killed": killed, "run": len(mine),
                     "timeouts": sum(r["status"] == "timeout" for r in mine), "equivalent": equivalent,
                     "mutants": population.get(folder, len(mine)), "score": killed / len(mine) if mine else float("nan"),
                     "score_low": low, "score_high": high,
                     "net_score": killed / net if net else float("nan"), "net_low": net_low, "net_high": net_high})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folders", nargs="+", choices=ALL_FOLDERS, default=list(DEFAULT_FOLDERS))
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--workdir", type=Path, default=PROJECT / "data" / "mutation")
    parser.add_argument("--sample", type=int, default=None,
                        help="run a seeded random sample of this many mutants per Python folder (default: all)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--resume", action="store_true",
                        help="go on with the mutants of the last run in --workdir (its copy of the project is kept)")
    parser.add_argument("--only", nargs="+", default=None,
                        help="run only these planted changes (by name), e.g. the survivors of the last run")
    parser.add_argument("--rerun", action="store_true",
                        help="with --resume: run every sampled mutant again, keeping mutmut's generated mutants and stats")
    parser.add_argument("--report", action="store_true",
                        help="run nothing: report the Python mutants of the last (possibly interrupted) run")
    args = parser.parse_args()
    args.workdir = args.workdir.resolve()  # the runs below work inside the copy, not here
    known = {change.name for changes in PLANTED.values() for change in changes}
    if args.only and set(args.only) - known:
        raise SystemExit(f"no planted change named {sorted(set(args.only) - known)}")
    if args.report:
        if not (args.workdir / "project" / "mutants").exists():
            raise SystemExit(f"no earlier run in {args.workdir} to report")
        args.resume = True  # with the --sample and --seed of that run, the same mutants are drawn
        args.folders = [f for f in args.folders if f in PYTHON_FOLDERS]

    args.workdir.mkdir(parents=True, exist_ok=True)
    copy = args.workdir / "project"
    if args.resume and (copy / "mutants").exists():
        shutil.copy2(PROJECT / "pyproject.toml", copy / "pyproject.toml")  # settings may have changed
    else:
        args.resume = False
        copy_project(copy)
    listed = load_equivalents(copy)  # a stale entry is said before the long run, not after
    records, seconds, population = [], {}, {}
    python_folders = [f for f in args.folders if f in PYTHON_FOLDERS]
    if python_folders:
        started = time.perf_counter()
        log = args.workdir / "mutmut.log"
        print(f"mutmut on {', '.join(PYTHON_FOLDERS[f] for f in python_folders)} (log: {log})", flush=True)
        names = None
        if args.sample:
            drawn = sample_mutants(copy, python_folders, args.sample, args.seed, args.max_children, log, args.resume)
            population, names = drawn["all"], drawn["sample"]
            print(f"  mutants per folder: {population}; a sample of {args.sample} each (seed {args.seed})", flush=True)
        records += run_python_mutants(copy, python_folders, args.max_children, log, names, run=not args.report,
                                      rerun=args.rerun)
        seconds["python"] = round(time.perf_counter() - started)
    for folder in PLANTED:
        if folder not in args.folders:
            continue
        started = time.perf_counter()
        log = args.workdir / f"{folder}.log"
        print(f"{len(PLANTED[folder])} planted {folder} changes (log: {log})", flush=True)
        check_applicable(copy, folder)
        records += run_planted(copy, folder, log, args.only)
        seconds[folder] = round(time.perf_counter() - started)

    mark_equivalents(records, listed)
    rows = summarize(records, args.folders, population)
    print("\nfolder                 killed / run      score   (95% interval)   timeouts | equivalent  "
          "killed / (run - equivalent)   (95% interval)   mutants")
    for row in rows:
        sampled = row["run"] < row["mutants"]
        interval = f"({row['score_low']:.1%} - {row['score_high']:.1%})" if sampled else ""
        net_interval = f"({row['net_low']:.1%} - {row['net_high']:.1%})" if sampled else ""
        print(f"{row['folder']:<22} {row['killed']:>6} / {row['run']:<6} {row['score']:7.1%}   {interval:<16} "
              f"{row['timeouts']:>8} | {row['equivalent']:>10}  {row['killed']:>6} / {row['run'] - row['equivalent']:<6} "
              f"{row['net_score']:7.1%}       {net_interval:<16} {row['mutants']:>7}")
    print("seconds: " + ", ".join(f"{k} {v}" for k, v in seconds.items()))
    equivalents = [r for r in records if r["status"] == "equivalent"]
    if equivalents:
        print(f"\n{len(equivalents)} equivalent mutants (listed in {EQUIVALENTS.name}):")
        for r in equivalents:
            print(f"- {r['name']}: {r['why']}")
    survivors = [r for r in records if r["status"] not in KILLED | {"equivalent"}]
    print(f"\n{len(survivors)} surviving mutants:")
    for r in survivors:
        print(f"- {r['name']} ({r['status']})\n    " + r.get("diff", "").replace("\n", "\n    "))
    report = {"summary": rows, "seconds": seconds, "sample": args.sample, "seed": args.seed, "survivors": survivors,
              "mutants": [{k: r[k] for k in ("name", "folder", "status")} for r in records]}
    (args.workdir / "report.json").write_text(json.dumps(report, indent=1))
    (args.workdir / "report.md").write_text(markdown_report(rows, seconds, args, survivors, equivalents))


def markdown_report(rows: list[dict], seconds: dict, args: argparse.Namespace, survivors: list[dict],
                    equivalents: list[dict]) -> str:
    """The run's figures and survivors as a page (``data/mutation/report.md``)."""
    lines = [f"# Mutation run ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"Folders {', '.join(args.folders)}; sample {args.sample or 'all'}, seed {args.seed}; "
             f"seconds: {', '.join(f'{k} {v}' for k, v in seconds.items())}.", "",
             "| folder | killed / run | score (95%) | timeouts | equivalent | net score (95%) | mutants |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['folder']} | {r['killed']} / {r['run']} | {r['score']:.1%} ({r['score_low']:.1%} - "
                     f"{r['score_high']:.1%}) | {r['timeouts']} | {r['equivalent']} | {r['net_score']:.1%} "
                     f"({r['net_low']:.1%} - {r['net_high']:.1%}) | {r['mutants']} |")
    lines += ["", f"## {len(survivors)} survivors", ""]
    lines += [f"- `{r['name']}` ({r['status']})\n\n  ```diff\n  " + r.get("diff", "").replace("\n", "\n  ") + "\n  ```"
              for r in survivors]
    lines += ["", f"## {len(equivalents)} equivalent", ""] + [f"- `{r['name']}`: {r['why']}" for r in equivalents]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
