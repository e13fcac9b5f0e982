# A standby that cannot write pg_snowflake/state when it replays a bound
# record (a full disk, a directory made read-only): replay waits at that
# record, retrying, rather than the startup process failing (which took the
# server down, and failed again on the same record at every start). The
# standby keeps answering queries and says in its log why replay waits;
# restarted, it waits at the same record again; once the directory is
# writable, replay goes on by itself, and after its promotion the standby
# issues IDs above every ID its primary issued.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# max_lead lets the primary issue at once above the bound set 5 s ahead below.
my $primary = SnowflakeTest::init_node(
	'primary',
	allows_streaming => 1,
	conf => ["snowflake.max_lead = '10s'"]);
SnowflakeTest::start_node($primary);
$primary->safe_psql('postgres',
	'CREATE EXTENSION snowflake; SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
my $standby = SnowflakeTest::init_standby($primary, 'standby');
SnowflakeTest::start_node($standby);
$primary->wait_for_catchup($standby);

my $directory = $standby->data_dir . '/pg_snowflake';
chmod 0500, $directory or die "chmod $directory: $!";

# A bound record above the standby's state file: 5 s ahead of the clock,
# past any bound the IDs above raised (at most 1 s ahead).
my $offset = -s $standby->logfile;
$primary->safe_psql('postgres', "SELECT snowflake_set_bound(now() + interval '5 seconds')");
my $target = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
ok( $standby->wait_for_log(
		qr/WARNING:  snowflake: WAL replay waits at [0-9A-F]+\/[0-9A-F]+ until pg_snowflake\/state can be written/,
		$offset),
	'the standby says in its log that replay waits, and why');
like(slurp_file($standby->logfile, $offset), qr/could not create file "pg_snowflake\/state.tmp": Permission denied/,
	'the log gives the file system\'s error');
is($standby->safe_psql('postgres', 'SELECT 1'), '1', 'the standby still answers queries');
is( $standby->safe_psql('postgres',
		"SELECT pg_last_wal_replay_lsn() < '$target'::pg_lsn"),
	't',
	'its replay has not gone past the bound record');

# Restarted while it waits, the standby waits at the same record again; until
# then it accepts no connections (it must replay up to where it stopped to be
# consistent). Once the directory is writable, replay goes on by itself.
$standby->stop('fast');
$offset = -s $standby->logfile;
# Started as the framework starts it (its name is its replication
# application_name, which PGAPPNAME would replace), but without waiting for
# it to accept connections.
{
	local %ENV = %ENV;
	delete $ENV{PGAPPNAME};
	PostgreSQL::Test::Utils::system_or_bail('pg_ctl', '-D', $standby->data_dir,
		'-l', $standby->logfile, '-o', '--cluster-name=' . $standby->name, '-W', 'start');
}
ok( $standby->wait_for_log(
		qr/WARNING:  snowflake: WAL replay waits at [0-9A-F]+\/[0-9A-F]+ until pg_snowflake\/state can be written/,
		$offset),
	'restarted, it waits at the same record');

chmod 0700, $directory or die "chmod $directory: $!";
ok($standby->poll_query_until('postgres', 'SELECT pg_last_wal_replay_lsn() >= ' . "'$target'::pg_lsn"),
	'with the directory writable again, replay goes on by itself');
$standby->_update_pid(1);
ok($standby->log_contains(qr/snowflake: wrote pg_snowflake\/state; WAL replay goes on/, $offset),
	'and the log says so');
$primary->wait_for_catchup($standby);

my $highest = $primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
$primary->wait_for_catchup($standby);
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');
my $r = SnowflakeTest::try_sql($standby, "SELECT snowflake_nextval() > $highest");
is($r->{stdout}, 't', 'promoted, it issues IDs above every ID of its primary')
  or diag $r->{stderr};

$standby->stop;
done_testing();
