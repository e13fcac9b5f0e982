/*
 * The bound's origin: where a node's bound comes from when pg_snowflake/state
 * is missing or does not cover the data, and what creations, drops, copies
 * and pg_upgrade leave on disk. The ORIGIN configuration of
 * test/model/run.sh; doc/model.md explains it and states what is bounded.
 * Every step names the function in src/ it models (bound_origin.cpp,
 * durable.cpp, state_file.cpp, marks.cpp, bound_check.cpp, bound_wal.cpp).
 * Where the model found a fault in today's rules, the default is the fix and
 * today's behaviour the mutant named after the fault (GIVEN_DESPITE_MARKS).
 * (snowflake.pml checks the durable bound step by step, registry.pml the
 * leases; here the generator is one step.) Mutants (run.sh; MUTANT_*
 * unless said): NO_MARKS and NO_UPGRADE_MARK (1.6's rules (a) and (c)),
 * MARKS_FORGOTTEN, NO_DROP_MARK, DROP_MARK_LATE, VOUCH_ANY, GIVEN_ALONE,
 * GIVEN_DESPITE_MARKS, NO_ORIGIN_CHECK (1.7: an older state file put back
 * is trusted), ORIGIN_KEPT_BY_UPGRADE; and two assumptions broken,
 * DATA_WITHOUT_EXTENSION (O6) and DROP_WITHOUT_PRELOAD (O7).
 * MUTANT_VOUCH_UNKNOWN (1.6's rule (b)) has no counterexample: doc/model.md
 * says why. The dump's carrier of the bound (issue 44: snowflake_dump_bound,
 * carrier.cpp): a node moved by pg_dumpall and a restore under the same
 * identity (O10), in a configuration of its own (-DDUMPS: ORIGIN_DUMP); its
 * mutant NO_DUMP_ADOPTION takes nothing from the restored carriers.
 *
 * The world: one data directory at a time runs as the node of one identity;
 * a copy or pg_upgrade replaces it, and the data directory it came from never
 * issues again (two running at once are registry.pml's). The lineage is
 * everything the node's data came from: every ID issued in the model, by
 * this data directory, by the one it was copied from, by the old cluster of
 * a pg_upgrade and by the new cluster tried out before it.
 *
 * Assumptions (doc/model.md, "Assumptions", ORIGIN, in the same words):
 * O1. Time is discrete (one ID per unit). The node's clock may read any time
 *     from 0 to CMAX at each ID, forward or back (set back, replaying an
 *     earlier time, behind the old IDs): the rules here never look at it, so
 *     no true time is kept. The generator runs at most LEAD units ahead of
 *     its clock.
 * O2. A flushed WAL record and an fsynced state file survive a crash; shared
 *     memory (the generator, the bound's state, the check's progress) does
 *     not. make_durable, the write of a bound (WAL record and state file) and
 *     each hook's write are one step each; a checkpoint may come at any step.
 * O3. A copy or restore takes the whole data directory but pg_snowflake/
 *     (a copy with it is a restart here; a backup older than the last ID is
 *     a point-in-time restore, whose later IDs the README leaves out), with
 *     its WAL since the last checkpoint (a snapshot of a running node) or
 *     none (a stopped one).
 * O4. pg_upgrade: the old cluster stops cleanly; a new cluster is made
 *     (initdb), may be tried out (the extension created, IDs issued, the
 *     extension dropped: pg_upgrade needs it empty) and restarted; Debian's
 *     hook may then copy the old state file to pg_snowflake/given; pg_upgrade
 *     brings the old databases (the extension in them) and resets the WAL;
 *     its server (binary-upgrade mode) marks the bound unknown if the
 *     extension arrives (its creation, or the library loaded by pg_upgrade's
 *     checks and the restore of its C functions). pg_upgrade never copies
 *     pg_snowflake/. A new cluster tried out under the old identity issues
 *     above the old IDs (else it repeats them whatever this protocol does:
 *     README, "Upgrading PostgreSQL").
 * O5. An operator who gives a bound (snowflake_set_bound,
 *     snowflake_restore_bound) gives one above every ID of the lineage.
 * O6. IDs live in databases that have the extension: a data directory whose
 *     lineage issued IDs loses pg_snowflake/ (a copy, a pg_upgrade the hook
 *     gives no bound for) only with the extension in some database. (Broken
 *     by DATA_WITHOUT_EXTENSION: the extension dropped while the bound was
 *     known, its tables kept, is found by no check.)
 * O7. Without the preload, the extension is dropped only in a data directory
 *     that has a state file or marks: no hook sees such a drop (bound_origin.cpp,
 *     "Creations"). (Broken by DROP_WITHOUT_PRELOAD.)
 * O8. Two databases; one creation or drop of the extension at a time, each
 *     two steps (its hook, then its commit or, for a drop, the bound's state
 *     set and the commit); the check reads one database per step. Extension
 *     OIDs are never reused (a vouch names one extension).
 * O9. The replication origin "snowflake_bound" (bound_register.cpp) is a
 *     durable register (its advances are WAL-logged and flushed with the
 *     bound record that follows, and checkpointed): a crash or restart keeps
 *     it; a copy or restore takes it with the data directory (pg_logical/),
 *     or, as a tool that skips it too or a data directory of 1.7, not at all;
 *     pg_upgrade never carries it (a new cluster has its own, set up if it is
 *     tried out, which Debian's hook removes with the given bound, and
 *     pg_upgrade's server clears when it marks the bound unknown). Once
 *     recovery is over, the node consults it (the register worker, at once)
 *     and sets it up as soon as the bound is known: no copy, stop, ID or
 *     put-back falls between a start and that (the start's own check of the
 *     origin's checkpoint closes the window for a state file that names the
 *     origin; doc/model.md). An older copy of pg_snowflake/state (a
 *     backup's) may be put back at a start of a data directory whose origin
 *     has a state (without one, max_replication_slots = 0, the node trusts
 *     the file as 1.7 did: README). The exact bound of a clean shutdown is
 *     the bound here (O1), so the durable bound the state file records is its
 *     bound (bound::to_write is the simulator's and the unit tests').
 * O10. A dump is restored whole: every database whose tables hold the
 *      lineage's IDs, each with the extension and its snowflake_dump_bound
 *      row (pg_dumpall, or pg_dump of each; not -t or -n that leave the row
 *      out, not a database whose extension was dropped while its tables kept
 *      IDs), by a role that may give bounds, into a new cluster (initdb, the
 *      preload) with the old node's identity, before that cluster issues an
 *      ID; the old data directory never issues again. A backend's step issues
 *      in one database, and the carrier of the database's backends is one
 *      value (each backend's is at most it).
 */

