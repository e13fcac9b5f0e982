# The check of a data directory without pg_snowflake/state (bound_check.cpp)
# finishes whatever the background worker slots, never stalls the registry
# worker, and says why when it cannot run at all:
#
# 1. max_worker_processes = 2 on a fresh initdb (the logical replication
#    launcher and the registry worker take both): no slot is free for a check
#    worker, the log says what the registry worker does instead, and CREATE
#    EXTENSION and snowflake_nextval() work.
# 2. A copy of a node that issued IDs, without pg_snowflake/, under
#    max_worker_processes = 2: the check reaches its verdict, and
#    snowflake_nextval() refuses with "the bound ... is unknown".
# 3. max_worker_processes = 0, and = 1 (the postmaster registers the logical
#    replication launcher before any library): the registry worker cannot
#    run; the log and the errors say why and what to change; CREATE EXTENSION
#    succeeds, and snowflake_set_bound(now()) makes the node issue.
# 4. A check blocked on a lock held on a database (a prepared transaction
#    that renamed it, so the lock is there from the start): the registry
#    worker goes on renewing its lease, logs the slow check, survives a
#    pg_cancel_backend() (no restart); CREATE EXTENSION does not wait for it,
#    snowflake_nextval() refuses once the check has not moved on for a while,
#    naming the database; the check ends when the lock goes, and the node
#    issues.
use strict;
use warnings FATAL => 'all';

