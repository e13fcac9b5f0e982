# Who issues the key on each insert path of a Citus cluster (doc/citus.md):
# a coordinator and two workers, each with its own snowflake identity, then a
# third worker added.
#
# 1. CREATE EXTENSION snowflake on the coordinator creates it on the workers.
# 2. Through the coordinator: a router INSERT, a multi-row INSERT, COPY, and
#    an INSERT ... SELECT pulled to the coordinator take the key on the
#    coordinator; a repartitioned INSERT ... SELECT from a distributed table
#    (with the DEFAULT, or snowflake_nextval() in the SELECT), and a pushed-
#    down SELECT that calls snowflake_nextval(), take it on the workers that
#    hold the source shards. A reference table's key is the coordinator's.
# 3. Through a worker: the same paths take the key on that worker.
# 4. Distributed by the id, by a tenant with a (tenant, id) key, and a
#    reference table: every key distinct across the cluster.
# 5. Citus refuses snowflake_nextval() in an UPDATE of a distributed or
#    reference table (a volatile function), from any node.
# 6. A time range by snowflake_min_id()/snowflake_max_id() is pushed down to
#    each shard's primary key (all shards, or the tenant's one).
# 7. A third worker added and the shards rebalanced onto it: it has the
#    extension, and pushed-down calls on its shards take its identity.
use strict;
use warnings;

use CitusTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my %names = ('1/0' => 'coordinator', '1/1' => 'worker_1', '1/2' => 'worker_2', '1/3' => 'worker_3');
my $coordinator = CitusTest::init_node('coordinator', datacenter_id => 1, worker_id => 0);
my $worker_1 = CitusTest::init_node('worker_1', datacenter_id => 1, worker_id => 1);
my $worker_2 = CitusTest::init_node('worker_2', datacenter_id => 1, worker_id => 2);
CitusTest::start_cluster($coordinator, $worker_1, $worker_2);

## 1. The extension reaches the workers ---------------------------------------

$coordinator->safe_psql('postgres', 'CREATE EXTENSION snowflake');
for my $worker ($worker_1, $worker_2)
{
	is($worker->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
		$coordinator->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
		$worker->name . ': CREATE EXTENSION snowflake on the coordinator created it here');
}

# Distributed by the id, by a tenant with a (tenant, id) key, and a
# reference table; each row says by which path it came.
$coordinator->safe_psql(
	'postgres', q{
SET citus.shard_count = 8;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), path text NOT NULL);
SELECT create_distributed_table('events', 'id');
CREATE TABLE orders (tenant integer NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval(),
                     path text NOT NULL, PRIMARY KEY (tenant, id));
SELECT create_distributed_table('orders', 'tenant');
CREATE TABLE countries (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), path text NOT NULL);
SELECT create_reference_table('countries');
});

# The nodes that issued the keys of the rows of $table that came by $path.
sub issuers_of
{
	my ($table, $path) = @_;
	return CitusTest::issuers($coordinator, "SELECT id FROM $table WHERE path = '$path'", \%names);
}

## 2. Through the coordinator -----------------------------------------------

$coordinator->safe_psql(
	'postgres', q{
INSERT INTO events (path) VALUES ('c router');
INSERT INTO events (path) VALUES ('c multi-row'), ('c multi-row'), ('c multi-row');
COPY events (path) FROM STDIN;
c copy
c copy
\.
INSERT INTO events (path) SELECT 'c insert-select pulled' FROM generate_series(1, 100);
INSERT INTO orders (tenant, path) SELECT g % 20, 'c seed' FROM generate_series(1, 400) g;
INSERT INTO countries (path) VALUES ('c reference');
});
is(issuers_of('events', 'c router'), 'coordinator=1', 'coordinator: a router INSERT takes the key on the coordinator');
is(issuers_of('events', 'c multi-row'), 'coordinator=3', 'coordinator: a multi-row INSERT too');
is(issuers_of('events', 'c copy'), 'coordinator=2', 'coordinator: COPY too');
is(issuers_of('events', 'c insert-select pulled'),
	'coordinator=100', 'coordinator: an INSERT ... SELECT pulled to the coordinator too');
is(issuers_of('orders', 'c seed'), 'coordinator=400', 'coordinator: into the tenant table too');
is(issuers_of('countries', 'c reference'), 'coordinator=1', 'coordinator: into a reference table too');

like(
	$coordinator->safe_psql('postgres', q{EXPLAIN (COSTS OFF) INSERT INTO events (path) SELECT path FROM orders}),
	qr/INSERT\/SELECT method: repartition/,
	'an INSERT ... SELECT from the tenant table into the id table is repartitioned');
