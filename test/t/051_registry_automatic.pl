# Automatic identities (doc/registry.md): with snowflake.worker_id unset and a
# registry configured, a node leases a free identity, as a Kubernetes
# StatefulSet or an autoscaling group needs.
#
# 1. Three nodes with neither datacenter_id nor worker_id set get three
#    distinct identities, the lowest free ones (skipping one an administrator
#    reserved); the IDs each issues decode to its identity. A node with
#    datacenter_id set leases within it.
# 2. A node stopped keeps its identity while its lease lives: a new node
#    started meanwhile gets another one, and the node, restarted, gets its own
#    back.
# 3. A node configured with the reserved identity refuses, naming the
#    reservation.
# 4. A node whose role may not read the registry reports the error, not that
#    every identity is leased.
# The nodes reach the registry as a role with only SELECT, INSERT and UPDATE
# on a table an administrator created in a schema of its own.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use RegistryTable;
use SnowflakeTest;
use Test::More;

# Long enough that a stop, a new node's start and a restart fit in it on a
# loaded machine (a CI run, with 20 s, saw gamma's lease lapse before the new
# node's claim); nothing here waits for a lease to run out.
my $LEASE = '60s';

# The registry set up as doc/registry.md describes for least privilege: the
# table created by an administrator in its own schema, the nodes connecting as
# a role that may only read, insert and update it.
my ($registry, $registry_conninfo) = SnowflakeTest::start_registry();
$registry->safe_psql('registry',
	'CREATE ROLE snowflake_node LOGIN; CREATE SCHEMA snowflake; ' . RegistryTable::doc_statement());
$registry->safe_psql(
	'registry', q{
-- An identity used by a node outside the registry, reserved for good.
INSERT INTO snowflake.snowflake_registry VALUES
    (0, 1, 0, 0, 'legacy-db:5432', '/srv/legacy', 'legacy',
     now(), now(), 'infinity', now(), NULL);
GRANT USAGE ON SCHEMA snowflake TO snowflake_node;
GRANT SELECT, INSERT, UPDATE ON snowflake.snowflake_registry TO snowflake_node;
});
my $conninfo =
  "$registry_conninfo user=snowflake_node options=-csearch_path=snowflake";
my @registry_conf =
  ("snowflake.registry = '$conninfo'", "snowflake.registry_lease = '$LEASE'");

# Starts the node and waits until it holds a lease; returns "datacenter/worker".
sub start_leasing
{
	my ($node) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS snowflake');
	ok( $node->poll_query_until(
			'postgres', "SELECT state FROM snowflake_registry_status()", 'held'),
		$node->name . ': leases an identity')
	  or diag SnowflakeTest::registry_status($node, '*');
	return SnowflakeTest::registry_status($node, "datacenter_id || '/' || worker_id");
}

# The identities of 500 IDs the node issues now, as "datacenter/worker" (one
# value if they all agree).
sub issued_identities
{
	my ($node) = @_;
	return $node->safe_psql(
		'postgres', q{
		SELECT string_agg(DISTINCT d.datacenter_id || '/' || d.worker_id, ',')
		FROM generate_series(1, 500), snowflake_decode(snowflake_nextval()) d});
}

sub automatic_node
{
	my ($name, %options) = @_;
	return SnowflakeTest::init_node(
		$name,
		datacenter_id => $options{datacenter_id},
		worker_id => undef,
		conf => \@registry_conf);
}

## 1. Three nodes, three identities ------------------------------------------

my %node;
my %identity;
for my $name (qw(alpha beta gamma))
{
	$node{$name} = automatic_node($name);
	$identity{$name} = start_leasing($node{$name});
	note "$name leased $identity{$name}";
}
is(join(',', sort values %identity),
	'0/0,0/2,0/3', 'three nodes lease the three lowest free identities, not the reserved 0/1');
for my $name (qw(alpha beta gamma))
{
	is(SnowflakeTest::registry_status($node{$name}, 'automatic'), 't', "$name: status says automatic");
	is(issued_identities($node{$name}),
		$identity{$name}, "$name: its IDs decode to $identity{$name}");
}
is( $registry->safe_psql(
		'registry',
		'SELECT count(DISTINCT system_identifier) FROM snowflake.snowflake_registry WHERE expires_at > now()'
	),
	'4',
	'registry: four live rows, one per node and the reservation');