use File::Path qw(rmtree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

sub state_file { return $_[0]->data_dir . '/pg_snowflake/state'; }

# Whether the server log has a match after `$offset` within `$seconds`
# (without dying, unlike wait_for_log, so that the test goes on).
sub log_within
{
	my ($node, $pattern, $offset, $seconds) = @_;
	for (1 .. $seconds * 10)
	{
		return 1 if slurp_file($node->logfile, $offset) =~ $pattern;
		usleep(100_000);
	}
	return 0;
}

sub issues_ok
{
	my ($node, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = SnowflakeTest::try_sql($node,
		'CREATE EXTENSION IF NOT EXISTS snowflake; SELECT snowflake_nextval() > 0');
	is($r->{stdout}, 't', "$label: CREATE EXTENSION and snowflake_nextval() work")
	  or diag $r->{stderr};
	return;
}

## 1. Few slots on a fresh node -------------------------------------------------

for my $slots (2)
{
	my $node = SnowflakeTest::init_node("slots_$slots",
		conf => ["max_worker_processes = $slots"]);
	SnowflakeTest::start_node($node);
	issues_ok($node, "max_worker_processes = $slots");
	ok( $node->log_contains(
			qr/no background worker slot is free for the check of database "[^"]+"; the registry worker checks the databases itself/
		),
		"max_worker_processes = $slots: the log says what the check does without a slot");
	ok($node->log_contains(qr/no database has the extension: this data directory has issued no IDs/),
		"max_worker_processes = $slots: the check finished");
	$node->stop;
}

## 2. A copy under few slots -------------------------------------------------------

my $original = SnowflakeTest::init_node('original');
SnowflakeTest::start_node($original);
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake; SELECT snowflake_nextval()');
$original->stop;
my $copy = SnowflakeTest::init_node('copy', conf => ['max_worker_processes = 2']);
rmtree($copy->data_dir);
PostgreSQL::Test::RecursiveCopy::copypath($original->data_dir, $copy->data_dir);
rmtree($copy->data_dir . '/pg_snowflake');
# Nor the replication origin that keeps the bound's second copy (it would
# give the bound: test/t/061).
SnowflakeTest::forget_bound_origin($copy);
chmod 0700, $copy->data_dir or die "chmod: $!";
$copy->append_conf('postgresql.conf',
	"port = " . $copy->port . "\nunix_socket_directories = '" . $copy->host
	  . "'\nmax_worker_processes = 2");
SnowflakeTest::start_node($copy);
my $r = SnowflakeTest::try_sql($copy, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'copy, 2 slots: snowflake_nextval() refuses (55000)');
like($r->{message}, qr/the bound above this node's earlier snowflake IDs is unknown/,
	'copy, 2 slots: the check reached its verdict: the bound is unknown');
$copy->stop;

## 3. No slot at all -----------------------------------------------------------------

for my $slots (0, 1)
{
	my $none = SnowflakeTest::init_node("none_$slots", conf => ["max_worker_processes = $slots"]);
	SnowflakeTest::start_node($none);
	my $label = "max_worker_processes = $slots";
	ok( $none->log_contains(
			qr/WARNING:  snowflake: pg_snowflake\/state was missing, and the check of the databases cannot run/),
		"$label: the log says the check cannot run");
	$r = SnowflakeTest::try_sql($none, 'CREATE EXTENSION snowflake');
	is($r->{exit}, 0, "$label: CREATE EXTENSION succeeds") or diag $r->{stderr};
	like($r->{stderr}, qr/max_worker_processes = $slots leaves it no slot/,
		"$label: and warns why issuing will refuse");
	$r = SnowflakeTest::try_sql($none, 'SELECT snowflake_nextval()');
	is($r->{sqlstate}, '55000', "$label: snowflake_nextval() refuses (55000)");
	like($r->{message}, qr/cannot check whether this data directory has issued IDs/,
		"$label: saying the check cannot run");
	like($r->{hint} // '', qr/Raise max_worker_processes by 1.*snowflake_set_bound\(now\(\)\)/,
		"$label: the hint says what to change");
	$r = SnowflakeTest::try_sql($none,
		'SELECT snowflake_set_bound(now()) IS NOT NULL; SELECT snowflake_nextval() > 0');
	is($r->{stdout}, "t\nt", "$label: after snowflake_set_bound(now()) it issues")
	  or diag $r->{stderr};
	$none->stop;
}

## 4. A check blocked on a lock ------------------------------------------------------

my ($registry, $conninfo) = SnowflakeTest::start_registry();
my $locked = SnowflakeTest::init_node(
	'locked',
	conf => [
		'max_prepared_transactions = 2', "snowflake.registry = '$conninfo'",
		"snowflake.registry_lease = '3s'"
	]);
SnowflakeTest::start_node($locked);
$locked->safe_psql('postgres', 'CREATE DATABASE blocked');
$registry->poll_query_until('registry',
	"SELECT count(*) = 1 FROM snowflake_registry WHERE datacenter_id = 3 AND worker_id = 7")
  or die 'the lease was not claimed';
# A prepared transaction keeps its lock on the database across the restart.
$locked->safe_psql('postgres',
	"BEGIN; ALTER DATABASE blocked RENAME TO blocked_renamed; PREPARE TRANSACTION 'hold'");
$locked->stop;
rmtree($locked->data_dir . '/pg_snowflake');
SnowflakeTest::forget_bound_origin($locked);
my $log_offset = -s $locked->logfile;
SnowflakeTest::start_node($locked);
ok(log_within($locked, qr/the check of database "blocked" for the extension has taken \d+ s so far/,
		$log_offset, 60),
	'blocked check: the registry worker logs the slow check');
my $registry_pid = $locked->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
my $renewed = SnowflakeTest::registry_row($registry, 3, 7, 'renewed_at');
sleep 2;
isnt(SnowflakeTest::registry_row($registry, 3, 7, 'renewed_at'),
	$renewed, 'blocked check: the lease is renewed meanwhile');
$locked->safe_psql('postgres', "SELECT pg_cancel_backend($registry_pid)");
sleep 1;
is( $locked->safe_psql(
		'postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'"),
	$registry_pid,
	'blocked check: pg_cancel_backend() of the registry worker does not restart it');
$r = SnowflakeTest::try_sql($locked, 'CREATE EXTENSION snowflake');
is($r->{exit}, 0, 'blocked check: CREATE EXTENSION does not wait for the check') or diag $r->{stderr};
$r = SnowflakeTest::try_sql($locked, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'blocked check: meanwhile snowflake_nextval() refuses (55000)');
like($r->{message}, qr/still checking/, 'blocked check: saying the check goes on');
like($r->{detail}, qr/from database "blocked"/, 'blocked check: naming the database it waits for');
$locked->safe_psql('postgres', "ROLLBACK PREPARED 'hold'");
ok(log_within($locked, qr/no database has the extension: this data directory has issued no IDs/,
		$log_offset, 60),
	'blocked check: it ends once the lock goes');
issues_ok($locked, 'blocked check, ended');
my $log = slurp_file($locked->logfile, $log_offset);
unlike($log, qr/FATAL/, 'blocked check: no process ended with FATAL');
$locked->stop;

done_testing();
