#!/usr/bin/env python3
"""Typed random-argument calls of every snowflake_* function (test/sqlsmith/run.sh).

sqlsmith rarely picks the extension's few functions among the thousands of
the catalog, so this calls each of them itself: reads their signatures from
pg_proc, and calls each many times with values of each argument's type, at
and past the edges (bigint and integer limits, timestamps at infinity and
at PostgreSQL's first and last, intervals of millions of years), layout
texts of every preset and random specifications (valid, invalid, garbage),
base32 texts, and NULLs. All calls run in one psql session.

What fails it: the server's connection lost (a crash), or an error whose
SQLSTATE is XX000 (elog's "cannot happen", which no input may reach). Any
other error is an answer; prints calls, errors and SQLSTATEs per function.
The connection comes from libpq's environment (PGHOST, PGPORT, ...).

    random_calls.py --calls N [--seed S] [--label LAYOUT]
"""
import argparse
import collections
import os
import random
import re
import subprocess
import sys
import tempfile
import time

INT64 = (-2**63, 2**63 - 1)
INT32 = (-2**31, 2**31 - 1)
SIGNATURES = r"""
SELECT p.proname, p.oid::regprocedure,
       array_to_string(ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t), ';'),
       coalesce(array_to_string(ARRAY(
           SELECT coalesce(n, '') FROM unnest(p.proargnames, p.proargmodes::text[]) u(n, m)
            WHERE m IS NULL OR m IN ('i', 'b', 'v')), ';'), '')
  FROM pg_proc p WHERE p.proname LIKE 'snowflake\_%' AND p.prokind = 'f' ORDER BY 2::text
"""


def psql(*arguments, stdin=None):
    return subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=0", "-v",
                           "VERBOSITY=verbose", *arguments], input=stdin, capture_output=True,
                          text=True, check=False)


def quote(text):
    return "'" + text.replace("'", "''") + "'"


