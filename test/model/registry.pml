/*
 * Two nodes of one identity, the registry's leases and takeovers, a streaming
 * standby that replays the bound and is promoted: the configurations
 * REG_TIME, REG_LOST, REG_CRASH, REG_STEP, REG_2B, REG_FAULT and LIVE of
 * test/model/run.sh; doc/model.md explains them and states what is
 * bounded. Where the model found a fault in today's code, the default is
 * the fix and today's behaviour the mutant named after the fault
 * (STALL_RECLAIM, RENEW_LOWERS, RELEASE_LATE; NO_CAS removes a safeguard
 * only two backends of one node can miss). Every step names the function in src/ it
 * models. (snowflake.pml is the NODE configuration: one node, two backends,
 * the durable bound step by step.)
 *
 * Assumptions (doc/model.md, "Assumptions", in the same words):
 * A1. Time is discrete: one unit of the layout is one tick of the true time
 *     `now`, which only moves forward; every event happens at a tick. The
 *     registry's clock is the true time (it never steps). The registry takes
 *     a lease as expired at its expires_at tick (the code waits for the
 *     tick after: `expires_at < now()`), so that the ticks grant no margin
 *     the real, continuous time would not.
 * A2. Each node's wall clock reads now + off, where off is stepped to any
 *     value in -MAXOFF..MAXOFF by a fault (at most MAXSTEPS steps in all).
 * A3. A bound on clock drift between a node and the registry during a lease:
 *     each node's lease clock (CLOCK_BOOTTIME) measures an interval at most
 *     DRIFT units shorter than the registry's (every reading of it chooses
 *     its error anew, 0..DRIFT); the lease margin (lease / 10, the round's)
 *     is MARGIN >= DRIFT.
 * A4. A flushed WAL record and an fsynced state file survive a crash; shared
 *     memory (the generator, the View) does not. make_durable is one step here
 *     (snowflake.pml checks its steps one by one).
 * A5. Both nodes carry the same identity (datacenter_id, worker_id) and system
 *     identifier: node 1 is a streaming standby of node 0 that is promoted
 *     (a later timeline), or a copy of it started elsewhere on the same
 *     timeline (which must wait for the lease to expire). IDs of different
 *     identities differ in their node bits, so only one identity is modelled.
 * A6. Registry requests and replies may be late by any time, or lost (a
 *     timeout); a request the worker gave up on may still be applied later.
 *     The registry applies each statement atomically (one upsert).
 * A7. Each node has BACKENDS backends (2 in REG_2B, 1 in the other
 *     configurations); their steps interleave with each other's, with their
 *     node's registry worker's and with the other node's. One ID per unit:
 *     a unit holds a single ID of a node (its sequence has one value), so
 *     when the clock has not passed the node's last ID, successor() in
 *     Generator::reserve takes the next unit (last_id + 1) if max_lead
 *     allows, and waits otherwise; the compare-and-swap on last_id makes two
 *     backends of one node take different units. Several IDs in one unit
 *     (the sequence) are not modelled here (NODE has two per unit). A
 *     reservation is one step: its read of last_id, its clock reading and
 *     its compare-and-swap happen at one tick (a CAS that finds last_id
 *     changed starts over); a clock reading older than its compare-and-swap,
 *     which gives a lower ID, is not modelled.
 * A8. A backend's waits (the clock, max_lead, make_durable) are retries of
 *     Generator::reserve later, without a new registered_node() (issue()'s
 *     loop), or an error that ends the call.
 */

