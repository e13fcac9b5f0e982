# Issue 3: failover to a standby whose clock is behind does not reissue IDs.
#
# A primary (real clock) issues IDs; its streaming standby runs with its
# clock 10 s behind (libfaketime, offset -10 on the standby only). The standby
# replays the primary's durable bounds (WAL resource manager 189) and keeps
# them in its own state file pg_snowflake/state, also after a restart (and
# IDs issued after that reach it by replay alone). After the promotion, the new
# primary (same datacenter_id / worker_id: it is a copy) must issue only IDs
# above every ID the old primary issued, although its clock is behind them:
# - with the defaults (max_clock_backward_wait = 1 s) the first call fails
#   with SQLSTATE 55000: the clock is 10 s behind the replayed bound, further
#   than any promotion takes;
# - with max_clock_backward_wait = 15s calls wait for the clock and go on.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $primary = SnowflakeTest::init_node('primary', allows_streaming => 1);
SnowflakeTest::start_node($primary);
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($primary);

sub write_ids
{
	my ($node, $count, $batches, $first) = @_;
	my @handles = SnowflakeTest::start_writers($node, $count,
		batch => 100, max_batches => $batches, first => $first);
	return scalar grep { !$_->{ok} } map { SnowflakeTest::finish_sql($_) } @handles;
}

is(write_ids($primary, 2, 20, 1), 0, 'the primary issues IDs before the backup');

my $standby = SnowflakeTest::init_standby($primary, 'standby', faketime => 1);
SnowflakeTest::set_clock_offset($standby, -10);
SnowflakeTest::start_node($standby);
my ($offset) = SnowflakeTest::server_clock_offset_ms($standby);
note sprintf('the standby\'s clock reads %+.0f ms from real time', $offset);

is(write_ids($primary, 3, 20, 11), 0, 'the primary issues IDs while the standby streams');
my $last_single = $primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
$primary->wait_for_catchup($standby);
my $highest = $primary->safe_psql('postgres', 'SELECT max(id) FROM ids');
$highest = $last_single if $last_single > $highest;
note "highest ID issued by the old primary: $highest";

# The state file, as src/pg/bound/state_file.cpp writes it: magic "SNOW", version, the bound,
# the epoch, the four widths, (version 2) the system identifier, a CRC.
sub state_bound
{
	my ($node) = @_;
	my $path = $node->data_dir . '/pg_snowflake/state';
	return undef unless -f $path;
	my ($magic, $version, $bound) = unpack('L L q', slurp_file($path));
	return $magic == 0x534e4f57 ? $bound : undef;
}

my $state = state_bound($standby);
ok(defined $state, 'the standby has the state file pg_snowflake/state after replay');
cmp_ok($state // 0, '>', $highest,
	'the bound in it is above every ID the primary issued');

# A standby restarting before its promotion keeps the bound; the IDs the
# primary issues after that reach it only through the records it replays.
SnowflakeTest::restart_node($standby);
# Past the bound the standby read at its restart (a durable interval, 1 s).
sleep 3;
is(write_ids($primary, 2, 20, 16), 0, 'the primary issues IDs after the standby restarted');
$highest = $primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
$primary->wait_for_catchup($standby);
note "highest ID issued by the old primary: $highest";

# Failover: the primary goes away, the standby is promoted.
$primary->stop('immediate');
my $start = time;
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'the standby is promoted');
note sprintf('promotion took %.1f s', time - $start);

# Defaults: refused, the clock being far more than 1 s behind the old IDs.
my $first = SnowflakeTest::try_sql($standby, 'SELECT snowflake_nextval()');
ok(!$first->{ok}, 'defaults: the first call on the new primary fails')
  or diag sprintf('it returned %s (highest old ID %s) %.1f s after the promotion started',
	$first->{stdout}, $highest, time - $start);
is($first->{sqlstate}, '55000',
	'defaults: SQLSTATE 55000, its clock being behind the replayed bound')
  or diag "stderr: $first->{stderr}";
like($first->{message} // '', qr/system clock moved backwards by \d+ ms/,
	'defaults: the error says how far the clock is behind');

SnowflakeTest::set_config($standby, 'snowflake.max_clock_backward_wait' => '15s');
$start = time;
my $next = SnowflakeTest::try_sql($standby, 'SELECT snowflake_nextval()');
ok($next->{ok}, 'with max_clock_backward_wait = 15s the new primary issues an ID')
  or diag "stderr: $next->{stderr}";
note sprintf('it took %.3f s (waiting for its clock to pass the old IDs)', time - $start);
cmp_ok($next->{stdout}, '>', $highest, 'above every ID of the old primary');

is(write_ids($standby, 3, 20, 21), 0, 'the new primary issues IDs');
is( $standby->safe_psql('postgres', "SELECT count(*) FROM ids WHERE b > 20 AND id <= $highest"),
	0, 'all above every ID of the old primary');
is( $standby->safe_psql('postgres',
		'SELECT count(*) FROM ids WHERE b > 20 AND ((id >> 17) & 31 <> 3 OR (id >> 12) & 31 <> 7)'),
	0, 'with the same identity (datacenter 3, worker 7)');
SnowflakeTest::check_ids($standby, 'ids', 'old and new primary');
my ($bound_above, $waits) = split /\|/, $standby->safe_psql('postgres', qq{
	SELECT durable_until > snowflake_timestamp($highest), clock_waits FROM snowflake_status});
is($bound_above, 't', 'snowflake_status on the new primary: a durable bound above the old IDs');
cmp_ok($waits, '>=', 1, 'and the wait for its clock counted');

$standby->stop;
done_testing();
