# Issue 19: a node generates in the layout snowflake.layout names.
#
# 1. The JavaScript-safe preset (53 bits, 10 ms): four backends issue IDs at
#    once (snowflake_nextval and snowflake_generate): all unique, strictly
#    increasing within each backend, below 2^53, and they decode to the node's
#    worker and to the time of the statement that issued them.
# 2. Sonyflake's layout (10 ms, the sequence above the machine ID), worker_id
#    300: the same under concurrency, every ID read with Sonyflake's own
#    formula as machine 300 and a time within its statement's run; then a
#    crash with the clock set back 3 s: with max_lead 10 s every ID after the
#    restart is above every ID before.
# 3. The settings: the widths show the layout's, snowflake.epoch replaces the
#    layout's epoch, the one-argument functions follow the layout; a width set
#    to another value than the layout's, a layout that is not one, a
#    datacenter_id left over in a layout without that field and a worker_id
#    its field cannot hold stop the server with a message naming them and a
#    hint that fixes it; snowflake_id_span stops at the time a 64-bit layout's
#    IDs cover (issue 27). A layout whose time has run out (Baidu's) starts
#    the server with a WARNING, and issuing refuses.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

# Starts $count sessions that wait at an advisory lock, then each run $sql
# (with :b the session's number) at once; returns their results.
sub run_together
{
	my ($node, $count, $sql) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('SELECT pg_advisory_lock(4242)');
	my @sessions;
	for my $b (1 .. $count)
	{
		(my $mine = $sql) =~ s/:b\b/$b/g;
		push @sessions, SnowflakeTest::start_sql($node, qq{
			SELECT pg_advisory_lock_shared(4242);
			SELECT pg_advisory_unlock_shared(4242);
			SELECT clock_timestamp() AS started \\gset
			$mine
			INSERT INTO runs VALUES ($b, :'started', clock_timestamp());
		}, name => "writer_$b");
	}
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = $count FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"),
		"all $count sessions wait at the gate");
	$gate->query_safe('SELECT pg_advisory_unlock(4242)');
	$gate->quit;
	my @results = map { SnowflakeTest::finish_sql($_) } @sessions;
	ok(!(grep { !$_->{ok} } @results), "the $count sessions issued their IDs")
	  or diag join("\n", map { $_->{stderr} } @results);
	is( $node->safe_psql('postgres', 'SELECT max(started) < min(finished) FROM runs'),
		't', 'the sessions really overlapped');
	return;
}

sub fresh_tables
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		DROP TABLE IF EXISTS ids, runs;
		CREATE UNLOGGED TABLE ids (b int NOT NULL, g bigint NOT NULL, id bigint NOT NULL);
		CREATE UNLOGGED TABLE runs (b int, started timestamptz, finished timestamptz);
	});
	return;
}

# --- 1. The JavaScript-safe preset ---

my $js = SnowflakeTest::init_node(
	'javascript',
	datacenter_id => undef,
	worker_id => 5,
	conf => ["snowflake.layout = 'javascript'", 'max_worker_processes = 8']);
SnowflakeTest::start_node($js);
$js->safe_psql('postgres', 'CREATE EXTENSION snowflake');
fresh_tables($js);

run_together($js, 4, q{
	INSERT INTO ids SELECT :b, g, id
	  FROM (SELECT g, CASE WHEN :b = 4 THEN NULL ELSE snowflake_nextval() END AS id
	          FROM generate_series(1, 60000) g) s WHERE id IS NOT NULL;
	INSERT INTO ids SELECT :b, 100000 + row_number() OVER (), id
	  FROM snowflake_generate(CASE WHEN :b = 4 THEN 150000 ELSE 1 END) AS id;
});
SnowflakeTest::check_ids($js, 'ids', 'javascript preset', rows => 3 * 60001 + 150000);
is( $js->safe_psql('postgres', q{
		SELECT count(*) FROM ids WHERE id <= 0 OR id >= 9007199254740992}),
	0, 'every ID is positive and below 2^53 (exact as a JavaScript number)');
