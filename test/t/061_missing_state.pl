# A data directory without pg_snowflake/state (durable.cpp, "Where the bound
# comes from"): made by pg_upgrade, or restored or copied by a tool that
# skipped the directory. The node never starts from the clock alone when it
# may have issued IDs:
#
# 1. A new node: the check at start finds the extension nowhere, so the bound
#    is known (nothing issued). CREATE EXTENSION writes the state file, so a
#    restart before the first ID still finds it.
# 2. A node that issued IDs a day ahead of the clock (under max_lead), copied
#    without pg_snowflake/ and started with its clock back at real time. With
#    its replication origin "snowflake_bound" (src/pg/bound/bound_register.cpp:
#    a copy carries it), the copy takes the bound from it, says so, and
#    issues above every ID the original issued. Without it (the copies below
#    leave out its checkpoint, as a data directory of 1.7 has none): the
#    server log warns, naming the database; snowflake_nextval() refuses
#    (55000, with the commands that fix it), also after a restart; CREATE
#    EXTENSION in another database warns and does not vouch.
#    snowflake_restore_bound() with the original data directory makes it
#    issue above every ID the original issued, and that holds across a
#    restart.
# 3. The same copy, told by snowflake_set_bound() instead.
# 4. A standby cloned before CREATE EXTENSION learns the bound from WAL and
#    issues after its promotion without refusing.
# 5. A node whose extension was created before the preload: it issues IDs,
#    since the creation left a vouch (test/t/067 tries every way of creating
#    the extension).
use strict;
use warnings FATAL => 'all';

use File::Path qw(rmtree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

sub state_file { return $_[0]->data_dir . '/pg_snowflake/state'; }

# A node made from `$source`'s data directory (stopped), without its
# pg_snowflake/, as a copy that skipped it would be; with `origin`, with the
# replication origin that keeps the bound's second copy, else without it.
sub copy_without_state
{
	my ($source, $name, %options) = @_;
	my $origin = delete $options{origin};
	my $copy = SnowflakeTest::init_node($name, %options);
	rmtree($copy->data_dir);
	PostgreSQL::Test::RecursiveCopy::copypath($source->data_dir, $copy->data_dir);
	rmtree($copy->data_dir . '/pg_snowflake');
	SnowflakeTest::forget_bound_origin($copy) unless $origin;
	chmod 0700, $copy->data_dir or die "chmod: $!";
	# The copy keeps its own port and socket directory.
	$copy->append_conf('postgresql.conf',
		"port = " . $copy->port . "\nunix_socket_directories = '" . $copy->host . "'");
	return $copy;
}

sub refusal_ok
{
	my ($node, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
	is($r->{sqlstate}, '55000', "$label: snowflake_nextval() refuses (55000)");
	like($r->{message}, qr/the bound above this node's earlier snowflake IDs is unknown/,
		"$label: the error says the bound is unknown");
	like($r->{hint} // '', qr/snowflake_restore_bound\('.*snowflake_set_bound\(now\(\)\)/,
		"$label: the hint gives the commands that fix it");
	return;
}

## 1. A new node ---------------------------------------------------------------

my $new = SnowflakeTest::init_node('new');
SnowflakeTest::start_node($new);
ok($new->wait_for_log(qr/no database has the extension: this data directory has issued no IDs/),
	'new node: the check finds the extension nowhere');
ok(!-e state_file($new), 'new node: no state file yet');
$new->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok(-f state_file($new), 'new node: CREATE EXTENSION writes the state file');
SnowflakeTest::restart_node($new);
my $r = SnowflakeTest::try_sql($new, 'SELECT snowflake_nextval() > 0');
is($r->{stdout}, 't', 'new node: after a restart before the first ID, it issues IDs')
  or diag $r->{stderr};
$new->stop;

## 2. A copy without pg_snowflake/, told by the original's state file --------

# The original runs a day ahead: its clock, and so its IDs.
my $original = SnowflakeTest::init_node(
	'original',
	faketime => 1,
	conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::set_clock_offset($original, 86_400);
SnowflakeTest::start_node($original);
$original->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 1000) g;
});
# IDs returned to clients and stored nowhere count too.
$original->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 500)');
my $highest = $original->safe_psql('postgres', 'SELECT snowflake_nextval()');
SnowflakeTest::wait_for_bound_origin($original);
$original->stop;

