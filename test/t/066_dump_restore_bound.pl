# A dump carries the bound (issue 44; README, "Upgrading PostgreSQL"):
# snowflake_dump_bound, a configuration table of the extension, holds an ID
# above every ID the node issued in the database, and whoever restores the
# dump into a new cluster with the old node's identity takes it as that
# node's bound. Every new cluster's clock runs an hour behind the old node
# A's, so it replays the hour of A's IDs: without the bound a new node's IDs
# would lie below A's, and those of the same millisecond equal A's. (A runs on
# the real clock: libfaketime does not reach its parallel workers.)
#
# A issues its IDs in ways a dump must cover although no row of the dump
# holds them: in a transaction that rolls back, in a read-only one, and in a
# parallel worker. Each way of dumping and restoring gets a cluster of its
# own, with A's identity:
#
# 1. pg_dump -Fc and pg_restore (the issue's sequence);
# 2. a plain dump through psql;
# 3. pg_dumpall through psql;
# 4. a dump taken on a streaming standby of A;
# 5. a restore by a database owner who is not a superuser: the bound, an
#    hour ahead, is refused with a WARNING that gives a superuser's
#    statement; the statement takes it. With max_lead above the hour, the
#    same restore is taken;
# 6. pg_restore --data-only --disable-triggers: the row goes in as a second
#    row, and the first ID issued in the database takes it (lazily).
# On every new cluster: the restore's log says the bound was taken, and
# 3,000 new IDs all lie above every ID A issued.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $tmp = PostgreSQL::Test::Utils::tempdir;

# A, with a standby.
my $old = SnowflakeTest::init_node('old', allows_streaming => 1);
SnowflakeTest::start_node($old);
my $standby = SnowflakeTest::init_standby($old, 'old_standby');
SnowflakeTest::start_node($standby);
$old->safe_psql('postgres', 'CREATE DATABASE shop');
$old->safe_psql(
	'shop', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 3000) g;
});

# IDs no row holds, each issued past the bound the row had (a durable
# interval later), so only its own raise covers it.
sub carried { return $old->safe_psql('shop', 'SELECT ids_before FROM snowflake_dump_bound'); }

sub issued_later
{
	my ($sql) = @_;
	usleep(1_500_000);
	my $before = carried();
	my $out = $old->safe_psql('shop', $sql);
	my ($id) = $out =~ /^(\d{15,})$/m or die "no ID in: $out";
	cmp_ok($id, '>=', $before, "the ID lies past the bound the row had before ($sql)");
	cmp_ok(carried(), '>', $id, "the row was raised above it ($sql)");
	return $id;
}
my @unstored = (
	issued_later('BEGIN; SELECT snowflake_nextval(); ROLLBACK;'),
	issued_later('BEGIN READ ONLY; SELECT snowflake_nextval(); COMMIT;'),
	issued_later(
		q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
		  SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
		  SET } . ($old->pg_version >= 16 ? 'debug_parallel_query' : 'force_parallel_mode') . q{ = on;
		  SELECT snowflake_nextval();}),
	issued_later('SELECT max(id) FROM snowflake_generate(5000) id'));
is( $old->safe_psql('shop', 'SELECT count(*) FROM snowflake_dump_bound'),
	1, 'A: the table has one row, raised in place');

my $highest = $old->safe_psql('shop', 'SELECT max(id) FROM orders');
$highest = $_ > $highest ? $_ : $highest for @unstored;
my $carried = carried();
cmp_ok($carried, '>', $highest, 'A: the row lies above every ID A issued');

# The dumps.
my $custom = "$tmp/shop.dump";
my $plain = "$tmp/shop.sql";
my $all = "$tmp/all.sql";
$old->command_ok([ 'pg_dump', '-Fc', '-d', $old->connstr('shop'), '-f', $custom ], 'pg_dump -Fc');
$old->command_ok([ 'pg_dump', '-d', $old->connstr('shop'), '-f', $plain ], 'pg_dump, plain');
$old->command_ok([ 'pg_dumpall', '-d', $old->connstr('postgres'), '-f', $all ], 'pg_dumpall');
my $system = $old->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
like(
	slurp_file($plain),
	qr/^COPY public\.snowflake_dump_bound \(ids_before, system_identifier\) FROM stdin;\n$carried\t$system\n\\\.$/m,
	'the plain dump holds the row, with A\'s system identifier');