# The preset's formula: 10 ms units since 2025-01-01 << 15 | worker << 10 | sequence.
is( $js->safe_psql('postgres', q{
		SELECT count(*) FROM ids JOIN runs USING (b)
		WHERE (id >> 10) & 31 <> 5
		   OR 1735689600000 + (id >> 15) * 10 NOT BETWEEN floor(extract(epoch FROM started) * 1000) - 10
		                                           AND ceil(extract(epoch FROM finished) * 1000)}),
	0, 'every ID carries worker 5 and a 10 ms unit within its statement\'s run');
is( $js->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT id, snowflake_decode(id) AS d FROM ids TABLESAMPLE SYSTEM (2)) s
		WHERE (d).worker_id <> 5 OR (d).datacenter_id <> 0 OR (d).sequence <> id & 1023
		   OR extract(epoch FROM (d).ts) * 1000 <> 1735689600000 + (id >> 15) * 10
		   OR snowflake_decode(id) IS DISTINCT FROM snowflake_decode(id, 'javascript')}),
	0, 'snowflake_decode(id) reads the node\'s layout, as snowflake_decode(id, \'javascript\') does');
$js->stop;

# --- 2. Sonyflake's layout, machine 300 ---

my $sony = SnowflakeTest::init_node(
	'sonyflake',
	faketime => 1,
	datacenter_id => undef,
	worker_id => 300,
	conf => ["snowflake.layout = 'sonyflake'", 'restart_after_crash = on']);
SnowflakeTest::start_node($sony);
$sony->safe_psql('postgres', 'CREATE EXTENSION snowflake');
fresh_tables($sony);

# 256 IDs per 10 ms: 25,600 per second for the node.
run_together($sony, 4, q{
	INSERT INTO ids SELECT :b, g, snowflake_nextval() FROM generate_series(1, 15000) g;
});
SnowflakeTest::check_ids($sony, 'ids', 'sonyflake preset', rows => 60000);
# sony/sonyflake's Decompose: msb 0, time = id >> 24, sequence = (id >> 16) & 255,
# machine-id = id & 65535; StartTime 2014-09-01 UTC in 10 ms units.
is( $sony->safe_psql('postgres', q{
		SELECT count(*) FROM ids JOIN runs USING (b)
		WHERE id & 65535 <> 300
		   OR 1409529600000 + (id >> 24) * 10 NOT BETWEEN floor(extract(epoch FROM started) * 1000) - 10
		                                           AND ceil(extract(epoch FROM finished) * 1000)}),
	0, 'Sonyflake\'s formula reads every ID as machine 300, at a time within its statement\'s run');
is( $sony->safe_psql('postgres', q{
		SELECT count(DISTINCT (id >> 16) & 255) = 256 FROM ids}),
	't', 'the sequence field (above the machine ID) took all its 256 values');
my $status = $sony->safe_psql('postgres', q{
	SELECT worker_id, timestamp_bits, worker_bits, sequence_bits, (extract(epoch FROM epoch) * 1000)::bigint
	  FROM snowflake_status});
is($status, '300|39|16|8|1409529600000', 'snowflake_status shows the layout and the identity');
is($sony->safe_psql('postgres', q{SELECT snowflake_id_span('1 day') = 8640000::bigint << 24}),
	't', 'snowflake_id_span counts in the layout: a day is 8,640,000 units of 10 ms');

