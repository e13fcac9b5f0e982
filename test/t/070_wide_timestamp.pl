# Issue 18: a layout whose timestamp field is wider than timestamptz can show.
#
# With snowflake.timestamp_bits = 58 the field counts up to 2^58 - 1 ms after
# the epoch, some nine million years, while timestamptz ends with the year
# 294276 (about 2^53 ms after 1970). Decoding such a time overflowed and
# returned a wrong time with sub-millisecond digits no ID can carry. Checked,
# on a node that issues IDs in that layout:
# - every time timestamptz can hold decodes exactly, to the millisecond: the
#   IDs the node issues, a power of two in each width up to 2^53 ms, and the
#   last millisecond of timestamptz composed and decoded back;
# - a time past the end of timestamptz is an error (22008) that says so, from
#   snowflake_decode and snowflake_timestamp alike;
# - compose's range error names a range end that timestamptz can show.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $epoch_ms = 1288834974657;
# 58 + 0 + 1 + 4 = 63 bits: time above bit 5.
my $shift = 5;

my $node = SnowflakeTest::init_node(
	'wide_timestamp',
	datacenter_id => undef,
	worker_id => 1,
	conf => [
		'snowflake.timestamp_bits = 58', 'snowflake.datacenter_bits = 0',
		'snowflake.worker_bits = 1', 'snowflake.sequence_bits = 4',
		"timezone = 'UTC'", "datestyle = 'ISO'",
	]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

# --- times timestamptz can hold decode exactly ---

is( $node->safe_psql('postgres', qq{
		CREATE TABLE ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, 1000);
		SELECT count(*) FROM ids, snowflake_decode(id) d
		WHERE extract(epoch FROM d.ts) * 1000 <> (id >> $shift) + $epoch_ms
		   OR d.worker_id <> 1 OR d.datacenter_id <> 0}),
	0,
	'the IDs the node issues decode to their millisecond and worker');

is( $node->safe_psql('postgres', qq{
		SELECT string_agg(k::text, ',') FROM generate_series(0, 53) k,
			LATERAL (SELECT (1::bigint << k) << $shift AS id) i
		WHERE extract(epoch FROM snowflake_timestamp(i.id)) * 1000 <> (1::bigint << k)::numeric + $epoch_ms
		   OR extract(epoch FROM (snowflake_decode(i.id)).ts) * 1000 <> (1::bigint << k)::numeric + $epoch_ms}),
	'',
	'a timestamp field of 2^k ms decodes to exactly epoch + 2^k ms, for every k up to 53');

is( $node->safe_psql('postgres', q{
		SELECT ts FROM snowflake_decode(snowflake_compose('294276-12-31 23:59:59.999+00', 0, 1, 3))}),
	'294276-12-31 23:59:59.999+00',
	'the last millisecond timestamptz holds composes and decodes back');

# --- past the end of timestamptz: an error that says so ---

for my $call ('SELECT * FROM snowflake_decode(9223372036854775807)',
	'SELECT snowflake_timestamp(9223372036854775807)',
	'SELECT snowflake_timestamp(snowflake_max_id(\'294276-12-31 23:59:59.999+00\') + 1)')
{
	my $r = SnowflakeTest::try_sql($node, $call);
	is($r->{sqlstate}, '22008', "$call: SQLSTATE 22008")
	  or diag "stdout: $r->{stdout}\nstderr: $r->{stderr}";
	like($r->{message} // '', qr/after the end of timestamptz/,
		"$call: the message says the time is past timestamptz's end");
	like($r->{hint} // '', qr/id >> $shift/,
		"$call: the hint shows how to read the field as a number");
}

my $r = SnowflakeTest::try_sql($node,
	q{SELECT snowflake_compose('infinity', 0, 1, 0)});
is($r->{sqlstate}, '22008', 'compose of infinity: SQLSTATE 22008');
like($r->{detail} // '', qr/to 294276-12-31 23:59:59\.999\+00/,
	'compose\'s range error ends the range at the end of timestamptz')
  or diag "detail: " . ($r->{detail} // '(none)');

$node->stop;
done_testing();
