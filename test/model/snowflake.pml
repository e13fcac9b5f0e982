/*
 * snowflake's protocol against duplicate IDs, as a SPIN (Promela) model,
 * checked exhaustively by test/model/run.sh. doc/model.md explains it in
 * plain words; every step below names the function in src/ it models.
 *
 * Assumptions (the same words as doc/model.md and the README's guarantees):
 * A1. Time is discrete: one unit of the layout is one tick of the true time
 *     `now`, which only moves forward. The registry's clock is the true time
 *     (it never steps: README, "One assumption").
 * A2. Each node's wall clock reads now + off, where off is stepped forward and
 *     back by faults (at most MAXSTEPS steps, |off| <= MAXOFF).
 * A3. Each node's lease clock (CLOCK_BOOTTIME) measures intervals that differ
 *     from the registry's by at most DRIFT units over a lease (the bound on
 *     clock drift between a node and the registry during a lease); the lease
 *     margin (lease / 10 in worker.cpp) is MARGIN >= DRIFT.
 * A4. A flushed WAL record and an fsynced, renamed state file survive a crash;
 *     shared memory does not. A checkpoint may come at any moment, after which
 *     crash recovery replays no record written before it.
 * A5. Both nodes of FAILOVER carry the same identity (datacenter_id,
 *     worker_id): node 1 starts as a streaming standby of node 0 (or a copy or
 *     point-in-time restore of it, which the registry cannot tell apart) and
 *     may be promoted while node 0 still runs (a partition). IDs of different
 *     identities differ in their node bits, so only one identity is modelled.
 * A6. Registry requests and replies may be late by any time, or lost; the
 *     registry applies each statement atomically (one upsert).
 * A7. An operator who gives a bound gives the old data directory's
 *     (snowflake_restore_bound); snowflake_set_bound(now()) on a node that
 *     issued IDs before is outside the model (the README says when it is right).
 * A8. A backend's wait (max_lead, the synchronous standbys) is a retry after
 *     time has passed; an early raise of the bound (refresh_durable) only adds
 *     durable bounds and is left out.
 */

#ifndef TMAX
#define TMAX 4
#endif
#define NSEQ 2          /* sequence values per unit (Layout::max_sequence + 1) */
#define DI 2            /* Generator::durable_interval(), in units */
#define LEASE 3         /* snowflake.registry_lease, in units */
#define MARGIN 1        /* lease / 10 (worker.cpp, valid_until) */
#ifndef DRIFT
#define DRIFT 1
#endif
#define LEAD 1          /* snowflake.max_lead, in units */
#define WINDOW (LEASE + LEAD + 1)  /* claim.cpp: ids_before_ms(), the claim's $10 */
#define MAXOFF 2
#ifndef MAXSTEPS
#define MAXSTEPS 2
#endif
#ifndef MAXCRASH
#define MAXCRASH 1
#endif
#define MAXLOST 1
#define NIDS 40
#define TS(id) ((id) / NSEQ)
#define SQ(id) ((id) % NSEQ)
#define MAXID_BEFORE(t) ((t) * NSEQ - 1)   /* Layout::max_id(t - 1) */
#define MAX(a, b) ((a) > (b) -> (a) : (b))

#ifdef FAILOVER
#define NNODES 2
#define NBACK 1
#else
#define NNODES 1
#define NBACK 2
#endif

#define PRIMARY 1
#define STANDBY 2
#define DOWN 3
#define KNOWN 0
#define UNKNOWN 1

byte now;                        /* A1: true time = the registry's clock */
short off[NNODES];               /* A2 */
byte steps, crashes, lost;       /* fault budgets */
byte role[NNODES];
byte inc[NNODES];                /* incarnation: a crash ends every process's work */
byte tl[NNODES];                 /* timeline */

/* shared memory (GeneratorState, NodeShared): lost in a crash */
short last[NNODES];              /* GeneratorState::last_id */
byte dur[NNODES];                /* GeneratorState::durable_until */
byte written[NNODES];            /* NodeShared::written_until */
bool dlock[NNODES];              /* NodeShared::durable_lock */
byte bstate[NNODES];             /* BoundState */
/* disk: survives a crash (A4) */
byte file[NNODES];               /* pg_snowflake/state */
bool has_file[NNODES];
byte wal_replay[NNODES];         /* largest bound record after the last checkpoint */
byte wal_all[NNODES];            /* largest bound record ever flushed (streamed) */
byte recv;                       /* the standby's flushed copy of node 0's records */