#ifndef TMAX
#define TMAX 5
#endif
#ifndef BACKENDS
#define BACKENDS 1      /* backends per node (A7): 1 or 2 */
#endif
#if BACKENDS != 1 && BACKENDS != 2
#error BACKENDS is 1 or 2
#endif
#ifndef LEASE
#define LEASE 2         /* snowflake.registry_lease, in units */
#endif
#ifdef MUTANT_NO_MARGIN
#define MARGIN 0
#else
#define MARGIN 1        /* lease / 10 (registry_round.cpp claimed(): valid_until) */
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#define LEAD 1          /* snowflake.max_lead, in units */
#define WINDOW (LEASE + LEAD + 1)  /* claim.cpp ids_before_ms(), the claim's $10 */
#define DI 2            /* Generator::durable_interval(), in units */
#ifndef MAXOFF
#define MAXOFF 2
#endif
#ifndef STEP_HI
#define STEP_HI 1       /* the last node whose clock may step */
#endif
#ifndef MAXSTEPS
#define MAXSTEPS 1
#endif
#ifndef MAXCRASH
#define MAXCRASH 1
#endif
#ifndef MAXLOST
#define MAXLOST 1
#endif
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define SHIFT(x) if :: x > 0 -> x-- :: else -> skip fi

/* LIVE: the liveness check (doc/model.md): node 0 with a good clock (no
 * step, no drift) and a reachable registry (no request or reply lost, no
 * partition, a round of its worker in every unit before time moves on),
 * node 0's backend not held up for a unit between two of its waits, node 1
 * a standby never promoted; after TMAX, time goes on relative to now
 * (SHIFT below), so that every run goes on for ever. Under weak fairness
 * node 0 eventually returns an ID. */
#ifdef LIVE
#define LIVE_ON 1
#define LIVE_OR(c) true
#define LIVE_OR2(c) (c)
#define BUSY(v) if :: n == 0 && v -> busy = busy | (1 << b) \
                    :: n == 0 && !v -> busy = busy & ~(1 << b) :: else -> skip fi
#else
#define LIVE_ON 0
#define LIVE_OR(c) (c)
#define LIVE_OR2(c) true
#define BUSY(v) skip
#endif

#define PRIMARY 1
#define STANDBY 2
#define NONE 255

byte now;                        /* A1: true time = the registry's clock */
short off[2];                    /* A2 */
byte steps, crashes, lost;       /* fault budgets */
bool parted;                     /* node 0 cut off from the registry (once) */
byte role[2], tl[2], inc[2];     /* role, timeline, incarnation */
/* shared memory, lost in a crash */
byte last[2];                    /* GeneratorState::last_id (0: none yet) */
bool held[2], released[2];       /* View::state kHeld, kReleased */
byte vu[2];                      /* View::valid_until_us (lease clock) */
byte vib[2];                     /* View::ids_before */
byte vfl[2];                     /* View::floor: inherited at the claim */
/* disk (A4) */
byte file[2];                    /* pg_snowflake/state and the WAL's bound;
                                  * GeneratorState::durable_until is the same
                                  * here (make_durable is one step) */
byte wal0;                       /* node 0's largest bound record (streamed) */
byte recv;                       /* node 1's flushed copy of node 0's WAL */
/* the registry row (claim.cpp kClaim) */
byte row_node = NONE, row_tl, row_exp /* 0: expired */, row_ib, row_inh, row_inc;
/* a claim at the registry, its reply; a late claim; a release */
bool req[2], rep[2], rep_ok[2];
byte req_ib[2], req_sent[2], req_inc[2], rep_ib[2], rep_inh[2], rep_sent[2], rep_inc[2];
bool sent[2];                    /* a round this unit */
bool rel; byte rel_n, rel_ib, rel_tl, rel_inc;
/* ghosts */
byte watched;                    /* one returned ID, chosen freely (0: none) */
bool issued0;                    /* node 0 returned an ID (liveness) */
byte bid[2 * BACKENDS];          /* each backend's ID between its steps
                                  * (backend b is of node b / BACKENDS) */
byte busy;                       /* LIVE: node 0's backends between two
                                  * waits, one bit each */

inline clock_of(n, c) {          /* SystemClock::now() */
  c = now + off[n];
  if :: c < 0 -> c = 0 :: else -> skip fi
}

/* The View allows node n now, by its lease clock read with error e (A3):
 * lease.cpp view_allows(). */
#define VIEW_OK(n, e) (held[n] && !released[n] && now - (e) < vu[n])

/* Generator::raise_floor(t): last_id up to the last ID before unit t */
inline raise_floor(n, t) {
  if :: t > 0 && last[n] < t - 1 -> last[n] = t - 1 :: else -> skip fi
}

