# The registry of a test: a cluster holding the registry database, the
# registry table of this version (doc/registry.md's, through RegistryTable),
# and what the registry and a node say of a lease.
package SnowflakeTest::Registry;

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use Test::More;
use RegistryTable;
use SnowflakeTest::Nodes;

=pod

=head1 NAME

SnowflakeTest::Registry - the registry of snowflake's cluster tests

=head1 FUNCTIONS

=over

=item start_registry(%options) => ($registry, $conninfo)

Starts a cluster holding an empty database C<registry>, and returns it with a
libpq connection string for it, to put in snowflake.registry (append
C<user=...> and other options as needed). Option: C<allows_streaming> (passed
to PostgreSQL::Test::Cluster::init), for a registry that gets a standby
(init_standby).

=cut

sub start_registry
{
	my (%options) = @_;
	my $registry = PostgreSQL::Test::Cluster->new('registry');
	$registry->init(allows_streaming => $options{allows_streaming} // 0);
	$registry->start;
	$registry->safe_psql('postgres', 'CREATE DATABASE registry');
	SnowflakeTest::Nodes::remember_node($registry);
	return ($registry,
		'host=' . $registry->host . ' port=' . $registry->port . ' dbname=registry');
}

=pod

=item registry_table_sql() => $sql

The C<CREATE TABLE public.snowflake_registry> of this version: the statement
doc/registry.md gives (RegistryTable), in schema public, for tests that make
the table themselves (its owner, its grants) before a node's worker would.

=cut

sub registry_table_sql
{
	return "\n" . RegistryTable::doc_statement('public.snowflake_registry') . "\n";
}

=pod

=item registry_row($registry, $datacenter_id, $worker_id, $columns) => $text

C<$columns> (SQL) of the registry table's row of that identity, read on the
registry server.

=cut

sub registry_row
{
	my ($registry, $datacenter_id, $worker_id, $columns) = @_;
	return $registry->safe_psql('registry',
		"SELECT $columns FROM snowflake_registry WHERE datacenter_id = $datacenter_id AND worker_id = $worker_id"
	);
}

=pod

=item registry_status($node, $columns) => $text

C<$columns> of snowflake_registry_status() on the node.

=item wait_for_registry($node, $condition, $label)

Polls until C<$condition> (SQL over snowflake_registry_status()) is true, as
one test named C<$label> (by default the condition), prefixed with the node's
name; on failure shows the whole status.

=cut

sub registry_status
{
	my ($node, $columns) = @_;
	return $node->safe_psql('postgres',
		"SELECT $columns FROM snowflake_registry_status()");
}

sub wait_for_registry
{
	my ($node, $condition, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok( $node->poll_query_until('postgres',
			"SELECT $condition FROM snowflake_registry_status()"),
		$node->name . ': ' . ($label // $condition))
	  or diag registry_status($node, '*');
	return;
}


=pod

=back

=cut

1;
