# Issue 3: with synchronous replication, raising the durable bound waits for
# the synchronous standby, as a commit does.
#
# The primary names its standby in synchronous_standby_names. With the
# standby stopped, a snowflake_nextval() that must raise the durable bound
# (the first one after a clean restart, whose exact bound is the last ID + 1)
# waits for the standby (wait event SyncRep) instead of issuing an ID a
# promoted standby might not know about. pg_cancel_backend() ends the wait
# with PostgreSQL's WARNING "canceling wait for synchronous replication", as
# for a commit: the bound is then durable locally only. Once the standby is
# back, IDs flow without waiting.
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
my $issue = 'SELECT snowflake_nextval()';
my $result = SnowflakeTest::try_sql($primary, $issue);
ok($result->{ok}, 'IDs are issued while the synchronous standby is up')
  or diag "stderr: $result->{stderr}";
my $last = $result->{stdout};

$standby->stop;
SnowflakeTest::restart_node($primary);

my $handle = SnowflakeTest::start_sql($primary, $issue, name => 'sync_waiter');
my $pid = SnowflakeTest::backend_pid($primary, 'sync_waiter');
ok( $primary->poll_query_until('postgres',
		"SELECT wait_event = 'SyncRep' FROM pg_stat_activity WHERE pid = $pid"),
	'with the standby down, the first snowflake_nextval() waits for it (SyncRep)');
ok(SnowflakeTest::running($handle), 'it is still waiting');

my $start = time;
$primary->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$result = SnowflakeTest::finish_sql($handle);
note sprintf("pg_cancel_backend ended the wait in %.3f s:\n%s", time - $start,
	$result->{stderr});
like($result->{stderr},
	qr/WARNING:\s+01000:\s+canceling wait for synchronous replication due to user request/,
	'pg_cancel_backend ends it with the WARNING of a canceled synchronous commit');
cmp_ok(time - $start, '<', 20, 'at once (< 20 s)');
note $result->{ok}
  ? "after the WARNING the call returned ID $result->{stdout}"
  : "after the WARNING the call failed: $result->{stderr}";
if ($result->{ok})
{
	cmp_ok($result->{stdout}, '>', $last, 'the ID it returned is above the one before');
	$last = $result->{stdout};
}

SnowflakeTest::start_node($standby);
ok( $primary->poll_query_until('postgres',
		"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'"),
	'the standby is back and synchronous');
$result = SnowflakeTest::try_sql($primary,
	'SELECT snowflake_nextval() FROM generate_series(1, 1000)');
ok($result->{ok}, 'IDs are issued again') or diag "stderr: $result->{stderr}";
my @ids = split /\n/, $result->{stdout};
my $previous = $last;
my $disorder = grep { my $bad = $_ <= $previous; $previous = $_; $bad } @ids;
is($disorder, 0, 'each above the one before, and above those issued before the wait');
$standby->stop;
$primary->stop;
done_testing();
