# The seeded fault campaign (test/campaign/, doc/campaign.md): a cluster of
# real PostgreSQL nodes, writers on every node, and a schedule of faults and
# operations drawn from a seed. Everything a client was given is written to
# files that test/campaign/check.py, the independent checker, reads.
#
# The cluster of one run (node names prefixed with the run's number):
#
#   registry  a plain PostgreSQL holding the registry table (database registry),
#             with a synchronous streaming standby registry_s; the nodes name
#             both in their conninfo (target_session_attrs=read-write)
#   a         datacenter 1, worker 1, snowflake.max_lead = 10min, with a
#             synchronous streaming standby a_s (same identity, as a standby
#             has), the one promotion of a run promotes
#   b         datacenter 1, worker 2, max_lead = 10min; its worker_id changes
#             by reload (identity)
#   c         datacenter 2, worker leased automatically from the registry
#   d         datacenter 3, worker 4, checked against the registry, with
#             max_lead = 1s and max_clock_backward_wait = 2s: a clock stepped
#             back makes it wait, then refuse, never reissue
#
# Every server runs under libfaketime; each starts at the real time and the
# schedule steps it. A "lineage" (a, b, c, d) is one node's history: a
# promotion, a copy or a pg_upgrade moves it to another server, the old one
# staying down for good (else the two would share an identity by the
# operator's doing, not the extension's).
#
# A schedule is a list of operations, one a line (`kind key=value ...`):
#
#   kill_backend node=N     kill -9 of a writer's backend (the postmaster
#                           restarts them all)
#   kill_worker node=N      kill -9 of the registry worker (c, d)
#   crash node=N            kill -9 of every process of the server, postmaster
#                           first (SnowflakeTest::crash_node), then a start
#   restart node=N mode=M   pg_ctl stop -m fast|immediate, then a start
#   clock node=N step=S     the server's clock steps S seconds (+ or -)
#   promote                 a crashes, its synchronous standby is promoted
#   copy node=N hot=0|1 state=0|1 path=P clock=C [origin=0|1]
#                           a copy of the server's files started elsewhere
#                           with its clock at real time + C (clock=C, 0 or
#                           back up to 40 s), the old server gone: hot=1, a
#                           file-system snapshot of the running server (all
#                           its processes stopped, then killed: the machine
#                           is gone); hot=0, the files of the server stopped
#                           cleanly. With state=0 its pg_snowflake/ is left
#                           out, and with origin=0 the replication origins'
#                           checkpoint too (pg_logical/replorigin_checkpoint,
#                           as a data directory of 1.7 has no origin of the
#                           bound; origin=1, the default, keeps it). A cold
#                           one without either must then refuse (55000)
#                           through the steps of P (drop, create, restart,
#                           crash) until the operator gives the bound
#                           (snowflake_restore_bound of the old data
#                           directory). One with the origin (a cold one
#                           whose origin had a state) takes the bound from
#                           it and issues at once (bound_register.cpp), and
#                           a hot one may issue at once if its crash
#                           recovery replays a bound record or an advance of
#                           the origin (durable.cpp: such a bound is above
#                           every ID before it); else they refuse too.
#   upgrade node=N tried=0|1 path=P clock=C
#                           pg_upgrade (same major) into a fresh cluster with
#                           its clock at real time + C (tried=1: extension created, an ID
#                           issued, dropped first); it must refuse as the
#                           copy without state does, until given the bound
#   drop node=N db=I        DROP EXTENSION snowflake CASCADE in the node's Ith
#                           database (the column default goes with it)
#   create node=N db=I      CREATE EXTENSION snowflake and the default again
#   template node=N         CREATE DATABASE ... TEMPLATE app
#   identity node=b worker=W
#                           a new worker_id, by ALTER SYSTEM and reload
#   stale_state node=N mode=M secs=S
#                           an older copy of pg_snowflake/state put back:
#                           the file copied aside, S seconds of writing, the
#                           server stopped (pg_ctl stop -m fast|immediate),
#                           the copy put back, the server's clock set back by
#                           the time since the copy (replaying the IDs
#                           issued meanwhile), a start (issue 44: the
#                           replication origin of the bound tells the file is
#                           older)
#   registry_outage secs=S  the registry stopped for S seconds
#   registry_failover       the registry's primary killed (kill -9, it stays
#                           down), its synchronous standby promoted: the
#                           nodes reconnect to it and lose no lease, as a
#                           registry that kept every commit it acknowledged
#                           (README, "Restarts, crashes and failover")
#
#   registry_recreate       the registry's database dropped (WITH (FORCE)) and
#                           made again while the nodes run: the workers make
#                           the table again, empty, with another OID; every
#                           node sees the change of the registry's history
#                           and claims above its floor (a lease later), a
#                           holder skips the gap above its cap (issue 44)
#   dump node=N clock=C     pg_dumpall of the server, which then stops for
#                           good; a new cluster (initdb) with its identity
#                           and its clock at real time + C (0 or back up to
#                           40 s) restores it through psql: the restored
#                           snowflake_dump_bound rows give it the old
#                           server's bound (issue 44), so it issues at once,
#                           above every ID the old one gave. The operator
#                           first creates the extension again in a database
#                           where it was dropped (README: a database without
#                           it carries no bound)
#   takeover node=c|d clock=C
#                           the node's server dies for good (kill -9) and a
#                           new data directory (initdb: another system
#                           identifier, no pg_snowflake/ of the old one, no
#                           history) takes its identity with its clock at
#                           real time + C, behind the dead node's last IDs: d
#                           configured with the same worker_id (refused until
#                           the dead node's lease expires), c picking the
#                           identity the dead node held once its lease has
#                           expired (the lowest free). Only the floor the
#                           registry hands over (ids_before) keeps its IDs
#                           above the dead node's (issue 46); once it issues,
#                           its clock is set right (NTP)
#
# registry_failover, registry_recreate, stale_state and takeover are not
# drawn with the others (srand's stream stays that of the schedules before
# them): a run draws at most one of each, from generators of their own seeded
# by the seed (_extra_draws), and inserts it after an operation; the origin=
# of each copy comes from such a generator too. dump is drawn so too
# (_dump_draws): at most one a run.
#
# Each operation is followed by `after` seconds of writing (a parameter of
# every line), then the check that the nodes it touched issue again within
# $HEAL_S seconds (or refuse, where they must).
package Campaign;

use strict;
use warnings FATAL => 'all';

use Carp;
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path rmtree);
use File::Spec;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

our $HEAL_S = 30;              # a node issues again this soon after its fault heals
our $LEASE_S = 10;             # snowflake.registry_lease of c and d
our $STATEMENT_TIMEOUT_MS = 10_000;
our $SESSION_LIMIT_S = 90;     # a writer session running longer is hung
our $WARMUP_S = 20;            # the writers' time before the first operation
our $CHECKER = File::Spec->rel2abs(dirname(__FILE__) . '/../campaign/check.py');

