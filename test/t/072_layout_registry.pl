# Issue 19: the registry's limits in a layout that counts 10 ms.
#
# The registry keeps milliseconds (ids_before, the inherited floor); a node in
# Sonyflake's layout turns them into its units, rounding so that a takeover
# still starts above every ID its predecessor issued.
#
# 1. A node in Sonyflake's layout, snowflake.worker_id = 300, claims machine
#    300 in the registry and issues IDs below the ids_before it reports.
# 2. A pg_basebackup copy of it, promoted, its clock 5 s behind and
#    snowflake.max_lead above the lease: refused while the original renews
#    (issue 37), it takes the identity over once the original's registry
#    worker is stopped (its backends still issuing) and the row is stale, and
#    issues at once, every ID above every ID of the original (which is fenced
#    once its worker resumes) and of a unit that starts at or after the
#    inherited floor.
# 3. The copy stops cleanly: the ids_before it releases is the start of the
#    unit after its last ID, exactly.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $EPOCH = 1409529600000;    # Sonyflake's StartTime, 2014-09-01 UTC
my ($registry, $conninfo) = SnowflakeTest::start_registry();
my @conf = (
	"snowflake.registry = '$conninfo'", "snowflake.registry_lease = '4s'",
	"snowflake.layout = 'sonyflake'");

sub row_ms
{
	my ($column) = @_;
	return SnowflakeTest::registry_row($registry, 0, 300,
		"floor(extract(epoch FROM $column) * 1000)::bigint");
}

# The start of an ID's 10 ms unit, in ms since 1970, by Sonyflake's formula.
sub unit_ms
{
	my ($node, $sql) = @_;
	return $node->safe_psql('postgres', "SELECT $EPOCH + (($sql) >> 24) * 10");
}

## 1. The original ---------------------------------------------------------------

my $original = SnowflakeTest::init_node(
	'original',
	datacenter_id => undef,
	worker_id => 300,
	allows_streaming => 1,
	conf => \@conf);
SnowflakeTest::start_node($original);
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($original);
SnowflakeTest::wait_for_registry($original,
	"state = 'held' AND datacenter_id = 0 AND worker_id = 300",
	'the original holds machine 300');
$original->backup('base');
my @original_writers = SnowflakeTest::start_writers($original, 2, batch => 20);
$original->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM ids')
  or die 'the original issues no IDs';
my $reported = row_ms('ids_before');
cmp_ok(unit_ms($original, 'SELECT max(id) FROM ids'), '<', $reported,
	'the original\'s IDs lie below the ids_before it reported');

## 2. A copy, promoted, its clock behind ------------------------------------------

my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($original, 'base');
$copy->set_standby_mode;
$copy->append_conf('postgresql.conf', "snowflake.max_lead = '1h'\n");
SnowflakeTest::enable_faketime($copy);
SnowflakeTest::set_clock_offset($copy, -5);
SnowflakeTest::start_node($copy);
$copy->promote;
$copy->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the copy was not promoted';
SnowflakeTest::wait_for_registry($copy, "state = 'conflict'",
	'the copy is refused while the original renews');
my $worker = $original->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
kill 'STOP', $worker;
SnowflakeTest::wait_for_registry($copy, "state = 'held'",
	'the copy takes machine 300 over once the original stopped renewing');
kill 'CONT', $worker;
my $floor = row_ms('inherited_ids_before');
cmp_ok($floor, '>=', $reported, 'the floor is at least the original\'s ids_before');

my @copy_writers = SnowflakeTest::start_writers($copy, 2, batch => 20, first => 21);
SnowflakeTest::wait_for_registry($original, "state = 'conflict'",
	'the original is fenced at its next renewal');
my @results = SnowflakeTest::stop_writers($original, @original_writers);
$copy->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM ids WHERE b >= 20')
  or die 'the copy issues no IDs';
@results = SnowflakeTest::stop_writers($copy, @copy_writers);
ok(!(grep { !$_->{ok} } @results), 'the copy\'s writers issued at once, ahead of its clock')
  or diag join("\n", map { $_->{stderr} } @results);

my $copy_min = $copy->safe_psql('postgres', 'SELECT min(id) FROM ids WHERE b >= 20');
my $original_max = $original->safe_psql('postgres', 'SELECT max(id) FROM ids WHERE b < 20');
cmp_ok($copy_min, '>', $original_max, 'every ID of the copy is above every ID of the original');
cmp_ok(unit_ms($copy, $copy_min), '>=', $floor,
	'the copy\'s first ID is of a 10 ms unit that starts at or after the floor');
is( $copy->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE b >= 20 AND id & 65535 <> 300'),
	0, 'the copy\'s IDs are machine 300\'s');
SnowflakeTest::check_ids($copy, 'ids', 'original and copy');

## 3. The copy releases: ids_before is the start of the unit after its last ID ----

my $copy_last = $copy->safe_psql('postgres', 'SELECT snowflake_nextval()');
$copy->stop('fast');
is(row_ms('ids_before'), $EPOCH + (($copy_last >> 24) + 1) * 10,
	'released: ids_before is the start of the 10 ms unit after the copy\'s last ID');

$original->stop('fast');
done_testing();
