#!/usr/bin/env python3
"""The mutants layer's runner (test/mutants/run.sh calls it; doc/mutants.md).

Each mutant in test/mutants/mutants.txt is one safeguard removed or weakened
in the real source: an exact text, found exactly once in one file, replaced
by another. For each mutant chosen, the runner applies the edit to a copy of
the tree, has the named tests run against it (they build the changed file
and install the library into a PostgreSQL of the layer's own), restores the
file, and records whether a test failed: the mutant is killed. A mutant no
test kills, or whose text is no longer in its file (the list has gone stale),
fails the layer.

  run.py --tree DIR --pg-config PATH [--sample N --seed S] [--list] [NAME...]

A mutant's tests are one or more specs separated by ";": a layer of
scripts/test.sh and its tests ("tap test/t/NNN.pl", "sql"), "unit" and a
ctest regular expression, or "simulation" and the simulator's flags (it is
built on the mutated core); each must pass without the mutant, and each
must fail under it for the mutant to count as killed.
  run.py --tree DIR --apply NAME   only apply the mutant to the tree, and leave
                                   it so (the fault campaign builds and runs
                                   it: test/campaign/run.sh --mutant NAME)
"""
import argparse
import os
import random
import subprocess
import sys
import time


def parse(path):
    """The mutants of `path`, in order: dicts with name, what, file, tests, find, replace."""
    mutants = []
    current = None
    block = None
    with open(path, encoding="utf-8") as source:
        for number, raw in enumerate(source, 1):
            line = raw.rstrip("\n")
            if line.startswith("## "):
                current = {"name": line[3:].strip(), "line": number, "find": [], "replace": []}
                mutants.append(current)
                block = None
            elif current is None or (block is None and (line == "" or line.startswith("#"))):
                continue
            elif line in ("--- find", "--- replace"):
                block = line[4:]
            elif block is not None:
                current[block].append(line)
            elif ":" in line:
                key, value = line.split(":", 1)
                current[key.strip()] = value.strip()
            else:
                sys.exit(f"{path}:{number}: cannot read '{line}'")
    names = set()
    for mutant in mutants:
        for key in ("what", "file", "tests"):
            if key not in mutant:
                sys.exit(f"{path}:{mutant['line']}: mutant {mutant['name']} has no '{key}:'")
        if mutant["name"] in names:
            sys.exit(f"{path}:{mutant['line']}: mutant {mutant['name']} twice")
        names.add(mutant["name"])
        # Trailing blank lines separate mutants; they are not part of the text.
        for block in ("find", "replace"):
            while mutant[block] and mutant[block][-1] == "":
                mutant[block].pop()
            mutant[block] = "\n".join(mutant[block])
        if not mutant["find"]:
            sys.exit(f"{path}:{mutant['line']}: mutant {mutant['name']} has no '--- find' text")
    return mutants


def apply(mutants, tree, name):
    """Applies the mutant `name` to the files of `tree` and leaves it applied."""
    chosen = [m for m in mutants if m["name"] == name]
    if not chosen:
        sys.exit(f"no such mutant: {name}")
    mutant = chosen[0]
    path = os.path.join(tree, mutant["file"])
    with open(path, encoding="utf-8") as source:
        original = source.read()
    occurrences = original.count(mutant["find"])
    if occurrences != 1:
        sys.exit(f"mutant {name}: its text is in {mutant['file']} {occurrences} times, not once")
    with open(path, "w", encoding="utf-8") as target:
        target.write(original.replace(mutant["find"], mutant["replace"]))
    print(f"mutant {name} applied to {path}: {mutant['what']}")
    return 0


def run(command, tree, environment, log):
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    return subprocess.run(command, cwd=tree, env=environment, stdout=log,
                          stderr=subprocess.STDOUT).returncode == 0


