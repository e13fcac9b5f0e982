# The registry keeps two nodes configured with the same identity apart
# (doc/registry.md). Real servers: a registry (plain PostgreSQL) and nodes that
# point snowflake.registry at it over its Unix socket.
#
# 1. Two nodes configured with (datacenter_id 1, worker_id 2): the first
#    claims it; the second refuses to issue IDs, with an error naming the
#    first (host, data directory, system identifier, since when).
# 2. The first stops; once its lease has expired, the second takes the
#    identity over and issues IDs, above the first's.
# 3. Handover across clocks: a third node whose clock is an hour behind takes
#    the identity over after the second stops; its IDs still stay above the
#    second's (the registry hands the previous holder's horizon over).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time);

my $LEASE = '4s';

my ($registry, $conninfo) = SnowflakeTest::start_registry();
my @registry_conf =
  ("snowflake.registry = '$conninfo'", "snowflake.registry_lease = '$LEASE'");

sub registry_row
{
	my ($columns) = @_;
	return $registry->safe_psql('registry',
		"SELECT $columns FROM snowflake_registry WHERE datacenter_id = 1 AND worker_id = 2"
	);
}

sub system_identifier
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT system_identifier FROM pg_control_system()');
}

sub start_with_extension
{
	my ($node) = @_;
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	return;
}

sub decode
{
	my ($node, $id) = @_;
	return $node->safe_psql('postgres',
		"SELECT datacenter_id || '/' || worker_id FROM snowflake_decode($id)");
}

## 1. The first node claims the identity; the second refuses -----------------

my $first = SnowflakeTest::init_node(
	'first',
	datacenter_id => 1,
	worker_id => 2,
	conf => \@registry_conf);
start_with_extension($first);
SnowflakeTest::wait_for_registry($first, "state = 'held'", 'registry state becomes held');
is(SnowflakeTest::registry_status($first, 'in_use, automatic, datacenter_id, worker_id'),
	't|f|1|2', 'first: status shows the configured identity, held');
my $first_id = $first->safe_psql('postgres', 'SELECT snowflake_nextval()');
is(decode($first, $first_id), '1/2', 'first: issues IDs of 1/2');
is(registry_row('system_identifier'),
	system_identifier($first), 'registry row: the first node\'s system identifier');
like(registry_row('host'), qr/:${\ $first->port }$/,
	'registry row: host names the first node\'s port');
is(registry_row('data_directory'),
	$first->data_dir, 'registry row: the first node\'s data directory');
is( registry_row(
		"expires_at - renewed_at = interval '$LEASE' AND claimed_at <= renewed_at"),
	't',
	'registry row: expires one lease after the renewal, on the registry clock');

my $second = SnowflakeTest::init_node(
	'second',
	datacenter_id => 1,
	worker_id => 2,
	conf => \@registry_conf);
start_with_extension($second);
SnowflakeTest::wait_for_registry($second, "state = 'conflict'", 'registry state becomes conflict');

my $r = SnowflakeTest::try_sql($second, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'second: snowflake_nextval() refuses (55000)')
  or diag $r->{stderr};
is( $r->{message},
	'snowflake identity datacenter_id 1, worker_id 2 is held by another node',
	'second: the error says which identity is taken');
my $first_port = $first->port;
my $first_system = system_identifier($first);
my $since = SnowflakeTest::registry_status($second, 'conflict_since');
like($r->{detail}, qr/held by \S+:$first_port \(/,
	'second: the detail names the first node\'s host and port');
like(
	$r->{detail},
	qr/\(data directory \Q${\ $first->data_dir }\E, system identifier $first_system, timeline 1\)/,
	'second: the detail names the first node\'s data directory and system identifier');
like($r->{detail}, qr/ since \Q$since\E, /,
	'second: the detail says since when the first node holds it');
my ($until) = $r->{detail} =~ /its lease running until ([^;]+);/;
is( $second->safe_psql(
		'postgres', "SELECT '$until'::timestamptz >= '$since'::timestamptz + interval '$LEASE'"),
	't',
	'second: the detail says until when the first node\'s lease runs');
is( $second->safe_psql(
		'postgres',
		"SELECT conflict_since = '" . SnowflakeTest::registry_status($first, 'claimed_at') . "'::timestamptz FROM snowflake_registry_status()"
	),
	't',
	'second: "since" is the first node\'s claimed_at');
like($r->{hint}, qr/another snowflake\.worker_id/,
	'second: the hint says how to resolve the conflict');
is(SnowflakeTest::registry_status($second, 'conflict_system_identifier'),
	$first_system, 'second: status names the holder too');

# The first keeps its lease while the second keeps asking.
my $renewed = registry_row('renewed_at');
ok( $registry->poll_query_until(
		'registry',
		"SELECT renewed_at > '$renewed' FROM snowflake_registry WHERE worker_id = 2"),
	'first: renews its lease');
is(registry_row('system_identifier'),
	$first_system, 'registry row: still the first node\'s');
$r = SnowflakeTest::try_sql($second, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'second: still refuses while the first runs');

## 2. The first stops; the second takes over after the lease -----------------

my $first_last = $first->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
my $first_expires = registry_row('expires_at');
my $stopped_at = time;
$first->stop('fast');
SnowflakeTest::wait_for_registry($second, "state = 'held'", 'registry state becomes held');
my $took = time - $stopped_at;
note sprintf('second took over %.1f s after the first stopped', $took);
is( $registry->safe_psql(
		'registry',
		"SELECT claimed_at > '$first_expires' FROM snowflake_registry WHERE worker_id = 2"),
	't',
	'second: claimed only after the first\'s lease had expired (registry clock)');
is(registry_row('system_identifier'),
	system_identifier($second), 'registry row: now the second node\'s');
is(registry_row('inherited_ids_before IS NOT NULL'),
	't', 'registry row: keeps the first node\'s horizon');
my $second_id = $second->safe_psql('postgres', 'SELECT snowflake_nextval()');
is(decode($second, $second_id), '1/2', 'second: issues IDs of 1/2');
cmp_ok($second_id, '>', $first_last, 'second: its IDs are above the first\'s');
is(SnowflakeTest::registry_status($second, 'conflict_host IS NULL AND last_error IS NULL'),
	't', 'second: no conflict, no error any more');

## 3. A node with a clock an hour behind takes over, above the second --------

SKIP:
{
	skip 'libfaketime is not installed', 4
	  unless SnowflakeTest::faketime_available();
	my $second_last = $second->safe_psql('postgres',
		'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
	my $second_last_time = $second->safe_psql('postgres',
		"SELECT ts FROM snowflake_decode($second_last)");
	my $lagging = SnowflakeTest::init_node(
		'lagging',
		datacenter_id => 1,
		worker_id => 2,
		faketime => 1,
		conf => [ @registry_conf, "snowflake.max_lead = '2h'" ]);
	SnowflakeTest::set_clock_offset($lagging, -3600);
	$second->stop('fast');
	start_with_extension($lagging);
	SnowflakeTest::wait_for_registry($lagging, "state = 'held'", 'registry state becomes held');
	my $lagging_id =
	  $lagging->safe_psql('postgres', 'SELECT snowflake_nextval()');
	is(decode($lagging, $lagging_id), '1/2', 'lagging: issues IDs of 1/2');
	cmp_ok($lagging_id, '>', $second_last,
		'lagging: its IDs are above the second\'s although its clock is an hour behind');
	is(registry_row("inherited_ids_before > '$second_last_time'"),
		't', 'registry row: hands the second node\'s horizon over to it');
	$lagging->stop('fast');
}

done_testing();
