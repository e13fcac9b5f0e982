# Issue 27, item 2: a clock outside the layout's range keeps no server down.
#
# A wrong clock (a VM restored without NTP, a board without a battery) is not
# a wrong configuration. With the default layout (2010-11-04 to 2080-07-10),
# a primary and its standby are started with their clocks (libfaketime) at
# 2005 (before the epoch), then at 2095 (past the layout's end). Each time:
# - both servers start, and the log of each says why IDs cannot be issued: a
#   WARNING naming the clock's reading and the layout's range;
# - snowflake_nextval() refuses with the per-call error (55000 "system clock
#   reads a time before snowflake.epoch"; 2200H "snowflake IDs have run
#   out"), and everything else works: tables, replication to the standby,
#   snowflake_decode of an ID issued before, snowflake_status;
# and once the clock is right again, the node issues, above its earlier IDs,
# with no warning at start.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::Local qw(timegm);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $primary = SnowflakeTest::init_node(
	'primary',
	faketime => 1,
	allows_streaming => 1,
	conf => ["timezone = 'UTC'", "datestyle = 'ISO'"]);
SnowflakeTest::start_node($primary);
$primary->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE t (id bigint PRIMARY KEY, note text);
	INSERT INTO t SELECT snowflake_nextval(), 'issued on a right clock';
});
my $first = $primary->safe_psql('postgres', 'SELECT max(id) FROM t');
my $standby = SnowflakeTest::init_standby($primary, 'standby', faketime => 1);
SnowflakeTest::start_node($standby);
$primary->wait_for_catchup($standby);
$_->stop('fast') for $primary, $standby;

# Starts both nodes with their clocks at `$year`-06-01 and checks what the log
# says, what is refused and what works.
sub check_clock_at
{
	my ($year, $side, $sqlstate, $refusal) = @_;
	my $offset = timegm(0, 0, 12, 1, 5, $year) - time;
	my %log_at;
	for my $node ($primary, $standby)
	{
		$log_at{ $node->name } = -s $node->logfile;
		SnowflakeTest::set_clock_offset($node, $offset);
		SnowflakeTest::start_node($node);
		pass($node->name . " starts with its clock at $year");
		my $log = slurp_file($node->logfile, $log_at{ $node->name });
		like(
			$log,
			qr/WARNING:  the system clock reads $year-06-01 12:00:\d\d(\.\d+)?\+00, $side the range of the snowflake ID layout\n.*DETAIL:  The ID layout \(time:41 datacenter:5 worker:5 sequence:12 unit:1ms epoch:1288834974657\) issues IDs of times from 2010-11-04 01:42:54\.657\+00 to 2080-07-10 17:30:30\.208\+00\. snowflake_nextval\(\) refuses to issue IDs until the clock reads a time in that range; everything else works\.\n.*HINT:  Set the system clock right \(NTP\)\./,
			$node->name . ": the log says the clock is $side the layout's range, and what follows"
		) or diag SnowflakeTest::log_tail($node, 15);
	}

	my $r = SnowflakeTest::try_sql($primary, 'SELECT snowflake_nextval()');
	is($r->{sqlstate}, $sqlstate, "$year: snowflake_nextval() refuses with $sqlstate");
	like($r->{message} // '', $refusal, "$year: ... saying why");

	$primary->safe_psql('postgres', "INSERT INTO t VALUES ($year, 'written at $year')");
	$primary->wait_for_catchup($standby);
	is($standby->safe_psql('postgres', "SELECT note FROM t WHERE id = $year"),
		"written at $year", "$year: the primary writes and the standby replays");
	for my $node ($primary, $standby)
	{
		is( $node->safe_psql('postgres',
				"SELECT d.ts = snowflake_timestamp($first) FROM snowflake_decode($first) d"),
			't', $node->name . ": $year: an earlier ID decodes");
		is( $node->safe_psql('postgres',
				'SELECT layout, ids_issued >= 0 FROM snowflake_status'),
			'time:41 datacenter:5 worker:5 sequence:12 unit:1ms epoch:1288834974657|t',
			$node->name . ": $year: snowflake_status answers");
	}
	$_->stop('fast') for $primary, $standby;
	return;
}

check_clock_at(2005, 'before', '55000',
	qr/system clock reads a time before snowflake\.epoch/);
check_clock_at(2095, 'after', '2200H',
	qr/snowflake IDs have run out: the timestamp field is used up/);

# The clock is right again: no warning, and IDs above the earlier ones.
my $log_at = -s $primary->logfile;
SnowflakeTest::set_clock_offset($primary, 0);
SnowflakeTest::start_node($primary);
unlike(slurp_file($primary->logfile, $log_at),
	qr/the system clock reads/, 'a right clock: no warning at start');
my $next = $primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($next, '>', $first, 'a right clock: the node issues again, above its earlier IDs');
$primary->stop('fast');

done_testing();