# A crash with the clock set back 3 s: with max_lead 10 s the node issues at
# once, above every ID before the crash.
SnowflakeTest::set_config($sony, 'snowflake.max_lead' => '10s');
my $highest = $sony->safe_psql('postgres', 'SELECT max(id) FROM ids');
$sony->safe_psql('postgres', 'SELECT snowflake_nextval() FROM generate_series(1, 1000)');
my $last_before = $sony->safe_psql('postgres', 'SELECT snowflake_nextval()');
SnowflakeTest::crash_node($sony);
SnowflakeTest::set_clock_offset($sony, -3);
SnowflakeTest::start_node($sony);
my $after = $sony->safe_psql('postgres', q{
	SELECT min(id) || '|' || max(id) || '|' || count(DISTINCT id)
	  FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 5000)) s});
my ($min_after, $max_after, $distinct_after) = split /\|/, $after;
cmp_ok($min_after, '>', $last_before,
	'after a crash with the clock 3 s back, the first ID is above the last one before');
is($distinct_after, 5000, 'and the IDs after it are distinct');
is( $sony->safe_psql('postgres', "SELECT $min_after & 65535"),
	300, 'still machine 300');

# snowflake_set_bound counts in the layout's unit: 3 ms into a 10 ms unit
# (9 s ahead: within max_lead, past any bound the IDs above raised), the
# bound is the next unit, and so is the next ID's time.
is( $sony->safe_psql(
		'postgres', q{
		SELECT date_trunc('second', now()) + interval '9.003 s' AS given \gset
		SELECT snowflake_set_bound(:'given') = :'given'::timestamptz + interval '7 ms',
		       snowflake_timestamp(snowflake_nextval()) >= :'given'::timestamptz + interval '7 ms'}),
	't|t',
	'snowflake_set_bound rounds up to the layout\'s 10 ms unit, and the next ID follows');
SnowflakeTest::set_clock_offset($sony, 0);
$sony->stop;

# --- 3. The settings ---

my $set = SnowflakeTest::init_node(
	'settings',
	datacenter_id => undef,
	worker_id => 7,
	conf => [
		"snowflake.layout = 'discord'", 'snowflake.epoch = 1600000000000',
		'snowflake.timestamp_bits = 42', "timezone = 'UTC'"
	]);
SnowflakeTest::start_node($set);
$set->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is( $set->safe_psql('postgres', q{
		SELECT current_setting('snowflake.timestamp_bits') || '/' || current_setting('snowflake.datacenter_bits')
		    || '/' || current_setting('snowflake.worker_bits') || '/' || current_setting('snowflake.sequence_bits')
		    || ' ' || current_setting('snowflake.epoch') || ' ' || current_setting('snowflake.layout')}),
	'42/5/5/12 1600000000000 discord',
	'SHOW gives the layout\'s widths (a width set to the same value is fine) and the epoch that replaces its own');
