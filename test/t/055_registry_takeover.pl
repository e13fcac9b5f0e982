# Takeovers by copies of a running node (issue 13, doc/registry.md "Takeovers"):
# a point-in-time restore and a promoted pg_basebackup copy of a node have its
# system identifier on a later timeline, like a promoted standby. Since issue
# 37 they take its identity over only once the original has stopped renewing
# (its row stale: not renewed for two thirds of its lease), released it or
# let it expire; here the original's registry worker is stopped (SIGSTOP)
# while its backends still issue IDs under the lease they have, so the
# takeover happens while the original still issues. The copies must start
# above a floor the original cannot reach under its lease (the largest
# ids_before it reported), and the original is fenced at its next renewal:
# zero duplicates between all three nodes.
#
#  1. PITR restore (base backup + WAL archive, recovery_target_time, promoted)
#     with snowflake.max_lead = 0: refused while the original renews; once the
#     original's worker stops, takes over when the row is stale, refuses with
#     the takeover error (not "clock moved backwards") until its clock reaches
#     the floor, then issues above it. The original, its worker resumed, is
#     fenced.
#  2. The restored copy stops cleanly and releases its row (ids_before just
#     above its last ID); once its lease has run out, the original takes the
#     identity back, above the copy's IDs.
#  3. A pg_basebackup copy promoted elsewhere, with snowflake.max_lead >= the
#     lease: once the original's worker stops again, takes over and issues at
#     once, ahead of its clock, above the floor.
#
# On the code before the fix (88489f3), the copies issue at once with no floor
# and both nodes issue the same IDs in the milliseconds they share.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my ($DATACENTER, $WORKER) = (2, 5);
my ($registry, $conninfo) = SnowflakeTest::start_registry();
my @registry_conf =
  ("snowflake.registry = '$conninfo'", "snowflake.registry_lease = '15s'");

sub row { return SnowflakeTest::registry_row($registry, $DATACENTER, $WORKER, @_); }

# Stops (STOP) or resumes (CONT) the node's registry worker: its backends go
# on issuing under the lease they have, but it renews nothing.
sub signal_worker
{
	my ($node, $signal) = @_;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
	kill $signal, $pid or die "kill $signal $pid: $!";
	return;
}

sub row_ms
{
	my ($column) = @_;
	return row("floor(extract(epoch FROM $column) * 1000)::bigint");
}

my $original = SnowflakeTest::init_node(
	'original',
	datacenter_id => $DATACENTER,
	worker_id => $WORKER,
	allows_streaming => 1,
	has_archiving => 1,
	conf => \@registry_conf);
SnowflakeTest::start_node($original);
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($original);
SnowflakeTest::wait_for_registry($original, "state = 'held'");
$original->backup('base');

my @original_writers =
  SnowflakeTest::start_writers($original, 2, batch => 20, max_batches => 10_000_000);
$original->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM ids')
  or die 'the original issues no IDs';
my $target = $original->safe_psql('postgres', 'SELECT now()');
usleep(500_000);
my $segment =
  $original->safe_psql('postgres', 'SELECT pg_walfile_name(pg_switch_wal())');
$original->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver")
  or die "WAL segment $segment was not archived";

## 1. A point-in-time restore, promoted, while the original issues ----------

my $pitr = PostgreSQL::Test::Cluster->new('pitr');
$pitr->init_from_backup($original, 'base', has_restoring => 1, standby => 0);
$pitr->append_conf(
	'postgresql.conf', qq{
recovery_target_time = '$target'
recovery_target_action = 'promote'
archive_mode = off
snowflake.max_lead = 0
});
$pitr->start;
$pitr->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the restored copy was not promoted';
is($pitr->safe_psql('postgres', 'SELECT timeline_id FROM pg_control_checkpoint()'),
	'2', 'restored copy: promoted to timeline 2');
SnowflakeTest::wait_for_registry($pitr, "state = 'conflict'",
	'restored copy: refused while the original renews');
signal_worker($original, 'STOP');
my $reported = row_ms('ids_before');
SnowflakeTest::wait_for_registry($pitr, "state = 'held'",
	'restored copy takes the identity over once the original stopped renewing');
like(row('host'), qr/:${\ $pitr->port }$/, 'registry row: the restored copy\'s');
my $floor = row_ms('inherited_ids_before');
ok(defined $floor && $floor ne '' && $floor >= $reported,
	"the takeover carries a floor ($floor) at least the original's ids_before ($reported)");

my $r = SnowflakeTest::try_sql($pitr, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'restored copy: refuses below the floor (55000)');
like(
	$r->{message},
	qr/^this node is taking snowflake identity datacenter_id $DATACENTER, worker_id $WORKER over from \S+:${\ $original->port }, whose IDs may run up to /,
	'restored copy: the error says it takes over from the original');
like($r->{detail}, qr/^IDs are issued from .* snowflake\.max_lead \(0 ms\)/,
	'restored copy: the detail says from when');
like($r->{hint}, qr/snowflake\.max_lead >= snowflake\.registry_lease/,
	'restored copy: the hint names max_lead');

