# pg_upgrade keeps the promise (README, "Upgrading PostgreSQL"): a cluster
# made by pg_upgrade from one that issued IDs never issues one of them again.
#
# The old cluster runs under snowflake.max_lead = 1d with its clock 20 hours
# ahead, so its IDs lie far above the real clock, and has the extension in
# two databases: "shop" at the default version, "legacy" at 1.3 (which lacks
# snowflake_restore_bound). Its clock is then set back to real time, and its
# generator keeps issuing ahead of it. Then pg_upgrade makes two new
# clusters of it, one by copying (its clock at real time, max_lead 0) and one
# by hard links (its clock an hour behind real time, max_lead 1d). In each:
#
# - the server log warns at start, naming pg_upgrade and both databases (it
#   marked the bound unknown when it brought them: bound_origin.cpp), and
#   snowflake_nextval() refuses (55000) in each, with the HINT that fits the
#   database's extension version (ALTER EXTENSION snowflake UPDATE first in
#   "legacy", where snowflake_restore_bound does not exist yet);
# - the HINT's command gives the bound; then, with max_lead 0, the clock
#   error (55000) rather than an ID under the old cluster's; with max_lead 1d
#   (the copy, after raising it; the link from the start), IDs above every ID
#   the old cluster issued, also after a restart: thousands of new rows in
#   the old tables, none of them equal to or below an old one.
#
# By default the old cluster is of the same major as the new one. With
# SNOWFLAKE_UPGRADE_FROM=/usr/lib/postgresql/NN (scripts/test.sh upgrade
# sets it) the old cluster runs that installation, into which snowflake must
# be installed too, and the upgrade crosses majors.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $from = $ENV{SNOWFLAKE_UPGRADE_FROM};
sub major_of { my ($pg_config) = @_; return (`$pg_config --version` =~ /PostgreSQL (\d+)/)[0]; }
my $new_major = major_of('pg_config');
my $old_major = $from ? major_of("$from/bin/pg_config") : $new_major;
BAIL_OUT("no PostgreSQL in $from") unless $old_major;
note "pg_upgrade from PostgreSQL $old_major to $new_major";

# initdb enables data checksums by default from 18 on, and pg_upgrade needs
# both clusters alike: an older old cluster gets them explicitly.
my @checksums = $old_major < 18 && $new_major >= 18 ? (initdb_extra => ['--data-checksums']) : ();

my $ahead = 20 * 3600;    # seconds the old cluster's clock runs ahead
my $old = SnowflakeTest::init_node(
	'old',
	faketime => 1,
	conf => ["snowflake.max_lead = '1d'"],
	@checksums,
	$from ? (install_path => $from) : ());
