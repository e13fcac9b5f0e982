# A state file that is damaged, unreadable or missing (issue 44): the server
# starts (1.7 stopped with a FATAL, without DETAIL or HINT for chmod 000),
# says why, and every HINT it gives, followed to the letter, ends with no ID
# issued twice.
#
# The node issues IDs an hour ahead of the real clock (snowflake.max_lead =
# '1d'), and each start below puts its clock back at real time, so that a
# node that lost its bound would issue them again.
#
# The setting that counts replication origin states is max_replication_slots
# up to 17, max_active_replication_origins from 18 ($ORIGINS below).
#
# 1. With the replication origin "snowflake_bound" (the setting's
#    default): pg_snowflake/state truncated to 0 bytes, made
#    unreadable (chmod 000), deleted. Each time the server starts, warns with
#    the real reason (for a file it could not read: that reason, what
#    happens next, not to put back a copy), takes the bound from the origin
#    (a WARNING saying so) and issues above every earlier ID; the state file
#    is written anew (readable).
# 2. Without it (the setting at 0: a WARNING says what that costs):
#    the same three faults leave the bound unknown, with the server up; the
#    refusal's DETAIL says the real reason (never that pg_upgrade made the
#    directory), its HINT only safe answers; snowflake_restore_bound() of
#    this server's own data directory is refused; the HINT's
#    snowflake_set_bound() with the time of the last ID issued makes it issue
#    above every earlier ID.
# 3. A standby with the setting at 0 has no state for the origin's advances
#    it replays: PostgreSQL stops its replay with an error whose HINT (raise
#    the setting) works; raised, it replays on and is
#    promoted above every ID of the primary.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $LEAD = 3600;

sub state_file { return $_[0]->data_dir . '/pg_snowflake/state'; }

my %faults = (
	'truncated' => {
		do => sub { truncate $_[0], 0 or die "truncate: $!"; },
		why => qr/was damaged \(0 bytes, where a state file has 48, 56 or 64\)/,
	},
	'unreadable (chmod 000)' => {
		do => sub { chmod 0000, $_[0] or die "chmod: $!"; },
		why => qr/could not be opened \(Permission denied\)/,
	},
	'deleted' => {
		do => sub { unlink $_[0] or die "unlink: $!"; },
		why => qr/was missing/,
	},);
my @faults = ('truncated', 'unreadable (chmod 000)', 'deleted');

# 1,000 IDs of round $round issued an hour ahead of the real clock, the node
# stopped and the state file damaged by `$fault`, the node started at real
# time; returns the highest ID issued before and the server log of the start.
sub issue_then_fault
{
	my ($node, $round, $fault) = @_;
	SnowflakeTest::set_clock_offset($node, $LEAD);
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres',
		"INSERT INTO ids (round) SELECT $round FROM generate_series(1, 1000)");
	my $highest = $node->safe_psql('postgres', 'SELECT max(id) FROM ids');
	$node->stop('fast');
	$faults{$fault}{do}->(state_file($node));
	SnowflakeTest::set_clock_offset($node, 0);
	my $offset = -s $node->logfile;
	SnowflakeTest::start_node($node);
	return ($highest, $offset);
}

sub no_duplicates
{
	my ($node, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($rows, $distinct) = split /\|/,
	  $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids');
	is($distinct, $rows, "$label: no ID issued twice ($rows rows)");
	return;
}

## 1. With the replication origin ------------------------------------------------

my $node = SnowflakeTest::init_node('origin', faketime => 1, conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::set_clock_offset($node, $LEAD);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE ids (round int NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval());
});
$node->poll_query_until('postgres',
	"SELECT remote_lsn <> '0/0' FROM pg_replication_origin_status s JOIN pg_replication_origin o ON o.roident = s.local_id WHERE o.roname = 'snowflake_bound'"
) or die 'the replication origin snowflake_bound was never set up';
$node->stop('fast');

