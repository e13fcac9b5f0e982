# Identities set by hand in a Citus cluster, and what goes wrong with them
# (doc/citus.md): no registry, each node's snowflake.worker_id in its
# postgresql.conf.
#
# 1. A worker without an identity: writes through the coordinator still work,
#    but every path that takes keys on that worker (a pushed-down SELECT, a
#    repartitioned INSERT ... SELECT) fails, naming the worker;
#    snowflake_cluster_identities() names it before any of that happens.
# 2. Two workers given the same identity: snowflake_cluster_identities()
#    names both, from the coordinator and from a worker. Inserting through
#    both at once issues duplicate keys: a table distributed by a tenant with
#    a (tenant, id) key accepts them silently; a table distributed by the id
#    refuses them (a duplicate lands in the same shard, whose primary key
#    catches it).
# 3. A worker with another layout: snowflake_cluster_identities() names it.
# 4. A worker that does not answer: snowflake_cluster_identities() says so.
use strict;
use warnings;

use CitusTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $coordinator = CitusTest::init_node('coordinator', datacenter_id => 1, worker_id => 0);
my $worker_1 = CitusTest::init_node('worker_1', datacenter_id => 1, worker_id => 1);
my $worker_2 = CitusTest::init_node('worker_2', datacenter_id => 1, worker_id => undef);
my %nodes = (coordinator => $coordinator, worker_1 => $worker_1, worker_2 => $worker_2);
CitusTest::start_cluster($coordinator, $worker_1, $worker_2);
$coordinator->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
SET citus.shard_count = 8;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), path text NOT NULL);
SELECT create_distributed_table('events', 'id');
CREATE TABLE orders (tenant integer NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval(),
                     path text NOT NULL, PRIMARY KEY (tenant, id));
SELECT create_distributed_table('orders', 'tenant');
INSERT INTO orders (tenant, path) SELECT g % 20, 'seed' FROM generate_series(1, 200) g;
});

## 1. A worker without an identity -------------------------------------------------

is_deeply(
	CitusTest::identities($coordinator, \%nodes),
	{
		coordinator => '1/0 configured: ok',
		worker_1 => '1/1 configured: ok',
		worker_2 => 'none configured: snowflake.worker_id is not set',
	},
	'snowflake_cluster_identities() names the worker without an identity');

my $worker_2_address = $worker_2->host . ':' . $worker_2->port;
for my $path (
	'SELECT count(snowflake_nextval()) FROM orders',
	q{INSERT INTO events (path) SELECT 'repartitioned' FROM orders})
{
	my $r = SnowflakeTest::try_sql($coordinator, $path);
	is($r->{message}, 'snowflake.worker_id is not set', "fails on worker_2: $path");
	like($r->{stderr}, qr/while executing command on \Q$worker_2_address\E/, '... and the error names worker_2');
}
is($coordinator->safe_psql('postgres', q{INSERT INTO events (path) VALUES ('router') RETURNING 1}),
	'1', 'a router INSERT through the coordinator still works (the coordinator issues its key)');

## 2. Two workers with the same identity -------------------------------------------

SnowflakeTest::set_config($worker_2, 'snowflake.worker_id' => 1);
my $duplicated = CitusTest::identities($coordinator, \%nodes);
is_deeply(
	$duplicated,
	{
		coordinator => '1/0 configured: ok',
		worker_1 => '1/1 configured: issues IDs under the same identity as ' . $worker_2_address,
		worker_2 => '1/1 configured: issues IDs under the same identity as '
		  . $worker_1->host . ':' . $worker_1->port,
	},
	'snowflake_cluster_identities() names both workers, each naming the other');
is_deeply(CitusTest::identities($worker_1, \%nodes),
	$duplicated, 'the same, asked on a worker');

# Both workers insert at once, for tenants of their own (0-49 and 50-99),
# each issuing the keys itself; the sequence of each millisecond starts at
# the same offset on both, so keys issued in the same millisecond collide.
my @sessions = map {
	my ($node, $first_tenant) = @$_;
	SnowflakeTest::start_sql($node, join("\n",
		map {
			"INSERT INTO orders (tenant, path) SELECT $first_tenant + g % 50, 'both' FROM generate_series(1, 20000) g;"
		} 1 .. 10),
		name => 'duplicates_' . $node->name)
} ([ $worker_1, 0 ], [ $worker_2, 50 ]);
for my $r (map { SnowflakeTest::finish_sql($_) } @sessions)
{
	ok($r->{ok}, 'the (tenant, id) table accepted every row') or diag $r->{stderr};
}
my ($rows, $distinct) = split /\|/,
  $coordinator->safe_psql('postgres', q{SELECT count(*), count(DISTINCT id) FROM orders WHERE path = 'both'});
is($rows, 400000, 'orders: 400,000 rows inserted through two workers');
cmp_ok($distinct, '<', $rows, "orders: duplicate keys, accepted silently: $rows rows, $distinct distinct keys");
diag sprintf('Two workers with one identity (doc/citus.md): %d rows, %d distinct keys, %d duplicates accepted',
	$rows, $distinct, $rows - $distinct);

my $r = SnowflakeTest::try_sql($coordinator,
	q{INSERT INTO events (id, path) SELECT id, 'copied' FROM orders WHERE path = 'both'});
is($r->{sqlstate}, '23505', 'the table distributed by the id refuses the same keys: unique violation');
like($r->{message}, qr/duplicate key value violates unique constraint "events_pkey_\d+"/,
	'... from the primary key of the one shard both copies land in');

## 3. A worker with another layout ---------------------------------------------------

my $worker_3 = CitusTest::init_node('worker_3', datacenter_id => 1, worker_id => 3,
	conf => ['snowflake.worker_bits = 6', 'snowflake.sequence_bits = 11']);
CitusTest::start($worker_3);
CitusTest::add_worker($coordinator, $worker_3);
$nodes{worker_3} = $worker_3;
is( CitusTest::identities($coordinator, \%nodes)->{worker_3},
	'1/3 configured: layout time:41 datacenter:5 worker:6 sequence:11 unit:1ms epoch:1288834974657 '
	  . "differs from this node's, time:41 datacenter:5 worker:5 sequence:12 unit:1ms epoch:1288834974657",
	'snowflake_cluster_identities() names a worker with another layout');

## 4. A worker that does not answer ---------------------------------------------------

$worker_3->stop('fast');
my $worker_3_address = $worker_3->host . ':' . $worker_3->port;
like(CitusTest::identities($coordinator, \%nodes)->{worker_3},
	qr{^none : could not ask it: failed to connect to \Q$worker_3_address\E$},
	'snowflake_cluster_identities() names a worker it cannot reach');

$_->stop('fast') for ($worker_2, $worker_1, $coordinator);
done_testing();
