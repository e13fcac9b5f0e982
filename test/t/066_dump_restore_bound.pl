# A dump carries the rows, not the node (README, "Upgrading PostgreSQL"): a
# cluster filled by pg_dump and psql from one whose IDs ran ahead of the
# clock takes itself for a node that never issued an ID, as a new node would.
# What the README tells to do, each on a cluster of its own:
#
# 1. The old node's identity and nothing else: its first ID lies below the
#    old node's last. This is the hole the README warns of: never do this.
# 2. The old node's identity and its bound, given before the first ID by
#    snowflake_restore_bound() from a copy of the old data directory's
#    pg_snowflake/ (as one brings it from another machine): every new ID is
#    above every old one.
# 3. A new identity, and no bound: new IDs interleave with the old ones in
#    time, but none equals an old one, and each carries the new identity.
use strict;
use warnings FATAL => 'all';

use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $old = SnowflakeTest::init_node('old', faketime => 1, conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::set_clock_offset($old, 20 * 3600);
SnowflakeTest::start_node($old);
$old->safe_psql('postgres', 'CREATE DATABASE shop');
$old->safe_psql(
	'shop', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 10000) g;
});
SnowflakeTest::set_clock_offset($old, 0);
$old->safe_psql('shop', 'INSERT INTO orders (item) SELECT g FROM generate_series(10001, 15000) g');
my $highest = $old->safe_psql('shop', 'SELECT snowflake_nextval()');
my $dump = PostgreSQL::Test::Utils::tempdir . '/shop.sql';
$old->command_ok([ 'pg_dump', '-d', $old->connstr('shop'), '-f', $dump ], 'pg_dump of the old node');
$old->stop;

# The old data directory's pg_snowflake/, brought elsewhere.
my $brought = PostgreSQL::Test::Utils::tempdir;
mkdir "$brought/pg_snowflake" or die "mkdir: $!";
copy($old->data_dir . '/pg_snowflake/state', "$brought/pg_snowflake/state") or die "copy: $!";

# A new cluster with `%options`, `$dump` restored into its database shop.
sub restored
{
	my ($name, %options) = @_;
	my $node = SnowflakeTest::init_node($name, conf => ["snowflake.max_lead = '1d'"], %options);
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres', 'CREATE DATABASE shop');
	$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('shop'), '-f', $dump ],
		"$name: the dump restores with psql");
	is($node->safe_psql('shop', 'SELECT count(*) FROM orders'), 15000, "$name: with every row");
	return $node;
}

## 1. The old identity alone: the hole -------------------------------------------

my $alone = restored('alone');
is($alone->safe_psql('shop', "SELECT snowflake_nextval() < $highest"),
	't', 'old identity, no bound: the first ID is below the old node\'s last (the hole)');
$alone->stop;

## 2. The old identity and its bound ------------------------------------------------

my $bound = restored('bound');
my $r = SnowflakeTest::try_sql($bound,
	"SELECT snowflake_restore_bound('$brought') > now() + interval '19 hours'", dbname => 'shop');
is($r->{stdout}, 't', 'old identity: snowflake_restore_bound from a copy of pg_snowflake/')
  or diag $r->{stderr};
$bound->safe_psql('shop',
	'INSERT INTO orders (item) SELECT 1000000 + g FROM generate_series(1, 10000) g');
is($bound->safe_psql('shop', "SELECT count(*) FROM orders WHERE item > 1000000 AND id <= $highest"),
	0, 'old identity and its bound: 10,000 new IDs, none at or below an old one');
$bound->stop;

## 3. A new identity ----------------------------------------------------------------

my $other = restored('other', worker_id => 8);
$other->safe_psql('shop',
	'INSERT INTO orders (item) SELECT 1000000 + g FROM generate_series(1, 10000) g');
is( $other->safe_psql(
		'shop', qq{
	SELECT count(*) FILTER (WHERE id < $highest) > 0,
	       count(DISTINCT (snowflake_decode(id)).worker_id)
	FROM orders WHERE item > 1000000}),
	't|1', 'new identity: new IDs lie among the old ones, all of the new identity');
is($other->safe_psql('shop', 'SELECT count(*), count(DISTINCT id) FROM orders'),
	'25000|25000', 'new identity: none equals an old one');
is($other->safe_psql('shop', 'SELECT DISTINCT (snowflake_decode(id)).worker_id FROM orders WHERE item > 1000000'),
	8, 'new identity: each new ID carries worker_id 8');
$other->stop;

done_testing();