$node{delta} = automatic_node('delta', datacenter_id => 5);
$identity{delta} = start_leasing($node{delta});
is($identity{delta}, '5/0', 'a node with datacenter_id 5 leases 5/0');
is(issued_identities($node{delta}), '5/0', 'delta: its IDs decode to 5/0');

## 2. A restart within the lease keeps the identity --------------------------

# The new node's data directory is made first: between gamma's stop and the
# new node's claim, only a start.
$node{epsilon} = automatic_node('epsilon');
my $gamma_last = $node{gamma}->safe_psql('postgres', 'SELECT snowflake_nextval()');
$node{gamma}->stop('fast');
is( $registry->safe_psql(
		'registry',
		"SELECT expires_at > now() FROM snowflake.snowflake_registry WHERE datacenter_id || '/' || worker_id = '$identity{gamma}'"
	),
	't',
	'gamma stopped: its lease still lives');

$identity{epsilon} = start_leasing($node{epsilon});
is($identity{epsilon}, '0/4',
	'a new node does not take the identity of a stopped node whose lease lives')
  or diag $registry->safe_psql('registry',
	'SELECT *, now() FROM snowflake.snowflake_registry ORDER BY 1, 2');

my $gamma_identity = start_leasing($node{gamma});
is($gamma_identity, $identity{gamma},
	'gamma restarted within its lease: the same identity again');
is(issued_identities($node{gamma}),
	$identity{gamma}, 'gamma: its IDs decode to its identity');
cmp_ok($node{gamma}->safe_psql('postgres', 'SELECT snowflake_nextval()'),
	'>', $gamma_last, 'gamma: its IDs continue above those before the restart');

my $all = join(',', map { "'$_'" } sort values %identity);
is( $registry->safe_psql(
		'registry',
		"SELECT count(*) FROM snowflake.snowflake_registry WHERE expires_at > now() AND datacenter_id || '/' || worker_id IN ($all)"
	),
	scalar(keys %identity),
	'registry: every node holds a live lease on its own identity');

## A node configured with the reserved identity refuses -----------------------

my $intruder = SnowflakeTest::init_node(
	'intruder',
	datacenter_id => 0,
	worker_id => 1,
	conf => \@registry_conf);
SnowflakeTest::start_node($intruder);
$intruder->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok( $intruder->poll_query_until(
		'postgres', "SELECT state FROM snowflake_registry_status()", 'conflict'),
	'a node configured with the reserved identity is in conflict');
my $r = SnowflakeTest::try_sql($intruder, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'intruder: refuses to issue IDs');
like($r->{detail}, qr{held by legacy-db:5432 \(data directory /srv/legacy, .*its lease running until infinity;},
	'intruder: the detail names the reservation');

## A node that may not read the registry says so ----------------------------

# Its role may insert and update, not select: the pick of a free identity
# fails. That is an error to report (and retry), not "every identity is
# leased".
$registry->safe_psql(
	'registry', q{
CREATE ROLE snowflake_blind LOGIN;
GRANT USAGE ON SCHEMA snowflake TO snowflake_blind;
GRANT INSERT, UPDATE ON snowflake.snowflake_registry TO snowflake_blind;
});
my $blind = SnowflakeTest::init_node(
	'blind',
	datacenter_id => undef,
	worker_id => undef,
	conf => [
		"snowflake.registry = '$registry_conninfo user=snowflake_blind options=-csearch_path=snowflake'",
		"snowflake.registry_lease = '$LEASE'" ]);
SnowflakeTest::start_node($blind);
$blind->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($blind, "state IN ('unreachable', 'exhausted')",
	'a node whose role may not read the registry gives up on picking');
is(SnowflakeTest::registry_status($blind, 'state'),
	'unreachable', 'blind: the registry is reported unreachable, not every identity leased');
like(SnowflakeTest::registry_status($blind, 'last_error'),
	qr/permission denied for table snowflake_registry/, 'blind: the last error says why');

$_->stop('fast') for (values %node, $intruder, $blind);
done_testing();
