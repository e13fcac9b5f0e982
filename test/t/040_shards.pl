# Sharding by ID: three data nodes, each with its own (datacenter_id,
# worker_id), written to concurrently, and a coordinator that sees them as one
# table through postgres_fdw and declarative partitioning:
#
#   CREATE TABLE orders (...) PARTITION BY HASH (id snowflake_node_ops);
#   CREATE FOREIGN TABLE orders_shard_1 PARTITION OF orders
#       FOR VALUES WITH (MODULUS 1024, REMAINDER 33) SERVER shard_1 ...;
#
# where the remainder is the node number (datacenter_id << 5 | worker_id) of
# the shard. The rows (1,020,000) are inserted on the shards, by two sessions
# per shard at once. Proves: every ID is unique across the shards;
# snowflake_decode names the node each row was issued on; a lookup by ID alone
# is planned as one Foreign Scan on the right shard (plain, and as a prepared
# statement with a generic plan), and so are an insert or update with a given
# ID; a time range written as ID bounds returns exactly the rows of that time
# from every shard; ordering by ID is ordering by time across the shards.
# See doc/sharding.md.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time);

my $EPOCH_MS = 1288834974657;    # the default snowflake.epoch
my $SESSIONS_PER_SHARD = 2;
my $BATCHES = 17;
my $BATCH_ROWS = 10_000;
my $ROWS_PER_SHARD = $SESSIONS_PER_SHARD * $BATCHES * $BATCH_ROWS;    # 340,000

my @shards = (
	{ name => 'shard_1', datacenter_id => 1, worker_id => 1 },
	{ name => 'shard_2', datacenter_id => 1, worker_id => 2 },
	{ name => 'shard_3', datacenter_id => 2, worker_id => 1 },);
$_->{node_number} = $_->{datacenter_id} << 5 | $_->{worker_id} for @shards;
my $total_rows = $ROWS_PER_SHARD * @shards;

my $started = time;
my %seconds;    # phase => seconds, reported at the end

for my $shard (@shards)
{
	$shard->{node} = SnowflakeTest::init_node(
		$shard->{name},
		datacenter_id => $shard->{datacenter_id},
		worker_id => $shard->{worker_id},
		conf => ['max_wal_size = 1GB']);
	SnowflakeTest::start_node($shard->{node});
	$shard->{node}->safe_psql('postgres', 'CREATE DATABASE shop');
	# The CHECK keeps IDs of other nodes out of this shard, where the
	# coordinator would never look for them.
	$shard->{node}->safe_psql('shop', <<"EOS");
CREATE EXTENSION snowflake;
CREATE TABLE orders (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    customer_id integer NOT NULL,
    amount_cents integer NOT NULL,
    CONSTRAINT orders_id_issued_here
        CHECK ((snowflake_decode(id)).datacenter_id = $shard->{datacenter_id}
               AND (snowflake_decode(id)).worker_id = $shard->{worker_id}));
EOS
}

# The coordinator stores no orders. It has the extension for the operator
# class and snowflake_decode, and an identity of its own (node 1023) that no
# shard has: IDs it issues have no partition.
my $coordinator = SnowflakeTest::init_node('coordinator',
	datacenter_id => 31, worker_id => 31);
SnowflakeTest::start_node($coordinator);
$coordinator->safe_psql('postgres', 'CREATE DATABASE shop');
$coordinator->safe_psql('shop', 'CREATE EXTENSION snowflake; CREATE EXTENSION postgres_fdw;');

my $version = $coordinator->safe_psql('shop',
	"SELECT extversion FROM pg_extension WHERE extname = 'snowflake'");
my $have_opclass = $coordinator->safe_psql('shop',
	"SELECT count(*) FROM pg_opclass WHERE opcname = 'snowflake_node_ops' AND opcmethod = (SELECT oid FROM pg_am WHERE amname = 'hash')"
) eq '1';
note "snowflake $version on the coordinator; operator class snowflake_node_ops "
  . ($have_opclass ? 'present' : 'ABSENT');

## Loading: every shard written to by two sessions at once ---------------------

