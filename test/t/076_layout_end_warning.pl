# Issue 39, item 8: the server log warns before the layout's time runs out.
#
# Baidu's uid-generator ran out on 2024-11-20 and stopped production without
# a word beforehand. Here a node whose layout ends within a year says so:
#
# 1. A node issuing in 'time:35 worker:5 sequence:12' (2^35 ms, 398 days) with
#    an epoch 200 days ago, so its end is 197 days ahead: at start the log
#    holds exactly one WARNING naming the end, the layout and what to do (the
#    postmaster's, not one per process, given where no worker runs too), and
#    snowflake_status shows the same end. Sessions that issue IDs, a reload
#    and a restarted registry worker add none.
# 2. Its clock (libfaketime) a day later: at the registry worker's next round
#    (a reload wakes it) the log holds the day's warning, the worker's, once;
#    a day after that, another.
# 3. Its clock past the end: the day's warning says the clock is after the
#    layout's range, and snowflake_nextval() refuses with 2200H, saying the
#    IDs have run out.
# 4. The first node, its time field widened into a free bit above it
#    (time:36, doc/layouts.md's remedy for a layout of fewer than 63 bits):
#    its earlier IDs decode as before, it issues above them, and its end is
#    592 days away: no warning.
# 5. A node far from its end, in the default layout (2080) and in the widest
#    (2^62 ms from 1970, far past the end of timestamptz): no warning at
#    start nor at a reload; layout_ends_at is 2080's, then infinity with
#    layout_remaining NULL.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $day = 86400;
my $near_warning = qr/WARNING:  the snowflake ID layout runs out on /;

# The lines of $node's log written since byte $from that match $pattern.
sub count_in_log
{
	my ($node, $from, $pattern) = @_;
	my $log = slurp_file($node->logfile, $from);
	my @found = $log =~ /$pattern/g;
	return scalar @found;
}

# Waits up to 60 s for $count matches of $pattern in $node's log since $from.
sub wait_for_log_count
{
	my ($node, $from, $pattern, $count) = @_;
	for (1 .. 600)
	{
		return 1 if count_in_log($node, $from, $pattern) >= $count;
		usleep(100_000);
	}
	return 0;
}

## 1. A layout that ends in 197 days: one warning at start ---------------------------

my $epoch_ms = (time() - 200 * $day) * 1000;
my $layout = "time:35 worker:5 sequence:12 unit:1ms epoch:$epoch_ms";
my $end_ms = $epoch_ms + 2**35 - 1;
my $node = SnowflakeTest::init_node(
	'near',
	faketime => 1,
	datacenter_id => undef,
	worker_id => 1,
	conf => [ "snowflake.layout = '$layout'", "timezone = 'UTC'" ]);
my $log_at = -s $node->logfile // 0;
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my $log = slurp_file($node->logfile, $log_at);
is(count_in_log($node, $log_at, $near_warning), 1, 'one WARNING at start')
  or diag SnowflakeTest::log_tail($node, 20);
like(
	$log,
	qr/WARNING:  the snowflake ID layout runs out on (\d{4}-\d\d-\d\d [\d:.]+\+00)\n.*DETAIL:  The ID layout \(\Q$layout\E\) holds times up to \1, 19[67] days from now; after that snowflake_nextval\(\) refuses to issue IDs \(SQLSTATE 2200H\)\. This warning repeats once a day\.\n.*HINT:  Before then, choose a layout with a later epoch or a wider time field for the IDs issued from then on, kept apart from the IDs issued so far \(doc\/layouts\.md, "When the layout runs out"\)\./,
	'the WARNING names the end, the layout and what to do');
# The postmaster's, before any other process starts: also where no registry
# worker runs (pg_upgrade's servers, no free worker slot, a standby not yet
# consistent).
my $postmaster = $node->{_pid};
like($log, qr/\[$postmaster\] WARNING:  the snowflake ID layout runs out on /,
	'... given by the postmaster');
my ($logged_end) = $log =~ /the snowflake ID layout runs out on (\S+ \S+)/;
is( $node->safe_psql(
		'postgres',
		"SELECT layout_ends_at = '$logged_end'::timestamptz,
		        (extract(epoch FROM layout_ends_at) * 1000)::bigint,
		        layout_remaining BETWEEN interval '196 days' AND interval '198 days'
		   FROM snowflake_status"),
	"t|$end_ms|t",
	'snowflake_status shows the same end, 2^35 - 1 ms after the epoch, 197 days ahead');

# Sessions that issue, a reload and a restarted registry worker add none.
my $issued;
$issued = $node->safe_psql('postgres', 'SELECT snowflake_nextval()') for 1 .. 5;
my $decoded = $node->safe_psql('postgres', "SELECT * FROM snowflake_decode($issued)");
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
my $worker = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
ok($worker, 'the registry worker runs');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($worker)");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'snowflake registry' AND pid <> $worker"),
	'the registry worker restarts');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
sleep 2;
is(count_in_log($node, $log_at, $near_warning),
	1, 'sessions, reloads and a restarted worker add no warning the same day');

## 2. A day later, the day's warning; the next day another ---------------------------