my $round = 0;
for my $fault (@faults)
{
	my ($highest, $offset) = issue_then_fault($node, ++$round, $fault);
	my $log = slurp_file($node->logfile, $offset);
	unlike($log, qr/FATAL/, "origin, $fault: the server starts, no FATAL");
	if ($fault ne 'deleted')
	{
		like(
			$log,
			qr/WARNING:  snowflake: pg_snowflake\/state $faults{$fault}{why}\n.*DETAIL:  It holds the bound above every ID this data directory has issued\. Until the bound is known again snowflake_nextval\(\) waits: once recovery ends the node takes it from its replication origin "snowflake_bound" if that has a state, else it checks its databases for the extension\.\n.*HINT:  Do not put back a copy of the file from a backup or a standby/,
			"origin, $fault: the start warns with the reason, its DETAIL and its HINT");
	}
	my $r = SnowflakeTest::try_sql($node,
		"INSERT INTO ids (round) SELECT $round + 100 FROM generate_series(1, 1000) RETURNING 0 \\g /dev/null\nSELECT min(id) FROM ids WHERE round = $round + 100"
	);
	is($r->{sqlstate}, undef, "origin, $fault: it issues IDs") or diag $r->{stderr};
	cmp_ok($r->{stdout}, '>', $highest, "origin, $fault: above every ID issued before");
	like(
		slurp_file($node->logfile, $offset),
		qr/WARNING:  snowflake: took the bound above this data directory's IDs from the replication origin "snowflake_bound"\n.*DETAIL:  pg_snowflake\/state $faults{$fault}{why} when the server started; the origin, which WAL and checkpoints keep with the data, holds the durable bound .*\n.*HINT:  Nothing to do\./,
		"origin, $fault: the server log says where the bound came from and why");
	ok(-r state_file($node) && -s state_file($node) == 64,
		"origin, $fault: the state file is written anew (version 3, 64 bytes)");
	no_duplicates($node, "origin, $fault");
	$node->stop('fast');
}

## 2. Without it ---------------------------------------------------------------

my $bare = SnowflakeTest::init_node('bare', faketime => 1, conf => ["snowflake.max_lead = '1d'"]);
# The setting that counts replication origin states.
my $ORIGINS = $bare->pg_version >= 18 ? 'max_active_replication_origins' : 'max_replication_slots';
$bare->append_conf('postgresql.conf',
	"$ORIGINS = 0\n" . ($ORIGINS eq 'max_replication_slots' ? "max_wal_senders = 0\n" : ''));
SnowflakeTest::set_clock_offset($bare, $LEAD);
SnowflakeTest::start_node($bare);
$bare->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE ids (round int NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval());
});
ok( $bare->wait_for_log(
		qr/WARNING:  snowflake: $ORIGINS = 0 leaves no replication origin state for the bound\n.*DETAIL:  .*a copy of pg_snowflake\/state from a backup or a standby, put back, is trusted as the current one.*\n.*HINT:  Set $ORIGINS to 1 or more/
	),
	"$ORIGINS = 0: a WARNING says what the node goes without");
$bare->stop('fast');

