# Issue 3: no ID is issued twice across a restart or a crash, even when the
# wall clock was set back meanwhile (libfaketime).
#
# 1. Clean restart with the clock set back 10 s: with the defaults the node
#    refuses (clock behind); with snowflake.max_lead large it issues IDs above
#    every ID issued before the restart. Never one at or below.
# 2. Crash (every server process killed with SIGKILL at once) while several
#    backends issue and COMMIT IDs and one client reads IDs one by one; then
#    start with the clock set back 10 s: no ID at or below the highest one
#    committed or returned to a client before the crash.
# 3. The same crash with the clock right: the first ID after the restart may
#    wait for the clock to pass the durable bound (reported, not asserted).
# 4. A backend killed with SIGKILL: the postmaster reinitializes shared
#    memory (restart_after_crash = on); with the clock 10 s back and max_lead
#    large, IDs go on above every ID committed before.
# 5. A crash right after a checkpoint, with no ID issued between: WAL replay
#    has no bound record, and the state file alone gives the bound; with the
#    clock 10 s back, the first ID is above every one before.
use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $node = SnowflakeTest::init_node(
	'restart',
	faketime => 1,
	conf => ['restart_after_crash = on']);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE seen (n bigserial PRIMARY KEY, id bigint NOT NULL);
});
SnowflakeTest::create_id_writers($node);

sub highest
{
	return $node->safe_psql('postgres',
		'SELECT greatest((SELECT max(id) FROM ids), (SELECT max(id) FROM seen))');
}

# Runs $count writers for $batches batches of 100 and waits for them.
sub write_ids
{
	my ($count, $batches, $first) = @_;
	my @handles = SnowflakeTest::start_writers($node, $count,
		batch => 100, max_batches => $batches, first => $first);
	my $failed = grep { !$_->{ok} } map { SnowflakeTest::finish_sql($_) } @handles;
	return $failed;
}

# The first snowflake_nextval() after a restart, with the node's policy as it
# is: it must fail with 55000 (clock behind) or return an ID above $highest.
sub first_id_after
{
	my ($label, $highest, $expect_refusal) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $start = time;
	my $result = SnowflakeTest::try_sql($node,
		'INSERT INTO seen (id) SELECT snowflake_nextval() RETURNING id');
	my $took = time - $start;
	if ($result->{ok})
	{
		cmp_ok($result->{stdout}, '>', $highest,
			"$label: the first ID is above every ID issued before ($highest)");
	}
	else
	{
		is($result->{sqlstate}, '55000', "$label: or it refuses with SQLSTATE 55000")
		  or diag "stderr: $result->{stderr}";
	}
	if (defined $expect_refusal)
	{
		is($result->{ok} ? 'issued' : 'refused',
			$expect_refusal ? 'refused' : 'issued',
			$label . ': ' . ($expect_refusal ? 'refused (clock behind)' : 'issued'))
		  or diag "stdout: $result->{stdout}\nstderr: $result->{stderr}";
	}
	note sprintf('%s: first snowflake_nextval() %s after %.3f s%s', $label,
		$result->{ok} ? 'returned' : 'failed', $took,
		$result->{ok} ? '' : ": $result->{message}");
	return $result;
}

# --- 0. clean restart on the right clock ---

is(write_ids(2, 10), 0, 'two writers issue IDs');
my $highest = highest();
SnowflakeTest::restart_node($node);
first_id_after('clean restart, clock right', $highest, 0);

# --- 1. clean restart with the clock set back 10 s ---

is(write_ids(2, 10, 3), 0, 'two more writers issue IDs');
$highest = highest();
$node->stop;
ok(-f $node->data_dir . '/pg_snowflake/state', 'the state file pg_snowflake/state exists');
SnowflakeTest::set_clock_offset($node, -10);
SnowflakeTest::start_node($node);
first_id_after('clean restart, clock 10 s back, defaults', $highest, 1);
SnowflakeTest::set_config($node, 'snowflake.max_lead' => '60s');
first_id_after('clean restart, clock 10 s back, max_lead 60 s', $highest, 0);
is(write_ids(2, 10, 5), 0, 'writers issue IDs, ahead of the clock');
is( $node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE b IN (5, 6) AND id <= $highest"),
	0, 'all of them above every ID issued before the restart');

# --- 2. crash while IDs are committed, restart with the clock 10 s back ---

SnowflakeTest::set_config($node, 'snowflake.max_lead' => undef);
SnowflakeTest::set_clock_offset($node, 0);
my @writers = SnowflakeTest::start_writers($node, 3, batch => 100, first => 11);
# A client that asks for IDs one statement at a time: what it printed is what
# the server returned before the crash, committed or not.
my $reader = SnowflakeTest::start_sql($node,
	"SELECT snowflake_nextval();\n" x 50000, name => 'reader');
