# Helpers for the Citus tests (test/citus/*.pl), on top of SnowflakeTest:
# nodes that preload Citus and snowflake, a coordinator and its workers over
# Unix sockets, and which node issued the IDs a query returns.
#
# Every node of a test listens in the framework's one socket directory
# (PostgreSQL::Test::Cluster gives all nodes of a script the same host), so
# that directory is each node's name in pg_dist_node and its
# citus.local_hostname (the name a node uses to reach itself, as shard moves
# do). Psql's \d fails once the citus extension exists ("negative bitmapset
# member not allowed"): the tests read the catalogs instead.
package CitusTest;

use strict;
use warnings FATAL => 'all';

use Carp;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# init_node($name, %options) => $node: a node made by SnowflakeTest::init_node
# (datacenter_id, worker_id and conf as there) that also preloads Citus, first
# as Citus requires, with what shard moves need (logical decoding) and room for
# the connections Citus opens between nodes.
sub init_node
{
	my ($name, %options) = @_;
	my $node = SnowflakeTest::init_node(
		$name, %options,
		conf => [
			"shared_preload_libraries = 'citus,snowflake'",
			# Never phone home (a packaged Citus reports usage by default).
			'citus.enable_statistics_collection = off',
			# Shard moves copy by logical replication (the framework's
			# nodes have no WAL senders).
			'wal_level = logical',
			'max_wal_senders = 10',
			'max_replication_slots = 10',
			'max_connections = 120',
			'max_prepared_transactions = 120',
			'max_worker_processes = 24',
			@{ $options{conf} // [] }
		]);
	$node->append_conf('postgresql.conf', "citus.local_hostname = '" . $node->host . "'");
	return $node;
}

# start($node): starts the node and creates the citus extension in its
# database postgres (each node needs it before it joins).
sub start
{
	my ($node) = @_;
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	return;
}

# start_cluster($coordinator, @workers): starts them all, registers the
# coordinator in its own metadata (so that workers can reach it and queries
# can run from any node) and adds the workers.
sub start_cluster
{
	my ($coordinator, @workers) = @_;
	start($_) for ($coordinator, @workers);
	$coordinator->safe_psql('postgres',
		sprintf("SELECT citus_set_coordinator_host('%s', %d)", $coordinator->host, $coordinator->port));
	add_worker($coordinator, $_) for @workers;
	return;
}

# add_worker($coordinator, $worker): adds a started worker to the cluster;
# Citus copies the metadata and the extensions (snowflake included) to it.
sub add_worker
{
	my ($coordinator, $worker) = @_;
	$coordinator->safe_psql('postgres',
		sprintf("SELECT citus_add_node('%s', %d)", $worker->host, $worker->port));
	return;
}

# issuers($node, $ids_sql, \%names) => "name=count,..." : which nodes issued
# the IDs that $ids_sql (one bigint column named id) returns on $node, by
# decoding them; %names maps "datacenter_id/worker_id" to a node's name
# (identities not in it are shown as they are). Sorted by name.
sub issuers
{
	my ($node, $ids_sql, $names) = @_;
	my $rows = $node->safe_psql(
		'postgres', qq{
		SELECT d.datacenter_id || '/' || d.worker_id, count(*)
		  FROM ($ids_sql) ids, snowflake_decode(ids.id) d GROUP BY 1});
	my %count;
	for my $line (split /\n/, $rows)
	{
		my ($identity, $n) = split /\|/, $line;
		$count{ $names->{$identity} // $identity } += $n;
	}
	return join(',', map { "$_=$count{$_}" } sort keys %count);
}

# identities($coordinator) => { node name => "dc/worker source problem" }:
# snowflake_cluster_identities() run on $node, keyed by the names of %$nodes
# (name => node), matched by port.
sub identities
{
	my ($node, $nodes) = @_;
	my %by_port = map { $nodes->{$_}->port => $_ } keys %$nodes;
	my %result;
	for my $line (
		split /\n/,
		$node->safe_psql(
			'postgres', q{
		SELECT split_part(node, ':', 2), coalesce(datacenter_id || '/' || worker_id, 'none'), source,
		       coalesce(problem, 'ok')
		  FROM snowflake_cluster_identities()}))
	{
		my ($port, $identity, $source, $problem) = split /\|/, $line;
		$result{ $by_port{$port} // "port $port" } = "$identity $source: $problem";
	}
	return \%result;
}

1;