/* The postmaster's start (after a crash, a stop, or a promotion): shared
 * memory anew (the View too: reset_view), then durable.cpp
 * restore_durable_bound() -> Generator::restore(): the floor, then the bound. */
inline start_node(n) {
  inc[n]++;
  held[n] = false; released[n] = false; vu[n] = 0; vib[n] = 0; vfl[n] = 0;
  last[n] = 0; sent[n] = false;
  raise_floor(n, file[n])
}

/* The registry applies a claim or renewal (claim.cpp kClaim): q is node n's
 * reported ids_before (ids_before_ms), ctl its timeline, g its incarnation;
 * ok and u (the inherited floor) are the answer. */
inline apply_claim(n, q, ctl, g, ok, u) {
  ok = false; u = 0;
  if
  :: row_node == NONE -> row_ib = q; ok = true
  :: row_node != NONE && (row_exp == 0 || row_tl < ctl || (row_tl == ctl && row_node == n)) ->
     if
     :: row_tl == ctl && row_node == n -> u = row_inh     /* the same holder */
#ifdef MUTANT_NO_FLOOR
     :: else -> u = 0
#else
     :: else -> u = MAX(row_ib, row_inh)                  /* a takeover */
#endif
     fi;
     row_inh = u;
#ifdef MUTANT_RENEW_LOWERS
     row_ib = MAX(q, u + WINDOW);                         /* today's code */
#else
     /* the same holder never lowers ids_before by a renewal */
     if
     :: row_tl == ctl && row_node == n -> row_ib = MAX(MAX(q, row_ib), u + WINDOW)
     :: else -> row_ib = MAX(q, u + WINDOW)
     fi;
#endif
     ok = true
  :: else -> skip                                         /* held by another */
  fi;
  if :: ok -> row_node = n; row_tl = ctl; row_exp = now + LEASE; row_inc = g :: else -> skip fi
}

/* claim.cpp kRelease: the row promises only the IDs the node issued */
inline apply_release() {
  if
#ifdef MUTANT_RELEASE_LATE
  :: row_node == rel_n && row_tl == rel_tl -> row_ib = rel_ib     /* today's code */
#else
  /* only to the row as the releasing incarnation last renewed it */
  :: row_node == rel_n && row_tl == rel_tl && row_inc == rel_inc -> row_ib = rel_ib
#endif
  :: else -> skip
  fi
}

/* The ID returned to the client, in the step that confirmed it.
 * Invariants: no two issued IDs equal (any returned ID may be the one
 * watched: across the nodes, and within one node across its restarts); the
 * lease keeps the identity to one node at a time (only a node on a later
 * timeline, a promotion, takes it over while it runs). */
inline give(n, id) {
#ifndef LIVE
  assert(id != watched);
  assert(row_node == n || row_tl > tl[n]);
#endif
  if :: watched == 0 -> watched = id :: true -> skip fi;
#ifdef LIVE
  if :: n == 0 -> issued0 = true :: else -> skip fi
#endif
}

/* confirm_registered_node()'s test of the View (e: the lease clock's error):
 * the lease, ids_before, and (the fix of fault (a)) the floor of the
 * current claim, which a reservation made before a reclaim may lie under */
#ifdef MUTANT_STALL_RECLAIM
#define FLOOR_OK(n, b) true
#else
#define FLOOR_OK(n, b) (bid[b] >= vfl[n])
#endif

/* A backend b of node n: issue.cpp issue(). The node's backends share
 * last[n] (GeneratorState::last_id), the View and the bound; each has its
 * own ID, lease reading and incarnation (me). A call that ends (an ID
 * returned, an error, the backend gone with its node) forgets its ID and
 * incarnation in the step that ends it (DONE), so the backend is back at
 * registered_node() with nothing left of the call. */