#ifndef CMAX
#define CMAX 3          /* the clock reads 0 .. CMAX */
#endif
#ifndef MAXRESTART
#define MAXRESTART 3    /* crashes and stops with their start, in all */
#endif
#ifndef MAXCOPY
#define MAXCOPY 1       /* copies or restores without pg_snowflake/ */
#endif
#ifndef MAXUPG
#define MAXUPG 2        /* pg_upgrades (each: a new cluster, then the upgrade) */
#endif
#ifndef MAXDDL
#define MAXDDL 4        /* creations and drops of the extension, in all */
#endif
#ifndef MAXSTALE
#define MAXSTALE 1      /* older copies of pg_snowflake/state put back */
#endif
#ifndef MAXDUMP
#define MAXDUMP 1       /* moves by pg_dumpall and a restore (O10; with -DDUMPS) */
#endif
#define LEAD 1          /* snowflake.max_lead, in units */
#define NDB 2
#define MAX(a, b) ((a) > (b) -> (a) : (b))

#define KNOWN 0
#define CHECKING 1
#define UNKNOWN 2

#define CREATE 1
#define DROP 2

byte restarts, copies, upgrades, ddls, stales;   /* fault and operation budgets */

/* disk: pg_snowflake/ (lost by a copy without it, never brought by pg_upgrade) */
bool has_st;            /* pg_snowflake/state */
byte st;                /* its bound: IDs below it */
bool marks;             /* pg_snowflake/unknown */
bool has_given;         /* pg_snowflake/given */
byte given;
byte vouch[NDB];        /* pg_snowflake/created.<db>.<ext> for the extension now in db */
byte wal;               /* the largest bound record since the last checkpoint, + 1; 0: none */
/* pg_logical/: the replication origin of the bound (O9) */
bool org;               /* it has a state */
byte ov;                /* its value: the durable bound */
/* a copy of pg_snowflake/state taken earlier (a backup's), O9 */
bool saved;
bool saved_has;
byte saved_st;
/* the databases */
byte ext[NDB];          /* the extension is in db (committed) */

