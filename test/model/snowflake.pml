/*
 * snowflake's protocol against duplicate IDs, as a SPIN (Promela) model,
 * checked exhaustively by test/model/run.sh (the NODE configuration). doc/model.md explains it in
 * plain words; every step below names the function in src/ it models.
 *
 * Assumptions (the same words as doc/model.md and the README's guarantees):
 * A1. Time is discrete: one unit of the layout is one tick of the true time
 *     `now`, which only moves forward. The registry's clock is the true time
 *     (it never steps: README, "Restarts, crashes and failover").
 * A2. Each node's wall clock reads now + off, where off is stepped forward and
 *     back by faults (at most MAXSTEPS steps, |off| <= MAXOFF).
 * A3. (The registry, its leases and the drift of the lease clock are in
 *     registry.pml, the REGISTRY configuration.)
 * A4. A flushed WAL record and an fsynced, renamed state file survive a crash;
 *     shared memory does not. A checkpoint may come at any moment, after which
 *     crash recovery replays no record written before it.
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
#define MARGIN 1        /* lease / 10 (registry_round.cpp, valid_until) */
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

#define NNODES 1
#define NBACK 2

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
     atomic {                   /* Generator::publish_durable(until) */
       if :: !ALIVE -> goto top :: else -> dur[n] = MAX(dur[n], u) fi
     };
     goto top
  :: else -> skip
  fi;
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
       :: else -> skip
       fi }
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
  :: now == TMAX -> break
  od
}


init {
  atomic {
    role[0] = PRIMARY; tl[0] = 1;
    has_file[0] = true;          /* CREATE EXTENSION wrote an empty bound */
    ghost_last[0] = -1;
    run Backend(0); run Backend(0);
    run World()
  }
}