#define DONE me = 0; bid[b] = 0; BUSY(false); goto top
/* a wait of reserve() (A8): a retry later, or an error that ends the call */
#ifdef LIVE
#define WAIT goto reserve
#else
#define WAIT if :: goto reserve :: DONE fi
#endif
proctype Backend(byte n; byte b) {
  byte me; short c; byte e; bool ok;
top:
  /* issuing_node() -> lease.cpp registered_node(): the lease only */
  do
#ifndef LIVE
  :: now == TMAX -> goto done
#endif
  :: atomic { LIVE_OR(now < TMAX) && role[n] == PRIMARY ->
       select(e : 0 .. DRIFT);
       if :: VIEW_OK(n, e) -> me = inc[n]; e = 0; BUSY(true) :: else -> e = 0; goto top fi } -> break
  od;
reserve:
  /* Generator::reserve(): last_id, the clock, successor() (the next unit
   * after last_id when the clock has not passed it: A7), max_lead, the
   * durable bound; the compare-and-swap. One step here: whatever changes
   * last_id between the read and the CAS (another backend's CAS, the
   * worker's raise_floor) makes the CAS fail, and reserve() starts over
   * from the value the CAS read, so only a reservation from the last_id of
   * its CAS succeeds. */
  atomic {
    if :: inc[n] != me -> DONE :: else -> skip fi;
    BUSY(true);
    clock_of(n, c);
    bid[b] = MAX(c, last[n] + 1);
    if
    :: bid[b] > c + LEAD -> bid[b] = 0; c = 0; BUSY(false); WAIT  /* kWaitForClock */
    :: bid[b] <= c + LEAD && bid[b] >= file[n] ->                  /* kNeedDurable */
       /* durable.cpp make_durable(): record, state file, publish (A4) */
       file[n] = MAX(file[n], bid[b] + DI);
       if :: n == 0 && role[1] == STANDBY -> wal0 = MAX(wal0, file[0]) :: else -> skip fi;
       bid[b] = 0; c = 0;
       WAIT                      /* in LIVE at once, the bound made durable */
    :: else ->
       c = 0;
#ifndef MUTANT_NO_CAS
       last[n] = bid[b]
#else
       skip
#endif
    fi
  };
#ifdef MUTANT_NO_CAS
  /* the mutant: last_id raised to the ID read before, not swapped from the
   * value read (the worker's raise_floor is never undone, but two backends
   * that read the same last_id take the same ID) */
  atomic {
    if :: inc[n] != me -> DONE :: else -> skip fi;
    last[n] = MAX(last[n], bid[b])
  };
#endif
  /* lease.cpp confirm_registered_node(): the View after the reservation,
   * the lease by the node's own clock (A3) and ids_before */
  atomic {
    if :: inc[n] != me -> DONE :: else -> skip fi;
    select(e : 0 .. DRIFT);
#ifdef MUTANT_NO_CAP
    ok = VIEW_OK(n, e) && FLOOR_OK(n, b);
#else
    ok = VIEW_OK(n, e) && bid[b] < vib[n] && FLOOR_OK(n, b);
#endif
#ifdef MUTANT_LEASE_BEFORE
    ok = bid[b] < vib[n] && FLOOR_OK(n, b);  /* the lease was checked before reserving only */
#endif
    e = 0;
    if :: ok -> give(n, bid[b]); DONE :: else -> skip fi
  };
  /* the fallback: registered_node() reads the View again (it may wait for
   * the worker), and the ID is returned if that View allows it, else
   * refused: ereport(ERROR) */
  atomic {
    if :: inc[n] != me -> DONE :: else -> skip fi;
    select(e : 0 .. DRIFT);
    ok = VIEW_OK(n, e) && bid[b] < vib[n] && FLOOR_OK(n, b);
    e = 0;
    if :: ok -> give(n, bid[b]) :: else -> skip fi;
    DONE
  };
done:
  skip
}

/* registry_round.cpp attempt() -> claim.cpp claim(): claim or renew, reporting
 * ids_before (ids_before_ms: the later of the clock and the last ID, plus
 * the window) */
inline send_claim(n) {
  clock_of(n, c);
  req_ib[n] = MAX(c, last[n]) + WINDOW; c = 0;
  req_sent[n] = now; req_inc[n] = inc[n]; sent[n] = true
}
/* registry_round.cpp claimed() (the floor raised: claim.cpp raise_floor()),
 * or conflict(); a reply to an incarnation before a crash is dropped */