SnowflakeTest::set_clock_offset($node, $day + 60);
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok(wait_for_log_count($node, $log_at, $near_warning, 2),
	'a day later: the day\'s warning')
  or diag SnowflakeTest::log_tail($node, 20);
$worker = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
like(
	slurp_file($node->logfile, $log_at),
	qr/\[$worker\] WARNING:  the snowflake ID layout runs out on \Q$logged_end\E\n.*DETAIL:  .* 19[56] days from now;/,
	'... by the registry worker: the same end, a day closer');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
$node->safe_psql('postgres', 'SELECT snowflake_nextval()');
sleep 2;
is(count_in_log($node, $log_at, $near_warning), 2, '... given once that day');

SnowflakeTest::set_clock_offset($node, 2 * $day + 120);
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok(wait_for_log_count($node, $log_at, $near_warning, 3),
	'the next day: another');
sleep 2;
is(count_in_log($node, $log_at, $near_warning), 3, '... once');

## 3. Past the end: the day's warning says so, and issuing refuses -------------------

my $past = qr/WARNING:  the system clock reads [^\n]*, after the range of the snowflake ID layout/;
SnowflakeTest::set_clock_offset($node, 199 * $day);
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok(wait_for_log_count($node, $log_at, $past, 1),
	'past the end: the day\'s warning says the clock is after the layout\'s range')
  or diag SnowflakeTest::log_tail($node, 20);
like(
	slurp_file($node->logfile, $log_at),
	qr/after the range of the snowflake ID layout\n.*DETAIL:  [^\n]*\n.*HINT:  [^\n]*the layout's time has run out: issue new IDs in a layout with a later epoch or a wider time field \(doc\/layouts\.md, "When the layout runs out"\)\./,
	'... and what to do');
my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '2200H', 'past the end, snowflake_nextval() refuses with 2200H')
  or diag $r->{stderr};
like($r->{message} // '', qr/snowflake IDs have run out: the timestamp field is used up/,
	'... saying the IDs have run out');
is( $node->safe_psql('postgres',
		"SELECT layout_remaining = interval '0', (extract(epoch FROM layout_ends_at) * 1000)::bigint FROM snowflake_status"),
	"t|$end_ms",
	'past the end: no time remains, the end stays where it was');
$node->stop('fast');

## 4. Widened into a free bit above it, the layout goes on above its IDs ------------

# The clock three days ahead, past the IDs issued a day ahead (a clock
# behind them would refuse for another reason).
SnowflakeTest::set_clock_offset($node, 3 * $day);
$node->append_conf('postgresql.conf',
	"snowflake.layout = 'time:36 worker:5 sequence:12 unit:1ms epoch:$epoch_ms'");
$log_at = -s $node->logfile;
SnowflakeTest::start_node($node);
my $next = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($next, '>', $issued, 'widened to time:36, the node issues above its earlier IDs');
is($node->safe_psql('postgres', "SELECT * FROM snowflake_decode($issued)"),
	$decoded, '... which decode as they did');
is( $node->safe_psql('postgres',
		"SELECT (extract(epoch FROM layout_ends_at) * 1000)::bigint FROM snowflake_status"),
	$epoch_ms + 2**36 - 1,
	'... and the end is twice as far from the epoch');
$log = slurp_file($node->logfile, $log_at);
unlike($log, $near_warning, '... 592 days away: no warning');
like($log, qr/WARNING:  snowflake layout or epoch changed since this node last issued IDs/,
	'... the start says the layout changed');
$node->stop('fast');

## 5. Far from the end: no warning -----------------------------------------------------

# No identity: the widest layout below has no node field, and only
# snowflake_status is read.
my $far = SnowflakeTest::init_node(
	'far',
	datacenter_id => undef,
	worker_id => undef,
	conf => ["timezone = 'UTC'"]);
$log_at = -s $far->logfile // 0;
SnowflakeTest::start_node($far);
$far->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$far->safe_psql('postgres', 'SELECT pg_reload_conf()');
sleep 2;
is( $far->safe_psql('postgres',
		'SELECT layout_ends_at, layout_remaining > interval \'50 years\' FROM snowflake_status'),
	'2080-07-10 17:30:30.208+00|t',
	'the default layout ends in 2080');
my $layout_warning = qr/WARNING:  .*snowflake ID layout/;
unlike(slurp_file($far->logfile, $log_at), $layout_warning,
	'the default layout: no warning at start nor at a reload');

# The widest layout ends 2^62 ms after 1970, past timestamptz's last year.
$far->stop('fast');
$far->append_conf('postgresql.conf',
	"snowflake.layout = 'time:62 sequence:1 epoch:0'\n");
$log_at = -s $far->logfile;
$far->start;
is( $far->safe_psql('postgres',
		'SELECT layout_ends_at, layout_remaining IS NULL FROM snowflake_status'),
	'infinity|t',
	'the widest layout: its end is infinity as a timestamptz, and the time left NULL');
unlike(slurp_file($far->logfile, $log_at), $layout_warning,
	'the widest layout: no warning at start');
$far->stop('fast');

done_testing();
