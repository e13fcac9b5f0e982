# A data directory whose bound is unknown stays unknown, on disk, until an
# operator gives the bound (bound_origin.cpp, "Unknown stays unknown"): no
# creation, drop or re-creation of the extension vouches for data it did not
# see, and a state file vouches only for what its own data directory issued.
#
# The old node runs an hour ahead and issues 3,000 IDs; every other node here
# is made from its data and runs at real time, so that any ID it issued from
# its clock alone would fall an hour below the old IDs, among them (about a
# third of them repeated, in the runs that found these holes). Each sequence
# is an ordinary operator's:
#
# 1. Reinstall: a copy without pg_snowflake/ refuses ("the bound ... is
#    unknown"); DROP EXTENSION snowflake CASCADE, CREATE EXTENSION snowflake,
#    the column's default back, a restart: it still refuses, and no row is
#    lost. The same with a restart between the drop and the creation. Then
#    snowflake_restore_bound(): 3,000 new rows above every old ID.
# 2. While the check is held up (a prepared transaction locks a database it
#    reaches first), a role with nothing but CONNECT runs CREATE EXTENSION IF
#    NOT EXISTS snowflake (skipped: it exists): no vouch is written, and after
#    a restart the node still refuses; meanwhile no ID is issued. A
#    superuser's drop and re-creation in that window marks the bound unknown
#    at once.
# 3. pg_upgrade into a cluster that was tried out first (the extension
#    created, an ID issued, the extension dropped): it refuses, naming
#    pg_upgrade, and the replication origin the try-out set up is cleared;
#    the same when the tried-out cluster did not preload the library during
#    pg_upgrade. With the old state file placed as pg_snowflake/given before
#    pg_upgrade (as Debian's pg_upgradecluster hook does), it issues above
#    the old IDs at once, its replication origin set up above them. A data
#    directory whose own bound is unknown gives no bound to another
#    (snowflake_restore_bound).
use strict;
use warnings FATAL => 'all';

use File::Copy qw(copy);
use File::Path qw(rmtree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

sub vouches { my @files = glob($_[0]->data_dir . '/pg_snowflake/created.*'); return scalar @files; }

my $old = SnowflakeTest::init_node('old', faketime => 1, conf => ['max_prepared_transactions = 2']);
SnowflakeTest::set_clock_offset($old, 3600);
SnowflakeTest::start_node($old);
# "blocked" comes before "shop" in OID order, so a check held up there never
# reaches "shop" (2. below).
$old->safe_psql('postgres', 'CREATE DATABASE blocked');
$old->safe_psql('postgres', 'CREATE DATABASE shop');
$old->safe_psql(
	'shop', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 3000) g;
	CREATE ROLE app LOGIN;
	GRANT INSERT, SELECT ON orders TO app;
});
my $highest = $old->safe_psql('shop', 'SELECT max(id) FROM orders');
$old->stop;

# A node made from the old data directory without pg_snowflake/, as a copy or
# restore that skipped it, its clock at real time (an hour behind the old IDs).
sub copy_without_state
{
	my ($name) = @_;
	my $copy = SnowflakeTest::init_node($name, faketime => 1,
		conf => ['max_prepared_transactions = 2']);
	rmtree($copy->data_dir);
	PostgreSQL::Test::RecursiveCopy::copypath($old->data_dir, $copy->data_dir);
	rmtree($copy->data_dir . '/pg_snowflake');
	# Nor the replication origin that keeps the bound's second copy (it would
	# give the bound: test/t/061).
	SnowflakeTest::forget_bound_origin($copy);
	chmod 0700, $copy->data_dir or die "chmod: $!";
	$copy->append_conf('postgresql.conf',
		"port = " . $copy->port . "\nunix_socket_directories = '" . $copy->host . "'");
	return $copy;
}