# The workers holding the rows of orders that match $condition, with their
# counts: the repartitioned paths take keys there.
sub holders
{
	my ($condition) = @_;
	my %by_port = map { $_->port => $_->name } ($worker_1, $worker_2);
	my %count;
	for my $line (
		split /\n/,
		$coordinator->safe_psql(
			'postgres', qq{
		WITH tenants AS MATERIALIZED (SELECT tenant, count(*) AS n FROM orders WHERE $condition GROUP BY tenant)
		SELECT s.nodeport, sum(t.n) FROM tenants t
		  JOIN citus_shards s ON s.table_name = 'orders'::regclass
		   AND s.shardid = get_shard_id_for_distribution_column('orders', t.tenant)
		 GROUP BY 1}))
	{
		my ($port, $n) = split /\|/, $line;
		$count{ $by_port{$port} } = $n;
	}
	return join(',', map { "$_=$count{$_}" } sort keys %count);
}
my $holders = holders('true');
like($holders, qr/^worker_1=\d+,worker_2=\d+$/, "both workers hold orders ($holders)");
$coordinator->safe_psql(
	'postgres', q{
INSERT INTO events (path) SELECT 'c repartitioned default' FROM orders;
INSERT INTO events (id, path) SELECT snowflake_nextval(), 'c repartitioned nextval' FROM orders;
INSERT INTO orders (tenant, path) SELECT tenant, 'c colocated default' FROM orders WHERE path = 'c seed';
});
is(issuers_of('events', 'c repartitioned default'),
	$holders, 'coordinator: a repartitioned INSERT ... SELECT takes the keys on the workers holding the source shards');
is(issuers_of('events', 'c repartitioned nextval'),
	$holders, 'coordinator: so does snowflake_nextval() in its SELECT');
is(issuers_of('orders', 'c colocated default'),
	$holders, 'coordinator: and an INSERT ... SELECT within the tenant table');
is( CitusTest::issuers(
		$coordinator, 'SELECT snowflake_nextval() AS id FROM orders', \%names),
	holders('true'),
	'coordinator: a pushed-down SELECT calls snowflake_nextval() on the workers');

## 3. Through a worker --------------------------------------------------------

$worker_1->safe_psql(
	'postgres', q{
INSERT INTO events (path) VALUES ('w router');
INSERT INTO events (path) VALUES ('w multi-row'), ('w multi-row');
COPY events (path) FROM STDIN;
w copy
w copy
w copy
\.
INSERT INTO events (path) SELECT 'w insert-select pulled' FROM generate_series(1, 50);
INSERT INTO orders (tenant, path) VALUES (7, 'w tenant router');
INSERT INTO countries (path) VALUES ('w reference');
INSERT INTO events (path) SELECT 'w repartitioned' FROM orders WHERE path = 'c seed';
});
is(issuers_of('events', 'w router'), 'worker_1=1', 'worker: a router INSERT takes the key on the worker');
is(issuers_of('events', 'w multi-row'), 'worker_1=2', 'worker: a multi-row INSERT too');
is(issuers_of('events', 'w copy'), 'worker_1=3', 'worker: COPY too');
is(issuers_of('events', 'w insert-select pulled'),
	'worker_1=50', 'worker: an INSERT ... SELECT pulled to it too');
is(issuers_of('orders', 'w tenant router'), 'worker_1=1', 'worker: into the tenant table too');
is(issuers_of('countries', 'w reference'), 'worker_1=1', 'worker: into a reference table too');
is(issuers_of('events', 'w repartitioned'), holders("path = 'c seed'"),
	'worker: a repartitioned INSERT ... SELECT takes the keys on the workers holding the source shards');

## 4. Every key distinct ------------------------------------------------------

for my $table (qw(events orders countries))
{
	my ($rows, $distinct) = split /\|/,
	  $coordinator->safe_psql('postgres', "SELECT count(*), count(DISTINCT id) FROM $table");
	cmp_ok($rows, '>', 0, "$table has rows");
	is($distinct, $rows, "$table: all $rows keys distinct");
}
is( $coordinator->safe_psql(
		'postgres', q{
		SELECT count(*) FROM (SELECT id FROM events UNION ALL SELECT id FROM orders UNION ALL SELECT id FROM countries) a
		 GROUP BY id HAVING count(*) > 1}),
	'',
	'no key appears in two tables either');

## 5. No snowflake_nextval() in an UPDATE ---------------------------------------