my @LINEAGES = qw(a b c d);
my $json = JSON::PP->new->canonical;

## Schedules -------------------------------------------------------------------

# Weights of the operations a schedule draws.
my @KINDS = (
	[ kill_backend => 3 ], [ kill_worker => 1 ], [ crash => 3 ],
	[ restart => 2 ], [ clock => 5 ], [ promote => 1 ],
	[ copy => 3 ], [ upgrade => 2 ], [ drop => 1 ],
	[ create => 1 ], [ template => 1 ], [ identity => 1 ],
	[ registry_outage => 1 ]);
my @EXTRA_KINDS = qw(registry_failover registry_recreate stale_state takeover dump);

sub _pick { return $_[ int(rand(scalar @_)) ]; }

sub _path
{
	my @path;
	my $dropped = 0;
	for (1 .. int(rand(4)))
	{
		my $step = _pick($dropped ? qw(create restart crash) : qw(drop restart crash drop));
		$dropped = 1 if $step eq 'drop';
		$dropped = 0 if $step eq 'create';
		push @path, $step;
	}
	return @path ? join(',', @path) : 'none';
}

# The schedule of `$operations` operations drawn from `$seed` (srand: the same
# seed, the same schedule, on this perl).
sub generate
{
	my ($seed, $operations) = @_;
	srand($seed);
	my $total = 0;
	$total += $_->[1] for @KINDS;
	my @schedule;
	while (@schedule < $operations)
	{
		my $r = rand($total);
		my $kind;
		for (@KINDS) { $r -= $_->[1]; if ($r < 0) { $kind = $_->[0]; last; } }
		$kind //= $KINDS[-1][0];
		my %op = (kind => $kind);
		if ($kind eq 'kill_backend' || $kind eq 'crash') { $op{node} = _pick(@LINEAGES); }
		elsif ($kind eq 'kill_worker') { $op{node} = _pick(qw(c d)); }
		elsif ($kind eq 'restart') { $op{node} = _pick(@LINEAGES); $op{mode} = _pick(qw(fast immediate)); }
		elsif ($kind eq 'clock')
		{
			$op{node} = _pick(@LINEAGES);
			# Mostly forward (a clock found slow and fixed, or wrong ahead),
			# sometimes back; small steps where the node checks a lease.
			my $step = rand() < 0.7 ? 5 + int(rand(56)) : -1 - int(rand(5));
			$step = int($step / 10) || ($step < 0 ? -1 : 1) if $op{node} =~ /[cd]/;
			$op{step} = $step;
		}
		elsif ($kind eq 'copy')
		{
			$op{node} = _pick(qw(a b));
			$op{state} = _pick(0, 0, 1);
			$op{hot} = _pick(0, 1);
			$op{path} = _path();
			$op{clock} = -5 * int(rand(9));
		}
		elsif ($kind eq 'upgrade')
		{
			$op{node} = _pick(qw(a b));
			$op{tried} = _pick(0, 1);
			$op{path} = _path();
			$op{clock} = -5 * int(rand(9));
		}
		elsif ($kind eq 'drop' || $kind eq 'create') { $op{node} = _pick(@LINEAGES); $op{db} = int(rand(3)); }
		elsif ($kind eq 'template') { $op{node} = _pick(@LINEAGES); }
		elsif ($kind eq 'identity') { $op{node} = 'b'; $op{worker} = _pick(2, 20, 21, 22, 23); }
		elsif ($kind eq 'registry_outage') { $op{secs} = 2 + int(rand(14)); }
		$op{after} = 1 + int(rand(3));
		push @schedule, \%op;
	}
	_extra_draws($seed, \@schedule);
	_dump_draws($seed, \@schedule);
	return \@schedule;
}

# Operations added to a schedule after its draw, from a linear congruential
# generator of their own seeded by the seed: a registry failover in about a
# third of the runs, after an operation drawn from the same generator, two to
# four seconds of writing after it; then, drawn after it (so a seed's failover
# is the one it had before), the registry's database made again in about a
# quarter of the runs, the same way; then, drawn after those, a takeover of c
# or d by a new data directory with its clock 25 or 30 s behind in about half
# of the runs (seed 125 among CI's). Perl's rand() is not touched, so the
# operations drawn before are those of the same seed without them.
sub _extra_draws
{
	my ($seed, $schedule) = @_;
	# Issue 44: the replication origin of each copy, and an older state file
	# put back in half the runs, from a generator of their own (the draws of
	# the failover below stay those of the seed before).
	my $y = ($seed * 2246822519 + 374761393) % 4294967296;
	my $other = sub { $y = (1103515245 * $y + 12345) % 2147483648; return $y / 2147483648; };
	$_->{origin} = $other->() < 0.5 ? 0 : 1 for grep { $_->{kind} eq 'copy' } @$schedule;
	if ($other->() < 1 / 2)
	{
		my $at = 1 + int($other->() * scalar @$schedule);
		splice @$schedule, $at, 0, {
			kind => 'stale_state',
			node => $LINEAGES[ int($other->() * 4) ],
			mode => $other->() < 0.5 ? 'fast' : 'immediate',
			secs => 2 + int($other->() * 4),
			after => 1 + int($other->() * 3) };
	}
	my $x = ($seed * 2654435761 + 12345) % 4294967296;
	my $next = sub { $x = (1103515245 * $x + 12345) % 2147483648; return $x / 2147483648; };
	if ($next->() < 1 / 3)
	{
		my $at = 1 + int($next->() * scalar @$schedule);
		splice @$schedule, $at, 0,
		  { kind => 'registry_failover', after => 2 + int($next->() * 3) };
	}
	if ($next->() < 1 / 4)
	{
		my $at = 1 + int($next->() * scalar @$schedule);
		splice @$schedule, $at, 0,
		  { kind => 'registry_recreate', after => 2 + int($next->() * 3) };
	}
	if ($next->() < 1 / 2)
	{
		my $at = 1 + int($next->() * scalar @$schedule);
		my $node = $next->() < 1 / 2 ? 'c' : 'd';
		my $clock = -25 - 5 * int($next->() * 2);
		splice @$schedule, $at, 0,
		  { kind => 'takeover', node => $node, clock => $clock, after => 2 + int($next->() * 3) };
	}
	return;
}

# How many of `$schedule`'s operations generate drew with srand's stream (the
# others are _extra_draws'): generate($seed, that) draws it again.
sub drawn_count
{
	my ($schedule) = @_;
	my %extra = map { $_ => 1 } @EXTRA_KINDS;
	return scalar grep { !$extra{ $_->{kind} } } @$schedule;
}

