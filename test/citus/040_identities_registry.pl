# Identities from the registry in a Citus cluster (doc/citus.md,
# doc/registry.md): every node has snowflake.registry set and
# snowflake.worker_id unset, so each leases an identity of its own.
#
# 1. The coordinator and two workers lease three distinct identities;
#    snowflake_cluster_identities() shows them, with no problem; keys taken
#    on each path carry the identity of the node that took them.
# 2. A worker added later leases a fourth; after a rebalance, pushed-down
#    calls on its shards take that identity.
# 3. A worker configured by hand, outside the registry, with an identity
#    another node leases: snowflake_cluster_identities() names both nodes,
#    and that it stands outside the registry. Pointed at the registry, it
#    refuses to issue (the registry shows the identity held), so a query
#    that would take keys on it fails, naming it, and nothing is issued
#    twice.
use strict;
use warnings;

use CitusTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use RegistryTable;
use SnowflakeTest;
use Test::More;

my ($registry, $registry_conninfo) = SnowflakeTest::start_registry();
$registry->safe_psql('registry', 'CREATE SCHEMA snowflake; ' . RegistryTable::doc_statement());
my @registry_conf = (
	"snowflake.registry = '$registry_conninfo options=-csearch_path=snowflake'",
	"snowflake.registry_lease = '20s'");

sub leasing_node
{
	my ($name) = @_;
	return CitusTest::init_node($name, datacenter_id => 1, worker_id => undef, conf => \@registry_conf);
}

# Waits until the node holds a lease; returns its identity, "1/N".
sub lease_of
{
	my ($node) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	SnowflakeTest::wait_for_registry($node, "state = 'held'", 'holds a lease');
	return SnowflakeTest::registry_status($node, "datacenter_id || '/' || worker_id");
}

## 1. Three nodes, three leases ---------------------------------------------------

my $coordinator = leasing_node('coordinator');
my $worker_1 = leasing_node('worker_1');
my $worker_2 = leasing_node('worker_2');
my %nodes = (coordinator => $coordinator, worker_1 => $worker_1, worker_2 => $worker_2);
CitusTest::start_cluster($coordinator, $worker_1, $worker_2);
$coordinator->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my %lease = map { $_ => lease_of($nodes{$_}) } sort keys %nodes;
my %names = reverse %lease;
is(scalar(keys %names), 3,
	'three nodes lease three distinct identities: ' . join(', ', map { "$_ $lease{$_}" } sort keys %lease));
is_deeply(
	CitusTest::identities($coordinator, \%nodes),
	{ map { $_ => "$lease{$_} registry: ok" } keys %nodes },
	'snowflake_cluster_identities() shows each lease, with no problem');

$coordinator->safe_psql(
	'postgres', q{
SET citus.shard_count = 8;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), path text NOT NULL);
SELECT create_distributed_table('events', 'id');
INSERT INTO events (path) SELECT 'coordinator' FROM generate_series(1, 100);
});
$worker_1->safe_psql('postgres', q{INSERT INTO events (path) VALUES ('worker_1')});
is(CitusTest::issuers($coordinator, q{SELECT id FROM events WHERE path = 'coordinator'}, \%names),
	'coordinator=100', 'keys taken on the coordinator carry its lease');
is(CitusTest::issuers($coordinator, q{SELECT id FROM events WHERE path = 'worker_1'}, \%names),
	'worker_1=1', 'keys taken on a worker carry its lease');
like(CitusTest::issuers($coordinator, 'SELECT snowflake_nextval() AS id FROM events', \%names),
	qr/^worker_1=\d+,worker_2=\d+$/, 'a pushed-down snowflake_nextval() takes the workers\' leases');

## 2. A worker added later ---------------------------------------------------------

my $worker_3 = leasing_node('worker_3');
CitusTest::start($worker_3);
CitusTest::add_worker($coordinator, $worker_3);
$nodes{worker_3} = $worker_3;
$lease{worker_3} = lease_of($worker_3);
$names{ $lease{worker_3} } = 'worker_3';
is(scalar(keys %names), 4, "worker_3 leases a fourth identity, $lease{worker_3}");
$coordinator->safe_psql('postgres', "SELECT rebalance_table_shards(shard_transfer_mode => 'force_logical')");
like(CitusTest::issuers($coordinator, 'SELECT snowflake_nextval() AS id FROM events', \%names),
	qr/^worker_1=\d+,worker_2=\d+,worker_3=\d+$/, 'after a rebalance, pushed-down calls take worker_3\'s lease too');
is_deeply(
	CitusTest::identities($worker_3, \%nodes),
	{ map { $_ => "$lease{$_} registry: ok" } keys %nodes },
	'snowflake_cluster_identities() on worker_3 shows all four leases');

## 3. A worker configured with a leased identity ----------------------------------------

my ($datacenter, $worker) = split m{/}, $lease{worker_1};
my $intruder = CitusTest::init_node('intruder', datacenter_id => $datacenter, worker_id => $worker);
CitusTest::start($intruder);
CitusTest::add_worker($coordinator, $intruder);
$nodes{intruder} = $intruder;
my $worker_1_address = $worker_1->host . ':' . $worker_1->port;
my $intruder_address = $intruder->host . ':' . $intruder->port;
my $identities = CitusTest::identities($coordinator, \%nodes);
is( $identities->{intruder},
	"$lease{worker_1} configured: issues IDs under the same identity as $worker_1_address; "
	  . 'uses no registry, while other nodes lease their identities from one: '
	  . 'nothing keeps a lease from taking its identity',
	'snowflake_cluster_identities() names the intruder: the same identity as worker_1, outside the registry');
is($identities->{worker_1}, "$lease{worker_1} registry: issues IDs under the same identity as $intruder_address",
	'... and worker_1: the same identity as the intruder');

# Pointed at the registry, the intruder finds its identity held, and refuses.
SnowflakeTest::set_config($intruder, 'snowflake.registry' => "$registry_conninfo options=-csearch_path=snowflake");
SnowflakeTest::wait_for_registry($intruder, "state = 'conflict'", 'the registry shows its identity held by worker_1');
$identities = CitusTest::identities($coordinator, \%nodes);
like($identities->{intruder},
	qr{^\Q$lease{worker_1}\E registry: the registry shows identity \Q$lease{worker_1}\E held by another node, },
	'snowflake_cluster_identities(): the intruder issues nothing; the registry holds its identity for another node');
is($identities->{worker_1}, "$lease{worker_1} registry: ok", '... and worker_1 is fine again');

$coordinator->safe_psql('postgres',
	'SELECT citus_move_shard_placement((SELECT min(shardid) FROM citus_shards WHERE nodeport = ' . $worker_1->port
	  . "), '" . $worker_1->host . "', " . $worker_1->port . ", '" . $intruder->host . "', " . $intruder->port
	  . ", shard_transfer_mode => 'force_logical')");
my $r = SnowflakeTest::try_sql($coordinator, 'SELECT count(snowflake_nextval()) FROM events');
is($r->{sqlstate}, '55000', 'a pushed-down call that reaches the intruder fails');
like($r->{message}, qr/^snowflake identity datacenter_id $datacenter, worker_id $worker is held by another node$/,
	'... because its identity is held by another node');
like($r->{stderr}, qr/while executing command on \Q$intruder_address\E/, '... and the error names the intruder');
is($intruder->safe_psql('postgres', 'SELECT ids_issued FROM snowflake_status'), '0', 'the intruder issued no ID');
is($coordinator->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM events'),
	't', 'every key in the table is distinct');

$_->stop('fast') for ($intruder, $worker_3, $worker_2, $worker_1, $coordinator);
done_testing();
