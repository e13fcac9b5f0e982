# Planned switchover with a registry (doc/registry.md, "Standbys and
# promotion"): a streaming standby shares its primary's system identifier and
# claims nothing while in recovery. The primary stopped cleanly releases its
# row: ids_before goes to just above its last ID (the lease runs on). The standby promoted then takes
# the claim over at once (a later timeline of the same system identifier),
# without waiting for the lease, and issues IDs at once under the same
# identity, above the old primary's. The old primary, started again, is
# fenced: the registry names the promoted standby and it refuses to issue IDs.
#
# Since issue 13 every takeover, a promotion too, starts above the largest
# ids_before of the previous holder: a copy or a restore of a live node is
# also a later timeline (test/t/055_registry_takeover.pl). That the standby
# still issues at once here is the release at shutdown: without it (a crash),
# its IDs wait for the floor, up to a lease, or need snowflake.max_lead >=
# the lease.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# Long, to show that the promoted standby does not wait for it.
my $LEASE = '60s';

my ($registry, $conninfo) = SnowflakeTest::start_registry();

sub registry_row
{
	my ($columns) = @_;
	return $registry->safe_psql('registry',
		"SELECT $columns FROM snowflake_registry WHERE datacenter_id = 1 AND worker_id = 3"
	);
}

my $primary = SnowflakeTest::init_node(
	'primary',
	datacenter_id => 1,
	worker_id => 3,
	allows_streaming => 1,
	conf => [ "snowflake.registry = '$conninfo'", "snowflake.registry_lease = '$LEASE'" ]);
SnowflakeTest::start_node($primary);
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($primary, "state = 'held'", 'registry state becomes held');
my $system_identifier = $primary->safe_psql('postgres',
	'SELECT system_identifier FROM pg_control_system()');

my $standby = SnowflakeTest::init_standby($primary, 'standby');
SnowflakeTest::start_node($standby);
SnowflakeTest::wait_for_registry($standby, "state = 'standby'", 'registry state becomes standby');
is(SnowflakeTest::registry_status($standby, 'datacenter_id IS NULL AND valid_until IS NULL'),
	't', 'the standby holds nothing in recovery');
is($registry->safe_psql('registry', 'SELECT count(*) FROM snowflake_registry'),
	'1', 'registry: one row, the standby claims nothing');
my $r = SnowflakeTest::try_sql($standby, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '25006', 'the standby refuses to issue IDs in recovery');
like(registry_row('host'), qr/:${\ $primary->port }$/,
	'registry row: still the primary\'s');

my $primary_last = $primary->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 5000)');
$primary->wait_for_catchup($standby);
my $primary_expires = registry_row('expires_at');
my $primary_last_ms = $primary->safe_psql('postgres',
	"SELECT floor(extract(epoch FROM (snowflake_decode($primary_last)).ts) * 1000)::bigint");
$primary->stop('fast');
is(registry_row('expires_at > now()'), 't', 'a clean shutdown leaves the lease to run');
my $released = registry_row('floor(extract(epoch FROM ids_before) * 1000)::bigint');
ok($released > $primary_last_ms && $released <= $primary_last_ms + 2,
	"released: ids_before ($released) just above the primary's last ID ($primary_last_ms)");

$standby->promote;
SnowflakeTest::wait_for_registry($standby, "state = 'held'", 'registry state becomes held');
is(registry_row('system_identifier || \'/\' || timeline'),
	"$system_identifier/2",
	'registry row: the same system identifier, now on timeline 2');
like(registry_row('host'), qr/:${\ $standby->port }$/,
	'registry row: the promoted standby\'s host');
is(registry_row("claimed_at < '$primary_expires'"),
	't', 'the promoted standby took the claim over before the primary\'s lease ran out');
my $r2 = SnowflakeTest::try_sql($standby, 'SELECT snowflake_nextval()');
ok($r2->{ok}, 'the promoted standby issues at once: the released floor is past')
  or diag $r2->{stderr};
my $promoted_id = $r2->{stdout};
is( $standby->safe_psql(
		'postgres',
		"SELECT datacenter_id || '/' || worker_id FROM snowflake_decode($promoted_id)"),
	'1/3',
	'the promoted standby issues IDs under the primary\'s identity');
cmp_ok($promoted_id, '>', $primary_last,
	'its IDs are above every ID the old primary issued');

## The old primary comes back: fenced -----------------------------------------

SnowflakeTest::start_node($primary);
SnowflakeTest::wait_for_registry($primary, "state = 'conflict'", 'registry state becomes conflict');
$r = SnowflakeTest::try_sql($primary, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'old primary: refuses to issue IDs (55000)');
is( $r->{message},
	'snowflake identity datacenter_id 1, worker_id 3 is held by another node',
	'old primary: the error names the identity');
like($r->{detail},
	qr/:${\ $standby->port } \(data directory \Q${\ $standby->data_dir }\E, system identifier $system_identifier, timeline 2\)/,
	'old primary: the detail names the promoted standby');
like($r->{hint},
	qr/either a standby promoted in this node's place \(then this node is the old primary: stop it, or rebuild it as a standby of the new primary\), or a restored backup or copy of this node started with its configuration/,
	'old primary: the hint says a standby may have been promoted in its place (or a copy started)');
my $again = $standby->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($again, '>', $promoted_id, 'the promoted standby keeps issuing');

$_->stop('fast') for ($primary, $standby);
done_testing();