class Values:
    def __init__(self, rng, presets, ids):
        self.rng = rng
        self.presets = presets
        self.ids = ids

    def bigint(self):
        r = self.rng
        return str(r.choice([0, 1, -1, INT64[0], INT64[1], INT64[0] + 1, INT64[1] - 1, 2**53,
                             2**31, 2**32, 2**62, r.randint(*INT64), r.randint(0, 2**63 - 1),
                             r.randint(-1000, 1000), r.choice(self.ids), r.choice(self.ids) + 1,
                             -r.choice(self.ids)]))

    def integer(self):
        r = self.rng
        return str(r.choice([0, 1, -1, INT32[0], INT32[1], 2, 3, 5, 7, 30, 31, 32, 63, 64, 65,
                             4095, 4096, 65535, 65536, r.randint(*INT32), r.randint(-100, 100),
                             r.randint(0, 10000)]))

    def layout(self):
        r = self.rng
        kind = r.randrange(8)
        if kind < 3:
            return quote(r.choice(self.presets))
        if kind == 3:
            return quote(r.choice(self.presets).upper() + r.choice(
                ["", " epoch:0", " unit:1s", " unit:10ms epoch:1700000000000", " worker:3",
                 " epoch:9223372036854775807", " epoch:-1", ","]))
        if kind == 4:
            return quote(r.choice(["", " ", ",,", "time", "time:", ":", "time:41", "sequence:12",
                                   "time:41 sequence:12 sequence:1", "twitter twitter",
                                   "time:41 sequence:12 unit:0ms", "time:63 sequence:1",
                                   "time:1 sequence:31 worker:30 datacenter:2",
                                   "time:41 sequence:12 epoch:99999999999999999999",
                                   "x" * 10000, "time:" + "9" * 400, "\u00e9t\u00e9:41"]))
        fields = ["sequence:%d" % r.randint(0, 33)] + [
            "%s:%d" % (name, r.randint(0, 32)) for name in ("datacenter", "worker")
            if r.random() < 0.7]
        r.shuffle(fields)
        items = ["time:%d" % r.randint(0, 66)] + fields
        if r.random() < 0.5:
            items.append("unit:" + r.choice(["1ms", "10ms", "1s", "250ms", "1000ms", "0ms", "2s",
                                             "%dms" % r.randint(0, 2000), "5 ms", "ms"]))
        if r.random() < 0.5:
            items.append("epoch:%d" % r.choice([0, 1288834974657, r.randint(0, 2**63 - 1),
                                                2**63 - 1, 2**63]))
        return quote(r.choice([" ", ",", ", "]).join(items))

    def text(self):
        r = self.rng
        alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyzILOUu-*~ "
        return quote(r.choice([
            "", "0", "7ZZZZZZZZZZZZ", "8000000000000", "ZZZZZZZZZZZZZZ", "0000000000000",
            "".join(r.choice(alphabet) for _ in range(r.randint(1, 15))),
            "".join(r.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for _ in range(13)),
            "1970-01-01 00:00:00+00", "twitter", "x" * 5000]))

    def timestamptz(self, past_only=False):
        r = self.rng
        if past_only:  # snowflake_set_bound: a bound in the future would hold back every later call
            return quote(r.choice([
                "infinity", "-infinity", "4713-01-01 00:00:00+00 BC", "294276-12-31 23:59:59+00",
                "1970-01-01 00:00:00+00", "2010-11-04 01:42:54.657+00", "1900-01-01 00:00:00+00",
                "now", "%d-01-01 00:00:00+00" % r.randint(1, 2025)])) + "::timestamptz"
        return quote(r.choice([
            "infinity", "-infinity", "4713-01-01 00:00:00+00 BC", "294276-12-31 23:59:59.999999+00",
            "1970-01-01 00:00:00+00", "2010-11-04 01:42:54.657+00", "2010-11-04 01:42:54.656+00",
            "2015-01-01 00:00:00+00", "2100-01-01 00:00:00+00", "2112-01-01 00:00:00+00",
            "1900-01-01 00:00:00+00", "now",
            "%d-%02d-%02d %02d:%02d:%02d.%03d+00" % (r.randint(1, 9999), r.randint(1, 12),
                                                    r.randint(1, 28), r.randint(0, 23),
                                                    r.randint(0, 59), r.randint(0, 59),
                                                    r.randint(0, 999))])) + "::timestamptz"

    def boolean(self):
        return self.rng.choice(["true", "false"])

    def interval(self):
        r = self.rng
        return quote(r.choice([
            "0", "1 millisecond", "-1 millisecond", "1 microsecond", "1 day", "1 month", "1 year",
            "-1 day", "178000000 years", "-178000000 years", "290000 years", "2147483647 days",
            "%d seconds" % r.randint(-10**9, 10**9), "%d ms" % r.randint(-10**6, 10**6)])) \
            + "::interval"

    def regclass(self):
        return quote(self.rng.choice(["orders", "order_lines", "events", "events_node_5",
                                      "layouts", "pg_class", "orders_id_seq"])) + "::regclass"

    def name(self):
        return quote(self.rng.choice(["id", "item", "order_id", "quantity", "public_id",
                                      "nosuchcolumn", "placed", "ctid", ""])) + "::name"

    def of(self, function, type_name, argument_name):
        if self.rng.random() < 0.08:
            return "NULL::" + type_name
        if type_name == "text":
            return self.layout() if argument_name == "layout" else self.text()
        if type_name == "timestamp with time zone" and function == "snowflake_set_bound":
            return self.timestamptz(past_only=True)
        generator = {"bigint": self.bigint, "integer": self.integer,
                     "timestamp with time zone": self.timestamptz, "interval": self.interval,
                     "boolean": self.boolean,
                     "regclass": self.regclass, "name": self.name}.get(type_name)
        if generator is None:
            raise SystemExit("random_calls.py: no values for type %s: add them" % type_name)
        return generator()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per function")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    signatures = psql("-F", "|", "-c", SIGNATURES)
    presets = psql("-c", "SELECT name FROM snowflake_layouts()").stdout.split()
    ids = [int(v) for v in psql("-c", "SELECT id FROM orders LIMIT 50").stdout.split()] or [1]
    if signatures.returncode != 0 or not presets:
        print("random_calls: cannot read the signatures:\n" + signatures.stderr)
        return 1
    values = Values(rng, presets, ids)
    # One session for all: a marker (\\warn, on stderr like the errors)
    # before each function's calls tells whose errors follow.
    functions = []
    # An ID issued first, so that snowflake_lastval() has one to answer.
    statements = ["SET statement_timeout = '2s';", "SELECT snowflake_nextval();"]
    for line in signatures.stdout.splitlines():
        name, signature, types, names = line.split("|")
        types = types.split(";") if types else []
        names = (names.split(";") if names else []) + [""] * len(types)
        functions.append(signature)
        statements.append("\\warn @@ %s" % signature)
        for _ in range(args.calls):
            call = "%s(%s)" % (name, ", ".join(values.of(name, t, n) for t, n in zip(types, names)))
            statements.append("SELECT count(*) FROM (SELECT * FROM %s LIMIT 3) s;" % call)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write("\n".join(statements) + "\n")
    started = time.monotonic()
    result = psql("-f", script.name)
    seconds = time.monotonic() - started
    os.unlink(script.name)
    print("random_calls: %s seed %d, %d calls per function, %.0f s" % (args.label, seed, args.calls,
                                                                      seconds))
    output = dict((part.split("\n", 1) + [""])[:2] for part in result.stderr.split("@@ ")[1:])
    failures = 0
    total = 0
    for signature in functions:
        errors = output.get(signature)
        if errors is None:
            print("random_calls: FAILED: %s was never called (psql stopped):\n%s"
                  % (signature, result.stderr[-3000:]))
            failures += 1
            break
        states = collections.Counter(re.findall(r"ERROR:  ([0-9A-Z]{5}):", errors))
        lost = re.search(r"server closed the connection|connection to server was lost", errors)
        internal = re.findall(r"ERROR:  XX000: .*", errors)
        total += args.calls
        print("  %-72s %5d calls %5d errors %s" % (signature, args.calls, sum(states.values()),
              " ".join("%s:%d" % s for s in sorted(states.items()))))
        if lost or internal:
            failures += 1
            print("random_calls: FAILED for %s: %s" % (signature, lost.group(0) if lost else
                  "an internal error (XX000): " + internal[0][:300]))
            print(errors[-3000:])
    print("random_calls: %s %d calls, %d functions failed" % (args.label, total, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
