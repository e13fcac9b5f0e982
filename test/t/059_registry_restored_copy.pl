# A restored backup must not take production's identity (issue 37 item 5).
# A pg_basebackup of a running node, started with recovery.signal and the
# same postgresql.conf (registry and identity included), ends recovery on
# timeline 2: a later timeline of production's system identifier, as a
# promoted standby is. A later timeline takes the identity over only from a
# holder that has stopped renewing (not renewed for two thirds of its lease:
# stale), that released it at a clean shutdown, or whose lease expired.
#
#  1. Production keeps its identity and keeps issuing while the restored copy
#     runs; the copy (configured identity) is refused with an error that says
#     the node it continues still runs.
#  2. Failover: production killed (no release), its streaming standby
#     promoted: the standby takes the identity once the row is stale (not
#     before two thirds of the lease after production's last renewal), and
#     issues above production's IDs.
#  3. Switchover: the new primary stopped cleanly (it releases its row), its
#     own standby promoted: takes the identity at once, long before the row
#     would be stale, and issues at once.
# No ID is issued twice by any of them.
#
# On the code before the fix the restored copy took the identity at once
# ("a later timeline") and production refused every insert.
use strict;
use warnings;

use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

my ($DATACENTER, $WORKER) = (2, 6);
my $LEASE_MS = 9000;
my ($registry, $conninfo) = SnowflakeTest::start_registry();
my @registry_conf =
  ("snowflake.registry = '$conninfo'", "snowflake.registry_lease = '${LEASE_MS}ms'");

sub row { return SnowflakeTest::registry_row($registry, $DATACENTER, $WORKER, @_); }

my $production = SnowflakeTest::init_node(
	'production',
	datacenter_id => $DATACENTER,
	worker_id => $WORKER,
	allows_streaming => 1,
	has_archiving => 1,
	conf => \@registry_conf);
SnowflakeTest::start_node($production);
$production->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($production);
SnowflakeTest::wait_for_registry($production, "state = 'held'");
$production->backup('base');
my $standby = SnowflakeTest::init_standby($production, 'standby');
SnowflakeTest::start_node($standby);

my @writers = SnowflakeTest::start_writers($production, 2, batch => 20);
$production->poll_query_until('postgres', 'SELECT count(*) > 1000 FROM ids')
  or die 'production issues no IDs';
my $segment =
  $production->safe_psql('postgres', 'SELECT pg_walfile_name(pg_switch_wal())');
$production->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver")
  or die "WAL segment $segment was not archived";

## 1. The restored copy runs beside production ------------------------------

my $restored = PostgreSQL::Test::Cluster->new('restored');
SnowflakeTest::remember_node($restored);
$restored->init_from_backup($production, 'base', has_restoring => 1, standby => 0);
# The archive as it was once $segment was in it: production goes on
# archiving, and a segment it is still copying would end the recovery.
my $archive = PostgreSQL::Test::Utils::tempdir('archive');
opendir my $dir, $production->archive_dir or die $!;
for my $file (readdir $dir)
{
	next unless $file =~ /^[0-9A-F]{24}$/ && $file le $segment;
	copy($production->archive_dir . "/$file", "$archive/$file") or die "copy $file: $!";
}
closedir $dir;
$restored->append_conf('postgresql.conf',
	"archive_mode = off\nrestore_command = 'cp \"$archive/%f\" \"%p\"'\n");
$restored->start;
$restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the restored copy did not end recovery';
is($restored->safe_psql('postgres', 'SELECT timeline_id FROM pg_control_checkpoint()'),
	'2', 'restored copy: ended recovery on timeline 2');
SnowflakeTest::wait_for_registry($restored, "state = 'conflict'",
	'restored copy: refused while production renews');
my $before = $production->safe_psql('postgres', 'SELECT count(*) FROM ids');
my $deadline = time + 2 * $LEASE_MS / 1000;
usleep(100_000) while time < $deadline;
is(SnowflakeTest::registry_status($restored, 'state'), 'conflict',
	'restored copy: still refused two leases later');
