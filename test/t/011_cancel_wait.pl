# Issue 3: a wait for a clock that stepped back can be interrupted.
#
# With snowflake.max_clock_backward_wait = 60s and the clock stepped back
# 30 s, snowflake_nextval() would wait ~30 s for the clock to catch up.
# pg_cancel_backend() and statement_timeout must end that wait at once with
# SQLSTATE 57014 (query_canceled), and pg_terminate_backend() must end the
# session, all without harm to the server or to the IDs issued afterwards.
# The bound on how quickly is deliberately generous (20 s, against the 30 s
# the wait would otherwise last): this is a test of interruptibility, not of
# speed, on a machine that may be loaded.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $bound = 20;    # seconds; the uninterrupted wait would be ~30

my $node = SnowflakeTest::init_node(
	'cancel',
	faketime => 1,
	conf => ['snowflake.max_clock_backward_wait = 60s']);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $started_at = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

my $last = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
SnowflakeTest::set_clock_offset($node, -30);

# Starts snowflake_nextval() in a session of its own and returns once the
# session is waiting for the clock (wait event "Extension").
sub start_waiting
{
	my ($name, $sql) = @_;
	my $handle = SnowflakeTest::start_sql($node, $sql, name => $name);
	my $pid = SnowflakeTest::backend_pid($node, $name);
	ok( $node->poll_query_until('postgres',
			"SELECT wait_event_type = 'Extension' AND state = 'active' FROM pg_stat_activity WHERE pid = $pid"),
		"$name: snowflake_nextval() waits for the clock");
	return ($handle, $pid);
}

# pg_cancel_backend
my ($handle, $pid) = start_waiting('wait_cancel', 'SELECT snowflake_nextval();');
my $start = time;
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"),
	't', 'pg_cancel_backend() signals the waiting backend');
my $result = SnowflakeTest::finish_sql($handle);
my $took = time - $start;
note sprintf('pg_cancel_backend ended the wait in %.3f s', $took);
is($result->{sqlstate}, '57014', 'the wait ends with SQLSTATE 57014')
  or diag "stdout: $result->{stdout}\nstderr: $result->{stderr}";
like($result->{message} // '', qr/canceling statement due to user request/,
	'"canceling statement due to user request"');
cmp_ok($took, '<', $bound, "it ended quickly (< $bound s, not after the 30 s wait)");

# statement_timeout
$start = time;
$result = SnowflakeTest::try_sql($node,
	"SET statement_timeout = '2s';\nSELECT snowflake_nextval();",
	name => 'wait_timeout');
$took = time - $start;
note sprintf('statement_timeout = 2s ended the wait after %.3f s', $took);
is($result->{sqlstate}, '57014', 'statement_timeout ends the wait with SQLSTATE 57014')
  or diag "stdout: $result->{stdout}\nstderr: $result->{stderr}";
like($result->{message} // '', qr/statement timeout/,
	'"canceling statement due to statement timeout"');
cmp_ok($took, '<', $bound, "it ended quickly (< $bound s)");

# pg_terminate_backend
($handle, $pid) = start_waiting('wait_terminate', 'SELECT snowflake_nextval();');
$start = time;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"),
	't', 'pg_terminate_backend() signals the waiting backend');
$result = SnowflakeTest::finish_sql($handle);
$took = time - $start;
note sprintf('pg_terminate_backend ended the session in %.3f s', $took);
is($result->{sqlstate}, '57P01', 'the session ends with SQLSTATE 57P01')
  or diag "stdout: $result->{stdout}\nstderr: $result->{stderr}";
cmp_ok($took, '<', $bound, "it ended quickly (< $bound s)");

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$started_at, 'the server did not restart');

# The interrupted calls issued nothing that a later call could collide with.
SnowflakeTest::set_clock_offset($node, 0);
my $next = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
ok($next->{ok}, 'IDs are issued again on the corrected clock')
  or diag "stderr: $next->{stderr}";
cmp_ok($next->{stdout}, '>', $last, 'above the last ID issued before the step');
my ($waits, $errors, $largest) = split /\|/, $node->safe_psql('postgres',
	'SELECT clock_waits, clock_errors, largest_clock_step_ms FROM snowflake_status');
cmp_ok($waits, '>=', 3, 'snowflake_status counts the three interrupted waits');
is($errors, 0, 'an interrupted wait is not a clock error');
cmp_ok($largest, '>=', 29000, 'the 30 s step is the largest seen');

$node->stop;
done_testing();