# The rows are inserted on the shards themselves (INSERT ... SELECT from
# generate_series, the ID from the column default), as the application of
# each shard would: through the coordinator every row would cost a round
# trip. A session per shard holds an advisory lock that the loaders wait on,
# so that all six loaders start together once it is released.
my $t0 = time;
my (@gates, @loaders);
for my $shard (@shards)
{
	my $gate = $shard->{node}->background_psql('shop');
	$gate->query_safe('SELECT pg_advisory_lock(4040)');
	push @gates, $gate;
	for my $session (1 .. $SESSIONS_PER_SHARD)
	{
		my $loader = $shard->{node}->background_psql('shop');
		my $script = "\\echo started\n"
		  . "SELECT pg_advisory_lock_shared(4040);\n"
		  . "SELECT pg_advisory_unlock_shared(4040);\n";
		for my $batch (1 .. $BATCHES)
		{
			$script .=
			  "INSERT INTO orders (customer_id, amount_cents) SELECT i % 50000, (i * 7919) % 100000 FROM generate_series(1, $BATCH_ROWS) i;\n";
		}
		$loader->query_until(qr/started/, $script);
		push @loaders, $loader;
	}
}
$_->query_safe('SELECT pg_advisory_unlock(4040)') for @gates;
for my $session (@loaders, @gates)
{
	$session->query_safe('SELECT 1');    # returns once its inserts are done
	$session->quit;
}
$seconds{ sprintf('loading %d rows on %d shards, %d sessions',
		$total_rows, scalar @shards, $SESSIONS_PER_SHARD * @shards) } = time - $t0;

for my $shard (@shards)
{
	is( $shard->{node}->safe_psql('shop',
			"SELECT count(*) || ' ' || count(*) FILTER (WHERE (snowflake_decode(id)).datacenter_id = $shard->{datacenter_id} AND (snowflake_decode(id)).worker_id = $shard->{worker_id}) FROM orders"
		),
		"$ROWS_PER_SHARD $ROWS_PER_SHARD",
		"$shard->{name}: $ROWS_PER_SHARD rows, all issued by ($shard->{datacenter_id}, $shard->{worker_id})");
	$shard->{node}->safe_psql('shop', 'VACUUM ANALYZE orders');
}
# An ID of another node written straight into a shard is refused.
{
	my $foreign_id = $shards[1]{node}->safe_psql('shop', 'SELECT snowflake_nextval()');
	my ($ok, $stdout, $stderr) = $shards[0]{node}->psql('shop',
		"INSERT INTO orders (id, customer_id, amount_cents) VALUES ($foreign_id, 0, 0)");
	like($stderr, qr/violates check constraint "orders_id_issued_here"/,
		"$shards[0]{name} refuses an ID issued by $shards[1]{name}");
}

## The coordinator -------------------------------------------------------------

# One foreign server per shard, reached over its Unix socket directory;
# fetch_size keeps full scans to a few round trips; extensions lets
# postgres_fdw send the extension's functions to the shards in conditions.
my $coordinator_sql = '';
for my $shard (@shards)
{
	my ($name, $node) = ($shard->{name}, $shard->{node});
	my ($host, $port) = ($node->host, $node->port);
	$coordinator_sql .= <<"EOS";
CREATE SERVER $name FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$host', port '$port', dbname 'shop', fetch_size '10000', extensions 'snowflake');
CREATE USER MAPPING FOR CURRENT_USER SERVER $name;
EOS
}
if ($have_opclass)
{
	$coordinator_sql .= <<'EOS';
CREATE TABLE orders (
    id bigint NOT NULL,
    customer_id integer NOT NULL,
    amount_cents integer NOT NULL)
    PARTITION BY HASH (id snowflake_node_ops);
EOS
}
else
{
	# Without the operator class the same partitions can be had by listing
	# the node field, but a lookup by id alone is not pruned.
	$coordinator_sql .= <<'EOS';
CREATE TABLE orders (
    id bigint NOT NULL,
    customer_id integer NOT NULL,
    amount_cents integer NOT NULL)
    PARTITION BY LIST (((id >> 12) & 1023));
EOS
}
for my $shard (@shards)
{
	my $bound =
	  $have_opclass
	  ? "FOR VALUES WITH (MODULUS 1024, REMAINDER $shard->{node_number})"
	  : "FOR VALUES IN ($shard->{node_number})";
	$coordinator_sql .= <<"EOS";
CREATE FOREIGN TABLE orders_$shard->{name} PARTITION OF orders
    $bound
    SERVER $shard->{name} OPTIONS (schema_name 'public', table_name 'orders');
EOS
}
$coordinator->safe_psql('shop', $coordinator_sql);
note "coordinator setup:\n$coordinator_sql";