/* shared memory: lost at every start */
bool pre;               /* shared_preload_libraries has snowflake (shared_node) */
byte bstate;            /* BoundState */
byte floor;             /* Generator: the lowest ID it may issue (last_id + 1) */
byte dur;               /* Generator::durable_until */
byte written;           /* NodeShared::written_until */
bool st_written;        /* NodeShared::state_file_written */
byte chk;               /* bound_check.cpp: the next database to ask */
bool found;             /* ... a database had the extension, not vouched for */

/* a creation or drop in flight (O8) */
byte dkind, ddb;
bool dpend;             /* the drop's hook wrote a mark */

/* pg_upgrade in progress: the old cluster, stopped (O4) */
bool waiting;           /* a new cluster made, the old data not yet brought */
byte o_ext[NDB];
bool o_has_st, o_marks;
byte o_st, o_hi;

/* ghosts */
byte watched;           /* one issued ID + 1, chosen freely (0: none yet) */
byte hi;                /* the highest ID of the lineage + 1 (0: none) */

/* The dump's carrier of the bound (issue 44, carrier.cpp). In the databases
 * (they travel with copies, pg_upgrade and, through the restore's trigger,
 * dumps): snowflake_dump_bound, IDs below car[d], covered by the bound of
 * the cluster csys[d]. In shared memory: what the database's backends last
 * read (cov). sys: this cluster (initdb, pg_upgrade's new cluster and a
 * dump's new cluster make another). */
byte car[NDB], csys[NDB], cov[NDB];
byte sys;
byte dumps;
bool restoring;         /* a dump taken, the new cluster started, its restore to come */
byte o_car[NDB], o_csys[NDB];
bool issued_in[NDB];    /* an ID was issued in db since its extension's creation */
bool orphans;           /* a drop left IDs in tables without the extension (O10) */

#define SOME_EXT (ext[0] || ext[1])

/* O6: a copy or an upgrade without given loses pg_snowflake/ only with the
 * extension in some database, or nothing issued */
#ifdef DATA_WITHOUT_EXTENSION
#define O6_COPY true
#define O6_UPGRADE true
#else
#define O6_COPY (SOME_EXT || hi == 0)
#define O6_UPGRADE (o_ext[0] || o_ext[1] || o_hi == 0)
#endif
/* the hook gives the old state file (debian/pg_upgradecluster-hook): the fix,
 * only if the old data directory has no marks */
#ifdef MUTANT_GIVEN_DESPITE_MARKS
#define HOOK_GIVES true
#else
#define HOOK_GIVES (!o_marks)
#endif

#ifdef MUTANT_VOUCH_ANY
#define VOUCHED(d) (vouch[0] || vouch[1])
#else
#define VOUCHED(d) (vouch[d])
#endif

/* marks.cpp append_unknown_mark: on disk first */
inline append_mark() {
#ifndef MUTANT_NO_MARKS
  marks = true
#else
  skip
#endif
}

/* bound_origin.cpp mark_bound_unknown(): the mark, then the state unless known */
inline mark_bound_unknown() {
  append_mark();
  if :: bstate != KNOWN -> bstate = UNKNOWN :: else -> skip fi
}

/* Generator::restore(until) */
inline restore(until) {
  floor = MAX(floor, until); dur = MAX(dur, until)
}

/* durable.cpp write_bound(): the origin raised if it has a state
 * (bound_register.cpp raise_register), the WAL record (flushed with it), the
 * state file, and the vouches removed with the first state file */