def run_tests(tree, pg_config, tests, log):
    """Builds the mutant and runs each of its tests in `tree` (`tests`: specs
    separated by ";"): "broken" if one does not build (a mutant must compile:
    a build failure kills nothing), "failed" if every spec failed (a mutant is
    killed only by each of them), else "passed"."""
    verdicts = [run_spec(tree, pg_config, spec.strip(), log) for spec in tests.split(";")]
    if "broken" in verdicts:
        return "broken"
    return "failed" if all(verdict == "failed" for verdict in verdicts) else "passed"


def run_spec(tree, pg_config, tests, log):
    """One spec of run_tests: "broken", "passed" or "failed"."""
    words = tests.split()
    # A killed mutant's test often fails by waiting out a poll: PostgreSQL's
    # default of 180 s a wait makes a kill cost minutes, 90 s is still far
    # above what a passing wait takes here.
    environment = dict(os.environ, PG_CONFIG=pg_config)
    environment.setdefault("PG_TEST_TIMEOUT_DEFAULT", "90")
    jobs = str(os.cpu_count() or 2)
    if words[0] == "unit":
        # The GoogleTest cases named (a ctest regular expression), plain build.
        build = os.path.join(tree, "build/unit-mutants")
        if not (run(["cmake", "-S", "test/unit", "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                    tree, environment, log)
                and run(["cmake", "--build", build, "-j", jobs], tree, environment, log)):
            return "broken"
        tests_command = ["ctest", "--test-dir", build, "--output-on-failure", "--timeout", "300",
                         "-R", " ".join(words[1:]) or "."]
    elif words[0] == "simulation":
        # The deterministic simulator on the mutated core (test/simulation),
        # with the flags given: it fails on a duplicate.
        build = os.path.join(tree, "build/simulation-mutants")
        if not (run(["cmake", "-S", "test/simulation", "-B", build, "-DCMAKE_BUILD_TYPE=Release"],
                    tree, environment, log)
                and run(["cmake", "--build", build, "-j", jobs, "--target", "snowflake_sim"],
                        tree, environment, log)):
            return "broken"
        tests_command = [os.path.join(build, "snowflake_sim")] + words[1:]
    else:
        # A layer of scripts/test.sh and its tests (tap test/t/NNN.pl, sql),
        # which builds and installs the library again (nothing left to do).
        if not run(["make", "-s", "-j", jobs], tree, environment, log):
            return "broken"
        tests_command = ["scripts/test.sh"] + words
    return "passed" if run(tests_command, tree, environment, log) else "failed"


def skipped_reason(log_path):
    """Why a cluster test of `log_path` skipped itself (prove's "skipped: ..."), or None."""
    with open(log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if ".pl " in line and " skipped: " in line:
                return line.split(" skipped: ", 1)[1].strip()
    return None


def first_failure(log_path):
    """The first line of `log_path` that names a failed test: what killed."""
    markers = ("Failed test", "not ok", "FAILED", "failed (", "Bail out", "Dubious",
               "duplicate(s)")
    with open(log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if any(marker in line for marker in markers):
                return line.strip()[:160]
    return "(no failed test named in the log)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", required=True)
    parser.add_argument("--pg-config")
    parser.add_argument("--apply", metavar="NAME", help="apply this mutant to the tree and exit")
    parser.add_argument("--list-file", default="test/mutants/mutants.txt")
    parser.add_argument("--sample", type=int, default=0, help="this many mutants, drawn by --seed")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--logs", default="build/mutants/logs")
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("names", nargs="*")
    arguments = parser.parse_args()

    mutants = parse(arguments.list_file)
    if arguments.apply:
        return apply(mutants, arguments.tree, arguments.apply)
    if not arguments.pg_config and not arguments.list:
        parser.error("--pg-config is needed")
    if arguments.list:
        for mutant in mutants:
            print(f"{mutant['name']:32} {mutant['file']:32} {mutant['tests']}")
        return 0
    chosen = mutants
    if arguments.names:
        unknown = set(arguments.names) - {m["name"] for m in mutants}
        if unknown:
            sys.exit(f"no such mutant: {', '.join(sorted(unknown))}")
        chosen = [m for m in mutants if m["name"] in arguments.names]
    elif arguments.sample and arguments.sample < len(mutants):
        chosen = sorted(random.Random(arguments.seed).sample(mutants, arguments.sample),
                        key=mutants.index)
        print(f"a sample of {len(chosen)} of the {len(mutants)} mutants, seed {arguments.seed} "
              f"(all of them: test/mutants/run.sh --all)")

    os.makedirs(arguments.logs, exist_ok=True)
    # The tests first pass without a mutant: else a failure would kill nothing.
    # (A mutant's specs, separated by ";", must each pass here and each fail
    # under it.)
    unjudged = {}
    for tests in dict.fromkeys(spec.strip() for m in chosen for spec in m["tests"].split(";")):
        log_path = os.path.join(arguments.logs, "baseline-" + "_".join(
            os.path.basename(word) for word in tests.split()) + ".log")
        with open(log_path, "w", encoding="utf-8") as log:
            verdict = run_tests(arguments.tree, arguments.pg_config, tests, log)
        if verdict != "passed":
            print(f"BASELINE  {tests} fails without a mutant ({verdict}; log {log_path}): "
                  f"{first_failure(log_path)}", flush=True)
            return 1
        reason = skipped_reason(log_path)
        if reason:
            # A test that cannot run here cannot kill: its mutants are not judged.
            unjudged[tests] = reason
            print(f"SKIPPED: the mutants of {tests}: it skips here ({reason})", flush=True)
            continue
        print(f"baseline  {tests} passes without a mutant", flush=True)
    killed, survived, stale, broken = [], [], [], []
    chosen = [m for m in chosen
              if not any(spec.strip() in unjudged for spec in m["tests"].split(";"))]
    for mutant in chosen:
        path = os.path.join(arguments.tree, mutant["file"])
        with open(path, encoding="utf-8") as source:
            original = source.read()
        occurrences = original.count(mutant["find"])
        if occurrences != 1:
            print(f"STALE     {mutant['name']}: its text is in {mutant['file']} {occurrences} "
                  f"times, not once (test/mutants/mutants.txt line {mutant['line']})", flush=True)
            stale.append(mutant["name"])
            continue
        started = time.monotonic()
        log_path = os.path.join(arguments.logs, mutant["name"] + ".log")
        try:
            with open(path, "w", encoding="utf-8") as target:
                target.write(original.replace(mutant["find"], mutant["replace"]))
            with open(log_path, "w", encoding="utf-8") as log:
                verdict = run_tests(arguments.tree, arguments.pg_config, mutant["tests"], log)
        finally:
            with open(path, "w", encoding="utf-8") as target:
                target.write(original)
        took = time.monotonic() - started
        if verdict == "failed":
            killed.append(mutant["name"])
            print(f"killed    {mutant['name']} by {mutant['tests']} ({took:.0f} s): "
                  f"{first_failure(log_path)}", flush=True)
        elif verdict == "broken":
            broken.append(mutant["name"])
            print(f"BROKEN    {mutant['name']}: it does not build (log {log_path})", flush=True)
        else:
            survived.append(mutant["name"])
            print(f"SURVIVED  {mutant['name']}: {mutant['what']}; {mutant['tests']} passed "
                  f"({took:.0f} s; log {log_path})", flush=True)

    print(f"mutants: {len(killed)} of {len(chosen)} killed"
          + "".join(f"; {label}: {', '.join(names)}" for label, names in
                    (("survived", survived), ("stale", stale), ("broken", broken)) if names))
    # The copy is left as it was: built and installed unmutated.
    run(["make", "-s", "-j", str(os.cpu_count() or 2), "install"], arguments.tree,
        dict(os.environ, PG_CONFIG=arguments.pg_config), open(os.devnull, "w"))
    return 0 if len(killed) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