ok( $node->poll_query_until('postgres',
		'SELECT count(*) = 3 FROM (SELECT b FROM ids WHERE b > 10 GROUP BY b HAVING count(*) >= 1000) s'),
	'three writers are committing IDs');
my $killed = SnowflakeTest::crash_node($node);
note "crash: $killed server processes killed with SIGKILL";
my @ended = map { SnowflakeTest::finish_sql($_) } @writers, $reader;
ok(!(grep { $_->{ok} } @ended), 'the sessions lost their server');
my @read = grep { /^\d+$/ } split /\n/, $ended[-1]{stdout};
my ($read_max) = sort { $b <=> $a } @read, 0;
note sprintf('the reader received %d IDs before the crash', scalar @read);

SnowflakeTest::set_clock_offset($node, -10);
my $start = time;
SnowflakeTest::start_node($node);
note sprintf('crash recovery and start took %.1f s', time - $start);
$highest = highest();
$highest = $read_max if $read_max > $highest;
note "highest ID committed or returned before the crash: $highest";
SnowflakeTest::check_ids($node, 'ids', 'committed before the crash');
first_id_after('crash, clock 10 s back, defaults', $highest, 1);
SnowflakeTest::set_config($node, 'snowflake.max_lead' => '60s');
first_id_after('crash, clock 10 s back, max_lead 60 s', $highest, 0);
is(write_ids(3, 10, 21), 0, 'writers issue IDs after the crash');
is( $node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE b > 20 AND id <= $highest"),
	0, 'none at or below the highest ID from before the crash');

# --- 3. crash with the clock right, defaults: how long the first ID takes ---

SnowflakeTest::set_config($node, 'snowflake.max_lead' => undef);
SnowflakeTest::set_clock_offset($node, 0);
@writers = SnowflakeTest::start_writers($node, 2, batch => 100, first => 31);
ok( $node->poll_query_until('postgres',
		'SELECT count(*) = 2 FROM (SELECT b FROM ids WHERE b > 30 GROUP BY b HAVING count(*) >= 1000) s'),
	'two writers are committing IDs');
SnowflakeTest::crash_node($node);
SnowflakeTest::finish_sql($_) for @writers;
SnowflakeTest::start_node($node);
$highest = highest();
first_id_after('crash, clock right, defaults', $highest, 0);

# --- 4. a backend killed: the postmaster reinitializes shared memory ---

SnowflakeTest::set_config($node, 'snowflake.max_lead' => '60s');
@writers = SnowflakeTest::start_writers($node, 2, batch => 100, first => 41);
ok( $node->poll_query_until('postgres',
		'SELECT count(*) = 2 FROM (SELECT b FROM ids WHERE b > 40 GROUP BY b HAVING count(*) >= 1000) s'),
	'two writers are committing IDs');
SnowflakeTest::set_clock_offset($node, -10);
my $victim = SnowflakeTest::backend_pid($node, 'writer_41');
my $postmaster_started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my $log_offset = -s $node->logfile;
kill 'KILL', $victim;
SnowflakeTest::finish_sql($_) for @writers;
ok( $node->wait_for_log(
		qr/\(PID $victim\) was terminated by signal 9.*all server processes terminated; reinitializing/s,
		$log_offset),
	'the postmaster saw the backend killed and reinitialized');
SnowflakeTest::wait_until_accepting($node);
ok($node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'the server is back after reinitializing');
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$postmaster_started, 'the postmaster itself kept running');
$highest = highest();
first_id_after('backend killed, clock 10 s back, max_lead 60 s', $highest, 0);
is(write_ids(2, 10, 51), 0, 'writers issue IDs after the reinitialization');
is( $node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE b > 50 AND id <= $highest"),
	0, 'none at or below the highest ID committed before');

# --- 5. a crash after a checkpoint: the state file alone carries the bound ---
# WAL replay starts at the last checkpoint, so the bound records written
# before it are not replayed: the state file, written with each of them, is
# what tells the node its bound then.

SnowflakeTest::set_clock_offset($node, 0);
is(write_ids(2, 10, 61), 0, 'writers issue IDs, and stop');
$node->safe_psql('postgres', 'CHECKPOINT');
SnowflakeTest::crash_node($node);
SnowflakeTest::set_clock_offset($node, -10);
SnowflakeTest::start_node($node);
$highest = highest();
first_id_after('crash after a checkpoint, clock 10 s back, max_lead 60 s', $highest, 0);

# --- everything ---

SnowflakeTest::check_ids($node, 'ids', 'all writers');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM (SELECT id FROM ids UNION ALL SELECT id FROM seen) a GROUP BY id HAVING count(*) > 1'),
	'', 'no ID in the writers\' table and the single calls twice');
is( $node->safe_psql('postgres', q{
		SELECT durable_until > (SELECT max(snowflake_timestamp(id)) FROM ids)
		   AND durable_until > last_issued_at
		  FROM snowflake_status}),
	't', 'snowflake_status shows the durable bound after every ID issued');

$node->stop;
done_testing();