inline write_bound(b) {
  if :: org -> ov = MAX(ov, b) :: else -> skip fi;
  wal = MAX(wal, b + 1);
  st = b; has_st = true;
  if :: !st_written -> vouch[0] = 0; vouch[1] = 0 :: else -> skip fi;
  written = b; st_written = true
}

/* bound_register.cpp consult_register(), bound::at_origin: once per start,
 * once recovery is over (the register worker at once; O9); an origin above
 * the state file's bound (the file is older than the data directory:
 * kStateFileOlder) or while checking (kAnswered) gives the bound; marks win. */
inline consult_origin() {
#ifndef MUTANT_NO_ORIGIN_CHECK
  if
  :: org && ((bstate == KNOWN && ov > written) || bstate == CHECKING) ->
     printf("origin %d gives the bound (state %d, file %d)\n", ov, bstate, written);
     u = MAX(ov, written);
     restore(u);
     st = u; has_st = true;
     if :: !st_written -> vouch[0] = 0; vouch[1] = 0 :: else -> skip fi;
     written = u; st_written = true;
     bstate = KNOWN;
     u = 0
  :: else -> skip
  fi
#else
  skip
#endif
}

/* the "snowflake bound register" worker (bound_register_worker.cpp,
 * establish_register in bound_register.cpp): the origin's first state, the
 * durable bound in force, as soon as the bound is known (O9) */
inline establish() {
  if :: bstate == KNOWN && !org -> org = true; ov = written :: else -> skip fi
}

/* durable.cpp adopt_bound(b): the origin consulted first, never below it */
inline adopt_bound(b) {
  consult_origin();
  u = MAX(b, written);
  if :: org -> u = MAX(u, ov) :: else -> skip fi;
  write_bound(u);
  restore(u);
  if :: bstate == UNKNOWN -> marks = false :: else -> skip fi;
  bstate = KNOWN;
  u = 0;
  establish()
}

/* The postmaster's start: durable.cpp restore_durable_bound(), then redo of
 * the bound records since the last checkpoint (bound_wal.cpp redo()). A
 * creation or drop in flight is aborted (its hook's files stay). */
inline start_node() {
  floor = 0; dur = 0; chk = 0; found = false;
#ifdef DUMPS
  cov[0] = 0; cov[1] = 0;
#endif
  dkind = 0; ddb = 0; dpend = false;
  /* restore_durable_bound */
  u = st;
  if
  :: has_given ->
#ifdef MUTANT_GIVEN_ALONE
     u = given;
#else
     u = (has_st -> MAX(st, given) : given);
#endif
     st = u; has_st = true; marks = false; has_given = false; given = 0;
     bstate = KNOWN
  :: else ->
#ifdef MUTANT_MARKS_FORGOTTEN
     marks = false;
#endif
     if
     :: marks -> bstate = UNKNOWN
     :: !marks && has_st -> bstate = KNOWN
     :: else -> bstate = CHECKING
     fi
  fi;
  written = (has_st -> u : 0); st_written = has_st;
  restore(written);
  if :: has_st -> vouch[0] = 0; vouch[1] = 0 :: else -> skip fi;
  /* redo */
  if
  :: wal > 0 ->
     u = wal - 1;
     restore(u);
     if
     :: u > written || !st_written ->
        st = u; has_st = true;     /* write_replayed_bound */
        if :: !st_written -> vouch[0] = 0; vouch[1] = 0 :: else -> skip fi;
        if :: bstate == UNKNOWN -> marks = false :: else -> skip fi;
        written = MAX(u, written); st_written = true
     :: else -> skip
     fi;
     bstate = KNOWN
  :: else -> skip
  fi;
  u = 0;
  /* once recovery is over: the register worker consults the origin at once,
   * and sets it up if the bound is known (O9) */
  if :: bstate == KNOWN -> consult_origin(); establish() :: else -> skip fi
}

/* pg_upgrade: the old databases arrive; the binary-upgrade server marks the
 * bound unknown if the extension arrives (bound_origin.cpp object_access at
 * OAT_POST_CREATE under IsBinaryUpgrade, install_bound_origin_hooks); the
 * WAL is reset; then the new cluster's start */
