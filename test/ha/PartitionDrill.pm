# What the partition drills (test/ha/2NN_partition_*.t) share: a lab with the
# registry server and snowflake nodes each in a network namespace of its own
# (Netns, NetnsPostgres), and on each node a procedure that issues IDs in a
# loop and records every ID and every refusal with the node's clock, so that
# the drill can tell exactly when a node stopped or started issuing.
package PartitionDrill;

use strict;
use warnings FATAL => 'all';

use Carp;
use Netns;
use NetnsPostgres;
use Test::More;
use Time::HiRes qw(time usleep);

=pod

=head1 registry($lab, $port) => ($registry, $conninfo)

Starts the registry server on host C<reg> (10.231.0.1) of the lab, with an
empty database C<registry>; returns it and the connection string the nodes
use (an address, so no name is resolved).

=cut

sub registry
{
	my ($lab, $port) = @_;
	$lab->add_host('reg', 1);
	my $registry = NetnsPostgres->new(lab => $lab, role => 'reg', name => 'registry', port => $port);
	$registry->start;
	$registry->psql('CREATE DATABASE registry');
	return ($registry,
		"hostaddr=${\ $lab->address('reg')} port=$port dbname=registry user=postgres");
}

=pod

=head1 node($lab, $role, $last_octet, $port, @conf) => $node

Starts a node preloading snowflake on its own host of the lab (listening on
its Unix socket only: the only TCP it does is its registry worker's), creates
the extension and the tables and procedure below.

=cut

sub node
{
	my ($lab, $role, $last_octet, $port, @conf) = @_;
	$lab->add_host($role, $last_octet);
	my $node = NetnsPostgres->new(
		lab => $lab,
		role => $role,
		name => "node-$role",
		port => $port,
		listen => '',
		conf => [ "shared_preload_libraries = 'snowflake'", @conf ]);
	$node->start;
	$node->psql(<<'SQL');
CREATE EXTENSION snowflake;
CREATE TABLE issued (at timestamptz NOT NULL, id bigint NOT NULL);
CREATE TABLE refused (at timestamptz NOT NULL, sqlstate text, message text, detail text);
-- Issues one ID every few ms, each in its own transaction, for at most
-- `seconds`; records a refusal (SQLSTATE 55000, the registry's errors) and
-- then stops if `stop_when_refused`, or keeps trying every 20 ms; stops
-- `after_first` seconds after the first ID it got.
CREATE PROCEDURE issue(seconds float8, stop_when_refused boolean, after_first float8 DEFAULT 1e6)
LANGUAGE plpgsql AS $$
DECLARE
	stop_at timestamptz := clock_timestamp() + seconds * interval '1 s';
	first_at timestamptz;
	error_state text;
	error_message text;
	error_detail text;
BEGIN
	WHILE clock_timestamp() < least(stop_at, first_at + after_first * interval '1 s') LOOP
		error_state := NULL;
		BEGIN
			INSERT INTO issued SELECT clock_timestamp(), snowflake_nextval();
			first_at := coalesce(first_at, clock_timestamp());
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			GET STACKED DIAGNOSTICS error_state = RETURNED_SQLSTATE,
				error_message = MESSAGE_TEXT, error_detail = PG_EXCEPTION_DETAIL;
			INSERT INTO refused VALUES (clock_timestamp(), error_state, error_message, error_detail);
		END;
		COMMIT;
		EXIT WHEN error_state IS NOT NULL AND stop_when_refused;
		PERFORM pg_sleep(CASE WHEN error_state IS NULL THEN 0.005 ELSE 0.02 END);
	END LOOP;
END $$;
SQL
	return $node;
}

# Columns of snowflake_registry_status() on the node.
sub status
{
	my ($node, $columns) = @_;
	return $node->psql("SELECT $columns FROM snowflake_registry_status()");
}

# Polls until $condition (over snowflake_registry_status()) holds, as one test.
sub wait_status
{
	my ($node, $condition, $seconds, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok($node->poll("SELECT $condition FROM snowflake_registry_status()", $seconds),
		$node->name . ': ' . ($label // $condition))
	  or diag status($node, '*');
	return;
}

# Columns of the registry's row of an identity, read on the registry server.
sub registry_row
{
	my ($registry, $datacenter_id, $worker_id, $columns) = @_;
	return $registry->psql(
		"SELECT $columns FROM snowflake_registry WHERE datacenter_id = $datacenter_id AND worker_id = $worker_id",
		dbname => 'registry');
}

# Seconds since 1970 (as a float) of a timestamptz expression on the node.
sub epoch
{
	my ($server, $expression, %options) = @_;
	return $server->psql("SELECT extract(epoch FROM ($expression))", %options);
}

=pod

=head1 tcp_hangs($lab, $role, $address, $port) => $seconds

Tries a TCP connection from the host to C<$address:$port> with psql's
connect_timeout of 2 s, and returns how long it took if it timed out (the
packets vanished), or dies if it was answered or refused at once.

=cut

sub tcp_hangs
{
	my ($lab, $role, $address, $port) = @_;
	my $started = time;
	my $output = `@{[ join ' ', $lab->command($role,
		NetnsPostgres::as_postgres("$ENV{PG_BIN}/psql", '-XAtq',
			"'hostaddr=$address port=$port dbname=registry connect_timeout=2'", '-c', "'SELECT 1'")) ]} 2>&1`;
	my $elapsed = time - $started;
	croak "the connection did not hang: $output" unless $? != 0 && $output =~ /timeout expired/;
	return $elapsed;
}

1;