inline record(n, ok, ib, inh, at, g) {
  if
  :: g != inc[n] || role[n] != PRIMARY -> skip
  :: else ->
     if
     :: ok -> raise_floor(n, inh);
        if :: !held[n] -> vfl[n] = 0 :: else -> skip fi;
        vfl[n] = MAX(vfl[n], inh);
        held[n] = true; vu[n] = at + LEASE - MARGIN; vib[n] = ib
     :: else -> held[n] = false; vu[n] = 0; vfl[n] = 0
     fi
  fi
}

/* What a request, reply or release carried is forgotten once it is
 * applied, recorded or lost (fewer states, the same behaviour) */
#define FORGET_REQ(n) req_ib[n] = 0; req_sent[n] = 0; req_inc[n] = 0
#define FORGET_REP(n) rep_ok[n] = false; rep_ib[n] = 0; rep_inh[n] = 0; rep_sent[n] = 0; rep_inc[n] = 0
#define FORGET_REL rel_n = 0; rel_ib = 0; rel_tl = 0; rel_inc = 0

#define CAN_SEND(n) (role[n] == PRIMARY && !req[n] && !rep[n] && !sent[n] && \
                     !(n == 0 && parted) && LIVE_OR(now < TMAX))

/* The registry workers (registry_round.cpp), the registry, faults, the operator's
 * moves, and time: one process, each choice one step. */
