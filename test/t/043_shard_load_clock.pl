# The load of 040_shards.pl (three nodes, two sessions each, inserting at
# once) under Twitter's clock policy, snowflake.max_clock_backward_wait = 0:
# fail at once when the clock is behind the last ID. Nobody steps the clock
# during the test, so no insert may fail and no node may log a clock step.
# A backend whose clock reading went stale before it reached the generator
# (it was descheduled, or it lost the compare-and-swap to a backend that had
# read the next millisecond) must read the clock again, not report a step.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $SESSIONS_PER_NODE = 2;
my $BATCHES = 17;
my $BATCH_ROWS = 10_000;

my @nodes;
for my $worker_id (1 .. 3)
{
	my $node = SnowflakeTest::init_node(
		"node_$worker_id",
		datacenter_id => 1,
		worker_id => $worker_id,
		conf => ['snowflake.max_clock_backward_wait = 0']);
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres',
		'CREATE EXTENSION snowflake; CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), customer_id integer NOT NULL)'
	);
	push @nodes, $node;
}

# As in 040_shards.pl: the loaders wait on an advisory lock, released on all
# nodes at once.
my (@gates, @loaders);
for my $node (@nodes)
{
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('SELECT pg_advisory_lock(4043)');
	push @gates, $gate;
	for my $session (1 .. $SESSIONS_PER_NODE)
	{
		my $script = "SELECT pg_advisory_lock_shared(4043);\n"
		  . "SELECT pg_advisory_unlock_shared(4043);\n"
		  . "INSERT INTO orders (customer_id) SELECT i FROM generate_series(1, $BATCH_ROWS) i;\n"
		  x $BATCHES;
		my $loader = SnowflakeTest::start_sql($node, $script, name => "loader_$session");
		push @loaders, $loader;
	}
}
# Every loader is waiting for the lock (or about to) once it is connected.
for my $node (@nodes)
{
	$node->poll_query_until('postgres',
		"SELECT count(*) = $SESSIONS_PER_NODE FROM pg_stat_activity WHERE application_name LIKE 'loader_%'")
	  or die 'the loaders did not connect';
}
$_->query_safe('SELECT pg_advisory_unlock(4043)') for @gates;
my @results = map { SnowflakeTest::finish_sql($_) } @loaders;
$_->quit for @gates;

my @failures = map { "$_->{message} ($_->{detail})" } grep { !$_->{ok} } @results;
is(scalar @failures, 0,
	'with max_clock_backward_wait = 0 and a clock that never stepped back, no insert failed')
  or diag join("\n", @failures);

for my $node (@nodes)
{
	my @steps = slurp_file($node->logfile) =~ /(system clock stepped back by \d+ ms\n.*DETAIL:.*)/g;
	is(scalar @steps, 0, $node->name . ': no clock step reported')
	  or diag join("\n", @steps);
}

done_testing();