signal_worker($original, 'CONT');
SnowflakeTest::wait_for_registry($original, "state = 'conflict'",
	'the original is fenced at its next renewal');
# The fenced original's writers end at their next ID; wait for that before
# stopping them, so that none ends cleanly first.
my $fence_deadline = time + 30;
usleep(200_000)
  while time < $fence_deadline && grep { SnowflakeTest::running($_) } @original_writers;
my @results = SnowflakeTest::stop_writers($original, @original_writers);
is(scalar(grep { ($_->{sqlstate} // '') eq '55000' } @results),
	2, 'the original\'s writers were stopped by the fence (55000)');

$r = SnowflakeTest::retry_sql($pitr,
	'INSERT INTO ids SELECT 10, 1, snowflake_nextval() RETURNING id', 10);
ok($r->{ok}, 'restored copy: issues once its clock reaches the floor')
  or diag $r->{stderr};
my @pitr_writers =
  SnowflakeTest::start_writers($pitr, 2, batch => 20, first => 11);
$pitr->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM ids WHERE b >= 10');
SnowflakeTest::stop_writers($pitr, @pitr_writers);
my $pitr_min = SnowflakeTest::id_ms($pitr, 'SELECT min(id) FROM ids WHERE b >= 10');
cmp_ok($pitr_min, '>=', $floor, 'restored copy: its IDs start at the floor');

## 2. The restored copy stops: it releases its row -----------------------------

my $pitr_max = SnowflakeTest::id_ms($pitr, 'SELECT max(id) FROM ids WHERE b >= 10');
my $pitr_ids = $pitr->safe_psql('postgres', 'SELECT id FROM ids WHERE b >= 10');
$pitr->stop('fast');
is(row("expires_at > now()"), 't', 'released: the lease runs on');
my $released = row_ms('ids_before');
ok($released > $pitr_max && $released <= $pitr_max + 2,
	"released: ids_before ($released) just above the copy's last ID ($pitr_max)");
SnowflakeTest::wait_for_registry($original, "state = 'held'",
	'the original takes its identity back');
my $before = $original->safe_psql('postgres', 'SELECT count(*) FROM ids');
@original_writers = SnowflakeTest::start_writers($original, 2, batch => 20);
$original->poll_query_until('postgres', "SELECT count(*) > $before + 1000 FROM ids");

## 3. A pg_basebackup copy, promoted elsewhere, issues at once ------------------

my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($original, 'base');
$copy->set_standby_mode;
$copy->append_conf(
	'postgresql.conf', qq{
archive_mode = off
snowflake.max_lead = '1h'
});
$copy->start;
$copy->promote;
$copy->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the copy was not promoted';
SnowflakeTest::wait_for_registry($copy, "state = 'conflict'",
	'copy: refused while the original renews');
signal_worker($original, 'STOP');
$reported = row_ms('ids_before');
SnowflakeTest::wait_for_registry($copy, "state = 'held'",
	'copy takes the identity over once the original stopped renewing');
$floor = row_ms('inherited_ids_before');
cmp_ok($floor, '>=', $reported, 'copy: the floor is at least the original\'s ids_before');
$r = SnowflakeTest::try_sql($copy,
	'INSERT INTO ids SELECT 20, 1, snowflake_nextval() RETURNING id');
ok($r->{ok}, 'copy with max_lead >= lease: issues at once') or diag $r->{stderr};
my @copy_writers =
  SnowflakeTest::start_writers($copy, 2, batch => 20, first => 21);
signal_worker($original, 'CONT');
SnowflakeTest::wait_for_registry($original, "state = 'conflict'",
	'the original is fenced again');
@results = SnowflakeTest::stop_writers($original, @original_writers);
$copy->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM ids WHERE b >= 20');
SnowflakeTest::stop_writers($copy, @copy_writers);
my $copy_min = SnowflakeTest::id_ms($copy, 'SELECT min(id) FROM ids WHERE b >= 20');
cmp_ok($copy_min, '>=', $floor, 'copy: its IDs start at the floor');
cmp_ok($floor, '>=', $released, 'copy: the floor covers the restored copy\'s IDs too');

## Every ID of the three nodes, once ------------------------------------------

my %seen;
my %count;
my $duplicates = 0;
for my $source (
	[ 'original', $original->safe_psql('postgres', 'SELECT id FROM ids WHERE b < 10') ],
	[ 'restored copy', $pitr_ids ],
	[ 'copy', $copy->safe_psql('postgres', 'SELECT id FROM ids WHERE b >= 20') ])
{
	my ($name, $ids) = @$source;
	for my $id (split /\n/, $ids)
	{
		$count{$name}++;
		if (exists $seen{$id})
		{
			diag "ID $id issued by $seen{$id} and $name" if $duplicates++ < 10;
			next;
		}
		$seen{$id} = $name;
	}
}
note join ', ', map { "$_: $count{$_} IDs" } sort keys %count;
is($duplicates, 0, 'no ID issued twice by the original and its copies');

$_->stop('fast') for ($original, $copy);
done_testing();
