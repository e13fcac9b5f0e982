# Merging game servers (the seed "游戏服务器中的ID生成策略": one database per
# server, merged when the servers are): two servers with different worker IDs
# fill players, items (owner_id -> players) and trades (-> items, players),
# all keyed by DEFAULT snowflake_nextval(). Their data is merged into a third
# node with its own worker ID, two ways:
#   (a) logical replication: a publication on each server, two subscriptions
#       on the target, initial copy then live changes;
#   (b) pg_dump --data-only of each server restored into one database made
#       from the servers' schema, foreign keys enforced during the restore.
# Each way: no key conflicts (every row of each server arrives unchanged and
# the counts add up), every foreign key holds, and the merged node then
# issues IDs of its own that collide with nothing.
use strict;
use warnings;

use File::Spec;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# A started node that preloads snowflake with the identity (datacenter_id,
# worker_id); SnowflakeTest also gives it room for a walsender and the
# table-sync workers of a publisher.
sub snowflake_node
{
	my ($name, $datacenter_id, $worker_id, %options) = @_;
	my $node = SnowflakeTest::init_node(
		$name,
		datacenter_id => $datacenter_id,
		worker_id => $worker_id,
		%options);
	SnowflakeTest::start_node($node);
	return $node;
}

my %server = (
	a => snowflake_node('server_a', 1, 1, allows_streaming => 'logical'),
	b => snowflake_node('server_b', 1, 2, allows_streaming => 'logical'),);
my %worker_of = (a => 1, b => 2);
my $merged = snowflake_node('merged', 1, 3);
my $merged_worker = 3;

my $schema = <<'EOS';
CREATE EXTENSION snowflake;
CREATE TABLE players (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    name text NOT NULL,
    home_server text NOT NULL);
CREATE TABLE items (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    owner_id bigint NOT NULL REFERENCES players,
    kind text NOT NULL);
CREATE INDEX items_owner_id ON items (owner_id);
CREATE TABLE trades (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    item_id bigint NOT NULL REFERENCES items,
    seller_id bigint NOT NULL REFERENCES players,
    buyer_id bigint NOT NULL REFERENCES players,
    price integer NOT NULL);
EOS

# What one server holds: 2,000 players, 3 items each, a trade for every
# other item (bought by another player of the same server).
my %expected_rows = (players => 2000, items => 6000, trades => 3000);

sub load_script
{
	my ($name) = @_;
	return <<"EOS";
INSERT INTO players (name, home_server)
    SELECT 'server $name player ' || i, '$name' FROM generate_series(1, 2000) i;
INSERT INTO items (owner_id, kind)
    SELECT p.id, k FROM players p CROSS JOIN unnest(ARRAY['sword', 'shield', 'potion']) k;
INSERT INTO trades (item_id, seller_id, buyer_id, price)
    SELECT i.id, i.owner_id, p.id, (i.n % 500)::integer + 1
    FROM (SELECT id, owner_id, row_number() OVER (ORDER BY id) AS n FROM items) i
    JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM players) p
      ON p.n = (i.n * 7) % 2000 + 1
    WHERE i.n % 2 = 0;
EOS
}

for my $name (sort keys %server)
{
	$server{$name}->safe_psql('postgres', 'CREATE DATABASE game');
	$server{$name}->safe_psql('game', $schema . load_script($name));
	is( $server{$name}->safe_psql('game',
			"SELECT (SELECT count(*) FROM players) || ' ' || (SELECT count(*) FROM items) || ' ' || (SELECT count(*) FROM trades)"
		),
		"$expected_rows{players} $expected_rows{items} $expected_rows{trades}",
		"server $name holds its players, items and trades");
}

# A table's rows as count and checksum, in ID order; $where picks the rows
# of one server out of a merged table.
sub table_print
{
	my ($node, $db, $table, $where) = @_;
	$where //= 'true';
	return $node->safe_psql($db,
		"SELECT count(*) || ' rows, md5 ' || md5(string_agg(t::text, ',' ORDER BY id)) FROM $table t WHERE $where"
	);
}

