# Issue 9: active-active on PostgreSQL 16 and later (the set-up pgEdge builds
# on; doc/active-active.md is the recipe).
#
# Three nodes, each with its own identity (datacenter 1, workers 1, 2, 3),
# each with the same table keyed by snowflake_nextval(), each publishing it
# and subscribing to the other two with origin = none (a change is sent on
# only by the node where it was made, so nothing loops) and copy_data =
# false. Writers insert concurrently on all three, also rows updated and
# deleted where they were made. Then: every node has the same rows, no key was
# ever issued twice (a repeat would stop an apply worker with a unique
# violation), each key decodes to the node that wrote it, and no apply worker
# logged an error or counted one in pg_stat_subscription_stats.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my ($major) = `pg_config --version` =~ /PostgreSQL (\d+)/
  or die 'pg_config --version names no PostgreSQL major';
plan skip_all => "origin = none needs PostgreSQL 16 or later, this is $major"
  if $major < 16;

my @names = qw(alpha beta gamma);
my %node;
for my $index (0 .. $#names)
{
	$node{ $names[$index] } = SnowflakeTest::init_node(
		$names[$index],
		datacenter_id => 1,
		worker_id => $index + 1,
		conf => [
			'wal_level = logical', 'max_replication_slots = 10',
			'max_wal_senders = 10', 'max_logical_replication_workers = 10',
			'max_worker_processes = 20',
		]);
}
# Waits until every subscription has applied what its publisher wrote so far.
# Returns false at once when an apply worker has failed (a repeated key stops
# it with a unique violation, and it would retry for ever), or after 90 s.
sub caught_up
{
	my %target = map { $_ => $node{$_}->lsn('insert') } @names;
	my $deadline = time + 90;
	while (time < $deadline)
	{
		my $errors = 0;
		my $behind = 0;
		for my $publisher (@names)
		{
			$errors += $node{$publisher}->safe_psql('postgres',
				'SELECT coalesce(sum(apply_error_count), 0) FROM pg_stat_subscription_stats');
			$behind += $node{$publisher}->safe_psql('postgres', qq{
				SELECT 2 - count(*) FROM pg_stat_replication
				WHERE application_name LIKE '%_from_$publisher'
				  AND replay_lsn >= '$target{$publisher}'});
		}
		return 0 if $errors > 0;
		return 1 if $behind == 0;
		select(undef, undef, undef, 0.2);
	}
	return 0;
}

my $schema = q{
	CREATE EXTENSION snowflake;
	CREATE TABLE items (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		node text NOT NULL,
		writer int NOT NULL,
		n int NOT NULL,
		note text);
	CREATE PUBLICATION items_pub FOR TABLE items;
};
for my $name (@names)
{
	SnowflakeTest::start_node($node{$name});
	$node{$name}->safe_psql('postgres', $schema);
}
for my $subscriber (@names)
{
	for my $publisher (grep { $_ ne $subscriber } @names)
	{
		(my $connstr = $node{$publisher}->connstr('postgres')) =~ s/'/''/g;
		$node{$subscriber}->safe_psql('postgres', qq{
			CREATE SUBSCRIPTION ${subscriber}_from_$publisher
				CONNECTION '$connstr' PUBLICATION items_pub
				WITH (origin = none, copy_data = false)});
	}
}
ok(caught_up(), 'three nodes subscribe to each other with origin = none');

# Two writers per node; each commits 40 transactions of 25 rows, updates a
# row of its own now and then and deletes one.
my $transactions = 40;
my $rows_per_transaction = 25;
my @handles;
for my $name (@names)
{
	for my $writer (1, 2)
	{
		my $sql = '';
		for my $n (1 .. $transactions)
		{
			$sql .= "INSERT INTO items (node, writer, n) SELECT '$name', $writer, $n "
			  . "FROM generate_series(1, $rows_per_transaction);\n";
			$sql .= "UPDATE items SET note = 'updated' WHERE id = "
			  . "(SELECT max(id) FROM items WHERE node = '$name' AND writer = $writer);\n"
			  if $n % 5 == 0;
			$sql .= "DELETE FROM items WHERE id = "
			  . "(SELECT min(id) FROM items WHERE node = '$name' AND writer = $writer);\n"
			  if $n % 10 == 0;
		}
		push @handles,
		  SnowflakeTest::start_sql($node{$name}, $sql,
			name => "writer_${name}_$writer");
	}
}
my $failed = grep { !$_->{ok} } map { SnowflakeTest::finish_sql($_) } @handles;
is($failed, 0, 'six writers on three nodes committed every transaction');

ok(caught_up(), 'every node applied the other two nodes\' changes, no apply worker failed');

my $inserted = 3 * 2 * $transactions * $rows_per_transaction;
my $deleted = 3 * 2 * int($transactions / 10);
my $expected = $inserted - $deleted;
my $summary = q{
	SELECT count(*), count(DISTINCT id),
		md5(string_agg(id || ':' || node || ':' || writer || ':' || n || ':' || coalesce(note, ''),
			',' ORDER BY id))
	FROM items};
my %state = map { $_ => $node{$_}->safe_psql('postgres', $summary) } @names;
for my $name (@names)
{
	my ($rows, $distinct) = split /\|/, $state{$name};
	is($rows, $expected, "$name has every row ($expected: $inserted inserted, $deleted deleted)");
	is($distinct, $rows, "$name: every key distinct");
}
is($state{beta}, $state{alpha}, 'beta converged to the same rows as alpha');
is($state{gamma}, $state{alpha}, 'gamma converged to the same rows as alpha');
is( $node{alpha}->safe_psql('postgres',
		q{SELECT count(*) FROM items
		  WHERE (snowflake_decode(id)).worker_id <> array_position(ARRAY['alpha', 'beta', 'gamma'], node)
		     OR (snowflake_decode(id)).datacenter_id <> 1}),
	0,
	'each key decodes to the node that wrote it');
is($node{alpha}->safe_psql('postgres', q{SELECT count(*) FROM items WHERE note = 'updated'}),
	$node{beta}->safe_psql('postgres', q{SELECT count(*) FROM items WHERE note = 'updated'}),
	'updates replicated as well');

# Every error counter of pg_stat_subscription_stats, whatever the major calls
# them (19 split sync_error_count into sync_seq_ and sync_table_error_count).
my $errors_counted = q{
	SELECT coalesce(sum(counter.value::bigint), 0)
	FROM pg_stat_subscription_stats stats, json_each_text(row_to_json(stats)) counter
	WHERE counter.key LIKE '%error_count'};
for my $name (@names)
{
	is($node{$name}->safe_psql('postgres', $errors_counted), 0, "$name: no apply or sync error counted");
	my $log = slurp_file($node{$name}->logfile);
	my @conflicts = grep { /logical replication|duplicate key|conflict/i && /ERROR|conflict/ }
	  split /\n/, $log;
	is(scalar @conflicts, 0, "$name: the subscription workers logged no error or conflict")
	  or diag join("\n", @conflicts[ 0 .. ($#conflicts < 9 ? $#conflicts : 9) ]);
}

$node{$_}->stop for @names;
done_testing();