proctype World() {
  byte n; bool ok; byte u; short c;
  do
  /* a tick; what it ends is forgotten (fewer states, the same behaviour):
   * a lease over by any lease clock, a row's lease expired, the round */
#ifdef LIVE
  /* LIVE: at TMAX time goes on relative to now: every time of node 0 and
   * the row moves one unit back (0 stays 0: long past) */
  :: atomic { now == TMAX && (role[0] != PRIMARY || sent[0] || parted) && !busy && !released[0] ->
       SHIFT(last[0]); SHIFT(file[0]); SHIFT(vu[0]); SHIFT(vib[0]); SHIFT(bid[0]);
#if BACKENDS > 1
       SHIFT(bid[1]);
#endif
       SHIFT(row_exp); SHIFT(row_ib); SHIFT(row_inh);
       if :: row_exp != 0 && row_exp <= now -> row_exp = 0 :: else -> skip fi;
       if :: vu[0] != 0 && now - DRIFT >= vu[0] -> vu[0] = 0 :: else -> skip fi;
       sent[0] = false }
#endif
  :: atomic { now < TMAX && LIVE_OR2((role[0] != PRIMARY || sent[0] || parted) && !busy && !released[0]) -> now++;
       if :: vu[0] != 0 && now - DRIFT >= vu[0] -> vu[0] = 0 :: else -> skip fi;
       if :: vu[1] != 0 && now - DRIFT >= vu[1] -> vu[1] = 0 :: else -> skip fi;
       if :: row_exp != 0 && row_exp <= now -> row_exp = 0 :: else -> skip fi;
       sent[0] = false; sent[1] = false }
  /* a round of worker n with the registry, answered at once: the request,
   * the registry's upsert, the reply recorded (renewals every lease / 3:
   * at most one round per unit) */
  :: atomic { CAN_SEND(0) || CAN_SEND(1) ->
       if :: CAN_SEND(0) -> n = 0 :: CAN_SEND(1) -> n = 1 fi;
       send_claim(n);
       apply_claim(n, req_ib[n], tl[n], inc[n], ok, u);
       record(n, ok, row_ib, u, now, inc[n]);
       FORGET_REQ(n); n = 0; ok = false; u = 0 }
  /* a round whose answer is late (A6): the request sent now, applied by
   * the registry later, its reply recorded later still or lost */
  :: atomic { lost < MAXLOST && (CAN_SEND(0) || CAN_SEND(1)) -> lost++;
       if :: CAN_SEND(0) -> n = 0 :: CAN_SEND(1) -> n = 1 fi;
       send_claim(n); req[n] = true; n = 0 }
  :: atomic { req[0] || req[1] ->
       if :: req[0] -> n = 0 :: req[1] -> n = 1 fi;
       req[n] = false;
       apply_claim(n, req_ib[n], tl[n], req_inc[n], ok, u);
       if
       :: rep_ok[n] = ok; rep_ib[n] = row_ib; rep_inh[n] = u;
          rep_sent[n] = req_sent[n]; rep_inc[n] = req_inc[n]; rep[n] = true
       :: skip                 /* the reply lost: the worker gave up */
       fi;
       FORGET_REQ(n); n = 0; ok = false; u = 0 }
  :: atomic { rep[0] || rep[1] ->
       if :: rep[0] -> n = 0 :: rep[1] -> n = 1 fi;
       rep[n] = false;
       record(n, rep_ok[n], rep_ib[n], rep_inh[n], rep_sent[n], rep_inc[n]);
       FORGET_REP(n); n = 0 }
  /* release() at a clean shutdown (SIGTERM) of node n: "released"
   * published first (the backends read the View after reserving), then
   * last_id read and sent (kRelease); then the node stops (durable.cpp
   * save_exact_bound) and starts again */
  :: atomic { crashes < MAXCRASH && ((held[0] && !released[0]) || (held[1] && !released[1])) ->
       if :: held[0] && !released[0] -> n = 0 :: held[1] && !released[1] -> n = 1 fi;
       crashes++; released[n] = true; n = 0 }
  :: atomic { released[0] || released[1] ->
       if :: released[0] -> n = 0 :: released[1] -> n = 1 fi;
       rel_n = n; rel_ib = last[n] + 1; rel_tl = tl[n]; rel_inc = inc[n];
       if :: last[n] > 0 && last[n] + 1 < file[n] -> file[n] = last[n] + 1 :: else -> skip fi;
       start_node(n);
       if
       :: apply_release(); FORGET_REL   /* at once */
       :: lost < MAXLOST -> lost++; rel = true   /* late (A6), or lost */
       fi;
       n = 0 }
  :: atomic { rel -> rel = false; apply_release(); FORGET_REL }
  /* a clock step, forward or back (A2); not of node 0's clock in LIVE */
  :: atomic { steps < MAXSTEPS -> steps++; select(n : LIVE_ON .. STEP_HI);
       if
       :: off[n] < MAXOFF -> select(u : 1 .. MAXOFF - off[n]); off[n] = off[n] + u
       :: off[n] > -MAXOFF -> select(u : 1 .. MAXOFF + off[n]); off[n] = off[n] - u
       fi; u = 0; n = 0 }
  /* a crash of a primary's postmaster (kill -9, power): restart */
  :: atomic { crashes < MAXCRASH -> crashes++;
       if :: role[0] == PRIMARY -> start_node(0) :: role[1] == PRIMARY -> start_node(1) fi }
  /* a partition between node 0 and the registry, and its end */
  :: atomic { !parted && lost < MAXLOST -> lost++; parted = true }
#ifndef MUTANT_LIVE_UNREACHABLE
  :: atomic { parted -> parted = false }
#endif
  /* streaming replication: node 1 flushes node 0's bound records */
  :: atomic { role[1] == STANDBY && recv < wal0 -> recv = wal0 }
  /* promotion: redo of the received WAL (restore), then a new timeline;
   * or a copy of node 0 started elsewhere on the same timeline (A5) */
  :: atomic { role[1] == STANDBY && !LIVE_ON -> file[1] = recv; role[1] = PRIMARY;
       wal0 = 0; recv = 0;     /* streaming ends */
       if :: tl[1] = 2 :: tl[1] = 1 fi;
       start_node(1) }
#ifndef LIVE
  :: now == TMAX -> break
#endif
  od
}

#ifdef LIVE
ltl live { <> issued0 }   /* node 0 eventually returns an ID */
#endif

init {
  atomic {
    role[0] = PRIMARY; tl[0] = 1; role[1] = STANDBY; tl[1] = 1;
    run Backend(0, 0); run Backend(1, BACKENDS);
#if BACKENDS > 1
    run Backend(0, 1); run Backend(1, 3);
#endif
    run World()
  }
}
