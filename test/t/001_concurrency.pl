# Issue 2: IDs stay unique and ordered under real concurrency.
#
# Four backends issue 500,000 IDs each at the same time (they queue behind an
# advisory lock the test holds, and start together when it is released);
# then a parallel query issues IDs from parallel workers. Checked:
# - no ID appears twice, across all backends and the parallel workers;
# - within each backend, IDs strictly increase in issue order;
# - every ID carries this node's datacenter_id and worker_id, and (with the
#   default snowflake.max_lead = 0) the millisecond it was issued in.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $backends = 4;
my $per_backend = 500_000;
my $epoch_ms = 1288834974657;

my $node = SnowflakeTest::init_node(
	'concurrency',
	datacenter_id => 3,
	worker_id => 7,
	conf => [ 'max_worker_processes = 8', 'max_parallel_workers = 8' ]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE UNLOGGED TABLE ids (b int NOT NULL, g bigint NOT NULL, id bigint NOT NULL);
	CREATE UNLOGGED TABLE runs (b int, started timestamptz, finished timestamptz);
});

# --- several backends at once ---

my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4242)');

my @writers;
for my $b (1 .. $backends)
{
	push @writers, SnowflakeTest::start_sql($node, qq{
		SELECT pg_advisory_lock_shared(4242);
		SELECT pg_advisory_unlock_shared(4242);
		SELECT clock_timestamp() AS started \\gset
		INSERT INTO ids SELECT $b, g, snowflake_nextval() FROM generate_series(1, $per_backend) g;
		INSERT INTO runs VALUES ($b, :'started', clock_timestamp());
	}, name => "writer_$b");
}
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = $backends FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"),
	"all $backends writers wait at the gate");
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
$gate->quit;

for my $writer (@writers)
{
	my $result = SnowflakeTest::finish_sql($writer);
	ok($result->{ok}, "$writer->{name} issued $per_backend IDs")
	  or diag "stderr: $result->{stderr}";
	note sprintf('%s took %.1f s', $writer->{name}, $result->{elapsed});
}

is( $node->safe_psql('postgres',
		'SELECT max(started) < min(finished) FROM runs'),
	't',
	'the writers really overlapped (each started before any finished)')
  or diag $node->safe_psql('postgres', 'SELECT * FROM runs ORDER BY b');

SnowflakeTest::check_ids($node, 'ids', 'concurrent backends',
	rows => $backends * $per_backend);

is( $node->safe_psql('postgres',
		'SELECT count(*) FROM ids WHERE id <= 0 OR (id >> 17) & 31 <> 3 OR (id >> 12) & 31 <> 7'),
	0,
	'every ID is positive and carries datacenter_id 3, worker_id 7');

# With max_lead = 0 an ID's millisecond is the clock's when it was issued:
# within the run of the statement that issued it.
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM ids JOIN runs USING (b)
		WHERE (id >> 22) + $epoch_ms NOT BETWEEN floor(extract(epoch FROM started) * 1000)
		                                   AND ceil(extract(epoch FROM finished) * 1000)}),
	0,
	'every ID carries a millisecond within its statement\'s run')
  or diag $node->safe_psql('postgres', qq{
		SELECT b, g, id, snowflake_decode(id), started, finished FROM ids JOIN runs USING (b)
		WHERE (id >> 22) + $epoch_ms NOT BETWEEN floor(extract(epoch FROM started) * 1000)
		                                   AND ceil(extract(epoch FROM finished) * 1000)
		LIMIT 5});

# snowflake_decode agrees with the documented layout on a sample.
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM (SELECT id, snowflake_decode(id) AS d FROM ids TABLESAMPLE SYSTEM (1)) s
		WHERE (d).datacenter_id <> (id >> 17) & 31 OR (d).worker_id <> (id >> 12) & 31
		   OR (d).sequence <> id & 4095
		   OR extract(epoch FROM (d).ts) * 1000 <> (id >> 22) + $epoch_ms}),
	0,
	'snowflake_decode matches id = (ms - epoch) << 22 | dc << 17 | worker << 12 | seq');

# --- parallel workers ---

# force_parallel_mode is named debug_parallel_query from PostgreSQL 16 on.
my $force_parallel = $node->pg_version >= 16 ? 'debug_parallel_query' : 'force_parallel_mode';
my $parallel_settings = qq{
	SET $force_parallel = on;
	SET parallel_setup_cost = 0;
	SET parallel_tuple_cost = 0;
	SET min_parallel_table_scan_size = 0;
	SET max_parallel_workers_per_gather = 4;
	SET parallel_leader_participation = off;
};
$node->safe_psql('postgres', q{
	CREATE TABLE source AS SELECT g FROM generate_series(1, 200000) g;
	ANALYZE source;
});
# EXPLAIN ANALYZE runs the CREATE TABLE AS: the plan shown is the one that
# issued the IDs. With the leader not participating, every row, and so every
# snowflake_nextval() call, comes from a parallel worker.
my $plan = $node->safe_psql('postgres', $parallel_settings . q{
	EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF)
	CREATE UNLOGGED TABLE parallel_ids AS SELECT g, snowflake_nextval() AS id FROM source;
});
note "plan:\n$plan";
like($plan, qr/^\s*(->\s*)?Gather\b/m, 'the IDs were issued under a Gather');
like($plan, qr/Parallel Seq Scan on public\.source[^\n]*\n\s*Output: g, snowflake_nextval\(\)/,
	'snowflake_nextval() is evaluated in the parallel workers');
my ($launched) = $plan =~ /Workers Launched: (\d+)/;
cmp_ok($launched // 0, '>=', 2, 'at least two parallel workers issued IDs');
my $worker_rows = 0;
$worker_rows += $1 while $plan =~ /Worker \d+:\s+actual rows=(\d+)/g;
is($worker_rows, 200000, 'the workers produced all 200000 rows');

is( $node->safe_psql('postgres',
		'SELECT count(*), count(DISTINCT id) FROM parallel_ids'),
	'200000|200000',
	'parallel workers: 200000 IDs, all distinct');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM parallel_ids p JOIN ids USING (id)'),
	0,
	'no ID from the parallel workers was issued to a backend before');
is( $node->safe_psql('postgres',
		'SELECT min(p.id) > (SELECT max(id) FROM ids) FROM parallel_ids p'),
	't',
	'the parallel IDs are all greater than those issued before them');

$node->stop;
done_testing();