sub format_op
{
	my ($op) = @_;
	return join(' ', $op->{kind}, map { "$_=$op->{$_}" } grep { $_ ne 'kind' } sort keys %$op);
}

sub format_schedule { return join('', map { format_op($_) . "\n" } @{ $_[0] }); }

sub parse_schedule
{
	my ($text) = @_;
	my @schedule;
	for my $line (split /\n/, $text)
	{
		$line =~ s/#.*//;
		next unless $line =~ /\S/;
		my ($kind, @pairs) = split ' ', $line;
		my %op = (kind => $kind);
		for (@pairs)
		{
			my ($k, $v) = /^(\w+)=(\S*)$/ or croak "schedule: cannot read '$_' in '$line'";
			$op{$k} = $v;
		}
		croak "schedule: unknown operation '$kind'"
		  unless grep { $_ eq $kind } (map { $_->[0] } @KINDS), @EXTRA_KINDS;
		push @schedule, \%op;
	}
	return \@schedule;
}

## A run -------------------------------------------------------------------------

my $runs = 0;

sub _event
{
	my ($run, %event) = @_;
	$event{t} = sprintf('%.3f', time);
	print { $run->{events} } $json->encode(\%event), "\n";
	return;
}

sub _say { diag(@_); return; }

sub _identity_conf
{
	my ($lineage) = @_;
	my %conf = (a => [ 1, 1 ], b => [ 1, 2 ], c => [ 2, undef ], d => [ 3, 4 ]);
	return @{ $conf{$lineage} };
}

sub _conf
{
	my ($run, $lineage) = @_;
	# The framework turns restart_after_crash off; a killed backend then
	# takes the server down. On, as in production, the postmaster restarts.
	my @conf = ("snowflake.max_lead = '10min'", "log_line_prefix = '%m [%p] %b '",
		'restart_after_crash = on', 'max_prepared_transactions = 2');
	if ($lineage eq 'c' || $lineage eq 'd')
	{
		push @conf, "snowflake.registry = '$run->{registry_conninfo}'",
		  "snowflake.registry_lease = '${LEASE_S}s'";
	}
	push @conf, "snowflake.max_lead = '1s'", "snowflake.max_clock_backward_wait = '2s'"
	  if $lineage eq 'd';
	return \@conf;
}

sub _new_server
{
	my ($run, $lineage, $what, %options) = @_;
	my ($dc, $worker) = _identity_conf($lineage);
	$worker = $run->{lineage}{$lineage}{worker} if $run->{lineage}{$lineage};
	my $name = sprintf('r%d_%s_%s%d', $run->{number}, $lineage, $what, ++$run->{servers_made});
	my $node = SnowflakeTest::init_node($name,
		datacenter_id => $dc,
		worker_id => $worker,
		faketime => 1,
		conf => _conf($run, $lineage),
		%options);
	push @{ $run->{servers} }, $node;
	return $node;
}