is(SnowflakeTest::registry_status($production, 'state'), 'held',
	'production keeps its identity');
cmp_ok($production->safe_psql('postgres', 'SELECT count(*) FROM ids'),
	'>', $before + 1000, 'production keeps issuing while the restored copy runs');
like(row('host'), qr/:${\ $production->port }$/, 'registry row: production\'s');

my $r = SnowflakeTest::try_sql($restored, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'restored copy: snowflake_nextval() refused (55000)');
like(
	$r->{message},
	qr/^snowflake identity datacenter_id $DATACENTER, worker_id $WORKER is held by another node$/,
	'restored copy: the identity is held by another node');
like($r->{detail}, qr/timeline 1\b.*this node has system identifier \d+, timeline 2\./,
	'restored copy: the detail names both timelines');
like($r->{hint}, qr/restored backup or a copy/,
	'restored copy: the hint says it is a restored backup or a copy of a running node')
  or diag $r->{stderr};
like(SnowflakeTest::registry_status($restored, 'conflict_host'),
	qr/:${\ $production->port }$/, 'restored copy: its status names production');
$restored->stop('fast');

my @results = SnowflakeTest::stop_writers($production, @writers);
is(scalar(grep { !$_->{ok} } @results), 0, 'production\'s writers never failed')
  or diag join "\n", map { $_->{stderr} } @results;

## 2. Failover: production dies, its standby is promoted ----------------------

$production->wait_for_catchup($standby);
SnowflakeTest::crash_node($production);
my $renewed = row('renewed_at');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
SnowflakeTest::wait_for_registry($standby, "state = 'held'",
	'failover: the promoted standby takes the identity over');
my $waited = $registry->safe_psql('registry',
	"SELECT floor(extract(epoch FROM claimed_at - '$renewed'::timestamptz) * 1000)::bigint "
	  . "FROM snowflake_registry WHERE datacenter_id = $DATACENTER AND worker_id = $WORKER");
cmp_ok($waited, '>=', 2 * $LEASE_MS / 3,
	"failover: not before the dead primary's row was stale ($waited ms after its last renewal)");
cmp_ok($waited, '<', $LEASE_MS, 'failover: before its lease expired');
like(row('host'), qr/:${\ $standby->port }$/, 'registry row: the promoted standby\'s');
$r = SnowflakeTest::retry_sql($standby,
	'INSERT INTO ids SELECT 20, g, snowflake_nextval() FROM generate_series(1, 500) g', 30);
ok($r->{ok}, 'failover: the promoted standby issues IDs (above the floor)') or diag $r->{stderr};

## 3. Switchover: the new primary stops cleanly, its standby is promoted ------

my $second = SnowflakeTest::init_standby($standby, 'second');
SnowflakeTest::start_node($second);
$standby->wait_for_catchup($second);
$standby->stop('fast');
is(row('released'), 't', 'switchover: the clean stop released the row');
my $stopped = time;
$second->promote;
SnowflakeTest::wait_for_registry($second, "state = 'held'",
	'switchover: the promoted standby takes the identity over');
cmp_ok(time - $stopped, '<', 2 * $LEASE_MS / 3 / 1000,
	'switchover: without waiting for the row to be stale');
$r = SnowflakeTest::try_sql($second,
	'INSERT INTO ids SELECT 30, g, snowflake_nextval() FROM generate_series(1, 500) g');
ok($r->{ok}, 'switchover: the promoted standby issues at once') or diag $r->{stderr};

## Every ID, once ----------------------------------------------------------------

# The last primary's table holds them all: production's (replicated before it
# was killed), the promoted standby's and its own.
is( $second->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE b IN (20, 30)'),
	'1000', 'the two promoted nodes\' IDs are all there');
SnowflakeTest::check_ids($second, 'ids', 'production and the two promoted standbys');

$second->stop('fast');
done_testing();