$old->wait_for_catchup($standby, 'replay', $old->lsn('insert'));
my $from_standby = "$tmp/standby.dump";
$standby->command_ok([ 'pg_dump', '-Fc', '-d', $standby->connstr('shop'), '-f', $from_standby ],
	'pg_dump -Fc on the standby');
is($standby->safe_psql('shop', 'SELECT ids_before FROM snowflake_dump_bound'),
	$carried, 'the standby has the raises (generic WAL)');
$standby->stop;
$old->stop;

# A new cluster with A's identity and a clock an hour behind A's: it replays
# the hour of A's IDs. With max_lead 1d it issues at once above them.
sub new_node
{
	my ($name, %options) = @_;
	my $node = SnowflakeTest::init_node($name, faketime => 1,
		conf => [ "snowflake.max_lead = '" . ($options{max_lead} // '1d') . "'" ]);
	SnowflakeTest::set_clock_offset($node, -3600);
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres', 'CREATE DATABASE shop') unless $options{no_database};
	return $node;
}

sub psql_file
{
	my ($node, $file, $dbname) = @_;
	my $r = $node->command_ok(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($dbname), '-f', $file ],
		$node->name . ": $file restores with psql");
	return $r;
}

# Every new ID above every ID A issued: 3,000 rows, then the snowflake
# functions' own.
sub issues_above
{
	my ($node, $what) = @_;
	my $name = $node->name;
	$node->safe_psql('shop',
		'INSERT INTO orders (item) SELECT 1000000 + g FROM generate_series(1, 3000) g');
	is( $node->safe_psql(
			'shop', qq{
		SELECT count(*) FILTER (WHERE id <= $highest), count(*), count(DISTINCT id)
		  FROM orders WHERE item > 1000000}),
		'0|3000|3000',
		"$name ($what): 3,000 new IDs, none at or below any ID A issued");
	is($node->safe_psql('shop', 'SELECT count(*) = count(DISTINCT id) FROM orders'),
		't', "$name: no ID of the table twice");
	cmp_ok($node->safe_psql('shop', 'SELECT snowflake_nextval()'), '>', $highest,
		"$name: nor snowflake_nextval()");
	return;
}

sub took_bound
{
	my ($node, $offset) = @_;
	ok( $node->log_contains(
			qr/snowflake: took the bound (of a restored snowflake_dump_bound row|in snowflake_dump_bound)/,
			$offset),
		$node->name . ': its log says it took the bound');
	return;
}

## 1. pg_dump -Fc, pg_restore ------------------------------------------------------

my $custom_node = new_node('custom');
$custom_node->command_ok(
	[ 'pg_restore', '-d', $custom_node->connstr('shop'), $custom ],
	'custom: pg_restore');
is($custom_node->safe_psql('shop', 'SELECT count(*), max(ids_before) FROM snowflake_dump_bound'),
	"1|$carried", 'custom: the restored row is merged into the one row');
took_bound($custom_node);
# The restore raised the node's bound, not only the database's: another
# database's first ID lies above A's too.
$custom_node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
cmp_ok($custom_node->safe_psql('postgres', 'SELECT snowflake_nextval()'), '>', $highest,
	'custom: the first ID of another database lies above every ID A issued');
issues_above($custom_node, 'pg_dump -Fc, pg_restore');
$custom_node->stop;

## 2. A plain dump through psql ----------------------------------------------------

my $plain_node = new_node('plain');
psql_file($plain_node, $plain, 'shop');
took_bound($plain_node);
issues_above($plain_node, 'plain dump, psql');
$plain_node->stop;

## 3. pg_dumpall --------------------------------------------------------------------

# Without ON_ERROR_STOP: the dump's CREATE ROLE of the bootstrap superuser
# fails, as in any new cluster.
my $all_node = new_node('all', no_database => 1);
$all_node->command_ok([ 'psql', '-X', '-q', '-d', $all_node->connstr('postgres'), '-f', $all ],
	'all: pg_dumpall\'s output runs through psql');
took_bound($all_node);
issues_above($all_node, 'pg_dumpall, psql');
$all_node->stop;

## 4. A dump of the standby ------------------------------------------------------------

my $standby_node = new_node('from_standby');
$standby_node->command_ok([ 'pg_restore', '-d', $standby_node->connstr('shop'), $from_standby ],
	'from_standby: pg_restore');
took_bound($standby_node);
issues_above($standby_node, 'a dump taken on the standby');
$standby_node->stop;

## 5. A restore by a database owner who is not a superuser -------------------------------

my $owned = new_node('owned', max_lead => '0', no_database => 1);
$owned->safe_psql('postgres', q{
	CREATE ROLE shop_owner LOGIN;
	CREATE DATABASE shop OWNER shop_owner;
	CREATE DATABASE shop2 OWNER shop_owner;
});
my $as_owner = sub { return $_[0]->connstr($_[1]) . ' user=shop_owner'; };
my ($stdout, $stderr);
my $restore = IPC::Run::run([ 'pg_restore', '--no-owner', '-d', $as_owner->($owned, 'shop'), $custom ],
	'>', \$stdout, '2>', \$stderr);
ok($restore, 'owned: the owner restores the dump') or diag $stderr;
# pg_restore shows the server's warnings only with --verbose: the log.
my $log = slurp_file($owned->logfile);
like(
	$log,
	qr/WARNING:  snowflake did not take the bound of the restored snowflake_dump_bound row: role "shop_owner" may not give this node a bound that far ahead/,
	'owned: a WARNING says the bound was not taken');
my ($statement) = $log =~ /HINT:  As a superuser, in database "shop": (INSERT INTO [^;]+;)/;
ok($statement, 'owned: its HINT gives a superuser\'s statement');
cmp_ok($owned->safe_psql('shop', 'SELECT max(ids_before) FROM snowflake_dump_bound'),
	'<', $carried, 'owned: the refused bound is not carried either');
# With max_lead above the hour, the same restore by the owner is taken.
sub set_max_lead
{
	my ($value) = @_;
	$owned->safe_psql('postgres',
		"ALTER SYSTEM SET snowflake.max_lead = '$value'; SELECT pg_reload_conf()");
	$owned->poll_query_until('shop', "SELECT current_setting('snowflake.max_lead') = '$value'");
	return;
}
set_max_lead('2h');
my $offset = -s $owned->logfile;
$restore = IPC::Run::run([ 'pg_restore', '--no-owner', '-d', $as_owner->($owned, 'shop2'), $custom ],
	'>', \$stdout, '2>', \$stderr);
ok($restore, 'owned: the owner restores it into shop2, with max_lead 2h') or diag $stderr;
took_bound($owned, $offset);
ok(!$owned->log_contains(qr/WARNING/, $offset), 'owned: no WARNING within max_lead');
# The superuser runs the HINT in shop: the row carries the bound. An hour
# ahead of the clock with max_lead 0, IDs wait for the clock, then refuse.
set_max_lead('0');
$owned->safe_psql('shop', $statement);
is($owned->safe_psql('shop', 'SELECT max(ids_before) FROM snowflake_dump_bound'),
	$carried, 'owned: the HINT\'s statement raises the row');
my $r = SnowflakeTest::try_sql($owned, 'SELECT snowflake_nextval()', dbname => 'shop');
is($r->{sqlstate}, '55000', 'owned: IDs an hour ahead of the clock are refused')
  or diag $r->{stderr};
like($r->{message}, qr/^system clock moved backwards by \d+ ms$/, 'owned: saying the clock is behind');
set_max_lead('2h');
issues_above($owned, 'restored by the owner, taken by a superuser');
$owned->stop;

## 6. --disable-triggers: taken by the first ID ---------------------------------------

my $lazy = new_node('lazy');
$lazy->command_ok([ 'pg_restore', '--schema-only', '-d', $lazy->connstr('shop'), $custom ],
	'lazy: the schema');
$lazy->command_ok(
	[ 'pg_restore', '--data-only', '--disable-triggers', '-d', $lazy->connstr('shop'), $custom ],
	'lazy: the data, with triggers disabled');
is($lazy->safe_psql('shop', 'SELECT count(*), max(ids_before) FROM snowflake_dump_bound'),
	"2|$carried", 'lazy: the restored row went in as a second row');
cmp_ok($lazy->safe_psql('shop', 'SELECT snowflake_nextval()'), '>', $highest,
	'lazy: the first ID lies above every ID A issued');
took_bound($lazy);
issues_above($lazy, '--disable-triggers');
$lazy->stop;

done_testing();