# The node refuses to issue, with the bound unknown, and its old rows are all
# there; `$why` matches the DETAIL.
sub refuses_ok
{
	my ($node, $label, $why) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = SnowflakeTest::try_sql($node,
		'INSERT INTO orders (item) SELECT g FROM generate_series(1, 3000) g', dbname => 'shop');
	is($r->{sqlstate}, '55000', "$label: an insert is refused (55000)") or diag $r->{stderr};
	like($r->{message} // '', qr/the bound above this node's earlier snowflake IDs is unknown/,
		"$label: because the bound is unknown");
	like($r->{detail} // '', $why, "$label: the detail says why") if $why;
	like($r->{hint} // '', qr/snowflake_restore_bound\('\/path\/to\/(old\/data|that\/data\/directory)'\)/,
		"$label: the hint says how to give it");
	is($node->safe_psql('shop', "SELECT count(*) FROM orders WHERE id <= $highest"),
		'3000', "$label: no row is lost");
	return;
}

# Once the old bound is given: 3,000 new rows, all above every old ID.
sub issues_above_ok
{
	my ($node, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	SnowflakeTest::set_config($node, 'snowflake.max_lead' => '2h');
	$node->safe_psql('shop', 'INSERT INTO orders (item) SELECT g FROM generate_series(1, 3000) g');
	is( $node->safe_psql(
			'shop',
			"SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE id <= $highest) FROM orders"),
		'6000|6000|3000',
		"$label: 3,000 new rows, every ID distinct and above the old ones");
	return;
}

# Waits until the node has concluded that its bound is unknown.
sub wait_refusal
{
	my ($node) = @_;
	my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()', dbname => 'shop');
	like($r->{message} // '', qr/is unknown/, $node->name . ': the check concludes: unknown');
	return;
}

## 1. Reinstall where the bound is unknown ----------------------------------------

my $reinstall = copy_without_state('reinstall');
SnowflakeTest::start_node($reinstall);
ok($reinstall->wait_for_log(qr/yet the extension is in database "shop"/),
	'reinstall: the check finds the extension');
refuses_ok($reinstall, 'reinstall, before', qr/pg_snowflake\/state was missing/);
$reinstall->safe_psql(
	'shop', q{
	DROP EXTENSION snowflake CASCADE;
	CREATE EXTENSION snowflake;
	ALTER TABLE orders ALTER COLUMN id SET DEFAULT snowflake_nextval();
});
refuses_ok($reinstall, 'reinstall, re-created');
SnowflakeTest::restart_node($reinstall);
refuses_ok($reinstall, 'reinstall, re-created and restarted', qr/pg_snowflake\/state was missing/);
$reinstall->safe_psql('shop',
	"SELECT snowflake_restore_bound('" . $old->data_dir . "')");
ok(!-e $reinstall->data_dir . '/pg_snowflake/unknown', 'reinstall: the bound given, no mark is left');
issues_above_ok($reinstall, 'reinstall, the bound given');
SnowflakeTest::restart_node($reinstall);
is($reinstall->safe_psql('shop', "SELECT snowflake_nextval() > $highest"),
	't', 'reinstall: after a restart it still issues above the old IDs');
$reinstall->stop;

my $dropped = copy_without_state('dropped');
SnowflakeTest::start_node($dropped);
wait_refusal($dropped);
$dropped->safe_psql('shop', 'DROP EXTENSION snowflake CASCADE');
SnowflakeTest::restart_node($dropped);
$dropped->safe_psql(
	'shop', q{
	CREATE EXTENSION snowflake;
	ALTER TABLE orders ALTER COLUMN id SET DEFAULT snowflake_nextval();
});
refuses_ok($dropped, 'dropped, restarted, created', qr/pg_snowflake\/state was missing/);
SnowflakeTest::restart_node($dropped);
refuses_ok($dropped, 'dropped, restarted, created, restarted');
$dropped->stop;

## 2. While the check is held up -----------------------------------------------------

my $held = copy_without_state('held');
SnowflakeTest::start_node($held);
wait_refusal($held);
# A prepared transaction keeps its lock on "blocked" across the restart; a
# start without pg_snowflake/ then checks again, and waits at "blocked".
$held->safe_psql('postgres',
	"BEGIN; ALTER DATABASE blocked RENAME TO blocked_renamed; PREPARE TRANSACTION 'hold'");
$held->stop;
rmtree($held->data_dir . '/pg_snowflake');
SnowflakeTest::forget_bound_origin($held);
SnowflakeTest::start_node($held);
my $r = SnowflakeTest::try_sql($held, 'SELECT snowflake_nextval()', dbname => 'shop');
like($r->{message} // '', qr/is still checking whether this data directory has issued IDs/,
	'held: while the check is held up, no ID is issued');
$r = SnowflakeTest::try_sql($held, "SET ROLE app; CREATE EXTENSION IF NOT EXISTS snowflake",
	dbname => 'shop');
like($r->{stderr}, qr/extension "snowflake" already exists, skipping/,
	'held: CREATE EXTENSION IF NOT EXISTS by a role without CREATE is skipped');
is(vouches($held), 0, 'held: and vouches for nothing');
$held->safe_psql('postgres', "ROLLBACK PREPARED 'hold'");
SnowflakeTest::restart_node($held);
refuses_ok($held, 'held, restarted', qr/pg_snowflake\/state was missing/);

# Again held up, a superuser's drop and re-creation.
$held->safe_psql('postgres',
	"BEGIN; ALTER DATABASE blocked RENAME TO blocked_renamed; PREPARE TRANSACTION 'hold'");
$held->stop;
rmtree($held->data_dir . '/pg_snowflake');
SnowflakeTest::forget_bound_origin($held);
SnowflakeTest::start_node($held);
$held->safe_psql(
	'shop', q{
	DROP EXTENSION snowflake CASCADE;
	CREATE EXTENSION snowflake;
	ALTER TABLE orders ALTER COLUMN id SET DEFAULT snowflake_nextval();
});
$r = SnowflakeTest::try_sql($held, 'SELECT snowflake_nextval()', dbname => 'shop');
like($r->{detail} // '', qr/dropped in database "shop" while the bound was not known/,
	'held: a drop while the check runs marks the bound unknown at once');
$held->safe_psql('postgres', "ROLLBACK PREPARED 'hold'");
SnowflakeTest::restart_node($held);
refuses_ok($held, 'held, dropped and re-created, restarted', qr/dropped in database "shop"/);
$held->stop;

## 3. pg_upgrade into a cluster tried out first -------------------------------------

# A new cluster, tried out: the extension created, an ID issued, the
# extension dropped. `preload_during_upgrade` 0: its configuration does not
# preload the library while pg_upgrade runs (added back after).
sub upgraded
{
	my ($name, %options) = @_;
	my $new = SnowflakeTest::init_node($name, faketime => 1);
	SnowflakeTest::start_node($new);
	$new->safe_psql('postgres',
		'CREATE EXTENSION snowflake; SELECT snowflake_nextval(); DROP EXTENSION snowflake');
	# The try-out sets up the replication origin of its own bound.
	SnowflakeTest::wait_for_bound_origin($new);
	$new->stop;
	ok(-f $new->data_dir . '/pg_snowflake/state', "$name: the try-out wrote a state file");
	$new->append_conf('postgresql.conf', "shared_preload_libraries = ''")
	  if defined $options{preload_during_upgrade} && !$options{preload_during_upgrade};
	copy($old->data_dir . '/pg_snowflake/state', $new->data_dir . '/pg_snowflake/given')
	  or die "copy: $!"
	  if $options{given};
	my ($ok, $stdout, $stderr) = SnowflakeTest::run_pg_upgrade($old, $new);
	ok($ok, "$name: pg_upgrade succeeds") or diag "$stdout\n$stderr";
	$new->append_conf('postgresql.conf', "shared_preload_libraries = 'snowflake'");
	SnowflakeTest::start_node($new);
	return $new;
}

# The replication origin of the bound (src/pg/bound/bound_register.cpp) as
# an ID bound; 0 if it has no state.
sub origin_bound
{
	my ($node) = @_;
	return $node->safe_psql('postgres', q{
		SELECT coalesce((SELECT s.remote_lsn - '0/0' FROM pg_replication_origin_status s
			JOIN pg_replication_origin o ON o.roident = s.local_id
			WHERE o.roname = 'snowflake_bound'), 0)});
}

my $tried = upgraded('tried');
refuses_ok($tried, 'tried', qr/made by pg_upgrade/);
is(origin_bound($tried), 0,
	'tried: pg_upgrade\'s server cleared the replication origin the try-out set up');
$tried->safe_psql('shop', "SELECT snowflake_restore_bound('" . $old->data_dir . "')");
issues_above_ok($tried, 'tried, the bound given');
$tried->stop;

my $unpreloaded = upgraded('unpreloaded', preload_during_upgrade => 0);
refuses_ok($unpreloaded, 'tried, not preloaded during pg_upgrade', qr/made by pg_upgrade/);
is(origin_bound($unpreloaded), 0,
	'tried, not preloaded during pg_upgrade: the library pg_upgrade loaded cleared the origin too');
$unpreloaded->stop;

my $hooked = upgraded('hooked', given => 1);
ok($hooked->log_contains(qr/took the bound in pg_snowflake\/given/),
	'hooked: the given bound is taken at start');
ok(!-e $hooked->data_dir . '/pg_snowflake/given' && !-e $hooked->data_dir . '/pg_snowflake/unknown',
	'hooked: into the state file, and no mark is left');
# pg_upgrade's server cleared the try-out's origin (the extension arrived),
# and the origin is set up again from the given bound, before any ID.
ok($hooked->poll_query_until('postgres', q{
		SELECT s.remote_lsn - '0/0' > } . $highest . q{ FROM pg_replication_origin_status s
		JOIN pg_replication_origin o ON o.roident = s.local_id WHERE o.roname = 'snowflake_bound'}),
	'hooked: the replication origin is set up again above the old IDs, before any ID');
issues_above_ok($hooked, 'hooked');
# The tried-out cluster's state file does not cover the data pg_upgrade
# brought it: no bound to give another node.
$r = SnowflakeTest::try_sql($hooked,
	"SELECT snowflake_restore_bound('" . $unpreloaded->data_dir . "')", dbname => 'shop');
is($r->{sqlstate}, '55000', 'a data directory whose own bound is unknown gives no bound (55000)');
like($r->{message} // '', qr/is unknown too/, 'saying its bound is unknown too');
$hooked->stop;

done_testing();