my $r = SnowflakeTest::try_sql($set, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'with two node fields, datacenter_id must be set too');
like($r->{message} // '', qr/^snowflake\.datacenter_id is not set/, '... and the error says so');
like($r->{hint} // '', qr/^Set snowflake\.datacenter_id \(0-31\) in postgresql\.conf/,
	'... and its hint names that setting alone, as worker_id is set');
SnowflakeTest::set_config($set, 'snowflake.datacenter_id' => 2);
is( $set->safe_psql('postgres', q{
		SELECT (snowflake_decode(id)).datacenter_id || '/' || (snowflake_decode(id)).worker_id || ' '
		    || ((id >> 22) + 1600000000000 BETWEEN floor(extract(epoch FROM now()) * 1000) - 1000
		                                      AND ceil(extract(epoch FROM clock_timestamp()) * 1000))::text
		  FROM (SELECT snowflake_nextval() AS id) s}),
	'2/7 true', 'IDs in Discord\'s layout with the configured epoch');
# Issue 27: a span past the time Discord's IDs cover (2^41 ms, 69.7 years, as
# the 64th bit is the sign) is an error naming it, not a negative number.
is( $set->safe_psql('postgres', q{
		SELECT snowflake_id_span('69 years') > 0,
		       snowflake_id_span('69 years') = (extract(epoch FROM interval '69 years') * 1000)::bigint << 22}),
	't|t', 'snowflake_id_span of 69 years in Discord\'s layout: positive, in ms above bit 22');
for my $span ('70 years', '100 years')
{
	$r = SnowflakeTest::try_sql($set, "SELECT snowflake_id_span('$span')");
	is($r->{sqlstate}, '22008', "snowflake_id_span('$span') in Discord's layout is an error, not a wrapped number")
	  or diag "stdout: $r->{stdout}";
	like($r->{detail} // '',
		qr/at most the time the layout's IDs cover, 2199023255551 milliseconds \(69\.7 years\)/,
		'... naming the longest span');
}
$set->stop;

# A width that contradicts the layout, and a layout that is not one.
my $refused = 0;
for my $case (
	[
		[ "snowflake.layout = 'sonyflake'", 'snowflake.timestamp_bits = 41' ],
		qr/snowflake\.timestamp_bits = 41 contradicts snowflake\.layout = 'sonyflake'/,
		'a width that contradicts the layout'
	],
	[
		[ "snowflake.layout = 'time:41 worker:10 sequence:12 unit:10min'" ],
		qr/invalid value for parameter "snowflake\.layout".*\n.*DETAIL:  At character 31, "unit:10min"/,
		'a layout that does not parse'
	],
	[
		[ "snowflake.layout = 'sonyflake'", 'snowflake.datacenter_id = 3' ],
		qr/snowflake\.datacenter_id is set, but the ID layout has no datacenter_id field\n.*DETAIL:  snowflake\.datacenter_id = 3; the layout time:39 sequence:8 worker:16 unit:10ms epoch:1409529600000 gives datacenter_id 0 bits.*\n.*HINT:  Remove snowflake\.datacenter_id from the configuration\./,
		'a datacenter_id left over in Sonyflake\'s layout (which has no such field)'
	],
	[
		[ 'snowflake.worker_id = 40' ],
		qr/invalid value for parameter "snowflake\.worker_id": "40"\n.*DETAIL:  snowflake\.worker_id must be between -1 \(unset\) and 31.*\n.*HINT:  Give every node a value no other node uses, within that range\./,
		'a worker_id its field cannot hold'
	])
{
	my ($conf, $pattern, $label) = @$case;
	my $bad = SnowflakeTest::init_node('refused_' . ++$refused, worker_id => undef, conf => $conf);
	my $started = $bad->start(fail_ok => 1);
	ok(!$started, "$label: the server does not start");
	like(slurp_file($bad->logfile), $pattern, "$label: the log says why")
	  or diag SnowflakeTest::log_tail($bad, 10);
	$bad->stop if $started;
	$bad->teardown_node;
}

# Issue 27: a layout whose time has run out (Baidu's default, since 2024) is
# no fault of the configuration the server can tell from a clock that is
# wrong: the server starts, the log says why, and issuing refuses per call.
my $baidu = SnowflakeTest::init_node('baidu', datacenter_id => undef, worker_id => 1,
	conf => ["snowflake.layout = 'baidu'", "timezone = 'UTC'"]);
SnowflakeTest::start_node($baidu);
like(slurp_file($baidu->logfile),
	qr/WARNING:  the system clock reads .*, after the range of the snowflake ID layout\n.*DETAIL:  The ID layout \(time:28 worker:22 sequence:13 unit:1s epoch:1463673600000\) issues IDs of times from 2016-05-19 16:00:00\+00 to 2024-11-20 13:24:15\+00\. /,
	'a layout whose time has run out: the server starts and the log says why');
$baidu->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$r = SnowflakeTest::try_sql($baidu, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '2200H', '... and snowflake_nextval() refuses: the IDs have run out');
is($baidu->safe_psql('postgres', q{SELECT (snowflake_decode(1::bigint << 35)).ts = '2016-05-20 00:00:01+08'}),
	't', '... while decoding works');
$baidu->stop;

done_testing();
