# Every way of creating the extension tells the node that its data directory
# issued no ID before (bound_origin.cpp, "Creations"), and nothing else does:
#
# 1. The newcomer (issue 31): CREATE EXTENSION on a server that does not
#    preload the library yet, in one database plainly, in another from a DO
#    block, a third database copied from the second as its template; then
#    the preload and a restart: snowflake_nextval() issues in each, and the
#    server log holds no WARNING. The vouches are gone once the state file
#    exists.
# 2. CREATE EXTENSION snowflake_requirer CASCADE (an extension that requires
#    snowflake) with the preload writes the state file, so a restart before
#    the first ID issues without refusing.
# 3. What must still refuse: a node that issued IDs, copied without
#    pg_snowflake/ and started without the preload, in which the extension is
#    then updated (ALTER EXTENSION UPDATE, as after pg_upgrade) in its
#    database and created in another: preloaded again, it refuses, naming the
#    first database only.
use strict;
use warnings FATAL => 'all';

use File::Path qw(rmtree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

sub state_file { return $_[0]->data_dir . '/pg_snowflake/state'; }
sub vouches { my @files = glob($_[0]->data_dir . '/pg_snowflake/created.*'); return scalar @files; }

# The node's configuration, with the library preloaded or not.
sub preload
{
	my ($node, $on) = @_;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = '" . ($on ? 'snowflake' : '') . "'");
	return;
}

sub issues_ok
{
	my ($node, $dbname, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval() > 0', dbname => $dbname);
	is($r->{stdout}, 't', "$label: snowflake_nextval() issues") or diag $r->{stderr};
	unlike($r->{stderr}, qr/WARNING|ERROR/, "$label: with no warning");
	return;
}

## 1. The newcomer ---------------------------------------------------------------

my $newcomer = SnowflakeTest::init_node('newcomer');
preload($newcomer, 0);
$newcomer->start;
$newcomer->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$newcomer->safe_psql('postgres', 'CREATE DATABASE app');
$newcomer->safe_psql('app', 'DO $$ BEGIN CREATE EXTENSION snowflake; END $$');
$newcomer->safe_psql('postgres', 'CREATE DATABASE app_copy TEMPLATE app');
my $r = SnowflakeTest::try_sql($newcomer, 'SELECT snowflake_nextval()');
like($r->{stderr}, qr/shared_preload_libraries/,
	'newcomer: without the preload, snowflake_nextval() asks for it');
ok(!-e state_file($newcomer), 'newcomer: no state file without the preload');
is(vouches($newcomer), 2, 'newcomer: a vouch for each creation');
$newcomer->stop;

preload($newcomer, 1);
my $log_offset = -s $newcomer->logfile;
$newcomer->start;
issues_ok($newcomer, 'postgres', 'newcomer, preloaded');
ok($newcomer->log_contains(qr/no database has the extension: this data directory has issued no IDs/,
		$log_offset),
	'newcomer: the check counts the vouched databases as not having issued');
issues_ok($newcomer, 'app', 'newcomer, the database of the DO block');
issues_ok($newcomer, 'app_copy', 'newcomer, the database copied from it');
my $log = slurp_file($newcomer->logfile, $log_offset);
unlike($log, qr/WARNING|ERROR/, 'newcomer: the server log holds no warning and no error')
  or diag $log;
ok(-f state_file($newcomer), 'newcomer: the first ID wrote the state file');
is(vouches($newcomer), 0, 'newcomer: and the vouches are gone');
SnowflakeTest::restart_node($newcomer);
issues_ok($newcomer, 'postgres', 'newcomer, restarted');
$newcomer->stop;

## 2. CASCADE ----------------------------------------------------------------------

my $cascade = SnowflakeTest::init_node('cascade');
SnowflakeTest::start_node($cascade);
$cascade->wait_for_log(qr/this data directory has issued no IDs/);
$cascade->safe_psql('postgres', 'CREATE EXTENSION snowflake_requirer CASCADE');
ok(-f state_file($cascade), 'CASCADE: the creation of snowflake wrote the state file');
SnowflakeTest::restart_node($cascade);
issues_ok($cascade, 'postgres', 'CASCADE, restarted before the first ID');
is($cascade->safe_psql('postgres', 'SELECT snowflake_requirer_id() > 0'),
	't', 'CASCADE: the requiring extension issues too');
$cascade->stop;

## 3. What must still refuse ------------------------------------------------------

my $original = SnowflakeTest::init_node('original');
SnowflakeTest::start_node($original);
$original->safe_psql('postgres', q{
	CREATE EXTENSION snowflake VERSION '1.4';
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 100) g;
});
$original->stop;

my $copy = SnowflakeTest::init_node('copy');
rmtree($copy->data_dir);
PostgreSQL::Test::RecursiveCopy::copypath($original->data_dir, $copy->data_dir);
rmtree($copy->data_dir . '/pg_snowflake');
# Nor the replication origin that keeps the bound's second copy (it would
# give the bound: test/t/061).
SnowflakeTest::forget_bound_origin($copy);
chmod 0700, $copy->data_dir or die "chmod: $!";
$copy->append_conf('postgresql.conf',
	"port = " . $copy->port . "\nunix_socket_directories = '" . $copy->host . "'");
preload($copy, 0);
$copy->start;
$copy->safe_psql('postgres', 'ALTER EXTENSION snowflake UPDATE');
is( $copy->safe_psql(
		'postgres', "SELECT extversion = default_version FROM pg_extension, pg_available_extensions
		              WHERE extname = 'snowflake' AND name = 'snowflake'"),
	't', 'copy: the extension is updated to the default version');
is(vouches($copy), 0, 'copy: an update is no creation: no vouch');
$copy->safe_psql('postgres', 'CREATE DATABASE other');
$copy->safe_psql('other', 'CREATE EXTENSION snowflake');
is(vouches($copy), 1, 'copy: the creation in another database is vouched for');
$copy->stop;

preload($copy, 1);
$log_offset = -s $copy->logfile;
$copy->start;
ok( $copy->wait_for_log(
		qr/WARNING:  snowflake: pg_snowflake\/state was missing at start, yet the extension is in database "postgres"\n/,
		$log_offset),
	'copy: the server log names the database that issued, and only that one');
$r = SnowflakeTest::try_sql($copy, 'SELECT snowflake_nextval()', dbname => 'other');
is($r->{sqlstate}, '55000', 'copy: snowflake_nextval() refuses (55000), in the vouched database too');
like($r->{message}, qr/the bound above this node's earlier snowflake IDs is unknown/,
	'copy: because the bound is unknown');
$copy->stop;

done_testing();
