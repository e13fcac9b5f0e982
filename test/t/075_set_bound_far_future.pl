# snowflake_set_bound(issued_up_to, allow_far_future) refuses a bound further
# ahead of the clock than snowflake.max_lead plus a minute, unless told so
# (issue 41): a bound goes to WAL, so to every standby, and is never lowered,
# so one mistyped year would stop the node until that year. In a cluster of
# its own, as the accepted far bound stops this node for good:
#
# 1. With max_lead = 10 s, the limit is 70 s: a bound a year ahead is refused
#    (22008) with how far ahead it was, the clock, max_lead and the margin,
#    and the HINT with the argument; so is one 75 s ahead, and so is the same
#    with allow_far_future => false, and in a database whose extension is
#    still at 1.6 (its HINT: update first). Nothing was raised: the node
#    issues.
# 2. A bound in the past and one 65 s ahead are taken without the argument
#    (the old node's last ID, ahead by its max_lead and the clocks' difference).
# 3. The limit follows max_lead: after a reload to 1 day, 20 hours ahead is
#    taken.
# 4. With allow_far_future => true, two days ahead is taken: the function
#    returns the next millisecond, snowflake_status shows it, the node refuses
#    to issue (the clock is behind the bound), and a restart keeps it.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::init_node('far', conf => ["snowflake.max_lead = '10s'"]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');

## 1. Refused beyond max_lead + 1 minute -------------------------------------------

my $r = SnowflakeTest::try_sql($node,
	"SELECT snowflake_set_bound(clock_timestamp() + interval '365 days')");
is($r->{sqlstate}, '22008', 'a bound a year ahead is refused (22008)')
  or diag $r->{stderr};
like($r->{message} // '', qr/^snowflake bound .* is (\d+) ms ahead of the clock$/,
	'the message says how far ahead it is');
my ($lead) = ($r->{message} // '') =~ /is (\d+) ms ahead/;
ok(defined $lead && $lead > 365 * 86_400_000 - 60_000 && $lead <= 365 * 86_400_000,
	'by a year, in ms: ' . ($lead // 'none'));
like($r->{detail} // '', qr/The clock reads .*; a bound may lie at most 70000 ms ahead of it: snowflake\.max_lead \(10000 ms\) plus 60000 ms/,
	'the DETAIL gives the clock, the limit, max_lead and the margin')
  or diag $r->{detail};
like($r->{hint} // '', qr/allow_far_future => true/, 'the HINT gives the argument that accepts it')
  or diag $r->{hint};

$r = SnowflakeTest::try_sql($node,
	"SELECT snowflake_set_bound(clock_timestamp() + interval '75 seconds')");
is($r->{sqlstate}, '22008', 'a bound 75 s ahead is refused (the limit is 70 s)');
$r = SnowflakeTest::try_sql($node,
	"SELECT snowflake_set_bound(clock_timestamp() + interval '365 days', allow_far_future => false)");
is($r->{sqlstate}, '22008', 'and so is one with allow_far_future => false');
# A database still at 1.6 (after pg_upgrade, say) has the function without
# the argument: the library refuses the same, and the HINT says to update.
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', "CREATE EXTENSION snowflake VERSION '1.6'");
$r = SnowflakeTest::try_sql($node,
	"SELECT snowflake_set_bound(clock_timestamp() + interval '365 days')", dbname => 'old');
is($r->{sqlstate}, '22008', 'at 1.6 too, a bound a year ahead is refused');
like($r->{hint} // '', qr/run ALTER EXTENSION snowflake UPDATE, then SELECT snowflake_set_bound\('.*', allow_far_future => true\)/,
	'and the HINT says to update the extension first') or diag $r->{hint};
cmp_ok($node->safe_psql('postgres', 'SELECT snowflake_nextval()'),
	'>', $first, 'nothing was raised: the node issues');

## 2. Taken within the limit --------------------------------------------------------

$r = SnowflakeTest::try_sql($node, "SELECT snowflake_set_bound(now() - interval '1 hour') IS NOT NULL");
is($r->{stdout}, 't', 'a bound in the past is taken (and changes nothing)') or diag $r->{stderr};
$r = SnowflakeTest::try_sql($node,
	"SELECT snowflake_set_bound(clock_timestamp() + interval '65 seconds') > clock_timestamp() + interval '60 seconds'");
is($r->{stdout}, 't', 'a bound 65 s ahead is taken without the argument') or diag $r->{stderr};

## 3. The limit follows max_lead ----------------------------------------------------

$node->safe_psql('postgres', "ALTER SYSTEM SET snowflake.max_lead = '1d'; SELECT pg_reload_conf()");
$node->poll_query_until('postgres', "SELECT current_setting('snowflake.max_lead') = '1d'")
  or die 'the reload of max_lead did not arrive';
$r = SnowflakeTest::try_sql($node,
	"SELECT snowflake_set_bound(clock_timestamp() + interval '20 hours') > clock_timestamp() + interval '19 hours'");
is($r->{stdout}, 't', 'with max_lead = 1d, a bound 20 hours ahead is taken') or diag $r->{stderr};

## 4. Taken when told so ------------------------------------------------------------

$node->safe_psql('postgres', "ALTER SYSTEM SET snowflake.max_lead = '10s'; SELECT pg_reload_conf()");
$node->poll_query_until('postgres', "SELECT current_setting('snowflake.max_lead') = '10s'")
  or die 'the reload of max_lead did not arrive';
my $given = $node->safe_psql('postgres',
	"SELECT date_trunc('second', clock_timestamp()) + interval '2 days 0.5 ms'");
$r = SnowflakeTest::try_sql($node,
	"SELECT snowflake_set_bound('$given', allow_far_future => true) = '$given'::timestamptz + interval '0.5 ms'");
is($r->{stdout}, 't', 'with allow_far_future => true, two days ahead is taken; it returns the next ms')
  or diag $r->{stderr};
is($node->safe_psql('postgres', "SELECT durable_until >= '$given'::timestamptz FROM snowflake_status"),
	't', 'snowflake_status shows the raised bound');
$r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'the node then refuses to issue: its clock is two days behind the bound');
SnowflakeTest::restart_node($node);
$r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'and a restart keeps the bound');

$node->stop;
done_testing();
