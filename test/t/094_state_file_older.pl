# A state file older than its data directory (issue 44, item 1): a copy of
# pg_snowflake/state from a backup, a standby or any earlier copy, put back,
# must not vouch for the newer data directory. The replication origin
# "snowflake_bound" keeps the durable bound with the data (WAL, checkpoints;
# src/pg/bound/bound_register.cpp); before the first ID of a start, an origin
# above the durable bound the state file records means the file is older,
# and the node takes the origin's bound.
#
# The node issues IDs an hour ahead of the real clock (snowflake.max_lead =
# '1d'); every restart below puts its clock back to the hour of the IDs it
# issued after the copy was taken, so that a node trusting the older file
# would issue them again (1.7: 2,019 to 2,493 of 3,000, in the issue; under
# the mutant origin-not-consulted, here, most of them).
#
# 1. The issue's sequence: a pg_basebackup; 3,000 more IDs; a clean stop;
#    pg_snowflake/state truncated to 0 bytes: the server starts (a WARNING
#    saying why, the bound from the origin) instead of a FATAL; stopped
#    again, the backup's pg_snowflake/state copied back, as 1.7's HINT said;
#    the clock replays the hour: 3,000 new IDs, none equal to an earlier one,
#    and the server log says the file was older.
# 2. The same with kill -9 (after a checkpoint, so that crash recovery
#    replays no bound record) instead of a clean stop.
# 3. A standby's state file, stopped before the 3,000, copied onto the
#    primary.
use strict;
use warnings FATAL => 'all';

use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $LEAD = 3600;    # seconds the node's clock runs ahead while it issues

sub state_file { return $_[0]->data_dir . '/pg_snowflake/state'; }

my $node = SnowflakeTest::init_node(
	'node',
	faketime => 1,
	allows_streaming => 1,
	conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::set_clock_offset($node, $LEAD);
SnowflakeTest::start_node($node);
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE ids (round int NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval());
	INSERT INTO ids (round) SELECT 0 FROM generate_series(1, 500);
});
# The registry worker gives the origin its first state once the bound is known.
$node->poll_query_until('postgres',
	"SELECT remote_lsn <> '0/0' FROM pg_replication_origin_status s JOIN pg_replication_origin o ON o.roident = s.local_id WHERE o.roname = 'snowflake_bound'"
) or die 'the replication origin snowflake_bound was never set up';

# 3,000 IDs in round $round, one a millisecond or so (as a busy application
# issues them: each in a millisecond of its own), after the copy was taken:
# 1.5 s after it, so that they lie above the durable bound the copy records
# (a bound lasts a second) and the node makes new bounds for them. Returns
# the real time the first of them was issued.
sub issue_3000
{
	my ($round) = @_;
	usleep(1_500_000);
	my $started = time;
	$node->safe_psql('postgres',
		"INSERT INTO ids (round) SELECT $round FROM generate_series(1, 3000) g, LATERAL pg_sleep(0.0005 + g * 0)"
	);
	return $started;
}

# Starts the node and puts its clock back half a second before the IDs
# issued since `$since` (real time), issues 3,000 IDs as they were issued
# (round $round + 100), and checks that none equals an earlier one: a node
# that trusted the older file would issue most of them again.
sub replay_and_check
{
	my ($round, $since, $label) = @_;
	my $offset = -s $node->logfile;
	SnowflakeTest::start_node($node);
	SnowflakeTest::set_clock_offset($node, $LEAD - (time - $since) - 0.5);
	$node->safe_psql('postgres',
		'INSERT INTO ids (round) SELECT ' . ($round + 100)
		  . ' FROM generate_series(1, 3000) g, LATERAL pg_sleep(0.0005 + g * 0)');
	my ($rows, $distinct) = split /\|/,
	  $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids');
	is($distinct, $rows, "$label: no ID issued twice ($rows rows)")
	  or diag 'IDs issued again: '
	  . $node->safe_psql('postgres',
		'SELECT count(*) FROM ids a WHERE round = ' . ($round + 100)
		  . ' AND EXISTS (SELECT FROM ids b WHERE b.id = a.id AND b.round <> a.round)');
	like(
		slurp_file($node->logfile, $offset),
		qr/WARNING:  snowflake: pg_snowflake\/state was older than this data directory.*\n.*DETAIL:  It records a durable bound of .*, but the replication origin "snowflake_bound", which WAL and checkpoints keep with the data, holds .*\n.*HINT:  Nothing to do\. Never put back an older copy of pg_snowflake\/state/,
		"$label: the server log says the state file was older than the data directory, and that nothing is to be done");
	return;
}

## 1. The issue's sequence ------------------------------------------------------

$node->backup('before');
my $backup_state = $node->backup_dir . '/before/pg_snowflake/state';
ok(-s $backup_state, 'the base backup holds pg_snowflake/state');
my $since = issue_3000(1);
$node->stop('fast');

# Damaged: 1.7 stopped with a FATAL here.
truncate state_file($node), 0 or die "truncate: $!";
my $log_offset = -s $node->logfile;
SnowflakeTest::start_node($node);
my $log = slurp_file($node->logfile, $log_offset);
like(
	$log,
	qr/WARNING:  snowflake: pg_snowflake\/state was damaged \(0 bytes, where a state file has 48, 56 or 64\)\n.*DETAIL:  It holds the bound above every ID this data directory has issued\. .*\n.*HINT:  Do not put back a copy of the file from a backup or a standby/,
	'a state file truncated to 0 bytes: the server starts, with a WARNING, its DETAIL and its HINT');
unlike($log, qr/FATAL/, 'and no FATAL');
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($first, '>', $node->safe_psql('postgres', 'SELECT max(id) FROM ids WHERE round = 1'),
	'the truncated file: the bound from the origin, above the 3,000');
$node->safe_psql('postgres', "INSERT INTO ids (round, id) VALUES (2, $first)");
like(
	slurp_file($node->logfile, $log_offset),
	qr/WARNING:  snowflake: took the bound above this data directory's IDs from the replication origin "snowflake_bound"/,
	'the server log says where the bound came from');
$node->stop('fast');

# The operator does what 1.7's HINT said: the file from a backup of its node.
copy($backup_state, state_file($node)) or die "copy: $!";
replay_and_check(1, $since, 'the backup\'s state file put back after a clean stop');

## 2. kill -9 instead of a clean stop -------------------------------------------

SnowflakeTest::set_clock_offset($node, $LEAD);
$node->stop('fast');
SnowflakeTest::start_node($node);
$node->backup('before_crash');
$since = issue_3000(3);
# A checkpoint after the last bound: crash recovery replays none of them.
$node->safe_psql('postgres', 'CHECKPOINT');
SnowflakeTest::crash_node($node);
copy($node->backup_dir . '/before_crash/pg_snowflake/state', state_file($node)) or die "copy: $!";
replay_and_check(3, $since, 'the backup\'s state file put back after kill -9');

## 3. A standby's state file -----------------------------------------------------

SnowflakeTest::set_clock_offset($node, $LEAD);
$node->stop('fast');
SnowflakeTest::start_node($node);
my $standby = SnowflakeTest::init_standby($node, 'standby');
$standby->start;
$node->safe_psql('postgres', 'INSERT INTO ids (round) SELECT 4 FROM generate_series(1, 100)');
$node->wait_for_catchup($standby);
$standby->stop('fast');
$since = issue_3000(5);
$node->stop('fast');
copy(state_file($standby), state_file($node)) or die "copy: $!";
replay_and_check(5, $since, 'a standby\'s older state file put back on the primary');

done_testing();