## Unique across the shards, each row decoding to its shard --------------------

$t0 = time;
is($coordinator->safe_psql('shop', 'SELECT count(*) || \' \' || count(DISTINCT id) FROM orders'),
	"$total_rows $total_rows",
	"coordinator: $total_rows rows, count(*) = count(DISTINCT id) across the shards");

is( $coordinator->safe_psql('shop', <<'EOS'),
SELECT string_agg(format('%s: datacenter_id %s, worker_id %s, %s rows', p, d.datacenter_id, d.worker_id, n), E'\n' ORDER BY p)
FROM (SELECT tableoid::regclass::text AS p, (snowflake_decode(id)).datacenter_id, (snowflake_decode(id)).worker_id, count(*) AS n
      FROM orders GROUP BY 1, 2, 3) d
EOS
	join("\n",
		map { "orders_$_->{name}: datacenter_id $_->{datacenter_id}, worker_id $_->{worker_id}, $ROWS_PER_SHARD rows" }
		  @shards),
	'coordinator: snowflake_decode of every row names the node of its shard');
$seconds{'uniqueness and decode checks over the FDW'} = time - $t0;

## Routing: a lookup by ID alone reaches its shard and no other ---------------

SKIP:
{
	skip "snowflake $version has no operator class snowflake_node_ops (extension 1.1): no routing by ID",
	  1 + 6 * @shards + 3
	  unless $have_opclass;
	my ($ok, $stdout, $stderr);

	# The operator class contract, for every node number and several moduli:
	# the partition FOR VALUES WITH (MODULUS m, REMAINDER r) receives exactly
	# the IDs whose node field is r modulo m.
	is( $coordinator->safe_psql('shop', <<"EOS"),
SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('orders'::regclass, m, node % m, id))
     + count(*) FILTER (WHERE m > 1 AND satisfies_hash_partition('orders'::regclass, m, (node + 1) % m, id))
FROM generate_series(0, 1023) node,
     unnest(ARRAY[1024, 2048, 512, 64, 10, 3, 1]) m,
     LATERAL (SELECT ((1790000000000 - $EPOCH_MS)::bigint << 22) | (node::bigint << 12) | ((node * 37) % 4096) AS id) i
EOS
		'0',
		'snowflake_node_ops: for all 1024 node numbers and moduli 1..2048, an ID goes to remainder = node mod modulus, and only there'
	);

	for my $shard (@shards)
	{
		my ($name, $node) = ($shard->{name}, $shard->{node});
		my $row = $node->safe_psql('shop',
			'SELECT id, customer_id, amount_cents FROM orders ORDER BY id OFFSET 123457 LIMIT 1');
		my ($id) = split /\|/, $row;

		my $plan = $coordinator->safe_psql('shop',
			"EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM orders WHERE id = $id");
		note "lookup of an ID of $name:\n$plan";
		my @scans = $plan =~ /^\s*(?:->\s*)?Foreign Scan on (\S+)/mg;
		is_deeply(\@scans, ["public.orders_$name"],
			"lookup by ID of $name: one Foreign Scan, on orders_$name, no other partition");
		like($plan, qr/Remote SQL: .* WHERE \(\(id = '?$id'?::bigint\)\)/,
			"lookup by ID of $name: the condition is sent to the shard");
		is($coordinator->safe_psql('shop', "SELECT id, customer_id, amount_cents FROM orders WHERE id = $id"),
			$row, "lookup by ID of $name: returns the shard's row");

		# A prepared statement with a generic plan prunes when it starts.
		my $generic = $coordinator->safe_psql('shop',
			"PREPARE lookup(bigint) AS SELECT * FROM orders WHERE id = \$1;"
			  . "SET plan_cache_mode = force_generic_plan; EXPLAIN (COSTS OFF) EXECUTE lookup($id)");
		note "prepared lookup of an ID of $name, generic plan:\n$generic";
		my @generic_scans = $generic =~ /Foreign Scan on (\S+)/mg;
		ok( @generic_scans == 1
			  && $generic_scans[0] eq "orders_$name"
			  && $generic =~ /Subplans Removed: 2/,
			"prepared lookup by ID of $name, generic plan: the other two shards are removed at executor start"
		);

		# Writes with a given ID are routed too: an ID issued by this
		# shard, inserted through the coordinator, lands on this shard.
		my $new_id = $node->safe_psql('shop', 'SELECT snowflake_nextval()');
		$coordinator->safe_psql('shop',
			"INSERT INTO orders (id, customer_id, amount_cents) VALUES ($new_id, -1, 1);"
			  . "UPDATE orders SET amount_cents = 2 WHERE id = $new_id;");
		is( join(',',
				map { $_->{node}->safe_psql('shop', "SELECT count(*) FROM orders WHERE id = $new_id AND amount_cents = 2") }
				  @shards),
			join(',', map { $_ == $shard ? 1 : 0 } @shards),
			"an ID of $name inserted and updated through the coordinator lands on $name only");
		my $update_plan = $coordinator->safe_psql('shop',
			"EXPLAIN (COSTS OFF) UPDATE orders SET amount_cents = 3 WHERE id = $new_id");
		note "update by an ID of $name:\n$update_plan";
		my %updated = map { $_ => 1 } $update_plan =~ /Foreign Update on (\S+)/mg;
		is_deeply([ sort keys %updated ], ["orders_$name"], "an update by ID of $name is planned on orders_$name only");
		$coordinator->safe_psql('shop', "DELETE FROM orders WHERE id = $new_id");
	}

	# postgres_fdw sends every column, so a shard's DEFAULT never applies to
	# an insert through the coordinator: without an ID the row has no shard.
	($ok, $stdout, $stderr) = $coordinator->psql('shop',
		'INSERT INTO orders (customer_id, amount_cents) VALUES (-1, 1)');
	like($stderr, qr/no partition of relation "orders" found for row\nDETAIL:  Partition key of the failing row contains \(id\) = \(null\)/,
		'an insert without an ID through the coordinator is refused');

	# An ID of a node that has no shard has nowhere to go.
	($ok, $stdout, $stderr) = $coordinator->psql('shop',
		'INSERT INTO orders (id, customer_id, amount_cents) VALUES (snowflake_nextval(), -1, 1)');
	like($stderr, qr/no partition of relation "orders" found for row/,
		'an ID of node 1023 (no shard) is refused by the coordinator');
	is($coordinator->safe_psql('shop', 'SELECT count(*) FROM orders'),
		$total_rows, 'the routing checks left the shards as they were');
}