# Runs `$schedule` (array of operations) on a new cluster; the records go to
# directory `$dir`. Returns the counts of the operations done and skipped.
sub run_schedule
{
	my ($schedule, $dir, %options) = @_;
	make_path($dir);
	my $run = {
		number => ++$runs,
		dir => $dir,
		servers => [],
		sessions => [],
		session_count => 0,
		done => {},
		skipped => {},
	};
	open $run->{events}, '>', "$dir/events.jsonl" or croak "$dir/events.jsonl: $!";
	$run->{events}->autoflush(1);
	open $run->{sessions_fh}, '>', "$dir/sessions.jsonl" or croak "$dir/sessions.jsonl: $!";
	$run->{sessions_fh}->autoflush(1);
	make_path("$dir/sessions", "$dir/logs");
	my $ok = eval { _run($run, $schedule); 1 };
	my $error = $@;
	if (!$ok)
	{
		_say("campaign run $run->{number}: the driver stopped: $error");
		_event($run, kind => 'driver_error', error => "$error");
	}
	eval { _collect($run, force => 1); 1 } or _event($run, kind => 'driver_error', error => "collect: $@");
	# The server logs, for the checker, then every server stopped.
	for my $node (@{ $run->{servers} }, @{ $run->{registries} // [] })
	{
		copy($node->logfile, "$dir/logs/" . $node->name . '.log') if -e $node->logfile;
		eval { $node->stop('immediate', fail_ok => 1) if defined $node->{_pid}; 1 };
	}
	close $run->{events};
	close $run->{sessions_fh};
	unless ($options{keep})
	{
		rmtree($_->basedir) for @{ $run->{servers} }, @{ $run->{registries} // [] };
	}
	return { done => $run->{done}, skipped => $run->{skipped}, error => $ok ? undef : "$error" };
}

sub _run
{
	my ($run, $schedule) = @_;
	my $started = time;
	# The registry: a plain PostgreSQL, the table made by the nodes' workers,
	# and its synchronous standby; the nodes' conninfo names both, and libpq
	# connects to the one that takes writes.
	my $registry = PostgreSQL::Test::Cluster->new("r$run->{number}_registry");
	$registry->init(allows_streaming => 1);
	$registry->start;
	$registry->safe_psql('postgres', 'CREATE DATABASE registry');
	my $registry_standby = SnowflakeTest::init_standby($registry, "r$run->{number}_registry_s");
	$registry_standby->start;
	$registry->safe_psql('postgres',
		"ALTER SYSTEM SET synchronous_standby_names = '*'; SELECT pg_reload_conf()");
	$registry->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'")
	  or croak 'the registry\'s standby did not become synchronous';
	$run->{registry} = $registry;
	$run->{registry_standby} = $registry_standby;
	$run->{registries} = [ $registry, $registry_standby ];
	$run->{registry_conninfo} = sprintf(
		'host=%s,%s port=%d,%d dbname=registry connect_timeout=3 target_session_attrs=read-write',
		$registry->host, $registry_standby->host, $registry->port, $registry_standby->port);

	for my $lineage (@LINEAGES)
	{
		my ($dc, $worker) = _identity_conf($lineage);
		my $node = _new_server($run, $lineage, 'n', allows_streaming => $lineage eq 'a' ? 1 : 0);
		SnowflakeTest::start_node($node);
		# "blocked" comes before "app" in OID order: a prepared transaction
		# holding it holds up the check of the databases (held copies).
		$node->safe_psql('postgres', 'CREATE DATABASE blocked');
		$node->safe_psql('postgres', 'CREATE DATABASE app');
		$node->safe_psql('app', q{
			CREATE EXTENSION snowflake;
			CREATE TABLE ids (id bigint DEFAULT snowflake_nextval(), w int);
		});
		$run->{lineage}{$lineage} = {
			name => $lineage,
			server => $node,
			dc => $dc,
			worker => $worker,
			automatic => !defined $worker,
			dbs => ['app'],
			ext => { app => 1 },
			refusing => 0,
			offset => 0,
		};
	}
	# a's standby, synchronous: a failover then loses no ID a client got
	# (doc/high-availability.md; asynchronous, it may, by design).
	my $a = $run->{lineage}{a};
	my $standby = SnowflakeTest::init_standby($a->{server}, "r$run->{number}_a_s", faketime => 1);
	push @{ $run->{servers} }, $standby;
	SnowflakeTest::start_node($standby);
	SnowflakeTest::set_config($a->{server}, synchronous_standby_names => '*');
	$a->{standby} = $standby;
	for my $lineage (@LINEAGES) { _await_issuing($run, $run->{lineage}{$lineage}, 'setup', $HEAL_S + $LEASE_S); }
	# A history to fall into: a node whose clock is behind issues IDs of
	# the milliseconds the others wrote in before.
	_pause($run, $WARMUP_S);
	_event($run, kind => 'setup', seconds => sprintf('%.1f', time - $started),
		statement_timeout_ms => $STATEMENT_TIMEOUT_MS);

	my $number = 0;
	for my $op (@$schedule)
	{
		$number++;
		my $line = format_op($op);
		note "operation $number: $line";
		_event($run, kind => 'op', number => $number, op => $line);
		my $done = _operation($run, $op);
		if ($done)
		{
			$run->{done}{ $op->{kind} }++;
		}
		else
		{
			$run->{skipped}{ $op->{kind} }++;
			_event($run, kind => 'skipped', number => $number, op => $line);
		}
		_pause($run, $op->{after} // 1);
	}
	# The end: the writers finish their sessions, every node issues.
	_pause($run, 2);
	$run->{stopping} = 1;
	_collect($run, wait => 1);
	for my $lineage (@LINEAGES)
	{
		my $l = $run->{lineage}{$lineage};
		next if $l->{refusing};
		_await_issuing($run, $l, 'end', $HEAL_S);
	}
	return;
}

## Writers ------------------------------------------------------------------------

# One writer session per database of each node (two on a): a psql script of
# INSERT ... RETURNING id (the column default) and snowflake_generate(n),
# each statement timed.
sub _session_sql
{
	my ($l) = @_;
	my @sql = ("\\timing on", "SET statement_timeout = $STATEMENT_TIMEOUT_MS;");
	my $identity = q{SELECT 'identity ' || coalesce(datacenter_id::text, '') || '/' || coalesce(worker_id::text, '') FROM snowflake_registry_status();};
	push @sql, $identity if $l->{automatic};
	# Small statements a few ms apart, for about a second: the IDs spread
	# over most milliseconds (bursts with gaps between them could miss the
	# milliseconds of another server of the node's history), and not too
	# many of them for the checker.
	for my $k (1 .. 200)
	{
		push @sql, $k % 3 == 0
		  ? 'SELECT snowflake_generate(' . (2 + int(rand(20))) . ');'
		  : 'INSERT INTO ids (w) SELECT g FROM generate_series(1, ' . (2 + int(rand(30))) . ') g RETURNING id;';
		push @sql, 'SELECT pg_sleep(0.003);';
	}
	push @sql, $identity if $l->{automatic};
	return join("\n", @sql);
}

sub _top_up
{
	my ($run) = @_;
	return if $run->{stopping};
	_collect($run);
	my %busy;
	$busy{"$_->{lineage}/$_->{db}"}++ for @{ $run->{sessions} };
	for my $lineage (@LINEAGES)
	{
		my $l = $run->{lineage}{$lineage};
		next if $l->{quiet} || !$l->{server}{_pid};
		for my $db (@{ $l->{dbs} })
		{
			next unless $l->{ext}{$db};
			my $slots = $lineage eq 'a' && $db eq 'app' ? 2 : 1;
			my $key = "$lineage/$db";
			next if ($busy{$key} // 0) >= $slots;
			next if ($run->{last_start}{$key} // 0) > time - 0.3;
			$run->{last_start}{$key} = time;
			my $n = ++$run->{session_count};
			my $handle = SnowflakeTest::start_sql($l->{server}, _session_sql($l),
				name => "cw_${lineage}_$n", dbname => $db, timeout => $SESSION_LIMIT_S);
			push @{ $run->{sessions} }, {
				handle => $handle,
				n => $n,
				lineage => $lineage,
				server => $l->{server}->name,
				db => $db,
				identity => $l->{automatic} ? undef : "$l->{dc}/$l->{worker}",
				automatic => $l->{automatic} ? 1 : 0,
				started => time,
			};
			$busy{$key}++;
		}
	}
	return;
}

# Collects the sessions that ended (all of them with `wait`; with `force`,
# those still running are ended).
sub _collect
{
	my ($run, %options) = @_;
	my @running;
	for my $s (@{ $run->{sessions} })
	{
		if ($options{wait})
		{
			my $deadline = $s->{started} + $SESSION_LIMIT_S + 5;
			usleep(100_000) while SnowflakeTest::running($s->{handle}) && time < $deadline;
		}
		my $running = SnowflakeTest::running($s->{handle});
		if ($running && !$options{force} && time - $s->{started} <= $SESSION_LIMIT_S + 5)
		{
			push @running, $s;
			next;
		}
		my ($r, $hung);
		eval { $r = SnowflakeTest::finish_sql($s->{handle}); 1 } or $hung = "$@";
		my $file = sprintf('%s/sessions/%05d', $run->{dir}, $s->{n});
		my %record = (
			session => $s->{n},
			lineage => $s->{lineage},
			server => $s->{server},
			db => $s->{db},
			identity => $s->{identity},
			automatic => $s->{automatic},
			started => sprintf('%.3f', $s->{started}),
			ended => sprintf('%.3f', time),
			out => "sessions/$s->{n}.out",
			err => "sessions/$s->{n}.err");
		$record{out} = sprintf('sessions/%05d.out', $s->{n});
		$record{err} = sprintf('sessions/%05d.err', $s->{n});
		if ($hung)
		{
			$record{hung} = 1;
			$record{error} = substr($hung, 0, 2000);
			# Its output is psql's own buffer, lost with it; the file has what
			# reached it.
			copy("$s->{handle}{file}.out", "$file.out");
			copy("$s->{handle}{file}.err", "$file.err");
		}
		else
		{
			_write("$file.out", $r->{stdout});
			_write("$file.err", $r->{stderr});
			$record{sqlstate} = $r->{sqlstate};
			$record{exit} = $r->{exit};
		}
		print { $run->{sessions_fh} } $json->encode(\%record), "\n";
	}
	$run->{sessions} = \@running;
	return;
}

sub _write
{
	my ($path, $text) = @_;
	open my $fh, '>', $path or croak "$path: $!";
	print $fh $text, "\n";
	close $fh;
	return;
}

# Writers run while the driver waits.
sub _pause
{
	my ($run, $seconds) = @_;
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		_top_up($run);
		usleep(200_000);
	}
	return;
}

# No new sessions on the lineage; those running are waited for (at most
# $seconds), then ended (pg_terminate_backend).
sub _quiesce
{
	my ($run, $l, $seconds, $db) = @_;
	$l->{quiet} = 1;
	my $deadline = time + ($seconds // 5);
	while (time < $deadline)
	{
		_collect($run);
		last unless grep { $_->{lineage} eq $l->{name} && (!defined $db || $_->{db} eq $db) } @{ $run->{sessions} };
		usleep(100_000);
	}
	my $where = defined $db ? "datname = '$db'" : "application_name LIKE 'cw\\_$l->{name}\\_%'";
	_sql($l->{server}, 'postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE $where AND pid <> pg_backend_pid()");
	_collect($run, wait => 1) if grep { $_->{lineage} eq $l->{name} } @{ $run->{sessions} };
	return;
}

sub _sql
{
	my ($node, $db, $sql, %options) = @_;
	return SnowflakeTest::try_sql($node, $sql, dbname => $db, timeout => $options{timeout} // 60);
}

sub _must_sql
{
	my ($node, $db, $sql) = @_;
	my $r = _sql($node, $db, $sql);
	croak sprintf("on %s (%s): %s\nfailed: %s", $node->name, $db, $sql, $r->{stderr}) unless $r->{ok};
	return $r->{stdout};
}

## Checks the driver makes, recorded for the checker ------------------------------------

# One ID, as a client gets it, with the identity the node holds.
sub _probe
{
	my ($run, $l, $db, $why) = @_;
	my $sql = $l->{automatic}
	  ? q{SELECT snowflake_nextval() || ' ' || (SELECT coalesce(datacenter_id::text, '') || '/' || coalesce(worker_id::text, '') FROM snowflake_registry_status())}
	  : 'SELECT snowflake_nextval()';
	my $r = _sql($l->{server}, $db, $sql, timeout => 20);
	if ($r->{ok})
	{
		my ($id, $identity) = split ' ', $r->{stdout};
		_event($run, kind => 'probe', lineage => $l->{name}, server => $l->{server}->name, db => $db,
			id => $id, identity => $l->{automatic} ? $identity : "$l->{dc}/$l->{worker}",
			why => $why);
	}
	return $r;
}

# The lineage issues, in every database with the extension, within $seconds.
sub _await_issuing
{
	my ($run, $l, $why, $seconds) = @_;
	my $started = time;
	for my $db (@{ $l->{dbs} })
	{
		next unless $l->{ext}{$db};
		my $r;
		while (1)
		{
			$r = _probe($run, $l, $db, $why);
			last if $r->{ok} || time - $started > $seconds;
			_pause($run, 0.5);
		}
		_event($run, kind => 'liveness', lineage => $l->{name}, server => $l->{server}->name,
			db => $db, ok => $r->{ok} ? JSON::PP::true : JSON::PP::false,
			seconds => sprintf('%.1f', time - $started), limit => $seconds, why => $why,
			$r->{ok} ? () : (error => ($r->{sqlstate} // '') . ' ' . ($r->{message} // $r->{stderr})));
	}
	return;
}

# The lineage must refuse: snowflake_nextval() fails with 55000, the bound
# unknown (README, "Backups and point-in-time recovery").
sub _must_refuse
{
	my ($run, $l, $why, $must) = @_;
	for my $db (@{ $l->{dbs} })
	{
		next unless $l->{ext}{$db};
		my $r = _probe($run, $l, $db, $why);
		next unless $must;
		my $refused = !$r->{ok} && ($r->{sqlstate} // '') eq '55000'
		  && ($r->{message} // '') =~ /the bound above this node's earlier snowflake IDs is unknown/;
		_event($run, kind => 'refusal', lineage => $l->{name}, server => $l->{server}->name, db => $db,
			ok => $refused ? JSON::PP::true : JSON::PP::false, why => $why,
			got => $r->{ok} ? "an ID, $r->{stdout}" : ($r->{sqlstate} // '') . ' ' . ($r->{message} // $r->{stderr}));
	}
	return;
}

## Operations ---------------------------------------------------------------------------

sub _kill
{
	my ($run, $l, $pid, $what) = @_;
	_event($run, kind => 'killed', server => $l->{server}->name, pid => $pid, what => $what);
	kill 'KILL', $pid;
	return;
}

sub _start
{
	my ($run, $l) = @_;
	SnowflakeTest::set_clock_offset($l->{server}, $l->{offset});
	SnowflakeTest::start_node($l->{server});
	return;
}

sub _crash
{
	my ($run, $l) = @_;
	_event($run, kind => 'crashed', server => $l->{server}->name);
	SnowflakeTest::crash_node($l->{server});
	return;
}

# Returns 1 if done, 0 if it did not apply.
sub _operation
{
	my ($run, $op) = @_;
	my $kind = $op->{kind};
	if ($kind eq 'registry_outage')
	{
		$run->{registry}->stop('fast');
		_pause($run, $op->{secs});
		$run->{registry}->start;
		_await_issuing($run, $run->{lineage}{$_}, 'registry back', $HEAL_S + $LEASE_S) for qw(c d);
		return 1;
	}
	if ($kind eq 'registry_failover')
	{
		my $standby = delete $run->{registry_standby};
		return 0 unless $standby;
		# The primary dies and stays down; every commit it acknowledged is on
		# its synchronous standby, which is promoted.
		_event($run, kind => 'crashed', server => $run->{registry}->name);
		SnowflakeTest::crash_node($run->{registry});
		$standby->promote;
		$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
		  or croak 'the registry\'s standby was not promoted';
		$run->{registry} = $standby;
		_event($run, kind => 'registry_failover', to => $standby->name);
		_await_issuing($run, $run->{lineage}{$_}, 'registry failed over', $HEAL_S + $LEASE_S) for qw(c d);
		return 1;
	}
	if ($kind eq 'registry_recreate')
	{
		# An operator's mistake or a restore: the nodes' workers lose their
		# connection, make the table again, empty, and claim in it. Each saw
		# the old table's OID (pg_snowflake/registry): the change of history
		# raises the floor of its claims, or the gap above a holder's cap.
		_must_sql($run->{registry}, 'postgres', 'DROP DATABASE registry WITH (FORCE)');
		_must_sql($run->{registry}, 'postgres', 'CREATE DATABASE registry');
		_event($run, kind => 'registry_recreate', server => $run->{registry}->name);
		for my $name (@LINEAGES)
		{
			my $l = $run->{lineage}{$name};
			_await_issuing($run, $l, 'registry made again', $HEAL_S + $LEASE_S)
			  unless $l->{refusing};
		}
		return 1;
	}
	if ($kind eq 'promote')
	{
		my $l = $run->{lineage}{a};
		return 0 unless $l->{standby};
		_quiesce($run, $l, 0.5);
		# The old primary dies and stays down.
		_crash($run, $l);
		my $standby = delete $l->{standby};
		$standby->promote;
		$l->{server} = $standby;
		$l->{offset} = 0;    # the standby's clock was never stepped
		$l->{quiet} = 0;
		_await_issuing($run, $l, 'promoted', $HEAL_S);
		return 1;
	}
	my $l = $run->{lineage}{ $op->{node} } or croak "no node $op->{node}";
	return 0 if $l->{refusing};
	if ($kind eq 'kill_backend')
	{
		my $pid;
		for (1 .. 10)
		{
			$pid = _must_sql($l->{server}, 'postgres',
				"SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name LIKE 'cw\\_%' ORDER BY random() LIMIT 1");
			last if $pid;
			_pause($run, 0.3);
		}
		return 0 unless $pid;
		_kill($run, $l, $pid, 'backend');
		usleep(500_000);
		_await_issuing($run, $l, 'backend killed', $HEAL_S);
	}
	elsif ($kind eq 'kill_worker')
	{
		my $pid = _must_sql($l->{server}, 'postgres',
			"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
		return 0 unless $pid;
		_kill($run, $l, $pid, 'registry worker');
		usleep(500_000);
		_await_issuing($run, $l, 'registry worker killed', $HEAL_S + $LEASE_S);
	}
	elsif ($kind eq 'crash')
	{
		_crash($run, $l);
		_start($run, $l);
		_await_issuing($run, $l, 'crashed', $HEAL_S);
	}
	elsif ($kind eq 'restart')
	{
		$l->{server}->stop($op->{mode});
		_start($run, $l);
		_await_issuing($run, $l, "restarted ($op->{mode})", $HEAL_S);
	}
	elsif ($kind eq 'clock')
	{
		my $offset = $l->{offset} + $op->{step};
		$offset = -30 if $offset < -30;
		$offset = 240 if $offset > 240;
		$l->{offset} = $offset;
		SnowflakeTest::set_clock_offset($l->{server}, $offset);
		# a's standby keeps the real time: a promotion meets a clock behind.
		_await_issuing($run, $l, "clock stepped $op->{step} s", $HEAL_S + ($op->{step} < 0 ? -$op->{step} : 0));
	}
	elsif ($kind eq 'drop')
	{
		my $db = $l->{dbs}[ $op->{db} % @{ $l->{dbs} } ];
		return 0 unless $l->{ext}{$db};
		_quiesce($run, $l, 2, $db);
		_must_sql($l->{server}, $db, 'DROP EXTENSION snowflake CASCADE');
		$l->{ext}{$db} = 0;
		$l->{quiet} = 0;
	}
	elsif ($kind eq 'create')
	{
		my $db = $l->{dbs}[ $op->{db} % @{ $l->{dbs} } ];
		return 0 if $l->{ext}{$db};
		_create_extension($l, $db);
		_await_issuing($run, $l, 'extension created', $HEAL_S);
	}
	elsif ($kind eq 'template')
	{
		return 0 if @{ $l->{dbs} } >= 3 || !$l->{ext}{app};
		my $db = 'app' . (1 + @{ $l->{dbs} });
		_quiesce($run, $l, 2, 'app');
		my $r;
		for (1 .. 10)
		{
			$r = _sql($l->{server}, 'postgres', "CREATE DATABASE $db TEMPLATE app");
			last if $r->{ok};
			_sql($l->{server}, 'postgres',
				"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'app'");
			usleep(300_000);
		}
		croak "CREATE DATABASE $db TEMPLATE app: $r->{stderr}" unless $r->{ok};
		push @{ $l->{dbs} }, $db;
		$l->{ext}{$db} = 1;
		$l->{quiet} = 0;
		_await_issuing($run, $l, 'database copied', $HEAL_S);
	}
	elsif ($kind eq 'identity')
	{
		return 0 if $l->{worker} == $op->{worker};
		_quiesce($run, $l, 3);
		SnowflakeTest::set_config($l->{server}, 'snowflake.worker_id' => $op->{worker});
		_event($run, kind => 'identity', lineage => $l->{name}, from => "$l->{dc}/$l->{worker}",
			to => "$l->{dc}/$op->{worker}");
		$l->{worker} = $op->{worker};
		$l->{quiet} = 0;
		_await_issuing($run, $l, 'new identity', $HEAL_S);
	}
	elsif ($kind eq 'stale_state')
	{
		my $state = $l->{server}->data_dir . '/pg_snowflake/state';
		return 0 unless -f $state;
		my $older = slurp_file($state);
		my $copied_at = time;
		_pause($run, $op->{secs});
		_quiesce($run, $l, 0.5);
		if ($op->{mode} eq 'immediate')
		{
			$l->{server}->stop('immediate');
		}
		else
		{
			$l->{server}->stop('fast');
		}
		open my $fh, '>', $state or croak "$state: $!";
		binmode $fh;
		print $fh $older;
		close $fh or croak "$state: $!";
		# The clock back at the time of the copy: the IDs issued since are
		# issued again unless the node sees that the file is older.
		my $back = int(time - $copied_at) + 1;
		$l->{offset} -= $back;
		_event($run, kind => 'stale_state', server => $l->{server}->name, mode => $op->{mode},
			clock_back => $back);
		_start($run, $l);
		$l->{quiet} = 0;
		_await_issuing($run, $l, "older state file put back ($op->{mode})", $HEAL_S + $back);
	}
	elsif ($kind eq 'copy' || $kind eq 'upgrade')
	{
		return _replace($run, $l, $op);
	}
	elsif ($kind eq 'dump')
	{
		return _dump_restore($run, $l, $op);
	}
	elsif ($kind eq 'takeover')
	{
		return _take_over($run, $l, $op);
	}
	else
	{
		croak "unknown operation $kind";
	}
	return 1;
}

sub _held
{
	my ($op) = @_;
	return $op->{kind} eq 'copy' && !$op->{hot} && !$op->{state} && $op->{path} =~ /^drop/;
}

sub _create_extension
{
	my ($l, $db) = @_;
	_must_sql($l->{server}, $db,
		'CREATE EXTENSION snowflake; ALTER TABLE ids ALTER COLUMN id SET DEFAULT snowflake_nextval()');
	$l->{ext}{$db} = 1;
	return;
}

# A copy or a pg_upgrade takes the lineage to a new server at the real time;
# the old one stays down (its data directory kept: the bound is given from it).
sub _replace
{
	my ($run, $l, $op) = @_;
	# A data directory with the extension in no database has issued no IDs
	# as far as its check can tell (durable.cpp): the operator is assumed to
	# copy one that has it.
	_create_extension($l, 'app') unless grep { $l->{ext}{$_} } @{ $l->{dbs} };
	_quiesce($run, $l, 0.5);
	my $old = $l->{server};
	my $new;
	my $state = $op->{kind} eq 'copy' ? $op->{state} : 0;
	# A standby of the old server would be a second copy: it goes too.
	if (my $standby = delete $l->{standby})
	{
		$standby->stop('immediate');
	}
	if ($op->{kind} eq 'copy')
	{
		$new = _new_server($run, $l->{name}, 'copy');
		rmtree($new->data_dir);
		if ($op->{hot})
		{
			# A snapshot (every process stopped), then the machine dies.
			my $postmaster = SnowflakeTest::_postmaster_pid($old);
			kill 'STOP', $postmaster;
			my @children = SnowflakeTest::_children_of($postmaster);
			kill 'STOP', @children if @children;
			PostgreSQL::Test::RecursiveCopy::copypath($old->data_dir, $new->data_dir,
				filterfn => sub { return $_[0] ne 'postmaster.pid'; });
			_crash($run, { server => $old });
		}
		else
		{
			# A cold copy whose operator drops the extension first carries a
			# prepared transaction (an in-doubt one of a transaction manager)
			# that holds up its check of the databases: the drop then comes
			# while the bound is not known yet. (a's synchronous standby is
			# gone by now: the transaction commits locally.)
			_must_sql($old, 'postgres',
				"BEGIN; SET LOCAL synchronous_commit = local; ALTER DATABASE blocked RENAME TO blocked_held; PREPARE TRANSACTION 'hold'")
			  if _held($op);
			$old->stop('fast');
			PostgreSQL::Test::RecursiveCopy::copypath($old->data_dir, $new->data_dir);
		}
		unless ($state)
		{
			rmtree($new->data_dir . '/pg_snowflake');
			unlink $new->data_dir . '/pg_logical/replorigin_checkpoint' unless $op->{origin} // 1;
		}
		chmod 0700, $new->data_dir or croak "chmod: $!";
		$new->append_conf('postgresql.conf',
			'port = ' . $new->port . "\nunix_socket_directories = '" . $new->host . "'");
		$new->append_conf('postgresql.auto.conf', "synchronous_standby_names = ''");
		_event($run, kind => 'copied', from => $old->name, to => $new->name,
			state => $state ? JSON::PP::true : JSON::PP::false,
			hot => $op->{hot} ? JSON::PP::true : JSON::PP::false,
			origin => ($op->{origin} // 1) ? JSON::PP::true : JSON::PP::false);
	}
	else
	{
		$old->stop('fast');
		$new = _new_server($run, $l->{name}, 'upgraded');
		SnowflakeTest::set_clock_offset($new, $op->{clock} // 0);
		if ($op->{tried})
		{
			SnowflakeTest::start_node($new);
			$new->safe_psql('postgres',
				'CREATE EXTENSION snowflake; SELECT snowflake_nextval(); DROP EXTENSION snowflake');
			$new->stop('fast');
		}
		my ($ok, $stdout, $stderr) = SnowflakeTest::run_pg_upgrade($old, $new, timeout => 300);
		croak "pg_upgrade failed:\n$stdout\n$stderr" unless $ok;
		_event($run, kind => 'upgraded', from => $old->name, to => $new->name,
			tried => $op->{tried} ? JSON::PP::true : JSON::PP::false);
	}
	$l->{server} = $new;
	# The new machine's clock: the real time, or behind it (`clock`, s).
	$l->{offset} = $op->{clock} // 0;
	_start($run, $l);
	if ($state)
	{
		$l->{quiet} = 0;
		_await_issuing($run, $l, "$op->{kind} with pg_snowflake/", $HEAL_S);
		return 1;
	}
	# Without the state file it must refuse, whatever the operator does,
	# until given the bound; the writers keep trying meanwhile.
	$l->{refusing} = 1;
	# A hot copy whose recovery replayed a bound record knows its bound; a
	# copy whose replication origin of the bound had a state takes it.
	my $must = !($op->{kind} eq 'copy' && ($op->{hot} || ($op->{origin} // 1)));
	my @path = split /,/, $op->{path};
	# A path that begins with a drop drops at once, as the server starts:
	# maybe while the check of the databases still runs (bound_origin.cpp:
	# a drop while the bound is not known marks it unknown).
	if ($path[0] eq 'drop')
	{
		_must_sql($l->{server}, 'app', 'DROP EXTENSION snowflake CASCADE');
		$l->{ext}{app} = 0;
		_event($run, kind => 'step', step => 'drop at start', server => $new->name);
		shift @path;
		if (_held($op))
		{
			_must_sql($l->{server}, 'postgres', "ROLLBACK PREPARED 'hold'");
			_event($run, kind => 'step', step => 'check released', server => $new->name);
		}
	}
	$l->{quiet} = 0;
	_pause($run, 1);
	_must_refuse($run, $l, "$op->{kind} without pg_snowflake/", $must);
	for my $step (@path)
	{
		next if $step eq 'none';
		if ($step eq 'drop')
		{
			next unless $l->{ext}{app};
			_quiesce($run, $l, 1, 'app');
			_must_sql($l->{server}, 'app', 'DROP EXTENSION snowflake CASCADE');
			$l->{ext}{app} = 0;
			$l->{quiet} = 0;
		}
		elsif ($step eq 'create')
		{
			next if $l->{ext}{app};
			_create_extension($l, 'app');
		}
		elsif ($step eq 'restart')
		{
			$l->{server}->stop('fast');
			_start($run, $l);
		}
		elsif ($step eq 'crash')
		{
			_crash($run, $l);
			_start($run, $l);
		}
		_event($run, kind => 'step', step => $step, server => $new->name);
		_pause($run, 2);
		_must_refuse($run, $l, "$op->{kind} without pg_snowflake/, then $step", $must);
	}
	if (!$l->{ext}{app})
	{
		_create_extension($l, 'app');
		_event($run, kind => 'step', step => 'create', server => $new->name);
		_pause($run, 2);
		_must_refuse($run, $l, "$op->{kind} without pg_snowflake/, then create", $must);
	}
	# The operator gives the bound: the old data directory's state file.
	_must_sql($l->{server}, 'app', "SELECT snowflake_restore_bound('" . $old->data_dir . "')");
	_event($run, kind => 'bound_given', server => $new->name);
	$l->{refusing} = 0;
	_await_issuing($run, $l, "$op->{kind}, the bound given", $HEAL_S);
	return 1;
}

## A dump restored under the same identity (issue 44, branch h-carrier) ---------------

# A dump in about a quarter of the runs, of a or b, after an operation drawn
# from a linear congruential generator of its own (as _extra_draws), two to
# four seconds of writing after it; the new cluster's clock at the real time
# or behind it.
sub _dump_draws
{
	my ($seed, $schedule) = @_;
	my $x = ($seed * 40503 + 977) % 4294967296;
	my $next = sub { $x = (1103515245 * $x + 12345) % 2147483648; return $x / 2147483648; };
	$next->() for 1 .. 3;    # nearby seeds start apart
	return unless $next->() < 1 / 4;
	my $at = 1 + int($next->() * scalar @$schedule);
	my $node = $next->() < 0.5 ? 'a' : 'b';
	my $clock = -5 * int($next->() * 9);
	splice @$schedule, $at, 0,
	  { kind => 'dump', node => $node, clock => $clock, after => 2 + int($next->() * 3) };
	return;
}

# pg_dumpall of the lineage's server, which stops for good; a new cluster
# with its identity restores it with psql (errors of objects the new
# cluster has, such as its bootstrap role, are expected), then issues at
# once: the trigger of each restored snowflake_dump_bound row gave it the
# old server's bound.
sub _dump_restore
{
	my ($run, $l, $op) = @_;
	# The operator creates the extension again where it was dropped: a
	# creation's row lies above every ID the node issued before.
	for my $db (@{ $l->{dbs} }) { _create_extension($l, $db) unless $l->{ext}{$db}; }
	_quiesce($run, $l, 0.5);
	my $old = $l->{server};
	if (my $standby = delete $l->{standby}) { $standby->stop('immediate'); }
	my $file = "$run->{dir}/" . $old->name . '.dumpall.sql';
	my ($stdout, $stderr);
	IPC::Run::run([ 'pg_dumpall', '-d', $old->connstr('postgres'), '-f', $file ],
		'>', \$stdout, '2>', \$stderr)
	  or croak "pg_dumpall failed: $stderr";
	$old->stop('fast');
	my $new = _new_server($run, $l->{name}, 'dumped');
	$l->{server} = $new;
	$l->{offset} = $op->{clock} // 0;
	_start($run, $l);
	IPC::Run::run([ 'psql', '-X', '-q', '-d', $new->connstr('postgres'), '-f', $file ],
		'>', \$stdout, '2>', \$stderr);
	my $have = _must_sql($new, 'postgres', 'SELECT string_agg(datname, \',\' ORDER BY datname) FROM pg_database');
	for my $db (@{ $l->{dbs} })
	{
		croak "the restore of the dump made no database $db: $stderr" unless ",$have," =~ /,$db,/;
	}
	_event($run, kind => 'dumped', from => $old->name, to => $new->name, clock => $l->{offset});
	$l->{quiet} = 0;
	_await_issuing($run, $l, 'restored from a dump', $HEAL_S);
	return 1;
}

# A registry node's server dies for good and a new data directory takes its
# identity (the takeover operation): set up as the first servers were, its
# clock behind. An automatic node's replacement starts once the dead node's
# lease has expired, so that its pick is the identity the dead node held; a
# configured one starts at once and waits in conflict. Without the registry's
# floor it would issue the dead node's IDs again.
sub _take_over
{
	my ($run, $l, $op) = @_;
	return 0 unless $l->{name} eq 'c' || $l->{name} eq 'd';
	_quiesce($run, $l, 0.5);
	my $old = $l->{server};
	_crash($run, $l);
	_pause($run, $LEASE_S + 2) if $l->{automatic};
	my $new = _new_server($run, $l->{name}, 'new');
	$l->{server} = $new;
	$l->{offset} = $op->{clock};
	_start($run, $l);
	$new->safe_psql('postgres', 'CREATE DATABASE blocked');
	$new->safe_psql('postgres', 'CREATE DATABASE app');
	$new->safe_psql('app', q{
		CREATE EXTENSION snowflake;
		CREATE TABLE ids (id bigint DEFAULT snowflake_nextval(), w int);
	});
	$l->{dbs} = ['app'];
	$l->{ext} = { app => 1 };
	_event($run, kind => 'taken_over', from => $old->name, to => $new->name, clock => $op->{clock});
	$l->{quiet} = 0;
	# Its IDs wait for its clock to pass the floor the registry handed over.
	_await_issuing($run, $l, 'taken over by a new data directory', $HEAL_S + $LEASE_S - $op->{clock});
	# Then its clock is set right (NTP): the operations after it meet the
	# node as they would the old one (a floor later in the run, such as the
	# history's after a registry failover, would else wait for it too).
	$l->{offset} = 0;
	SnowflakeTest::set_clock_offset($new, 0);
	return 1;
}

## Checking -------------------------------------------------------------------------------

# Runs the independent checker on a run's directory: its verdict (a hash:
# findings, figures).
sub check
{
	my ($dir) = @_;
	my ($stdout, $stderr);
	IPC::Run::run([ 'python3', $CHECKER, '--json', $dir ], '>', \$stdout, '2>', \$stderr,
		IPC::Run::timeout(600));
	my $verdict = eval { $json->decode($stdout) };
	croak "the checker failed: $stderr\n$stdout" unless $verdict;
	return $verdict;
}

# A run of `$schedule` and its check: the verdict, with the driver's counts.
sub run_and_check
{
	my ($schedule, $dir, %options) = @_;
	my $done = run_schedule($schedule, $dir, %options);
	my $verdict = check($dir);
	$verdict->{done} = $done->{done};
	$verdict->{skipped} = $done->{skipped};
	push @{ $verdict->{findings} }, { kind => 'driver', text => $done->{error} } if $done->{error};
	return $verdict;
}

sub finding_kinds { my %k = map { $_->{kind} => 1 } @{ $_[0]{findings} }; return sort keys %k; }

# For a test made from a shrunk schedule (test/t/09x_campaign_seed_N.pl).
sub test_schedule
{
	my ($text, $label) = @_;
	my $schedule = parse_schedule($text);
	my $dir = PostgreSQL::Test::Utils::tempdir('campaign');
	my $verdict = run_and_check($schedule, $dir);
	is(scalar @{ $verdict->{findings} }, 0, "$label: the checker finds nothing")
	  or diag join("\n", map { "$_->{kind}: $_->{text}" } @{ $verdict->{findings} });
	cmp_ok($verdict->{figures}{ids}, '>', 0, "$label: IDs were checked");
	return $verdict;
}

1;