my $carried = copy_without_state($original, 'carried', origin => 1,
	conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::start_node($carried);
$r = SnowflakeTest::try_sql($carried, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, undef, 'copy with the replication origin: it issues IDs') or diag $r->{stderr};
cmp_ok($r->{stdout}, '>', $highest, 'copy with the replication origin: above every ID the original issued');
ok( $carried->log_contains(
		qr/WARNING:  snowflake: took the bound above this data directory's IDs from the replication origin "snowflake_bound"\n.*DETAIL:  pg_snowflake\/state was missing when the server started/
	),
	'copy with the replication origin: the server log says where the bound came from');
ok(-f state_file($carried), 'copy with the replication origin: the state file is written');
$carried->stop;

my $copy = copy_without_state($original, 'copy', conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::start_node($copy);
ok( $copy->wait_for_log(
		qr/WARNING:  snowflake: pg_snowflake\/state was missing at start, yet the extension is in database "postgres"/
	),
	'copy: the server log warns, naming what was missing and where the extension is');
refusal_ok($copy, 'copy');

$copy->safe_psql('postgres', 'CREATE DATABASE other');
$r = SnowflakeTest::try_sql($copy, 'CREATE EXTENSION snowflake', dbname => 'other');
like($r->{stderr}, qr/WARNING:  (01000: )?snowflake cannot issue IDs on this server until the bound/,
	'copy: CREATE EXTENSION in another database warns');
ok(!-e state_file($copy), 'copy: and writes no state file');
SnowflakeTest::restart_node($copy);
refusal_ok($copy, 'copy, restarted');

# An unprivileged role cannot give the bound.
$copy->safe_psql('postgres', 'CREATE ROLE app LOGIN');
$r = SnowflakeTest::try_sql($copy,
	"SET ROLE app; SELECT snowflake_restore_bound('" . $original->data_dir . "')");
is($r->{sqlstate}, '42501', 'an ordinary role may not call snowflake_restore_bound');

$r = SnowflakeTest::try_sql($copy,
	"SELECT snowflake_restore_bound('" . $copy->basedir . "/nowhere')");
is($r->{sqlstate}, '58P01', 'a directory without a state file is refused (58P01)');

$r = SnowflakeTest::try_sql($copy,
	"SELECT snowflake_restore_bound('" . $original->data_dir . "') > now() + interval '23 hours'");
is($r->{stdout}, 't', 'copy: restore_bound adopts the original\'s bound, a day ahead')
  or diag $r->{stderr};
my $first = $copy->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($first, '>', $highest, 'copy: its first ID is above every ID the original issued');
is( $copy->safe_psql(
		'postgres',
		"INSERT INTO orders (item) SELECT g FROM generate_series(1, 1000) g; SELECT count(*), count(DISTINCT id) FROM orders"
	),
	'2000|2000',
	'copy: new rows collide with none of the original\'s');
SnowflakeTest::restart_node($copy);
cmp_ok($copy->safe_psql('postgres', 'SELECT snowflake_nextval()'),
	'>', $highest, 'copy: after a restart it still issues above them');
$copy->stop;

## 3. The same, told by a time ---------------------------------------------------

my $told = copy_without_state($original, 'told', conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::start_node($told);
refusal_ok($told, 'second copy');
my $until = $told->safe_psql('postgres', "SELECT snowflake_timestamp($highest)");
$r = SnowflakeTest::try_sql($told, "SELECT snowflake_set_bound('$until')");
is($r->{sqlstate}, undef, 'second copy: snowflake_set_bound takes the time of the last ID')
  or diag $r->{stderr};
cmp_ok($told->safe_psql('postgres', 'SELECT snowflake_nextval()'),
	'>', $highest, 'second copy: its first ID is above every ID the original issued');
$r = SnowflakeTest::try_sql($told, "SELECT snowflake_set_bound('infinity')");
is($r->{sqlstate}, '22008', 'snowflake_set_bound(infinity) is refused (22008)');
$told->stop;

## 4. A standby cloned before CREATE EXTENSION ----------------------------------

my $primary = SnowflakeTest::init_node('primary', allows_streaming => 1);
SnowflakeTest::start_node($primary);
my $standby = SnowflakeTest::init_standby($primary, 'standby');
ok(!-e state_file($standby), 'standby: cloned without a state file');
SnowflakeTest::start_node($standby);
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$primary->wait_for_catchup($standby);
ok(-f state_file($standby), 'standby: replays the bound CREATE EXTENSION wrote');
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');
$r = SnowflakeTest::try_sql($standby, 'SELECT snowflake_nextval() > 0');
is($r->{stdout}, 't', 'standby: promoted, it issues IDs') or diag $r->{stderr};
$standby->stop;

## 5. The extension created before the preload -----------------------------------

my $late = PostgreSQL::Test::Cluster->new('late');
$late->init;
$late->start;
$late->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$late->stop;
$late->append_conf('postgresql.conf',
	"shared_preload_libraries = 'snowflake'\nsnowflake.datacenter_id = 1\nsnowflake.worker_id = 1");
$late->start;
$r = SnowflakeTest::try_sql($late, 'SELECT snowflake_nextval() > 0');
is($r->{stdout}, 't', 'preloaded after CREATE EXTENSION: it issues IDs') or diag $r->{stderr};
unlike($r->{stderr}, qr/WARNING|ERROR/, 'preloaded after CREATE EXTENSION: with no warning');
$late->stop;

done_testing();