/* the View (view.hpp), written by the registry worker */
bool held[NNODES];
bool released[NNODES];
byte valid_until[NNODES];
byte ids_before[NNODES];

/* the registry row of the one identity (doc/registry.md) */
byte row_node = 255;             /* 255: no row */
byte row_tl;
byte row_expires;
byte row_ids_before;
byte row_inherited;
/* one claim in flight per node, its reply, and a release in flight */
bool req[NNODES]; byte req_sent[NNODES]; byte req_ib[NNODES]; byte req_tl[NNODES];
bool rep[NNODES]; bool rep_ok[NNODES]; byte rep_sent[NNODES]; byte rep_ib[NNODES];
byte rep_inh[NNODES]; byte rep_inc[NNODES];
byte sent_at[NNODES];
bool rel[NNODES]; byte rel_ib[NNODES]; byte rel_tl[NNODES];

/* ghosts: what the invariants are checked against */
byte watched;                    /* one returned ID, chosen freely (0: none yet) */
short ghost_last[NNODES];        /* the last ID each node's CAS installed */

inline clock_of(n, c) {          /* SystemClock::now() */
  c = now + off[n];
  if :: c < 0 -> c = 0 :: else -> skip fi
}

/* Generator::restore(until): the floor first, then the bound */
inline restore(n, until) {
  if
  :: until > 0 ->
#ifndef MUTANT_NO_RESTORE_FLOOR
     last[n] = MAX(last[n], MAXID_BEFORE(until));
#endif
     dur[n] = MAX(dur[n], until)
  :: else -> skip
  fi
}

/* Generator::raise_floor(t) */
inline raise_floor(n, t) {
  if
  :: t > 0 -> last[n] = MAX(last[n], MAXID_BEFORE(t))
  :: else -> skip
  fi
}

/* The postmaster's start after a crash or a stop: shared memory anew, then
 * durable.cpp restore_durable_bound() (the state file) and redo() (the WAL
 * records since the last checkpoint). */
inline start_node(n) {
  inc[n]++;
  last[n] = 0; dur[n] = 0; dlock[n] = false;
  held[n] = false; released[n] = false; valid_until[n] = 0; ids_before[n] = 0;
  rep[n] = false;
  written[n] = MAX(file[n], wal_replay[n]);
#ifndef MUTANT_NO_RESTORE
  restore(n, written[n]);
#endif
  /* "Where the bound comes from": no state file and no record replayed, but
   * the extension is in a database (the bound check finds it): unknown. */
  if
  :: has_file[n] || wal_replay[n] > 0 -> bstate[n] = KNOWN
#ifdef MUTANT_MISSING_FILE_KNOWN
  :: else -> bstate[n] = KNOWN
#else
  :: else -> bstate[n] = UNKNOWN
#endif
  fi
}

/* durable.cpp write_bound(): WAL record, flushed, then the state file; a
 * crash may come between (the caller checks its incarnation). */
inline wal_flush(n, u) {
  wal_replay[n] = MAX(wal_replay[n], u);
  wal_all[n] = MAX(wal_all[n], u)
}
inline state_file(n, u) {
  file[n] = u; has_file[n] = true; written[n] = u;
  /* records at or below the file's bound no longer matter to a restart:
   * forgotten, so that states differing only in them are one */
  if :: wal_replay[n] <= u -> wal_replay[n] = 0 :: else -> skip fi
}

#define ALIVE (inc[n] == me && role[n] == PRIMARY)
#ifdef MUTANT_NO_CAP
#define CAP_OK true
#else
#define CAP_OK (TS(id) < ids_before[n])
#endif