## Time order across the shards ------------------------------------------------

$t0 = time;
# The shards were written at the same time: each one's first ID is older
# than every other one's last (the time spans overlap).
my ($overlap_start_ms, $overlap_end_ms) = split /\|/, $coordinator->safe_psql('shop', <<'EOS');
SELECT max(first) >> 22, min(last) >> 22
FROM (SELECT tableoid, min(id) AS first, max(id) AS last FROM orders GROUP BY tableoid) s
EOS
ok($overlap_start_ms < $overlap_end_ms,
	"the shards' time spans overlap (for "
	  . ($overlap_end_ms - $overlap_start_ms) . ' ms): they were written concurrently');

# Ordering by ID is ordering by time, across the shards (ties: IDs of one
# millisecond on different shards order by node).
is( $coordinator->safe_psql('shop', <<'EOS'),
SELECT count(*) FILTER (WHERE ts < previous_ts)
FROM (SELECT (snowflake_decode(id)).ts, lag((snowflake_decode(id)).ts) OVER (ORDER BY id) AS previous_ts
      FROM orders) s
EOS
	'0', 'ordered by ID, the rows of all shards are in time order');
note 'in ID order the rows switch shard '
  . $coordinator->safe_psql('shop', <<'EOS') . ' times';
SELECT count(*) FILTER (WHERE p <> previous_p)
FROM (SELECT tableoid AS p, lag(tableoid) OVER (ORDER BY id) AS previous_p FROM orders) s
EOS

