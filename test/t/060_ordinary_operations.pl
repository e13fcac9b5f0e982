# What every PostgreSQL server goes through, with snowflake preloaded: the
# operations that wait for every process of the server to absorb a
# ProcSignalBarrier (DROP DATABASE, ALTER DATABASE ... SET TABLESPACE, DROP
# TABLESPACE, CREATE DATABASE ... STRATEGY FILE_COPY) finish, whatever the
# registry worker is doing:
#
# 1. no registry configured (the worker idles);
# 2. a registry, the lease held (the worker waits between renewals);
# 3. a registry that accepts the worker's connection and never answers (the
#    worker waits on its socket, in the middle of connecting): the operations
#    finish while that connection is still open, so the worker absorbed the
#    barrier in that wait, not after giving up on the registry;
# 4. the worker's other interrupts, as a backend's: pg_cancel_backend ends
#    its request in flight (the worker lives on and says why), a reload
#    reaches it, pg_terminate_backend stops it and the postmaster starts it
#    again.
#
# On 1.3 the first DROP DATABASE hung forever. Every statement here runs under
# a statement_timeout, so a regression fails instead of hanging.
use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

# Much longer than any of these operations takes; far shorter than "forever".
my $TIMEOUT = '60s';

my $node = SnowflakeTest::init_node('ops');
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

# Runs the barrier-waiting operations, each under the timeout, each a test.
my $round = 0;

sub barrier_operations
{
	my ($label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$round++;
	my $location = $node->basedir . "/tablespace_$round";
	mkdir $location or die "mkdir $location: $!";
	my @steps = (
		[ 'CREATE DATABASE', "CREATE DATABASE ops_$round" ],
		[ 'DROP DATABASE', "DROP DATABASE ops_$round" ],
		[ 'CREATE TABLESPACE', "CREATE TABLESPACE space_$round LOCATION '$location'" ],
		[ 'CREATE DATABASE ... STRATEGY FILE_COPY',
			"CREATE DATABASE moved_$round STRATEGY FILE_COPY" ],
		[ 'ALTER DATABASE ... SET TABLESPACE',
			"ALTER DATABASE moved_$round SET TABLESPACE space_$round" ],
		[ 'DROP DATABASE (in the tablespace)', "DROP DATABASE moved_$round" ],
		[ 'DROP TABLESPACE', "DROP TABLESPACE space_$round" ],);
	for my $step (@steps)
	{
		my ($name, $sql) = @$step;
		my $r = SnowflakeTest::try_sql($node,
			"SET statement_timeout = '$TIMEOUT';\n$sql;");
		ok($r->{ok}, "$label: $name finishes")
		  or diag "$r->{stderr}\n" . SnowflakeTest::log_tail($node, 10);
	}
	return;
}

sub worker_pid
{
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
}

## 1. No registry ------------------------------------------------------------

isnt(worker_pid(), '', 'the registry worker runs (no registry configured)');
is(SnowflakeTest::registry_status($node, 'state'),
	'disabled', 'its state is disabled');
barrier_operations('no registry');

## 2. A registry, the lease held ---------------------------------------------

my ($registry, $conninfo) = SnowflakeTest::start_registry();
SnowflakeTest::set_config($node, 'snowflake.registry' => $conninfo);
SnowflakeTest::wait_for_registry($node, "state = 'held'", 'holds its lease');
barrier_operations('lease held');
is(SnowflakeTest::registry_status($node, 'state'),
	'held', 'the lease is still held after them');

## 3. A registry that never answers ------------------------------------------

# A listener on loopback that accepts every connection and never says a word:
# the worker's connection attempt waits for the server's first message. It
# writes "open PORT TIME" and "closed PORT" (the peer's port) to a file as
# connections come and go.
my $events = $node->basedir . '/silent_registry.log';
my $listener = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => 0,
	Listen => 16,
	ReuseAddr => 1) or die "listen: $!";
my $silent_port = $listener->sockport;
my $child = fork // die "fork: $!";
if ($child == 0)
{
	my $select = IO::Select->new($listener);
	open my $log, '>>', $events or die "$events: $!";
	$log->autoflush(1);
	my %peer;
	while (1)
	{
		for my $ready ($select->can_read)
		{
			if ($ready == $listener)
			{
				my $client = $listener->accept or next;
				$peer{$client} = $client->peerport;
				$select->add($client);
				print $log "open $peer{$client} " . time . "\n";
			}
			elsif (!sysread($ready, my $buffer, 8192))
			{
				print $log "closed $peer{$ready}\n";
				$select->remove($ready);
				close $ready;
			}
		}
	}
}
close $listener;

