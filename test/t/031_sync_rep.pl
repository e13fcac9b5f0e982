# Issue 3 and issue 13: with synchronous replication, no ID is issued under a
# durable bound the synchronous standbys have not confirmed, whatever the
# session's synchronous_commit.
#
# The primary names its standby in synchronous_standby_names. With the
# standby stopped, a snowflake_nextval() that must raise the durable bound
# (the first one after a clean restart, whose exact bound is the last ID + 1)
# waits for the standby (wait event SyncRep), in sessions at
# synchronous_commit = on, local and off alike: a session may lower the
# setting for its own commits, but a bound serves every backend. Ending the
# wait (pg_cancel_backend, statement_timeout) fails the call with SQLSTATE
# 57014 and publishes nothing: the node's durable bound stays where it was
# and no ID comes back; snowflake_status counts those waits and their time.
# Once the standby is back, IDs flow without waiting,
# and after a failover to it, the promoted standby issues above every ID the
# old primary returned.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $primary = SnowflakeTest::init_node('primary', allows_streaming => 1);
SnowflakeTest::start_node($primary);
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $standby = SnowflakeTest::init_standby($primary, 'standby');
SnowflakeTest::start_node($standby);
$primary->wait_for_catchup($standby);

SnowflakeTest::set_config($primary, synchronous_standby_names => 'standby');
ok( $primary->poll_query_until('postgres',
		"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'"),
	'the standby is synchronous');
# A plain SELECT: a transaction that writes a table would wait again at its
# commit, for the same reason.
my $result = SnowflakeTest::try_sql($primary, 'SELECT snowflake_nextval()');
ok($result->{ok}, 'IDs are issued while the synchronous standby is up')
  or diag "stderr: $result->{stderr}";
my $last = $result->{stdout};

$standby->stop;
SnowflakeTest::restart_node($primary);
my $bound_before =
  $primary->safe_psql('postgres', 'SELECT durable_until FROM snowflake_status');
note "durable bound after the restart: $bound_before";

# One waiting session per synchronous_commit level, each ended by
# pg_cancel_backend; none may return an ID.
for my $level (qw(on local off))
{
	my $name = "sync_waiter_$level";
	my $handle = SnowflakeTest::start_sql($primary,
		"SET synchronous_commit = $level;\nSELECT snowflake_nextval();",
		name => $name);
	my $pid = SnowflakeTest::backend_pid($primary, $name);
	ok( $primary->poll_query_until('postgres',
			"SELECT wait_event IS NOT DISTINCT FROM 'SyncRep' FROM pg_stat_activity WHERE pid = $pid"
		),
		"synchronous_commit = $level: with the standby down, the call waits for it (SyncRep)");
	ok(SnowflakeTest::running($handle), "synchronous_commit = $level: still waiting");
	my $start = time;
	$primary->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	$result = SnowflakeTest::finish_sql($handle);
	ok(!$result->{ok}, "synchronous_commit = $level: pg_cancel_backend fails the call")
	  or diag "it returned ID $result->{stdout}";
	is($result->{stdout}, '', "synchronous_commit = $level: no ID came back");
	is($result->{sqlstate}, '57014', "synchronous_commit = $level: SQLSTATE 57014")
	  or diag "stderr: $result->{stderr}";
	like(
		$result->{message} // '',
		qr/canceled the wait for synchronous standbys to confirm a new snowflake ID bound/,
		"synchronous_commit = $level: the error says what was waited for");
	like($result->{detail} // '', qr/no ID under it was issued/,
		"synchronous_commit = $level: the detail says nothing was issued");
	cmp_ok(time - $start, '<', 20, "synchronous_commit = $level: at once (< 20 s)");
}

# statement_timeout ends the wait the same way.
my $start = time;
$result = SnowflakeTest::try_sql($primary,
	"SET synchronous_commit = off;\nSET statement_timeout = '1s';\nSELECT snowflake_nextval();");
ok(!$result->{ok} && $result->{stdout} eq '', 'statement_timeout fails the call, no ID')
  or diag "stdout: $result->{stdout}";
is($result->{sqlstate}, '57014', 'statement_timeout: SQLSTATE 57014')
  or diag "stderr: $result->{stderr}";
cmp_ok(time - $start, '<', 20, 'statement_timeout: ended in time');

is($primary->safe_psql('postgres', 'SELECT durable_until FROM snowflake_status'),
	$bound_before, 'no bound was published while the standby was down');

# Each of those calls waited for the durable bound, and snowflake_status
# counts the waits and their time, those that failed too: the one ended by
# statement_timeout alone waited about a second (a little less: the timeout
# counts from the statement's start).
my ($waits, $wait_ms) = split /\|/,
  $primary->safe_psql('postgres', 'SELECT durable_waits, durable_wait_ms FROM snowflake_status');
cmp_ok($waits, '>=', 4, 'snowflake_status.durable_waits counts the four failed waits');
cmp_ok($wait_ms, '>=', 900, 'snowflake_status.durable_wait_ms counts their time');

# The standby comes back: the waiting ends, IDs flow, all above the old ones.
SnowflakeTest::start_node($standby);
ok( $primary->poll_query_until('postgres',
		"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'"),
	'the standby is back and synchronous');
$result = SnowflakeTest::try_sql($primary,
	"SET synchronous_commit = off;\nSELECT snowflake_nextval() FROM generate_series(1, 1000);");
ok($result->{ok}, 'IDs are issued again') or diag "stderr: $result->{stderr}";
my @ids = split /\n/, $result->{stdout};
is(scalar @ids, 1000, '1000 IDs');
my $previous = $last;
my $disorder = grep { my $bad = $_ <= $previous; $previous = $_; $bad } @ids;
is($disorder, 0, 'each above the one before, and above those issued before the wait');
my $highest = $ids[-1];

# Every ID the primary returned, at any synchronous_commit, is under a bound
# the standby has: promoted with its clock where it is, it issues above them.
$primary->stop('immediate');
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'the standby is promoted');
SnowflakeTest::set_config($standby, 'snowflake.max_clock_backward_wait' => '10s');
$result = SnowflakeTest::try_sql($standby, 'SELECT snowflake_nextval()');
ok($result->{ok}, 'the promoted standby issues an ID') or diag "stderr: $result->{stderr}";
cmp_ok($result->{stdout}, '>', $highest, 'above every ID the old primary returned');

$standby->stop;
done_testing();