# Every foreign key of the merged tables checked by anti-joins, whatever the
# triggers did.
my $orphans_query = <<'EOS';
SELECT (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT FROM players p WHERE p.id = i.owner_id))
    || ' ' || (SELECT count(*) FROM trades t WHERE NOT EXISTS (SELECT FROM items i WHERE i.id = t.item_id))
    || ' ' || (SELECT count(*) FROM trades t WHERE NOT EXISTS (SELECT FROM players p WHERE p.id = t.seller_id))
    || ' ' || (SELECT count(*) FROM trades t WHERE NOT EXISTS (SELECT FROM players p WHERE p.id = t.buyer_id))
EOS

# The checks of a merge into $db: each server's rows arrived unchanged, the
# counts add up, the keys are unique, the foreign keys hold.
sub check_merged
{
	my ($db) = @_;
	for my $table (qw(players items trades))
	{
		my $total = 0;
		for my $name (sort keys %server)
		{
			my $from_server = table_print($server{$name}, 'game', $table);
			$total += (split / /, $from_server)[0];
			is( table_print(
					$merged, $db, $table,
					"(snowflake_decode(id)).worker_id = $worker_of{$name}"),
				$from_server,
				"$db: every $table row of server $name arrived unchanged");
		}
		is( $merged->safe_psql($db, "SELECT count(*) || ' ' || count(DISTINCT id) FROM $table"),
			"$total $total",
			"$db: $table holds $total rows, the sum of both servers, with unique IDs");
	}
	is($merged->safe_psql($db, $orphans_query),
		'0 0 0 0', "$db: every foreign key holds (anti-joins find no orphan)");
	is( $merged->safe_psql($db,
			"SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace"
		),
		'4',
		"$db: the four foreign keys are declared on the merged tables");
}

# After the merge the merged node writes on its own: new players, items
# owned by players of both servers, trades across the former servers. Their
# IDs carry the merged node's worker ID and collide with nothing.
sub check_new_ids
{
	my ($db) = @_;
	my $ids_query = <<"EOS";
SELECT string_agg(format('%s: %s rows, %s distinct, %s issued here', t, n, d, here), E'\\n' ORDER BY t)
FROM (SELECT t, count(*) AS n, count(DISTINCT id) AS d,
             count(*) FILTER (WHERE (snowflake_decode(id)).worker_id = $merged_worker
                                AND (snowflake_decode(id)).datacenter_id = 1) AS here
      FROM (SELECT 'items' AS t, id FROM items UNION ALL SELECT 'players', id FROM players
            UNION ALL SELECT 'trades', id FROM trades) ids
      GROUP BY t) counts
EOS
	my %before = map { (split /: /)[0] => (split / /)[1] }
	  split /\n/, $merged->safe_psql($db, $ids_query);
	$merged->safe_psql($db, <<'EOS');
INSERT INTO players (name, home_server) SELECT 'merged player ' || i, 'merged' FROM generate_series(1, 500) i;
INSERT INTO items (owner_id, kind)
    SELECT id, 'merged gift' FROM players WHERE home_server IN ('a', 'b') ORDER BY id LIMIT 1000;
INSERT INTO trades (item_id, seller_id, buyer_id, price)
    SELECT i.id, i.owner_id, b.id, 7
    FROM (SELECT id, owner_id, row_number() OVER (ORDER BY id) AS n
          FROM items WHERE owner_id IN (SELECT id FROM players WHERE home_server = 'a')) i
    JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM players WHERE home_server = 'b') b
      ON b.n = i.n
    WHERE i.n <= 1000;
EOS
	my %new = (items => 1000, players => 500, trades => 1000);
	is( $merged->safe_psql($db, $ids_query),
		join("\n",
			map {
				my $total = $before{$_} + $new{$_};
				"$_: $total rows, $total distinct, $new{$_} issued here"
			} sort keys %new),
		"$db: the merged node's new IDs (500 players, 1000 items, 1000 cross-server trades) carry its worker ID and collide with nothing"
	);
	is($merged->safe_psql($db, $orphans_query),
		'0 0 0 0', "$db: the foreign keys still hold after the new rows");
}

## (a) Logical replication ----------------------------------------------------

# No TRUNCATE in the publications: a TRUNCATE on one server would empty the
# merged table, the other server's rows included.
for my $name (sort keys %server)
{
	$server{$name}->safe_psql('game',
		"CREATE PUBLICATION game_merge FOR TABLE players, items, trades WITH (publish = 'insert, update, delete')"
	);
}
$merged->safe_psql('postgres', 'CREATE DATABASE merged_live');
$merged->safe_psql('merged_live', $schema);

