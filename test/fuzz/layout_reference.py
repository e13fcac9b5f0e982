#!/usr/bin/env python3
"""The differential check of the layout arithmetic (test/fuzz/run.sh).

Writes random layout specifications (64-bit ones, coarse units, epochs at the
edge of what int64 can hold, widths out of range) and random values to
layout_driver (the C++ core) and computes every answer again here with
Python's arbitrary-precision integers, from the layout's definition
(src/core/layout.hpp, layout_text.hpp) and nothing of the C++: each field
at the sum of the widths of the fields after it, the timestamp on top,
time as epoch + timestamp * unit. Any difference fails, printing the case.

    layout_reference.py --driver build/fuzz/layout_driver [--cases N] [--seed S]
"""
import argparse
import random
import subprocess
import sys

INT64_MAX = 2**63 - 1
DEFAULT_EPOCH = 1288834974657
# layout_text.hpp's LayoutTextProblem, layout.hpp's LayoutCheck and FieldCheck
INVALID_LAYOUT = 13
CHECKS = ["ok", "too wide", "timestamp out of range", "datacenter out of range",
          "worker out of range", "sequence out of range", "unit out of range",
          "epoch out of range", "time too long", "order invalid"]
FIELDS = ["datacenter", "worker", "sequence"]


def signed(value):
    value %= 2**64
    return value - 2**64 if value >= 2**63 else value


def check(widths, unit, epoch):
    """Layout::check, in its order: the first fault is the one reported."""
    time, datacenter, worker, sequence = (widths["time"], widths["datacenter"],
                                          widths["worker"], widths["sequence"])
    if not 1 <= time <= 62:
        return 2
    if not 0 <= datacenter <= 30:
        return 3
    if not 0 <= worker <= 30:
        return 4
    if not 1 <= sequence <= 31:
        return 5
    if time + datacenter + worker + sequence > 64:
        return 1
    if not 1 <= unit <= 1000:
        return 6
    if epoch < 0:
        return 7
    if epoch + 2**time * unit > INT64_MAX:
        return 8
    return 0


def random_layout(rng):
    """A specification text and what it means."""
    listed = ["sequence"] + [f for f in ("datacenter", "worker") if rng.random() < 0.8]
    rng.shuffle(listed)
    widths = {"datacenter": 0, "worker": 0}
    valid = rng.random() < 0.8  # else widths at and past their limits
    widths["sequence"] = rng.randint(1, 31) if valid else rng.choice([0, 1, 31, 32])
    for name in listed:
        if name != "sequence":
            room = max(0, min(30, 63 - widths["sequence"] - widths["datacenter"] - widths["worker"]))
            widths[name] = rng.choice([rng.randint(0, room), rng.randint(0, min(room, 10))]) \
                if valid else rng.choice([0, 30, 31])
    below = widths["sequence"] + widths["datacenter"] + widths["worker"]
    widths["time"] = rng.choice([min(63, 64 - below)] * 2 + [rng.randint(1, min(63, 64 - below))]) \
        if valid else max(0, rng.choice([64 - below, 65 - below, 63, 64, 0, rng.randint(1, 99)]))
    unit_text, unit = rng.choice([(None, 1)] * 3 + [
        ("1ms", 1), ("10ms", 10), ("250ms", 250), ("1000ms", 1000), ("1s", 1000), ("1S", 1000)]
        + ([] if valid else [("2s", 2000), ("0ms", 0), ("1001ms", 1001), ("0s", 0)]))
    if rng.random() < 0.3:
        unit = rng.randint(1, 1000)
        unit_text = "%dms" % unit
    epoch = rng.choice([None, 0, rng.randint(0, 2**42), rng.randint(0, INT64_MAX), INT64_MAX])
    if rng.random() < 0.3 and 1 <= widths["time"] <= 62 and 1 <= unit <= 1000:
        # At the edge of kTimeTooLong: the last unit ends at INT64_MAX or just past it.
        epoch = max(0, INT64_MAX - 2**widths["time"] * unit + rng.randint(-2, 2))
    items = ["time:%d" % widths["time"]] + ["%s:%d" % (name, widths[name]) for name in listed]
    if unit_text is not None:
        items.append("unit:" + unit_text)
    if epoch is not None:
        items.append("epoch:%d" % epoch)
    items = [item.upper() if rng.random() < 0.1 else item for item in items]
    text = rng.choice([" ", ",", ", ", "\t"]).join(items)
    return text, widths, listed, unit, DEFAULT_EPOCH if epoch is None else epoch


def describe(widths, listed, unit, epoch):
    order = listed + [f for f in ("datacenter", "worker") if f not in listed]
    fields = "".join(" %s:%d" % (f, widths[f]) for f in order if widths[f] > 0)
    return "time:%d%s unit:%s epoch:%d" % (widths["time"], fields,
                                            "1s" if unit == 1000 else "%dms" % unit, epoch)