# A time range [a, b] in the middle of the overlap, its ends the times of
# actual rows (so rows lie exactly on both ends).
my $span = $overlap_end_ms - $overlap_start_ms;
my $from_ms = $overlap_start_ms + int($span / 4);
my $to_ms = $overlap_end_ms - int($span / 4);
my ($from_ts, $to_ts) = split /\|/, $coordinator->safe_psql('shop', <<"EOS");
SELECT (SELECT (snowflake_decode(min(id))).ts FROM orders WHERE id >= (${from_ms}::bigint << 22)),
       (SELECT (snowflake_decode(max(id))).ts FROM orders WHERE id < (($to_ms + 1)::bigint << 22))
EOS
note "time range: [$from_ts, $to_ts]";

# The ID bounds of [a, b], from the layout: the smallest ID issued at or after
# a and the largest issued at or before b (ceil and floor for times between
# two milliseconds).
sub id_bounds
{
	my ($from, $to) = @_;
	return split /\|/, $coordinator->safe_psql('shop', <<"EOS");
SELECT (ceil(extract(epoch FROM '$from'::timestamptz) * 1000)::bigint - $EPOCH_MS) << 22,
       ((floor(extract(epoch FROM '$to'::timestamptz) * 1000)::bigint - $EPOCH_MS) << 22) | ((1 << 22) - 1)
EOS
}
my ($low, $high) = id_bounds($from_ts, $to_ts);
note "ID bounds: [$low, $high]";

my $range_query = "SELECT * FROM orders WHERE id BETWEEN $low AND $high ORDER BY id";
my $range_plan = $coordinator->safe_psql('shop', "EXPLAIN (VERBOSE, COSTS OFF) $range_query");
note "time range by ID bounds:\n$range_plan";
my @range_scans = sort($range_plan =~ /Foreign Scan on (\S+)/mg);
is_deeply(\@range_scans, [ map { "public.orders_$_->{name}" } @shards ],
	'time range: one Foreign Scan per shard');
is(scalar(() = $range_plan =~ /Remote SQL: .*\(\(id >= '?$low'?::bigint\)\) AND \(\(id <= '?$high'?::bigint\)\)/g),
	scalar @shards, 'time range: every shard is sent the ID bounds');

# The rows selected by ID bounds are exactly the rows whose decoded time is
# in [a, b], from every shard, with rows outside on both sides.
my $range_check = <<"EOS";
WITH by_id AS (SELECT id, tableoid FROM orders WHERE id BETWEEN %s AND %s),
     by_ts AS (SELECT id FROM orders WHERE (snowflake_decode(id)).ts BETWEEN '%s' AND '%s')
SELECT format('%%s rows by ID, %%s by time, %%s and %%s not in the other, from %%s shards, %%s at a, %%s at b, %%s before a, %%s after b',
    (SELECT count(*) FROM by_id), (SELECT count(*) FROM by_ts),
    (SELECT count(*) FROM (SELECT id FROM by_id EXCEPT SELECT id FROM by_ts) x),
    (SELECT count(*) FROM (SELECT id FROM by_ts EXCEPT SELECT id FROM by_id) x),
    (SELECT count(DISTINCT tableoid) FROM by_id),
    (SELECT count(*) FROM by_id WHERE (snowflake_decode(id)).ts = '$from_ts'),
    (SELECT count(*) FROM by_id WHERE (snowflake_decode(id)).ts = '$to_ts'),
    (SELECT count(*) FROM orders WHERE id < %s),
    (SELECT count(*) FROM orders WHERE id > %s))
