# Issue 3: the clock jumps forward, then is corrected back.
#
# A wrong NTP answer (or an operator) moves the clock 5 s ahead; IDs issued
# meanwhile carry those future milliseconds. When the clock is corrected, the
# generator is ~5 s ahead of it, and IDs must still never go down:
#
# - With the defaults (max_lead = 0, max_clock_backward_wait = 1 s), the
#   operator sees snowflake_nextval() fail with
#     ERROR:  system clock moved backwards by ~5000 ms
#     DETAIL: The last ID was issued at <the future time>; the clock now reads <now>.
#     HINT:   Fix the clock (NTP), or raise snowflake.max_clock_backward_wait or snowflake.max_lead.
#   for the ~4 s until the clock is within the 1 s wait of the last ID; then
#   calls wait (at most 1 s) and IDs flow again, all above the future ones.
# - With snowflake.max_lead above the jump, nothing fails: IDs go on from the
#   future millisecond (they stay "early" until the clock catches up).
#   Lowering max_lead again while the generator is still ahead brings back
#   the refusals until the clock catches up. This part jumps 15 s, so that
#   the generator is still well ahead when max_lead is lowered however slow
#   the machine is between the steps.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $node = SnowflakeTest::init_node('jump', faketime => 1);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE seen (n bigserial PRIMARY KEY, id bigint NOT NULL);
});

my $issue_sql = 'INSERT INTO seen (id) SELECT snowflake_nextval() RETURNING id';

sub issue_ok
{
	my ($label, $count) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $sql = $count
	  ? "INSERT INTO seen (id) SELECT snowflake_nextval() FROM generate_series(1, $count) RETURNING id"
	  : $issue_sql;
	my $result = SnowflakeTest::try_sql($node, $sql);
	ok($result->{ok}, $label) or diag "stderr: $result->{stderr}";
	my @ids = split /\n/, $result->{stdout};
	return $ids[-1] // 0;
}

# Calls snowflake_nextval() until it succeeds; returns the ID, the number of
# refusals (all must be 55000) and the seconds it took.
sub issue_until_accepted
{
	my ($label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $start = time;
	my ($refusals, @other, $result) = (0);
	while (time - $start < 60)
	{
		$result = SnowflakeTest::try_sql($node, $issue_sql);
		last if $result->{ok};
		if (($result->{sqlstate} // '') eq '55000') { $refusals++; }
		else { push @other, $result->{stderr}; }
		usleep(200_000);
	}
	my $took = time - $start;
	ok($result->{ok}, "$label: IDs are issued again once the clock catches up")
	  or diag "last stderr: $result->{stderr}";
	is(scalar @other, 0, "$label: every refusal meanwhile was SQLSTATE 55000")
	  or diag join("\n", @other);
	note sprintf('%s: %d refusals over %.1f s, first: %s', $label, $refusals,
		$took, $refusals ? 'system clock moved backwards' : 'none');
	return ($result->{stdout}, $refusals);
}

# --- defaults ---

my $before = issue_ok('an ID on the real clock');
SnowflakeTest::set_clock_offset($node, 5);
my $future = issue_ok('IDs while the clock is 5 s ahead', 1000);
cmp_ok($future, '>', $before, 'above the ones before the jump');
my $future_ms = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM (snowflake_decode($future)).ts) * 1000");
cmp_ok($future_ms - time * 1000, '>', 4000,
	'they carry the future milliseconds (more than 4 s ahead of real time)');

SnowflakeTest::set_clock_offset($node, 0);
my $refused = SnowflakeTest::try_sql($node, $issue_sql);
is($refused->{sqlstate}, '55000',
	'right after the correction, the defaults refuse (clock behind by ~5 s)')
  or diag "stdout: $refused->{stdout}\nstderr: $refused->{stderr}";
like($refused->{message} // '', qr/^system clock moved backwards by \d+ ms$/,
	'"system clock moved backwards by N ms"');
note "what the operator sees:\n$refused->{stderr}";
my ($resumed, $refusals) = issue_until_accepted('defaults');
cmp_ok($resumed, '>', $future, 'the first ID after the refusals is above the future ones');

# --- max_lead large enough ---

SnowflakeTest::set_config($node, 'snowflake.max_lead' => '20s');
$before = issue_ok('an ID with max_lead = 20 s');
SnowflakeTest::set_clock_offset($node, 15);
$future = issue_ok('IDs while the clock is 15 s ahead', 1000);
SnowflakeTest::set_clock_offset($node, 0);
my $start = time;
my $next = issue_ok('with max_lead = 20 s, the correction is not an error');
note sprintf('the first ID after the correction took %.3f s', time - $start);
cmp_ok($next, '>', $future, 'above the future ones');
is( $node->safe_psql('postgres',
		"SELECT (snowflake_decode($next)).ts > clock_timestamp() + interval '1 second'"),
	't', 'it is issued ahead of the clock (from the future millisecond on)');
issue_ok('10000 more IDs, still ahead of the clock', 10000);

# Lowering max_lead while ahead: refusals until the clock catches up.
SnowflakeTest::set_config($node, 'snowflake.max_lead' => undef);
$refused = SnowflakeTest::try_sql($node, $issue_sql);
is($refused->{sqlstate}, '55000',
	'max_lead back to 0 while the generator is ahead: refused again')
  or diag "stdout: $refused->{stdout}\nstderr: $refused->{stderr}";
issue_until_accepted('max_lead lowered');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS previous FROM seen) s
		WHERE previous >= id}),
	0,
	'every ID issued in turn is above the one before')
  or diag $node->safe_psql('postgres',
	'SELECT n, id, snowflake_decode(id) FROM seen ORDER BY n DESC LIMIT 20');
my ($errors, $largest) = split /\|/, $node->safe_psql('postgres',
	'SELECT clock_errors, largest_clock_step_ms FROM snowflake_status');
cmp_ok($errors, '>=', 1, 'snowflake_status counts the refusals after the correction');
cmp_ok($largest, '>=', 4000, 'and the correction as a backward step of about 5 s');

$node->stop;
done_testing();