def random_values(rng, widths, shift):
    """ID, fields, unix ms, until, ID bound: at the edges and anywhere."""
    edge = lambda high: rng.choice([0, high, high + 1, -1, rng.randint(0, max(high, 0))])
    id_ = signed(rng.choice([rng.randint(-2**63, INT64_MAX), -1, 0, INT64_MAX, -2**63,
                             rng.randint(0, 2**(shift + widths["time"]))]))
    fields = [edge(2**widths["time"] - 1), edge(2**widths["datacenter"] - 1),
              edge(2**widths["worker"] - 1), edge(2**widths["sequence"] - 1)]
    unix_ms = rng.choice([0, INT64_MAX, rng.randint(0, INT64_MAX), rng.randint(0, 2**45)])
    max_issued = min(2**widths["time"] - 1, INT64_MAX >> shift)
    until = rng.choice([0, max_issued, max_issued + 1, rng.randint(0, max_issued + 1)])
    id_bound = rng.choice([0, 2**64 - 1, 2**63, rng.randint(0, 2**64 - 1),
                           (until << shift) + rng.randint(-1, 1)]) % 2**64
    return [id_] + fields + [unix_ms, until, id_bound]


def expected(widths, listed, unit, epoch, values):
    """What the core must answer, computed here."""
    shift_of = {}
    for i, name in enumerate(listed):
        shift_of[name] = sum(widths[after] for after in listed[i + 1:])
    for name in ("datacenter", "worker"):
        shift_of.setdefault(name, 0)  # absent: 0 bits, wherever
    shift = widths["datacenter"] + widths["worker"] + widths["sequence"]
    total = shift + widths["time"]
    max_ts = 2**widths["time"] - 1
    max_issued = min(max_ts, INT64_MAX >> shift)
    out = ("total=%d shift=%d max_ts=%d max_issued=%d last_unix=%d last_issued_unix=%d max_node=%d"
           % (total, shift, max_ts, max_issued, epoch + max_ts * unit, epoch + max_issued * unit,
              2**(widths["datacenter"] + widths["worker"]) - 1))
    id_, t, dc, w, seq, unix_ms, until, id_bound = values
    u = id_ % 2**64
    if total < 64 and u >= 2**total:
        out += " decode=none"
    else:
        part = lambda name: (u >> shift_of[name]) % 2**widths[name]
        out += " decode=%d,%d,%d,%d" % (u >> shift, part("datacenter"), part("worker"),
                                        part("sequence"))
    field_check = next((i + 1 for i, (v, name) in enumerate(
        [(t, "time"), (dc, "datacenter"), (w, "worker"), (seq, "sequence")])
        if not 0 <= v < 2**widths[name]), 0)
    if field_check:
        out += " compose=field%d" % field_check
    else:
        composed = (t << shift | dc << shift_of["datacenter"] | w << shift_of["worker"]
                    | seq << shift_of["sequence"])
        out += " compose=%d node=%d min=%d max=%d" % (
            signed(composed), dc << widths["worker"] | w, signed(t << shift),
            signed(t << shift | (2**shift - 1)))
    since = unix_ms - epoch
    out += " at=%d from=%d" % (since // unit, -(-since // unit))
    out += " bound=%d tbound=%d" % (until << shift, min(-(-id_bound // 2**shift), max_issued + 1))
    return out + " text=" + describe(widths, listed, unit, epoch)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", required=True)
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    lines, answers = [], []
    refused = 0
    for _ in range(args.cases):
        text, widths, listed, unit, epoch = random_layout(rng)
        fault = check(widths, unit, epoch)
        shift = widths["datacenter"] + widths["worker"] + widths["sequence"]
        values = random_values(rng, widths, shift) if fault == 0 else [0] * 8
        lines.append("|".join([text] + [str(v) for v in values]))
        if fault:
            refused += 1
            answers.append("problem %d check %d" % (INVALID_LAYOUT, fault))
        else:
            answers.append(expected(widths, listed, unit, epoch, values))
    result = subprocess.run([args.driver], input="\n".join(lines) + "\n", capture_output=True,
                            text=True, check=False)
    if result.returncode != 0:
        print("layout_reference: the driver failed (exit %d):\n%s" % (result.returncode,
              result.stderr[-4000:]))
        return 1
    got = result.stdout.splitlines()
    differences = [(line, want, have) for line, want, have in zip(lines, answers, got)
                   if want != have]
    if len(got) != len(answers):
        differences.append(("(the whole run)", "%d answers" % len(answers), "%d" % len(got)))
    for line, want, have in differences[:10]:
        print("layout_reference: differs for %r\n  python: %s\n  core:   %s" % (line, want, have))
    print("layout_reference: seed %d, %d layouts (%d refused by check, %d valid), %d differences"
          % (seed, len(answers), refused, len(answers) - refused, len(differences)))
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