/* A backend: issue.cpp issue(), around Generator::reserve(). */
proctype Backend(byte n) {
  /* Only what a step needs later is kept (fewer states): `l` the last_id
   * read, `id` the candidate, `u` a bound; each is zeroed when done with. */
  byte me; short l; short id; byte u; short c; byte e;
top:
  atomic { me = 0; l = 0; id = 0; u = 0 };
  do
  :: now == TMAX -> goto done
  :: atomic { now < TMAX && role[n] == PRIMARY -> me = inc[n] } -> break
  od;
#ifdef FAILOVER
  /* issue.cpp issuing_node() -> lease.cpp registered_node(): the View
   * allows this node now (before the reservation; MUTANT_LEASE_BEFORE has
   * only this one) */
  atomic {
    if :: !ALIVE -> goto top :: else -> skip fi;
    select(e : 0 .. DRIFT);
    if
    :: held[n] && !released[n] && now - e < valid_until[n] -> e = 0
    :: else -> e = 0; goto top
    fi
  };
#endif
  /* Generator::reserve(): last_id first, then the clock */
  atomic { if :: !ALIVE -> goto top :: else -> l = last[n] fi };
  /* the clock (SystemClock::now), Generator::successor(), and the max_lead
   * check (kWaitForClock / kWaitForSequence: a retry later, A8) */
  atomic {
    if :: !ALIVE -> goto top :: else -> skip fi;
    clock_of(n, c);
    if
    :: c > TS(l) -> id = c * NSEQ
    :: c <= TS(l) && SQ(l) < NSEQ - 1 -> id = l + 1
    :: else -> id = (TS(l) + 1) * NSEQ
    fi;
    if :: TS(id) - c > LEAD -> c = 0; goto top :: else -> c = 0 fi
  };
  /* durable_until: kNeedDurable */
  atomic {
    if :: !ALIVE -> goto top :: else -> skip fi;
#ifndef MUTANT_NO_DURABLE
    if :: TS(id) >= dur[n] -> u = 1; l = 0 :: else -> u = 0 fi
#endif
  };
#ifdef FAILOVER
  /* In FAILOVER, make_durable() is one step (NODE checks its steps one by
   * one): the record, the state file, the bound published. */
  if
  :: u == 1 ->
     atomic {
       if :: !ALIVE || bstate[n] != KNOWN -> goto top :: else -> skip fi;
       if
       :: written[n] < TS(id) + DI / 2 -> u = TS(id) + DI; wal_flush(n, u); state_file(n, u)
       :: else -> skip
       fi;
       dur[n] = MAX(dur[n], written[n]); id = 0
     };
     goto top
  :: else -> skip
  fi;
#else
  if
  :: u == 1 ->
     /* durable.cpp make_durable(ts, wait = true) */
     if :: bstate[n] != KNOWN -> goto top :: else -> skip fi;  /* require_known_bound */
     atomic { (!dlock[n] || !ALIVE) ->
       if :: !ALIVE -> goto top :: else -> dlock[n] = true fi };
     atomic {
       if :: !ALIVE -> goto top :: else -> skip fi;
       /* Generator::durable_bound_near(written_until, ts) */
       if
       :: written[n] < TS(id) + DI / 2 ->
          u = TS(id) + DI;      /* Generator::durable_until_after(ts) */
#ifdef MUTANT_PUBLISH_FIRST
          dur[n] = MAX(dur[n], u);
#endif
          wal_flush(n, u)       /* write_bound: XLogInsert, XLogFlush */
       :: else -> u = written[n]
       fi;
       id = 0
     };
     atomic {                   /* write_bound: write_state_file */
       if :: !ALIVE -> goto top :: else -> skip fi;
       if :: written[n] < u -> state_file(n, u) :: else -> skip fi;
       u = written[n];
       dlock[n] = false
     };
#ifdef SYNC
     /* wait_for_synchronous_standbys(): until the standby flushed the record,
      * or the wait is cancelled (an error: no bound published) */
     if
     :: atomic { ALIVE && (n != 0 || recv >= u || role[1] != STANDBY) -> skip }
     :: goto top
     fi;
#endif
     atomic {                   /* Generator::publish_durable(until) */
       if :: !ALIVE -> goto top :: else -> dur[n] = MAX(dur[n], u) fi
     };
     goto top
  :: else -> skip
  fi;
#endif
  /* the compare-and-swap on last_id */
  atomic {
    if :: !ALIVE -> goto top :: else -> skip fi;
    if
    :: last[n] == l ->
       last[n] = id; l = 0;
       assert(id < NIDS);
       /* invariant: a node's IDs strictly increase in CAS order */
       assert(id > ghost_last[n]);
       ghost_last[n] = id
    :: else -> goto top       /* another caller issued first: retry */
    fi
  };
#ifdef FAILOVER
#ifndef MUTANT_LEASE_BEFORE
  /* lease.cpp confirm_registered_node(): after the reservation, the View:
   * the lease by the node's own clock (A3), and ids_before */
  atomic {
    if :: !ALIVE -> goto top :: else -> skip fi;
    select(e : 0 .. DRIFT);
    if
    :: held[n] && !released[n] && now - e < valid_until[n] && CAP_OK -> e = 0
    :: else -> e = 0; goto top
    fi
  };
#endif
#endif
#ifdef FAILOVER
  /* returned to the client. Invariant: no two issued IDs equal, across the
   * nodes (within one node it follows from the order: every returned ID is
   * one that a CAS installed, and those strictly increase). */
  atomic {
    assert(id != watched);       /* any returned ID may be the one watched */
    if :: watched == 0 -> watched = id :: true -> skip fi
  };
#endif
  goto top;
done:
  skip
}

