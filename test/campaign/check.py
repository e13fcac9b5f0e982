#!/usr/bin/env python3
"""The fault campaign's independent checker (doc/campaign.md).

Reads what a campaign run recorded in its directory, with code of its own
(none of the extension's: it decodes IDs with its own bit arithmetic):

  sessions.jsonl   one line per writer session: its node (lineage), server,
                   database, the identity the driver gave the node then (or
                   "automatic": the identities the session printed), and the
                   files of its output (IDs and psql's "Time:" lines) and
                   errors
  events.jsonl     the driver's operations and faults, the processes it
                   killed, the IDs its probes got, whether each node issued
                   again in time or refused where it must
  logs/*.log       every server's log

and checks:

  - no ID twice, across every node and the whole run;
  - every ID decodes to the datacenter/worker its node held when it issued it;
  - every node issued again within the stated time after its fault healed,
    and refused (55000, the bound unknown) where it must;
  - no server process ended by a signal the driver did not send, no PANIC,
    no assertion failure;
  - no statement ran past its statement_timeout (plus 2 s of slack), and no
    session hung.

  check.py [--json] RUN_DIR
"""
import argparse
import collections
import glob
import json
import os
import re
import sys

EPOCH_MS = 1288834974657
SLACK_MS = 2000


def decode(id_):
    return {
        "ms": (id_ >> 22) + EPOCH_MS,
        "datacenter": (id_ >> 17) & 31,
        "worker": (id_ >> 12) & 31,
        "sequence": id_ & 4095,
    }


def identity_of(id_):
    d = decode(id_)
    return f"{d['datacenter']}/{d['worker']}"


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


ERROR_RE = re.compile(r"(?:ERROR|FATAL):\s+([0-9A-Z]{5}):")


def error_kind(err):
    m = ERROR_RE.search(err)
    if m:
        return m.group(1)
    if "server closed the connection unexpectedly" in err:
        return "connection lost"
    if "Connection refused" in err or "No such file or directory" in err and "connection to server" in err:
        return "connection refused"
    if "connection to server" in err:
        return "connection failed"
    return "other" if err.strip() else None