EOS
my $result = $coordinator->safe_psql('shop', sprintf($range_check, $low, $high, $from_ts, $to_ts, $low, $high));
note "time range: $result";
like($result,
	qr/^(\d+) rows by ID, \1 by time, 0 and 0 not in the other, from 3 shards, [1-9]\d* at a, [1-9]\d* at b, [1-9]\d* before a, [1-9]\d* after b$/,
	'time range: the ID bounds select exactly the rows whose decoded time is in [a, b], on all three shards');

# A filter on snowflake_decode(id).ts is not sent to the shards (postgres_fdw
# does not ship the field selection): every row comes to the coordinator.
# snowflake_timestamp(id) (1.1) is sent, as the servers list the extension,
# but still reads every row of every shard: only ID bounds use the index.
my $decode_plan = $coordinator->safe_psql('shop',
	"EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM orders WHERE (snowflake_decode(id)).ts BETWEEN '$from_ts' AND '$to_ts'");
note "time range by decoded time:\n$decode_plan";
SKIP:
{
	skip "snowflake $version has no snowflake_timestamp(bigint)", 1
	  unless $coordinator->safe_psql('shop', "SELECT to_regprocedure('snowflake_timestamp(bigint)') IS NOT NULL") eq 't';
	my $timestamp_plan = $coordinator->safe_psql('shop',
		"EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM orders WHERE snowflake_timestamp(id) BETWEEN '$from_ts' AND '$to_ts'");
	note "time range by snowflake_timestamp:\n$timestamp_plan";
	is(scalar(() = $timestamp_plan =~ /Remote SQL: .* WHERE .*snowflake_timestamp\(id\)/g),
		scalar @shards, 'a filter on snowflake_timestamp(id) is sent to every shard');
}

# Ends between two milliseconds round inwards to the same IDs and rows.
my ($a_between, $b_between) = split /\|/, $coordinator->safe_psql('shop',
	"SELECT '$from_ts'::timestamptz - interval '300 microseconds', '$to_ts'::timestamptz + interval '300 microseconds'");
my ($low_between, $high_between) = id_bounds($a_between, $b_between);
is("$low_between $high_between", "$low $high",
	'time range: ends between two milliseconds give the same ID bounds');
is($coordinator->safe_psql('shop', sprintf($range_check, $low, $high, $a_between, $b_between, $low, $high)),
	$result, 'time range: and the same rows');

# Extension 1.1's helpers compute the same bounds.
SKIP:
{
	my $have_range_helpers = $coordinator->safe_psql('shop',
		"SELECT to_regprocedure('snowflake_min_id(timestamptz)') IS NOT NULL AND to_regprocedure('snowflake_max_id(timestamptz)') IS NOT NULL"
	) eq 't';
	skip "snowflake $version has no snowflake_min_id/snowflake_max_id", 2
	  unless $have_range_helpers;
	is($coordinator->safe_psql('shop', "SELECT snowflake_min_id('$from_ts') || ' ' || snowflake_max_id('$to_ts')"),
		"$low $high", 'snowflake_min_id(a) and snowflake_max_id(b) are the bounds computed from the layout');
	my $helper_query = "SELECT count(*) FROM orders WHERE id BETWEEN snowflake_min_id('$from_ts') AND snowflake_max_id('$to_ts')";
	my $helper_plan = $coordinator->safe_psql('shop', "EXPLAIN (VERBOSE, COSTS OFF) $helper_query");
	note "time range with snowflake_min_id/max_id:\n$helper_plan";
	like($helper_plan, qr/\(\(id >= '?$low'?::bigint\)\) AND \(\(id <= '?$high'?::bigint\)\)/,
		'snowflake_min_id/max_id are folded to constants and sent to the shards');
}
$seconds{'time order and time range checks'} = time - $t0;

$seconds{'whole test'} = time - $started;
note sprintf("%-50s %6.1f s", $_, $seconds{$_}) for sort keys %seconds;

done_testing();