SnowflakeTest::set_clock_offset($old, $ahead);
SnowflakeTest::start_node($old);
$old->safe_psql('postgres', 'CREATE DATABASE shop');
$old->safe_psql('postgres', 'CREATE DATABASE legacy');
$old->safe_psql(
	'shop', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 20000) g;
});
$old->safe_psql(
	'legacy', q{
	CREATE EXTENSION snowflake VERSION '1.3';
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);
	INSERT INTO events (item) SELECT g FROM generate_series(1, 5000) g;
});
is($old->safe_psql('legacy', "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
	'1.3', 'old cluster: "legacy" has the extension at 1.3');

# Its clock back at real time: under max_lead it keeps issuing 20 hours ahead.
SnowflakeTest::set_clock_offset($old, 0);
$old->safe_psql('shop',
	'INSERT INTO orders (item) SELECT g FROM generate_series(20001, 25000) g');
$old->safe_psql('legacy',
	'INSERT INTO events (item) SELECT g FROM generate_series(5001, 10000) g');
# IDs returned to clients and stored nowhere count too; the last is the highest.
$old->safe_psql('shop', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
my $highest = $old->safe_psql('shop', 'SELECT snowflake_nextval()');
my $lead_hours = $old->safe_psql('shop',
	"SELECT round(extract(epoch FROM snowflake_timestamp($highest) - now()) / 3600)");
is($lead_hours, 20, 'old cluster: its last ID runs 20 hours ahead of its clock');
$old->stop;

# pg_upgrade from the old cluster into `$new`, with `@mode` (--link).
sub pg_upgrade
{
	my ($new, @mode) = @_;
	my $start = time;
	my ($ok, $stdout, $stderr) = SnowflakeTest::run_pg_upgrade($old, $new, mode => \@mode);
	ok($ok, 'pg_upgrade ' . join(' ', @mode) . ' into ' . $new->name . ' succeeds (' . (time - $start) . ' s)')
	  or diag "stdout:\n$stdout\nstderr:\n$stderr\n";
	ok(!-e $new->data_dir . '/pg_snowflake/state', $new->name . ': pg_upgrade copies no state file');
	return;
}

sub refusal_ok
{
	my ($node, $dbname, $update_first) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $label = $node->name . ", $dbname";
	my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()', dbname => $dbname);
	is($r->{sqlstate}, '55000', "$label: snowflake_nextval() refuses (55000)")
	  or diag $r->{stderr};
	like($r->{message} // '', qr/the bound above this node's earlier snowflake IDs is unknown/,
		"$label: the error says the bound is unknown");
	like($r->{detail} // '', qr/made by pg_upgrade/, "$label: the detail names pg_upgrade");
	my $hint = $r->{hint} // '';
	like($hint, qr/SELECT snowflake_restore_bound\('\/path\/to\/old\/data'\)/,
		"$label: the hint gives snowflake_restore_bound");
	if ($update_first)
	{
		like($hint, qr/run ALTER EXTENSION snowflake UPDATE, then SELECT snowflake_restore_bound/,
			"$label: with the extension at 1.3, the hint says ALTER EXTENSION snowflake UPDATE first");
	}
	else
	{
		unlike($hint, qr/ALTER EXTENSION/, "$label: at the default version, no ALTER EXTENSION");
	}
	return;
}

sub restore_bound
{
	my ($node, $dbname) = @_;
	my $r = SnowflakeTest::try_sql($node,
		"SELECT snowflake_restore_bound('" . $old->data_dir . "') > now() + interval '19 hours'",
		dbname => $dbname);
	is($r->{stdout}, 't',
		$node->name . ": snowflake_restore_bound gives the old cluster's bound, 20 hours ahead")
	  or diag $r->{stderr};
	return;
}

# New rows in `$table` of `$dbname`: none equal to or below an old ID.
sub new_rows_above_ok
{
	my ($node, $dbname, $table, $old_rows) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$node->safe_psql($dbname,
		"INSERT INTO $table (item) SELECT 1000000 + g FROM generate_series(1, 10000) g");
	is( $node->safe_psql(
			$dbname, qq{
		SELECT count(*), count(DISTINCT id),
		       count(*) FILTER (WHERE item > 1000000 AND id <= $highest)
		FROM $table}),
		($old_rows + 10000) . '|' . ($old_rows + 10000) . '|0',
		$node->name . ", $table: 10,000 new rows, all IDs distinct, none at or below an old ID");
	return;
}

## 1. Copy mode: the clock at real time, max_lead 0 -------------------------------

my $copy = SnowflakeTest::init_node('copy', faketime => 1, @checksums);
pg_upgrade($copy);
SnowflakeTest::start_node($copy);
ok( $copy->wait_for_log(
		qr/DETAIL:  This data directory was made by pg_upgrade, which brought the snowflake extension in database "(legacy", "shop|shop", "legacy)"/
	),
	'copy: the server log warns, naming pg_upgrade and both databases');
refusal_ok($copy, 'shop', 0);
refusal_ok($copy, 'legacy', 1);

restore_bound($copy, 'shop');
my $r = SnowflakeTest::try_sql($copy, 'SELECT snowflake_nextval()', dbname => 'shop');
is($r->{sqlstate}, '55000', 'copy, max_lead 0: the clock 20 hours behind the bound is an error (55000)')
  or diag $r->{stderr};
like($r->{message} // '', qr/^system clock moved backwards by \d+ ms$/,
	'copy, max_lead 0: the clock error, not an ID under the old cluster\'s');

SnowflakeTest::set_config($copy, 'snowflake.max_lead' => '1d');
my $first = $copy->safe_psql('shop', 'SELECT snowflake_nextval()');
ok($copy->safe_psql('shop', "SELECT $first > $highest") eq 't',
	'copy, max_lead 1d: its first ID is above every ID the old cluster issued');
$r = SnowflakeTest::try_sql($copy, 'SELECT snowflake_nextval() > ' . $highest, dbname => 'legacy');
is($r->{stdout}, 't', 'copy: the bound is the node\'s: "legacy" issues above them too, at 1.3')
  or diag $r->{stderr};
new_rows_above_ok($copy, 'shop', 'orders', 25000);
new_rows_above_ok($copy, 'legacy', 'events', 10000);
SnowflakeTest::restart_node($copy);
is($copy->safe_psql('shop', "SELECT snowflake_nextval() > $highest"),
	't', 'copy: after a restart it still issues above them');
$copy->stop;

## 2. Link mode, the extension at 1.3: the clock an hour behind, max_lead 1d ---------

my $link = SnowflakeTest::init_node(
	'link',
	faketime => 1,
	conf => ["snowflake.max_lead = '1d'"],
	@checksums);
pg_upgrade($link, '--link');
SnowflakeTest::set_clock_offset($link, -3600);
SnowflakeTest::start_node($link);
ok($link->wait_for_log(qr/WARNING:  snowflake: the bound above this data directory's earlier IDs is unknown/),
	'link: the server log warns');
refusal_ok($link, 'legacy', 1);

# The HINT's first step is needed: 1.3 has no snowflake_restore_bound.
$r = SnowflakeTest::try_sql($link,
	"SELECT snowflake_restore_bound('" . $old->data_dir . "')", dbname => 'legacy');
is($r->{sqlstate}, '42883', 'link, legacy at 1.3: snowflake_restore_bound does not exist yet (42883)');
$link->safe_psql('legacy', 'ALTER EXTENSION snowflake UPDATE');
restore_bound($link, 'legacy');
$first = $link->safe_psql('legacy', 'SELECT snowflake_nextval()');
ok($link->safe_psql('legacy', "SELECT $first > $highest") eq 't',
	'link, max_lead 1d, the clock an hour behind: its first ID is above every ID the old cluster issued');
new_rows_above_ok($link, 'legacy', 'events', 10000);
new_rows_above_ok($link, 'shop', 'orders', 25000);
SnowflakeTest::restart_node($link);
is($link->safe_psql('shop', "SELECT snowflake_nextval() > $highest"),
	't', 'link: after a restart it still issues above them');
$link->stop;

done_testing();
