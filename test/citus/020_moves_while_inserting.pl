# Shards move while inserts go on (doc/citus.md): sessions insert rows one
# transaction at a time, through the coordinator and through both workers,
# into a table distributed by the id and one distributed by a tenant with a
# (tenant, id) key, while
#
# 1. a shard of each is moved from worker_1 to worker_2
#    (citus_move_shard_placement, logical replication), and
# 2. a third worker is added and the shards rebalanced onto it
#    (rebalance_table_shards).
#
# Then: every session ended without an error (a failed insert would have
# ended it), inserts went on during both operations, no row is missing, every
# key is distinct, and each session's keys carry the identity of the node it
# was connected to.
use strict;
use warnings;

use CitusTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time);

my %names = ('1/0' => 'coordinator', '1/1' => 'worker_1', '1/2' => 'worker_2', '1/3' => 'worker_3');
my $coordinator = CitusTest::init_node('coordinator', datacenter_id => 1, worker_id => 0);
my $worker_1 = CitusTest::init_node('worker_1', datacenter_id => 1, worker_id => 1);
my $worker_2 = CitusTest::init_node('worker_2', datacenter_id => 1, worker_id => 2);
my $worker_3 = CitusTest::init_node('worker_3', datacenter_id => 1, worker_id => 3);
CitusTest::start_cluster($coordinator, $worker_1, $worker_2);

# Each session (writer) inserts a row into each table per transaction,
# numbering its rows g = 1, 2, ... (so a missing row shows as a gap), until
# a row appears in the reference table writers_stop.
$coordinator->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
SET citus.shard_count = 8;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), writer integer NOT NULL, g integer NOT NULL);
SELECT create_distributed_table('events', 'id');
CREATE TABLE orders (tenant integer NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval(),
                     writer integer NOT NULL, g integer NOT NULL, PRIMARY KEY (tenant, id));
SELECT create_distributed_table('orders', 'tenant');
CREATE TABLE writers_stop (stop boolean);
SELECT create_reference_table('writers_stop');
CREATE PROCEDURE write_rows(w integer) LANGUAGE plpgsql AS $$
DECLARE
    n integer := 0;
BEGIN
    LOOP
        EXIT WHEN EXISTS (SELECT FROM writers_stop);
        n := n + 1;
        INSERT INTO events (writer, g) VALUES (w, n);
        INSERT INTO orders (tenant, writer, g) VALUES (n % 50, w, n);
        COMMIT;
    END LOOP;
END $$;
});

# Writers 1 and 2 through the coordinator, 3 through worker_1, 4 through worker_2.
my %connected = (1 => 'coordinator', 2 => 'coordinator', 3 => 'worker_1', 4 => 'worker_2');
my %node_of = (coordinator => $coordinator, worker_1 => $worker_1, worker_2 => $worker_2);
my %writers = map { $_ => SnowflakeTest::start_sql($node_of{ $connected{$_} }, "CALL write_rows($_)",
		name => "writer_$_", timeout => 600) } sort keys %connected;

sub rows { return $coordinator->safe_psql('postgres', 'SELECT count(*) FROM events'); }

# Waits until every writer has inserted $n more rows than in %$before.
sub wait_for_progress
{
	my ($before, $n, $label) = @_;
	my $condition = join(' AND ',
		map { "coalesce(max(g) FILTER (WHERE writer = $_), 0) >= " . ($before->{$_} + $n) } sort keys %connected);
	ok($coordinator->poll_query_until('postgres', "SELECT $condition FROM events"), $label);
	return;
}

sub progress
{
	my %g = map { split /\|/ } split /\n/,
	  $coordinator->safe_psql('postgres', 'SELECT writer, max(g) FROM events GROUP BY 1');
	return { map { $_ => $g{$_} // 0 } keys %connected };
}

wait_for_progress(progress(), 50, 'every writer is inserting');
my @figures;    # what doc/citus.md quotes, printed at the end

## 1. A shard of each table moved --------------------------------------------------

for my $table (qw(events orders))
{
	my $before = progress();
	my $shard = $coordinator->safe_psql('postgres',
		"SELECT min(shardid) FROM citus_shards WHERE table_name = '$table'::regclass AND nodeport = " . $worker_1->port);
	my $started = rows();
	my $move_started = time;
	$coordinator->safe_psql('postgres',
		sprintf(
			"SELECT citus_move_shard_placement(%d, '%s', %d, '%s', %d, shard_transfer_mode => 'force_logical')",
			$shard, $worker_1->host, $worker_1->port, $worker_2->host, $worker_2->port));
	push @figures, sprintf('%s: a shard moved in %.1f s', $table, time - $move_started);
	cmp_ok(rows(), '>', $started, "$table: inserts went on while shard $shard moved");
	is( $coordinator->safe_psql('postgres', "SELECT nodeport FROM citus_shards WHERE shardid = $shard"),
		$worker_2->port, "$table: shard $shard is on worker_2 now");
	wait_for_progress($before, 20, "$table: every writer inserts after the move");
}

## 2. A third worker, and a rebalance ------------------------------------------------

CitusTest::start($worker_3);
CitusTest::add_worker($coordinator, $worker_3);
my $before = progress();
my $started = rows();
my $rebalance_started = time;
$coordinator->safe_psql('postgres',
	"SELECT rebalance_table_shards(shard_transfer_mode => 'force_logical')");
my $rebalance_took = time - $rebalance_started;
cmp_ok(rows(), '>', $started, 'inserts went on during the rebalance');
my $on_worker_3 = $coordinator->safe_psql('postgres',
	'SELECT count(*) FROM citus_shards WHERE nodeport = ' . $worker_3->port);
cmp_ok($on_worker_3, '>', 0, "the rebalance moved $on_worker_3 shards onto worker_3");
push @figures, sprintf('the rebalance moved %d shards onto worker_3 in %.1f s', $on_worker_3, $rebalance_took);
wait_for_progress($before, 20, 'every writer inserts after the rebalance');

## The outcome -------------------------------------------------------------------

$coordinator->safe_psql('postgres', 'INSERT INTO writers_stop VALUES (true)');
for my $writer (sort keys %writers)
{
	my $r = SnowflakeTest::finish_sql($writers{$writer});
	ok($r->{ok}, "writer $writer ($connected{$writer}): ended without an error") or diag $r->{stderr};
}
for my $table (qw(events orders))
{
	my ($rows, $distinct, $gaps) = split /\|/, $coordinator->safe_psql(
		'postgres', qq{
		SELECT sum(n), sum(d), sum(m - n) FROM (
		    SELECT count(*) AS n, count(DISTINCT id) AS d, max(g) AS m FROM $table GROUP BY writer) w});
	is($gaps, 0, "$table: no row missing ($rows rows)");
	is($distinct, $rows, "$table: all $rows keys distinct");
	push @figures, "$table: $rows rows, $distinct distinct keys";
}
is( $coordinator->safe_psql(
		'postgres', q{
		SELECT count(*) FROM (SELECT id FROM events UNION ALL SELECT id FROM orders) a
		 GROUP BY id HAVING count(*) > 1}),
	'',
	'no key in both tables');
for my $writer (sort keys %connected)
{
	like(CitusTest::issuers($coordinator, "SELECT id FROM events WHERE writer = $writer", \%names),
		qr/^$connected{$writer}=\d+$/, "writer $writer: every key issued by $connected{$writer}");
}
diag join("\n", 'Shard moves while 4 sessions insert (doc/citus.md):', @figures);

$_->stop('fast') for ($worker_3, $worker_2, $worker_1, $coordinator);
done_testing();