# copy_data = true (the default) copies the rows present now, then streams
# the changes. The foreign keys stay declared and enforced for local writes:
# the apply and table-sync workers run with session_replication_role =
# replica, so the FK triggers do not fire for replicated rows, whatever
# order the tables are copied in; the anti-joins check them afterwards.
for my $name (sort keys %server)
{
	# connstr names the socket directory as host: no TCP anywhere.
	my $connection = $server{$name}->connstr . ' dbname=game';
	$merged->safe_psql('merged_live',
		"CREATE SUBSCRIPTION from_$name CONNECTION '$connection' PUBLICATION game_merge WITH (copy_data = true)"
	);
}
$merged->wait_for_subscription_sync($server{$_}, "from_$_", 'merged_live')
  for sort keys %server;

# Changes after the initial copy: server a gains a player with an item and a
# trade, server b renames a player and cancels a trade.
$server{a}->safe_psql('game', <<'EOS');
WITH p AS (INSERT INTO players (name, home_server) VALUES ('late player', 'a') RETURNING id),
     i AS (INSERT INTO items (owner_id, kind) SELECT id, 'late sword' FROM p RETURNING id, owner_id)
INSERT INTO trades (item_id, seller_id, buyer_id, price)
    SELECT i.id, i.owner_id, (SELECT min(id) FROM players), 99 FROM i;
EOS
$server{b}->safe_psql('game', <<'EOS');
UPDATE players SET name = 'renamed player' WHERE id = (SELECT min(id) FROM players);
DELETE FROM trades WHERE id = (SELECT max(id) FROM trades);
EOS
$server{$_}->wait_for_catchup("from_$_") for sort keys %server;

check_merged('merged_live');

# The cut-over: drop the subscriptions (and with them the servers' slots).
$merged->safe_psql('merged_live', "DROP SUBSCRIPTION from_$_") for sort keys %server;
is($server{$_}->safe_psql('game', 'SELECT count(*) FROM pg_replication_slots'),
	'0', "server $_: the replication slot is gone with the subscription")
  for sort keys %server;

## (b) pg_dump --data-only, restored into one database ------------------------

my $dumps = PostgreSQL::Test::Utils::tempdir;
my $schema_file = File::Spec->catfile($dumps, 'schema.sql');
# --no-publications: the publication made for (a) is server a's own.
$server{a}->command_ok(
	[ 'pg_dump', '--schema-only', '--no-publications', '--file', $schema_file, '--dbname', 'game' ],
	'pg_dump --schema-only of server a');
$merged->safe_psql('postgres', 'CREATE DATABASE merged_dump');
$merged->command_ok(
	[
		'psql', '--no-psqlrc', '--quiet', '--set', 'ON_ERROR_STOP=1',
		'--single-transaction', '--file', $schema_file, '--dbname', 'merged_dump'
	],
	'the schema of server a (extension, tables, foreign keys) replays into merged_dump');

my %data_file;
for my $name (sort keys %server)
{
	$data_file{$name} = File::Spec->catfile($dumps, "server_$name.dump");
	$server{$name}->command_ok(
		[
			'pg_dump', '--data-only', '--format=custom',
			'--file', $data_file{$name}, '--dbname', 'game'
		],
		"pg_dump --data-only of server $name");
}

# The foreign keys are enforced during the restore (no --disable-triggers):
# server b's items alone, before its players, are refused.
$merged->command_fails_like(
	[
		'pg_restore', '--data-only', '--exit-on-error', '--single-transaction',
		'--table', 'items', '--dbname', 'merged_dump', $data_file{b}
	],
	qr/violates foreign key constraint "items_owner_id_fkey"/,
	'the restore enforces the foreign keys: items without their players are refused');

# pg_dump orders a data-only dump so that referenced tables come first.
for my $name (sort keys %server)
{
	$merged->command_ok(
		[
			'pg_restore', '--data-only', '--exit-on-error', '--single-transaction',
			'--dbname', 'merged_dump', $data_file{$name}
		],
		"server $name restores into merged_dump with no key conflict and every foreign key checked");
}

check_merged('merged_dump');

check_new_ids($_) for qw(merged_live merged_dump);

done_testing();