for my $fault (@faults)
{
	my ($highest, $offset) = issue_then_fault($bare, ++$round, $fault);
	unlike(slurp_file($bare->logfile, $offset), qr/FATAL/, "no origin, $fault: the server starts, no FATAL");
	# The check of the databases concludes.
	$bare->wait_for_log(qr/at start, yet the extension is in database "postgres"/, $offset);
	my $r = SnowflakeTest::try_sql($bare, 'SELECT snowflake_nextval()');
	is($r->{sqlstate}, '55000', "no origin, $fault: snowflake_nextval() refuses (55000)")
	  or diag $r->{stderr};
	like($r->{message}, qr/the bound above this node's earlier snowflake IDs is unknown/,
		"no origin, $fault: the error says the bound is unknown");
	like($r->{detail} // '', qr/pg_snowflake\/state $faults{$fault}{why} at start and no replication origin gave the bound/,
		"no origin, $fault: the DETAIL says the real reason");
	unlike($r->{detail} // '', qr/pg_upgrade/, "no origin, $fault: and does not claim pg_upgrade");
	like(
		$r->{hint} // '',
		qr/^As a superuser, if this data directory was copied or upgraded from another, SELECT snowflake_restore_bound\('\/path\/to\/that\/data\/directory'\); else give a time later than the last ID it may have issued, SELECT snowflake_set_bound\('\.\.\.'\), or, if it never issued IDs, SELECT snowflake_set_bound\(now\(\)\)\.$/,
		"no origin, $fault: the HINT gives only safe answers");
	like(
		slurp_file($bare->logfile, $offset),
		qr/WARNING:  snowflake: pg_snowflake\/state $faults{$fault}{why} at start, yet the extension is in database "postgres"\n.*DETAIL:  .*\n.*HINT:  As a superuser, if this data directory was copied or upgraded from another/,
		"no origin, $fault: the server log says so too, with its DETAIL and HINT");

	# An operator who names this data directory anyway.
	$r = SnowflakeTest::try_sql($bare,
		"SELECT snowflake_restore_bound('" . $bare->data_dir . "')");
	is($r->{sqlstate}, '22023', "no origin, $fault: snowflake_restore_bound() of its own data directory is refused");
	like($r->{message}, qr/is this server's own data directory/, "no origin, $fault: saying why");
	like($r->{hint} // '', qr/snowflake_set_bound\('\.\.\.'\)/, "no origin, $fault: and what to give instead");

	# The HINT followed: a time later than the last ID it may have issued
	# (read from its table, as an operator would).
	$r = SnowflakeTest::try_sql($bare,
		"SELECT snowflake_set_bound((SELECT (snowflake_decode(max(id))).ts FROM ids), allow_far_future => true)");
	is($r->{sqlstate}, undef, "no origin, $fault: snowflake_set_bound() with the time of the last ID")
	  or diag $r->{stderr};
	$bare->safe_psql('postgres', "INSERT INTO ids (round) SELECT $round + 100 FROM generate_series(1, 1000)");
	cmp_ok($bare->safe_psql('postgres', "SELECT min(id) FROM ids WHERE round = $round + 100"),
		'>', $highest, "no origin, $fault: then it issues above every ID issued before");
	no_duplicates($bare, "no origin, $fault");
	$bare->stop('fast');
}

## 3. A standby without origin states ------------------------------------------

my $primary = SnowflakeTest::init_node('primary', allows_streaming => 1);
SnowflakeTest::start_node($primary);
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake; SELECT snowflake_nextval()');
my $standby = SnowflakeTest::init_standby($primary, 'standby',
	conf => ["$ORIGINS = 0"]);
$standby->start;
SnowflakeTest::wait_for_bound_origin($primary);
# IDs until the bound is written again, after the standby's backup, whatever
# the timing (IDs issued at once may all be under the bound written before
# it, a second ahead, and then nothing advances the origin).
my $origin_status = q{(SELECT s.remote_lsn FROM pg_catalog.pg_replication_origin_status s
	JOIN pg_catalog.pg_replication_origin o ON o.roident = s.local_id
	WHERE o.roname = 'snowflake_bound')};
my $origin_before = $primary->safe_psql('postgres', "SELECT $origin_status");
$primary->poll_query_until('postgres',
	"SELECT snowflake_nextval() > 0 AND $origin_status > '$origin_before'::pg_lsn")
  or die 'the primary never wrote its bound again';
$primary->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
ok( $standby->wait_for_log(
		qr/FATAL:  could not find free replication state slot for replication origin with ID \d+\n.*HINT:  Increase "?$ORIGINS"? and try again\./
	),
	"standby with $ORIGINS = 0: its replay stops at the origin\'s advance, with a HINT");
# The startup process's FATAL took the standby down.
$standby->wait_for_log(qr/shutting down due to startup process failure/);
$standby->stop('immediate', fail_ok => 1);
$standby->append_conf('postgresql.conf', "$ORIGINS = 10");
$standby->start;
$primary->wait_for_catchup($standby);
my $last = $primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
$primary->wait_for_catchup($standby);
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'not promoted';
cmp_ok($standby->safe_psql('postgres', 'SELECT snowflake_nextval()'),
	'>', $last, 'standby, the HINT followed: replays on, and promoted issues above the primary\'s IDs');

done_testing();