/* Faults and the operator's moves, and time. */
proctype World() {
  byte n; byte u; short c;
  do
  :: atomic { now < TMAX -> now++ }
  :: atomic { steps < MAXSTEPS -> steps++; select(n : 0 .. NNODES - 1);
       if :: off[n] < MAXOFF -> off[n]++ :: off[n] > -MAXOFF -> off[n]-- fi }
  /* a checkpoint: later crash recovery starts after it */
  :: atomic { (wal_replay[0] > 0 || wal_replay[NNODES - 1] > 0) ->
       select(n : 0 .. NNODES - 1); wal_replay[n] = 0 }
  /* a crash of the postmaster at any step (kill -9, power): restart */
  :: atomic { crashes < MAXCRASH -> crashes++; select(n : 0 .. NNODES - 1);
       if
       :: role[n] == PRIMARY -> start_node(n)
       :: role[n] == STANDBY -> inc[n]++; last[n] = 0; dur[n] = 0;
          restore(n, file[n])  /* then redo goes on from recv */
       :: else -> skip
       fi }
#ifndef FAILOVER
  /* a clean stop and start: durable.cpp save_exact_bound() */
  :: atomic { crashes < MAXCRASH && role[0] == PRIMARY -> crashes++;
       u = TS(last[0]) + 1;
       if :: last[0] > 0 && u < dur[0] -> state_file(0, u) :: else -> skip fi;
       wal_replay[0] = 0;       /* the shutdown checkpoint */
       start_node(0) }
  /* pg_upgrade, or a restore without pg_snowflake/ (after a clean stop):
   * no state file, no WAL to replay; the bound is unknown until the
   * operator gives the old one (A7) */
  :: atomic { role[0] == PRIMARY && has_file[0] && crashes < MAXCRASH -> crashes++;
       u = TS(last[0]) + 1;
       if :: last[0] > 0 && u < dur[0] -> file[0] = u :: else -> skip fi;
       u = file[0];             /* the old data directory's state file */
       has_file[0] = false; file[0] = 0; wal_replay[0] = 0; wal_all[0] = 0;
       start_node(0);
       /* bound_functions.cpp snowflake_restore_bound() -> adopt_bound() */
       if
       :: true ->
          u = MAX(u, written[0]); wal_flush(0, u); state_file(0, u);
          restore(0, u); bstate[0] = KNOWN
       :: true -> skip           /* not yet: every ID is refused */
       fi }
#endif
#ifdef FAILOVER
  /* streaming: the standby receives and flushes node 0's records */
  :: atomic { role[1] == STANDBY && recv < wal_all[0] -> recv = wal_all[0] }
  /* redo() on the standby: restore, then the state file */
  :: atomic { role[1] == STANDBY && recv > file[1] ->
       restore(1, recv); file[1] = recv; has_file[1] = true }
  /* promotion (or a point-in-time restore, a copy promoted): the rest of
   * the received WAL is replayed first, then a new timeline */
  :: atomic { role[1] == STANDBY ->
       if :: recv > file[1] -> file[1] = recv; has_file[1] = true :: else -> skip fi;
       wal_replay[1] = 0;
       role[1] = PRIMARY; tl[1] = 2; start_node(1) }
  /* the registry processes a claim, at any later time (claim.cpp kClaim) */
  :: atomic { (req[0] || req[NNODES - 1]) ->
       if :: req[0] -> n = 0 :: req[NNODES - 1] -> n = NNODES - 1 fi;
       req[n] = false;
       if
       :: row_node == 255 || row_expires < now ||
          (row_tl < req_tl[n] || (row_tl == req_tl[n] && row_node == n)) ->
          if
          :: row_node == 255 -> u = 0
          :: row_node != 255 && row_node == n && row_tl == req_tl[n] -> u = row_inherited
#ifdef MUTANT_NO_FLOOR
          :: else -> u = 0
#else
          :: else -> u = MAX(row_ids_before, row_inherited)
#endif
          fi;
          row_inherited = u;
          row_ids_before = MAX(req_ib[n], u + WINDOW);
          row_node = n; row_tl = req_tl[n]; row_expires = now + LEASE;
          rep_ok[n] = true; rep_ib[n] = row_ids_before; rep_inh[n] = u
       :: else -> rep_ok[n] = false
       fi;
       rep_sent[n] = req_sent[n]; rep[n] = true }
  /* the registry processes a release, at any later time (claim.cpp kRelease) */
  :: atomic { (rel[0] || rel[NNODES - 1]) ->
       if :: rel[0] -> n = 0 :: rel[NNODES - 1] -> n = NNODES - 1 fi;
       rel[n] = false;
       if
       :: row_node == n && row_tl == rel_tl[n] -> row_ids_before = rel_ib[n]
       :: else -> skip
       fi }
  /* a request or reply lost (a partition, a timeout) */
  :: atomic { lost < MAXLOST && (req[0] || rep[0] || rel[0] || req[1] || rep[1] || rel[1]) ->
       lost++;
       if
       :: req[0] -> req[0] = false :: rep[0] -> rep[0] = false :: rel[0] -> rel[0] = false
       :: req[1] -> req[1] = false :: rep[1] -> rep[1] = false :: rel[1] -> rel[1] = false
       fi }
#endif
  :: now == TMAX -> break
  od
}