inline pg_upgrade() {
  waiting = false;
#ifndef MUTANT_NO_UPGRADE_MARK
  if :: o_ext[0] || o_ext[1] -> append_mark() :: else -> skip fi;
#endif
  /* ... and clears the new cluster's own origin (bound_register.cpp
   * clear_register), set up while it was tried out: it covers none of the
   * data that arrives */
#ifndef MUTANT_ORIGIN_KEPT_BY_UPGRADE
  if :: o_ext[0] || o_ext[1] -> org = false; ov = 0 :: else -> skip fi;
#endif
  ext[0] = o_ext[0]; ext[1] = o_ext[1]; vouch[0] = 0; vouch[1] = 0; wal = 0;
#ifdef DUMPS
  car[0] = o_car[0]; car[1] = o_car[1]; csys[0] = o_csys[0]; csys[1] = o_csys[1];
  issued_in[0] = o_ext[0]; issued_in[1] = o_ext[1];   /* as far as the model knows */
#endif
  o_ext[0] = 0; o_ext[1] = 0; o_has_st = false; o_st = 0; o_marks = false; o_hi = 0;
  pre = true;
  start_node();
  printf("pg_upgrade: state %d, bound %d, marks %d\n", bstate, dur, marks)
}

/* A start without the preload: no shared memory, nothing read or written in
 * pg_snowflake/ (given stays, marks stay); a bound record to replay would
 * stop the start (its resource manager is the library's), hence no WAL. */
inline start_without_preload() {
  floor = 0; dur = 0; chk = 0; found = false;
#ifdef DUMPS
  cov[0] = 0; cov[1] = 0;
#endif
  dkind = 0; ddb = 0; dpend = false;
  written = 0; st_written = false; bstate = CHECKING
}

/* carrier.cpp carry() (carrier::after_read): before a backend of database d
 * returns `id` at or past what it last read, it reads the row: another
 * cluster's row above the node's written bound is taken as the bound first
 * (adopt_bound), and an ID reserved below it is dropped (reserved again in a
 * later step); then the row rises to the written bound, as this cluster's.
 * The bound is known here: the ID had it. */
inline carry() {
  if
  :: id != 255 && id >= cov[d] ->
     if
#ifndef MUTANT_NO_DUMP_ADOPTION
     :: csys[d] != sys && car[d] > written ->
        printf("the first ID in db%d takes its carrier %d\n", d, car[d]);
        adopt_bound(car[d]);
        if :: id < car[d] -> id = 255 :: else -> skip fi
#endif
     :: else -> skip
     fi;
     if :: car[d] < written -> car[d] = written; csys[d] = sys :: else -> skip fi;
     cov[d] = MAX(written, car[d])
  :: else -> skip
  fi
}

/* The restore of database d of a dump (O10): CREATE EXTENSION (the creation
 * hook, note_extension_created; the script's row through the trigger), then
 * the COPY of the dumped row: its trigger (snowflake_dump_bound_insert,
 * carrier::admit, a role that may give bounds) takes it as the node's bound
 * where the bound is known, else raises the generator's floor and keeps the
 * dumped cluster's name on the merged row for the first ID to take. */
inline restore_dump(d) {
  if
  :: bstate == KNOWN -> if :: !st_written -> adopt_bound(written) :: else -> skip fi
  :: bstate == CHECKING -> vouch[d] = 1
  :: else -> skip
  fi;
  ext[d] = 1; car[d] = (bstate == KNOWN -> written : 0); csys[d] = sys; cov[d] = 0;
  issued_in[d] = false;
#ifndef MUTANT_NO_DUMP_ADOPTION
  if
  :: o_car[d] > written && bstate == KNOWN ->
     adopt_bound(o_car[d]);
     if :: o_car[d] > car[d] -> car[d] = o_car[d]; csys[d] = sys :: else -> skip fi
  :: o_car[d] > written && bstate != KNOWN ->
     floor = MAX(floor, o_car[d]);
     if :: o_car[d] > car[d] -> car[d] = o_car[d]; csys[d] = o_csys[d] :: else -> skip fi
  :: else -> skip
  fi
#else
  if :: o_car[d] > car[d] -> car[d] = o_car[d]; csys[d] = sys :: else -> skip fi
#endif
}

