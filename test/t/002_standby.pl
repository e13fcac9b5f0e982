# Issue 2: a hot standby refuses to issue IDs, and still decodes them.
#
# A streaming standby has its primary's snowflake.datacenter_id and worker_id
# (it is a copy of it), so IDs it issued could collide with the primary's:
# snowflake_nextval() must fail there with SQLSTATE 25006
# (read_only_sql_transaction) and a HINT, while snowflake_decode(), a pure
# function, works and agrees with the primary.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $primary = SnowflakeTest::init_node('primary', allows_streaming => 1);
SnowflakeTest::start_node($primary);
$primary->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
	INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 1000) g;
});

my $standby = SnowflakeTest::init_standby($primary, 'standby');
SnowflakeTest::start_node($standby);
$primary->safe_psql('postgres',
	"INSERT INTO orders (item) SELECT 'late ' || g FROM generate_series(1, 1000) g");
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	't', 'the standby is in recovery');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM orders'),
	2000, 'the IDs issued on the primary are on the standby');

my $refused = SnowflakeTest::try_sql($standby, 'SELECT snowflake_nextval()');
ok(!$refused->{ok}, 'snowflake_nextval() fails on the standby')
  or diag "stdout: $refused->{stdout}";
is($refused->{sqlstate}, '25006',
	'with SQLSTATE 25006 (read_only_sql_transaction)')
  or diag "stderr: $refused->{stderr}";
like($refused->{message} // '', qr/recovery|standby/,
	'the message says why (recovery)')
  or diag "stderr: $refused->{stderr}";
ok(defined $refused->{hint} && $refused->{hint} =~ /promote|primary/,
	'with a HINT saying what to do')
  or diag "stderr: $refused->{stderr}";
note "the standby's error:\n$refused->{stderr}";

# As a column default too: an INSERT fails the same way (before it even
# reaches the read-only check of the table).
my $insert = SnowflakeTest::try_sql($standby,
	"SELECT snowflake_nextval() FROM generate_series(1, 3)");
is($insert->{sqlstate}, '25006', 'a query issuing several IDs fails alike')
  or diag "stderr: $insert->{stderr}";

my $decode_sql = q{
	SELECT string_agg(format('%s %s %s %s %s', id, d.ts, d.datacenter_id, d.worker_id, d.sequence), E'\n' ORDER BY id)
	FROM orders, snowflake_decode(id) d};
my $on_standby = SnowflakeTest::try_sql($standby, $decode_sql);
ok($on_standby->{ok}, 'snowflake_decode() works on the standby')
  or diag "stderr: $on_standby->{stderr}";
is($on_standby->{stdout}, $primary->safe_psql('postgres', $decode_sql),
	'and decodes the 2000 IDs exactly as the primary does');
is( $standby->safe_psql('postgres',
		'SELECT count(*) FROM orders, snowflake_decode(id) d WHERE d.datacenter_id = 3 AND d.worker_id = 7'),
	2000,
	'the decoded IDs carry the primary\'s identity');

is($standby->safe_psql('postgres', 'SELECT 1'),
	1, 'the standby session goes on after the refusal');
is($primary->safe_psql('postgres',
		'SELECT count(*) FROM (SELECT snowflake_nextval() FROM generate_series(1, 10)) s'),
	10, 'the primary still issues IDs');

$standby->stop;
$primary->stop;
done_testing();