# The connections the worker has open to the silent registry, and when each
# was opened.
sub open_since
{
	my %open;
	for (split /\n/, -e $events ? slurp_file($events) : '')
	{
		my ($event, $port, $at) = split / /;
		if ($event eq 'open') { $open{$port} = $at }
		else { delete $open{$port} }
	}
	return %open;
}

sub open_connections
{
	my %open = open_since();
	return sort keys %open;
}

# The databases and the tablespace the operations below work on, made first.
my $location = $node->basedir . '/tablespace_silent';
mkdir $location or die "mkdir $location: $!";
$node->safe_psql('postgres', "CREATE TABLESPACE space_silent LOCATION '$location'");
$node->safe_psql('postgres', 'CREATE DATABASE dropped_silent');
$node->safe_psql('postgres', 'CREATE DATABASE moved_silent');

# A lease of 4 minutes gives every request to the registry 10 s (a quarter of
# the lease, at most 10 s); the worker then reconnects a second later. Each
# operation starts while a connection attempt less than 3 s old waits, and
# must finish while that attempt still waits: had it waited for the worker to
# give up, the attempt would be over.
SnowflakeTest::set_config(
	$node,
	'snowflake.registry' => "host=127.0.0.1 port=$silent_port dbname=registry",
	'snowflake.registry_lease' => '4min');

# A connection attempt of the worker that began less than 3 s ago, waited for.
sub fresh_connection
{
	for (1 .. 600)
	{
		my %open = open_since();
		my ($fresh) = grep { time - $open{$_} < 3 } keys %open;
		return $fresh if defined $fresh;
		usleep(50_000);
	}
	return undef;
}

my $connecting;
for my $step (
	[ 'DROP DATABASE', 'DROP DATABASE dropped_silent' ],
	[ 'ALTER DATABASE ... SET TABLESPACE', 'ALTER DATABASE moved_silent SET TABLESPACE space_silent' ],
	[ 'DROP DATABASE (in the tablespace)', 'DROP DATABASE moved_silent' ],
	[ 'DROP TABLESPACE', 'DROP TABLESPACE space_silent' ])
{
	my ($name, $sql) = @$step;
	$connecting = fresh_connection();
	my $r = SnowflakeTest::try_sql($node, "SET statement_timeout = '$TIMEOUT';\n$sql;");
	ok($r->{ok}, "registry silent: $name finishes") or diag $r->{stderr};
	ok(defined $connecting && (grep { $_ eq $connecting } open_connections()),
		"registry silent: $name finished while the worker's connection attempt waited");
}

# A cancel ends the request in flight; the worker lives on and says why.
my $pid = worker_pid();
$connecting = fresh_connection();
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
my $waited = 0;
usleep(50_000)
  while (grep { $_ eq ($connecting // '') } open_connections()) && ($waited += 0.05) < 30;
ok(defined $connecting && !(grep { $_ eq $connecting } open_connections()),
	'pg_cancel_backend ends the connection attempt');
like(
	SnowflakeTest::registry_status($node, 'last_error'),
	qr/canceled/,
	'the status says the request was canceled');
is(worker_pid(), $pid, 'the worker itself goes on');

## 4. Reload and terminate ---------------------------------------------------

# A reload reaches the worker: back to the real registry, where it holds its
# lease again.
SnowflakeTest::set_config($node, 'snowflake.registry' => $conninfo);
SnowflakeTest::wait_for_registry($node, "state = 'held'",
	'after a reload it holds its lease from the real registry');
is(worker_pid(), $pid, 'the reload was taken by the same worker');

$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'snowflake registry' AND pid <> $pid"
	),
	'pg_terminate_backend stops the worker, and the postmaster starts it again');
SnowflakeTest::wait_for_registry($node, "state = 'held'",
	'the new worker holds the lease');
barrier_operations('after a restart of the worker');

kill 'KILL', $child;
waitpid $child, 0;
$node->stop;
done_testing();