#ifdef FAILOVER
/* The registry worker of node n (worker.cpp). */
proctype Worker(byte n) {
  byte me; short c; byte u;
  do
  :: now == TMAX -> break
  /* attempt(): claim or renew, reporting ids_before (claim.cpp ids_before_ms) */
  :: atomic { role[n] == PRIMARY && !req[n] && !rel[n] && now < TMAX && sent_at[n] != now + 1 ->
       sent_at[n] = now + 1;     /* one round per unit (a renewal every lease / 3) */
       clock_of(n, c);
       req_ib[n] = MAX(c, TS(last[n])) + WINDOW;
       req_sent[n] = now; req_tl[n] = tl[n]; req[n] = true;
       rep_inc[n] = inc[n] }
  /* record_claim() / record_conflict(), with claim.cpp apply_inherited() */
  :: atomic { rep[n] && role[n] == PRIMARY -> rep[n] = false;
       if
       :: rep_inc[n] != inc[n] -> skip   /* sent before a crash: dropped */
       :: else ->
          if
          :: rep_ok[n] -> raise_floor(n, rep_inh[n]);
             held[n] = true; valid_until[n] = rep_sent[n] + LEASE - MARGIN;
             ids_before[n] = rep_ib[n]
          :: else -> held[n] = false; valid_until[n] = 0
          fi
       fi }
  /* release() at a clean shutdown: "released" first, then last_id; then the
   * node stops (save_exact_bound) and starts again */
  :: atomic { held[n] && role[n] == PRIMARY && crashes < MAXCRASH -> released[n] = true };
     atomic {
       if :: !(role[n] == PRIMARY && released[n]) -> goto next :: else -> skip fi;  /* a crash came first */
       crashes++;
       rel_ib[n] = TS(last[n]) + 1; rel_tl[n] = tl[n]; rel[n] = true;
       u = TS(last[n]) + 1;
       if :: last[n] > 0 && u < dur[n] -> state_file(n, u) :: else -> skip fi;
       wal_replay[n] = 0;
       start_node(n) };
next: skip
  od
}
#endif

init {
  atomic {
    role[0] = PRIMARY; tl[0] = 1;
    has_file[0] = true;          /* CREATE EXTENSION wrote an empty bound */
    ghost_last[0] = -1;
#ifdef FAILOVER
    role[1] = STANDBY; tl[1] = 1; has_file[1] = true; ghost_last[1] = -1;
    run Worker(0); run Worker(1);
    run Backend(0); run Backend(1);
#else
    run Backend(0); run Backend(0);
#endif
    run World()
  }
}