for my $node ($coordinator, $worker_1)
{
	for my $update (
		'UPDATE events SET path = snowflake_nextval()::text WHERE id = (SELECT min(id) FROM events)',
		'UPDATE orders SET id = snowflake_nextval() WHERE tenant = 7',
		'UPDATE countries SET path = snowflake_nextval()::text')
	{
		my $r = SnowflakeTest::try_sql($node, $update);
		is($r->{message},
			'functions used in UPDATE queries on distributed tables must not be VOLATILE',
			$node->name . ": Citus refuses snowflake_nextval() in '" . substr($update, 0, 20) . "...'");
	}
}

## 6. Time ranges pushed down to each shard's primary key -----------------------

$coordinator->safe_psql('postgres',
	q{INSERT INTO events (path) SELECT 'bulk' FROM generate_series(1, 40000)});
my $from = $coordinator->safe_psql('postgres', 'SELECT clock_timestamp()');
usleep(20_000);
$coordinator->safe_psql('postgres',
	q{INSERT INTO events (path) SELECT 'window' FROM generate_series(1, 300)});
$worker_2->safe_psql('postgres',
	q{INSERT INTO events (path) SELECT 'window' FROM generate_series(1, 200)});
$worker_1->safe_psql('postgres',
	q{INSERT INTO orders (tenant, path) SELECT 3, 'window' FROM generate_series(1, 100)});
my $to = $coordinator->safe_psql('postgres', 'SELECT clock_timestamp()');
my $range = "id BETWEEN snowflake_min_id('$from') AND snowflake_max_id('$to')";

is($coordinator->safe_psql('postgres', "SELECT count(*) FROM events WHERE $range"),
	'500', 'the time range finds the 500 rows inserted in it, through any node');
my $plan = $coordinator->safe_psql('postgres',
	"SET citus.explain_all_tasks = on; EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE $range");
my @tasks = $plan =~ /->  Task/g;
my @index_conditions =
  $plan =~ /Index Cond: \(\(id >= '\d+'::bigint\) AND \(id <= '\d+'::bigint\)\)/g;
is(scalar @tasks, 8, 'the range query runs on all 8 shards');
is(scalar @index_conditions, 8, 'each shard scans its primary key by the range, bounds evaluated on the coordinator')
  or diag $plan;
is($coordinator->safe_psql('postgres', "SELECT count(*) FROM orders WHERE tenant = 3 AND $range"),
	'100', "a tenant's time range finds its 100 rows");
# Tenant 3's shard holds a few hundred rows, which a sequential scan reads
# for less once autovacuum has analyzed them (a CI run saw it): what is shown
# is that the (tenant, id) key serves the range, so sequential scans are off
# for this query, on the shard too (Citus sends SET LOCAL along).
$plan = $coordinator->safe_psql('postgres',
	"SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL enable_seqscan = off;
	 EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE tenant = 3 AND $range; COMMIT");
like($plan, qr/Task Count: 1\b/, "a tenant's time range goes to one shard");
like(
	$plan,
	qr/Index Cond: \(\(tenant = 3\) AND \(id >= '\d+'::bigint\) AND \(id <= '\d+'::bigint\)\)/,
	'and scans its (tenant, id) primary key')
  or diag $plan;

## 7. A third worker ----------------------------------------------------------

my $worker_3 = CitusTest::init_node('worker_3', datacenter_id => 1, worker_id => 3);
CitusTest::start($worker_3);
CitusTest::add_worker($coordinator, $worker_3);
is($worker_3->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'"),
	'1', 'worker_3 added: Citus created the snowflake extension on it');
$coordinator->safe_psql('postgres',
	"SELECT rebalance_table_shards(shard_transfer_mode => 'force_logical')");
my $on_worker_3 = $coordinator->safe_psql('postgres',
	'SELECT count(*) FROM citus_shards WHERE nodeport = ' . $worker_3->port);
cmp_ok($on_worker_3, '>', 0, "the rebalance moved shards onto worker_3 ($on_worker_3)");
like(CitusTest::issuers($coordinator, 'SELECT snowflake_nextval() AS id FROM events', \%names),
	qr/^worker_1=\d+,worker_2=\d+,worker_3=\d+$/,
	'a pushed-down snowflake_nextval() runs on all three workers, under their own identities');
$worker_3->safe_psql('postgres', q{INSERT INTO events (path) VALUES ('w3 router')});
is(issuers_of('events', 'w3 router'), 'worker_3=1', 'worker_3: a router INSERT takes the key on it');
is($coordinator->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM events'),
	't', 'after the rebalance, all keys still distinct');

$_->stop('fast') for ($worker_3, $worker_2, $worker_1, $coordinator);
done_testing();