proctype World() {
  byte d, c, id, u;
end:
  do

  /* A backend: issue.cpp issue() -> Generator::reserve, make_durable, the
   * compare-and-swap: one step (O2). snowflake_nextval() exists only in a
   * database with the extension and needs the preload. */
  :: atomic { pre && SOME_EXT ->
       if :: ext[0] -> d = 0 :: ext[1] -> d = 1 fi;   /* the database it issues in */
       select(c : 0 .. CMAX);     /* SystemClock::now(): any time (O1) */
       if :: waiting -> c = MAX(c, o_hi) :: else -> skip fi;  /* O4 */
       id = MAX(c, floor);        /* Generator::successor() */
       if
       :: id > c + LEAD -> skip   /* kWaitForClock: a retry later */
       :: else ->
          if
          :: id >= dur ->         /* kNeedDurable: durable.cpp make_durable() */
             if
             :: bstate != KNOWN -> id = 255   /* require_known_bound: refused */
             :: else -> write_bound(id + 1); dur = id + 1   /* publish_durable */
             fi
          :: else -> skip
          fi;
#ifdef DUMPS
          carry();
#endif
          if
          :: id != 255 ->
             floor = id + 1;      /* the compare-and-swap: the ID is returned */
#ifdef DUMPS
             issued_in[d] = true;
#endif
             /* the invariant: no ID of the lineage is issued twice */
             printf("ID %d issued (clock %d, bound %d)\n", id, c, dur);
             assert(watched != id + 1);
             if :: watched == 0 -> watched = id + 1 :: true -> skip fi;
             hi = MAX(hi, id + 1)
          :: else -> skip
          fi
       fi;
       c = 0; id = 0; d = 0 }

  /* The registry worker's check (bound_check.cpp step_bound_check): one
   * database per step (answer_here: the extension there, not vouched for),
   * then conclude_bound_check(). */
  :: atomic { pre && bstate == CHECKING && chk < NDB ->
       /* the first database's asker consults the origin first
        * (bound_check.cpp answer_here) */
       if :: chk == 0 -> consult_origin() :: else -> skip fi;
       if
       :: bstate != CHECKING -> establish(); printf("check: the origin gave the bound\n")
       :: else ->
       if
       :: ext[chk] && !VOUCHED(chk) -> found = true; printf("check: db%d has it\n", chk)
       :: else -> printf("check: db%d has none (or vouched)\n", chk)
       fi;
       chk++
       fi }
  :: atomic { pre && bstate == CHECKING && chk == NDB ->
       if
       :: found -> mark_bound_unknown()
       :: else -> bstate = KNOWN; establish()
       fi;
       printf("check concluded: state %d\n", bstate) }

  /* CREATE EXTENSION in database d: the object access hook
   * (bound_origin.cpp object_access -> note_extension_created; without the
   * preload snowflake_note_created), then the commit. */
  :: atomic { dkind == 0 && ddls < MAXDDL && !restoring -> ddls++;
       select(d : 0 .. NDB - 1);
       if
       :: ext[d] -> ddls--        /* IF NOT EXISTS skipped: no hook */
       :: else ->
          dkind = CREATE; ddb = d;
          printf("create in db%d, state %d, preload %d\n", d, bstate, pre);
          if
          :: pre && bstate == KNOWN ->
             if :: !st_written -> adopt_bound(written) :: else -> skip fi
          :: pre && bstate == CHECKING -> vouch[d] = 1
#ifdef MUTANT_VOUCH_UNKNOWN
          :: pre && bstate == UNKNOWN -> vouch[d] = 1
#else
          :: pre && bstate == UNKNOWN -> skip
#endif
          :: !pre ->
             if :: !has_st && !marks -> vouch[d] = 1 :: else -> skip fi
          fi
       fi;
       d = 0 }
  :: atomic { dkind == CREATE -> ext[ddb] = 1; printf("create committed, vouch %d\n", vouch[ddb]);
#ifdef DUMPS
       /* the script's row, through its trigger: the bound where known */
       car[ddb] = (pre && bstate == KNOWN -> written : 0); csys[ddb] = sys; cov[ddb] = 0;
       issued_in[ddb] = false;
#endif
       dkind = 0; ddb = 0 }

  /* DROP EXTENSION (CASCADE: the tables keep their IDs) in database d: the
   * hook (object_access, OAT_DROP) marks the bound unknown on disk if it is
   * not known; then mark_bound_unknown sets the state (unless known by
   * then), and the drop commits. */
  :: atomic { dkind == 0 && ddls < MAXDDL -> ddls++;
       select(d : 0 .. NDB - 1);
       if
       :: !ext[d] -> ddls--
#ifndef DROP_WITHOUT_PRELOAD
       :: ext[d] && !pre && !has_st && !marks -> ddls--   /* O7 */
#endif
       :: else ->
          dkind = DROP; ddb = d;
          printf("drop in db%d, state %d, preload %d\n", d, bstate, pre);
#ifdef MUTANT_DROP_MARK_LATE
          ext[d] = 0; vouch[d] = 0;   /* the drop commits first */
#endif
#ifndef MUTANT_NO_DROP_MARK
          if :: pre && bstate != KNOWN -> dpend = true :: else -> skip fi;
#endif
#ifndef MUTANT_DROP_MARK_LATE
          if :: dpend -> append_mark() :: else -> skip fi
#else
          skip
#endif
       fi;
       d = 0 }
  :: atomic { dkind == DROP ->
#ifdef MUTANT_DROP_MARK_LATE
       if :: dpend -> append_mark() :: else -> skip fi;
#endif
       if :: dpend && bstate != KNOWN -> bstate = UNKNOWN :: else -> skip fi;
       ext[ddb] = 0; vouch[ddb] = 0;
#ifdef DUMPS
       /* the table goes with the extension; its IDs stay (O10) */
       car[ddb] = 0; csys[ddb] = 0; cov[ddb] = 0;
       if :: issued_in[ddb] -> orphans = true :: else -> skip fi;
       issued_in[ddb] = false;
#endif
       printf("drop committed, marks %d\n", marks);
       dkind = 0; ddb = 0; dpend = false }

  /* snowflake_set_bound / snowflake_restore_bound (bound_functions.cpp ->
   * adopt_bound): the bound of the lineage (O5) */
  :: atomic { pre && bstate != KNOWN && SOME_EXT -> adopt_bound(hi);
       printf("operator gives bound %d\n", written) }

  /* a copy of pg_snowflake/state taken (a backup's), once */
  :: atomic { !saved && has_st && stales < MAXSTALE -> saved = true; saved_has = has_st;
       saved_st = st;
       printf("state file %d copied aside\n", saved_st) }
  /* the copy put back into the stopped data directory whose origin has a
   * state (O9), then a start (crash recovery replays the bound records since
   * the last checkpoint: wal) */
  :: atomic { saved && org && stales < MAXSTALE && !waiting -> stales++;
       has_st = saved_has; st = saved_st;
       saved = false; saved_has = false; saved_st = 0;
       pre = true;
       start_node();
       printf("older state file %d put back: state %d, bound %d\n", st, bstate, dur) }

  /* a checkpoint: later crash recovery replays no record before it */
  :: atomic { wal > 0 -> wal = 0; printf("checkpoint\n") }

  /* a crash or a stop (durable.cpp save_exact_bound: the exact bound is the
   * bound here, O1), and a start, with or without the preload */
  :: atomic { restarts < MAXRESTART -> restarts++;
       if
       :: pre = true; start_node()
       :: wal == 0 -> pre = false; start_without_preload()
       fi;
       printf("restart, preload %d: state %d, bound %d, marks %d\n", pre, bstate, dur, marks) }

  /* a copy or restore without pg_snowflake/ (O3), of a stopped node (no WAL
   * to replay) or a running one (its WAL since the last checkpoint) */
  :: atomic { copies < MAXCOPY && !waiting && !restoring && O6_COPY -> copies++;
       has_st = false; st = 0; marks = false; has_given = false; given = 0;
       vouch[0] = 0; vouch[1] = 0;
       if :: wal = 0 :: skip fi;
       /* with pg_logical/ (the origin) or without it (O9) */
       if :: skip :: org = false; ov = 0 fi;
       pre = true;
       start_node();
       printf("copy without pg_snowflake/: state %d, bound %d\n", bstate, dur) }

  /* pg_upgrade (O4), 1: the old cluster stops cleanly; a new one is made */
  :: atomic { upgrades < MAXUPG && !waiting && !restoring && dkind == 0 -> upgrades++;
       waiting = true;
       o_ext[0] = ext[0]; o_ext[1] = ext[1];
       o_has_st = has_st; o_st = st; o_marks = marks; o_hi = hi;
#ifdef DUMPS
       o_car[0] = car[0]; o_car[1] = car[1]; o_csys[0] = csys[0]; o_csys[1] = csys[1];
       car[0] = 0; car[1] = 0; csys[0] = 0; csys[1] = 0; sys++;
#endif
       has_st = false; st = 0; marks = false; has_given = false; given = 0;
       vouch[0] = 0; vouch[1] = 0; ext[0] = 0; ext[1] = 0; wal = 0;
       org = false; ov = 0;   /* the new cluster's own origin (O9) */
       saved = false;            /* a copy of the old state file is not the new one's */
       pre = true;
       start_node();
       printf("old cluster stopped (bound %d, marks %d); new cluster made\n", o_st, o_marks) }
  /* pg_upgrade, 2: into the new cluster, stopped, its databases without
   * the extension; Debian's hook first (given: the old state file) or no
   * hook, then pg_upgrade and its binary-upgrade server, then the new
   * cluster's start */
  :: atomic { waiting && dkind == 0 && !ext[0] && !ext[1] && o_has_st && HOOK_GIVES ->
       has_given = true; given = o_st;
       /* ... and removes the new cluster's origin checkpoint: its own origin,
        * set up while it was tried out, covers none of the old data */
#ifndef MUTANT_ORIGIN_KEPT_BY_UPGRADE
       org = false; ov = 0;
#endif
       printf("hook: given %d\n", given); pg_upgrade() }
  :: atomic { waiting && dkind == 0 && !ext[0] && !ext[1] && O6_UPGRADE -> pg_upgrade() }

  /* The dump's carrier of the bound (issue 44, O10): pg_dumpall of the node,
   * which stops for good; a new cluster (initdb: another system, no
   * pg_snowflake/) with its identity and the preload starts and checks its
   * databases; then the restore, once the check has concluded (the
   * trigger waits for it): each database's CREATE EXTENSION and the COPY of
   * its snowflake_dump_bound row (restore_dump) */
#ifdef DUMPS
  :: atomic { dumps < MAXDUMP && !waiting && !restoring && dkind == 0 && SOME_EXT && !orphans ->
       dumps++;
       o_ext[0] = ext[0]; o_ext[1] = ext[1];
       o_car[0] = car[0]; o_car[1] = car[1]; o_csys[0] = csys[0]; o_csys[1] = csys[1];
       has_st = false; st = 0; marks = false; has_given = false; given = 0;
       vouch[0] = 0; vouch[1] = 0; ext[0] = 0; ext[1] = 0; wal = 0;
       car[0] = 0; car[1] = 0; csys[0] = 0; csys[1] = 0; sys++;
       org = false; ov = 0; saved = false;   /* initdb: no origin, no earlier state file (O9) */
       restoring = true;
       pre = true;
       start_node();
       printf("dumped (carriers %d %d); new cluster started\n", o_car[0], o_car[1]) }
  :: atomic { restoring && dkind == 0 && pre && bstate != CHECKING ->
       restoring = false;
       if :: o_ext[0] -> restore_dump(0) :: else -> skip fi;
       if :: o_ext[1] -> restore_dump(1) :: else -> skip fi;
       o_ext[0] = 0; o_ext[1] = 0; o_car[0] = 0; o_car[1] = 0; o_csys[0] = 0; o_csys[1] = 0;
       printf("restored: state %d, bound %d, carriers %d %d\n", bstate, written, car[0], car[1]) }
#endif
  od
}

init {
  atomic {
    pre = true;
    bstate = CHECKING;          /* initdb: no pg_snowflake/ */
    run World()
  }
}