def check(run_dir):
    findings = []
    sessions = read_jsonl(os.path.join(run_dir, "sessions.jsonl"))
    events = read_jsonl(os.path.join(run_dir, "events.jsonl"))
    statement_timeout_ms = 10000
    for e in events:
        if e["kind"] == "setup" and "statement_timeout_ms" in e:
            statement_timeout_ms = int(e["statement_timeout_ms"])

    owners = {}                     # id -> where it was first seen
    duplicates = collections.defaultdict(list)
    errors = collections.Counter()
    wrong_identity = []
    slow = []
    ids_total = 0
    observed = collections.defaultdict(set)   # lineage -> identities seen (automatic)

    def record(id_, where):
        nonlocal ids_total
        ids_total += 1
        if id_ in owners:
            if not duplicates[id_]:
                duplicates[id_].append(owners[id_])
            duplicates[id_].append(where)
        else:
            owners[id_] = where

    for e in events:
        if e["kind"] == "probe" and e.get("identity"):
            observed[e["lineage"]].add(e["identity"])

    parsed = []
    for s in sessions:
        out = read_text(os.path.join(run_dir, s["out"]))
        err = read_text(os.path.join(run_dir, s["err"]))
        ids, printed = [], set()
        for line in out.splitlines():
            line = line.strip()
            if line.isdigit():
                ids.append(int(line))
            elif line.startswith("Time: "):
                ms = float(line.split()[1])
                if ms > statement_timeout_ms + SLACK_MS:
                    slow.append(f"session {s['session']} on {s['server']}: a statement took {ms:.0f} ms "
                                f"(statement_timeout {statement_timeout_ms} ms)")
            elif line.startswith("identity "):
                identity = line.split(" ", 1)[1]
                if re.fullmatch(r"\d+/\d+", identity):
                    printed.add(identity)
                    observed[s["lineage"]].add(identity)
        kind = error_kind(err)
        if kind:
            errors[kind] += 1
        if s.get("hung"):
            findings.append({"kind": "hung", "text": f"session {s['session']} on {s['server']} "
                             f"ran past {s.get('error', '')[:200]}"})
        parsed.append((s, ids, printed))

    for s, ids, printed in parsed:
        if s.get("automatic"):
            allowed = printed or observed[s["lineage"]]
        else:
            allowed = {s["identity"]}
        where = f"session {s['session']} ({s['lineage']} on {s['server']}, {s['db']})"
        for id_ in ids:
            record(id_, where)
            if identity_of(id_) not in allowed:
                wrong_identity.append(f"{id_} from {where} decodes to {identity_of(id_)}, "
                                      f"the node held {', '.join(sorted(allowed)) or 'none'}")

    probes = 0
    for e in events:
        if e["kind"] == "probe":
            probes += 1
            id_ = int(e["id"])
            where = f"probe '{e['why']}' ({e['lineage']} on {e['server']}, {e['db']})"
            record(id_, where)
            if identity_of(id_) != e["identity"]:
                wrong_identity.append(f"{id_} from {where} decodes to {identity_of(id_)}, "
                                      f"the node held {e['identity']}")

    for id_, where in sorted(duplicates.items()):
        d = decode(id_)
        findings.append({"kind": "duplicate", "text": f"ID {id_} (ms {d['ms']}, {d['datacenter']}/{d['worker']}, "
                         f"sequence {d['sequence']}) given {len(where)} times: {'; '.join(where[:4])}"})
    for text in wrong_identity[:20]:
        findings.append({"kind": "identity", "text": text})
    if len(wrong_identity) > 20:
        findings.append({"kind": "identity", "text": f"... and {len(wrong_identity) - 20} more"})
    for text in slow[:20]:
        findings.append({"kind": "timeout", "text": text})

    for e in events:
        if e["kind"] == "liveness" and not e["ok"]:
            findings.append({"kind": "liveness", "text": f"{e['lineage']} ({e['server']}, {e['db']}) did not issue "
                             f"within {e['limit']} s after '{e['why']}': {e.get('error', '')[:300]}"})
        if e["kind"] == "refusal" and not e["ok"]:
            findings.append({"kind": "refusal", "text": f"{e['lineage']} ({e['server']}, {e['db']}) must refuse "
                             f"after '{e['why']}', got: {e['got'][:300]}"})
        if e["kind"] == "driver_error":
            findings.append({"kind": "driver", "text": e["error"][:1000]})

    # Server logs: a signal the driver did not send, a PANIC, an assertion.
    killed = {str(e["pid"]) for e in events if e["kind"] == "killed"}
    signal_re = re.compile(r"\(PID (\d+)\) was terminated by signal (\d+)")
    for log in sorted(glob.glob(os.path.join(run_dir, "logs", "*.log"))):
        for line in read_text(log).splitlines():
            m = signal_re.search(line)
            if m and m.group(1) not in killed:
                findings.append({"kind": "crash", "text": f"{os.path.basename(log)}: {line.strip()[:300]}"})
            elif " PANIC: " in line or "TRAP:" in line:
                findings.append({"kind": "crash", "text": f"{os.path.basename(log)}: {line.strip()[:300]}"})

    operations = collections.Counter()
    skipped = collections.Counter()
    faults = collections.Counter()
    for e in events:
        if e["kind"] == "op":
            operations[e["op"].split()[0]] += 1
        elif e["kind"] == "skipped":
            skipped[e["op"].split()[0]] += 1
        elif e["kind"] == "killed":
            faults[f"kill -9 {e['what']}"] += 1
        elif e["kind"] == "crashed":
            faults["kill -9 postmaster (crash)"] += 1
        elif e["kind"] in ("copied", "upgraded", "bound_given", "identity", "stale_state", "taken_over"):
            faults[e["kind"]] += 1
        elif e["kind"] == "refusal":
            faults["refusals checked"] += 1
        elif e["kind"] == "liveness":
            faults["liveness checked"] += 1
    done = operations - skipped
    figures = {
        "ids": ids_total,
        "distinct_ids": len(owners),
        "duplicates": len(duplicates),
        "sessions": len(sessions),
        "probes": probes,
        "operations": dict(sorted(done.items())),
        "skipped": dict(sorted(skipped.items())),
        "faults": dict(sorted(faults.items())),
        "session_errors": dict(sorted(errors.items())),
        "nodes": sorted({s["server"] for s in sessions} | {e["server"] for e in events if "server" in e}),
    }
    return {"findings": findings, "figures": figures}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    parser.add_argument("run_dir")
    arguments = parser.parse_args()
    verdict = check(arguments.run_dir)
    if arguments.json:
        print(json.dumps(verdict))
    else:
        f = verdict["figures"]
        print(f"nodes: {', '.join(f['nodes'])}")
        print(f"operations: {f['operations']} (skipped: {f['skipped']})")
        print(f"faults: {f['faults']}")
        print(f"sessions: {f['sessions']}, errors they met: {f['session_errors']}")
        print(f"IDs checked: {f['ids']} ({f['distinct_ids']} distinct), duplicates: {f['duplicates']}")
        for finding in verdict["findings"]:
            print(f"FINDING {finding['kind']}: {finding['text']}")
    return 1 if verdict["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
