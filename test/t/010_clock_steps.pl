# Issue 3: the clock policy when the wall clock steps back (libfaketime).
#
# 1. A step back shorter than snowflake.max_clock_backward_wait, under load
#    from several backends: callers wait for the clock to catch up and go on.
#    No duplicate, per-backend order kept, and every ID issued after the step
#    is greater than every ID issued before it.
# 2. A step back (15 s) longer than the wait: a clean error (SQLSTATE 55000,
#    "system clock moved backwards by N ms", a DETAIL with the last ID's time
#    and the clock's, a HINT), the server stays up, and IDs resume when the
#    clock catches up, or at once with snowflake.max_lead large enough.
#    With max_clock_backward_wait = 0 the error comes at once for any step.
# Across all of it, the IDs one session issues in turn strictly increase.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $writers = 4;
my $node = SnowflakeTest::init_node(
	'clock',
	faketime => 1,
	conf => ['snowflake.max_clock_backward_wait = 2000']);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE seen (n bigserial PRIMARY KEY, id bigint NOT NULL);
});
SnowflakeTest::create_id_writers($node);

# IDs issued one statement after another (so in this order) by sessions of
# this test; the table checks at the end that each is above the one before.
sub issue
{
	my ($sql) = @_;
	return SnowflakeTest::try_sql($node,
		$sql // 'INSERT INTO seen (id) SELECT snowflake_nextval() RETURNING id');
}

sub issue_ok
{
	my ($label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $result = issue();
	ok($result->{ok}, $label) or diag "stderr: $result->{stderr}";
	return $result->{stdout};
}

# The error of a step longer than the wait; checks it and returns N (ms).
sub clock_behind_error_ok
{
	my ($result, $label, $last_id) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok(!$result->{ok}, "$label: snowflake_nextval() fails")
	  or diag "stdout: $result->{stdout}";
	is($result->{sqlstate}, '55000',
		"$label: SQLSTATE 55000 (object_not_in_prerequisite_state)")
	  or diag "stderr: $result->{stderr}";
	my ($behind) = ($result->{message} // '') =~
	  /^system clock moved backwards by (\d+) ms$/;
	ok(defined $behind, "$label: message \"system clock moved backwards by N ms\"")
	  or diag "stderr: $result->{stderr}";
	my ($issued_at, $clock_reads) = ($result->{detail} // '') =~
	  /last ID was issued at (\S+ \S+); the clock now reads (\S+ \S+)\./;
	ok(defined $clock_reads, "$label: DETAIL names the last ID's time and the clock's")
	  or diag "stderr: $result->{stderr}";
	if (defined $clock_reads && defined $behind)
	{
		is( $node->safe_psql('postgres',
				"SELECT (extract(epoch FROM '$issued_at'::timestamptz - '$clock_reads'::timestamptz) * 1000)::bigint"),
			$behind,
			"$label: the two times in DETAIL are N ms apart");
		is( $node->safe_psql('postgres',
				"SELECT (snowflake_decode($last_id)).ts = '$issued_at'::timestamptz"),
			't',
			"$label: the DETAIL's last-ID time is the time of the last ID issued ($last_id)"
		);
	}
	like($result->{hint} // '', qr/snowflake\.max_clock_backward_wait/,
		"$label: HINT names the setting to raise")
	  or diag "stderr: $result->{stderr}";
	return $behind // 0;
}

my $started_at = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

# --- 1. a 500 ms step back, shorter than the 2000 ms wait, under load ---

my @handles = SnowflakeTest::start_writers($node, $writers, batch => 200);
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = $writers FROM (SELECT b FROM ids GROUP BY b HAVING count(*) >= 1000) s"),
	'the writers are issuing IDs');

my $before = $node->safe_psql('postgres',
	'SELECT max(id) FROM ids');
my %last_g = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT b, max(g) FROM ids GROUP BY b');
my $measured = SnowflakeTest::set_clock_offset($node, -0.5);
note sprintf('the server clock now reads %+.0f ms from real time', $measured);

# The first ID after the step must wait for the clock to reach the
# generator's last millisecond (max_lead = 0: an ID never carries a
# millisecond the clock has not reached).
my $start = time;
my $first = SnowflakeTest::try_sql($node,
	"SELECT id, (snowflake_decode(id)).ts <= clock_timestamp() FROM (SELECT snowflake_nextval() AS id) s"
);
my $first_took = time - $start;
ok($first->{ok}, 'an ID is issued after the step (no error)')
  or diag "stderr: $first->{stderr}";
my ($after, $not_ahead) = split /\|/, $first->{stdout};
note sprintf('the first ID after the step took %.3f s (the step was 500 ms)', $first_took);
cmp_ok($after, '>', $before,
	'the first ID after the step is above the highest committed before it');
is($not_ahead, 't', 'it carries no millisecond ahead of the clock');

ok( $node->poll_query_until('postgres',
		"SELECT count(DISTINCT b) = $writers FROM ids WHERE id > $after"),
	'every writer goes on issuing IDs after the step');
my @results = SnowflakeTest::stop_writers($node, @handles);
for my $result (@results)
{
	ok($result->{ok}, 'a writer ended without error') or diag "stderr: $result->{stderr}";
}

SnowflakeTest::check_ids($node, 'ids', 'writers across a 500 ms step');
my $straddle = join ' OR ',
  map { "(b = $_ AND g > $last_g{$_} + 200)" } sort keys %last_g;
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE ($straddle) AND id <= $before"),
	0,
	'no ID issued after the step is at or below an ID committed before it');
is( $node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id = $after"),
	0, 'the ID issued after the step went to no writer');
my @steps = map { /stepped back by (\d+) ms/ ? $1 : () } split /\n/,
  slurp_file($node->logfile);
note sprintf('the server logged %d backward clock steps, the largest %d ms',
	scalar @steps, (sort { $b <=> $a } @steps, 0)[0]);
my ($steps, $largest, $waits, $errors) = split /\|/, $node->safe_psql('postgres',
	'SELECT clock_steps, largest_clock_step_ms, clock_waits, clock_errors FROM snowflake_status');
cmp_ok($steps, '>=', 1, 'snowflake_status counts the backward step');
cmp_ok($largest, '>=', 300, 'and its size, about 500 ms (at least 300)');
cmp_ok($largest, '<=', 2000, '... (at most 2000)');
cmp_ok($waits, '>=', 1, 'and the calls that waited for the clock');
is($errors, 0, 'and no call that failed');

# --- 2. a 15 s step back, longer than the 2000 ms wait ---
# (Steps of many seconds: each refusal must still find the generator more than
# the wait ahead of the clock after the seconds a loaded machine takes between
# two calls; a 5 s step left about one second of margin.)

SnowflakeTest::set_clock_offset($node, 0);
my $last = issue_ok('an ID is issued on the corrected clock');

SnowflakeTest::set_clock_offset($node, -15);
$start = time;
my $refused = issue();
note sprintf("refused after %.3f s:\n%s", time - $start, $refused->{stderr});
my $behind = clock_behind_error_ok($refused, '15 s back', $last);
cmp_ok($behind, '>', 2000, 'N is more than max_clock_backward_wait (2000 ms)');
cmp_ok($behind, '<=', 15000, 'N is at most the 15000 ms step');

is( $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$started_at, 'the server stays up (no restart)');
$refused = issue();
is($refused->{sqlstate}, '55000', 'asked again, it refuses again')
  or diag "stderr: $refused->{stderr}";

SnowflakeTest::set_clock_offset($node, 0);
my $resumed = issue_ok('IDs resume once the clock is corrected');
cmp_ok($resumed, '>', $last, 'above the last one before the step');

# With snowflake.max_lead above the step, the generator runs ahead of the
# clock instead of refusing.
$last = issue_ok('an ID before the second step, 12 s');
SnowflakeTest::set_clock_offset($node, -12);
clock_behind_error_ok(issue(), '12 s back', $last);
SnowflakeTest::set_config($node, 'snowflake.max_lead' => '20s');
my $ahead = issue_ok('with snowflake.max_lead = 20s an ID is issued at once');
cmp_ok($ahead, '>', $last, 'above the last one before the step');
is( $node->safe_psql('postgres',
		"SELECT (snowflake_decode($ahead)).ts > clock_timestamp()"),
	't',
	'its millisecond is ahead of the clock (the generator kept counting)');
# More than one millisecond's 4096 IDs: it borrows the next milliseconds.
my $many = issue(
	'INSERT INTO seen (id) SELECT snowflake_nextval() FROM generate_series(1, 10000) RETURNING id'
);
ok($many->{ok}, '10000 more IDs while ahead of the clock')
  or diag "stderr: $many->{stderr}";
SnowflakeTest::set_config($node, 'snowflake.max_lead' => undef);
SnowflakeTest::set_clock_offset($node, 0);
issue_ok('an ID on the corrected clock, max_lead back to 0');

# max_clock_backward_wait = 0: any step beyond max_lead fails at once.
SnowflakeTest::set_config($node, 'snowflake.max_clock_backward_wait' => '0');
$last = issue_ok('an ID before a 10 s step with no wait allowed');
SnowflakeTest::set_clock_offset($node, -10);
$start = time;
$refused = issue();
note sprintf('refused after %.3f s', time - $start);
is($refused->{sqlstate}, '55000', 'max_clock_backward_wait = 0: a 10 s step fails at once')
  or diag "stderr: $refused->{stderr}";
SnowflakeTest::set_config($node, 'snowflake.max_clock_backward_wait' => undef);
SnowflakeTest::set_clock_offset($node, 0);
issue_ok('an ID on the corrected clock');

# Everything this section issued, in order.
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS previous FROM seen) s
		WHERE previous >= id}),
	0,
	'every ID issued in turn is above the one before')
  or diag $node->safe_psql('postgres', 'SELECT n, id, snowflake_decode(id) FROM seen ORDER BY n');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM seen JOIN ids USING (id)'),
	0, 'and none of them was issued to the writers');
is( $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$started_at, 'the server never restarted');

$node->stop;
done_testing();
