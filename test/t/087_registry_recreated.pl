# Issue 44, items 3 and 4, in its words. Production A issues IDs; a restored
# copy C of it (a base backup taken while A ran, ended recovery on timeline
# 2, A's configuration: a successor by the claim rules) runs beside it, its
# clock replaying the seconds A issued in after the backup (libfaketime), and
# is refused while A renews.
#
#  3. The registry's database is dropped and made again while A and C run
#     (A's registry worker held up meanwhile, so that C reaches the empty
#     table first, as in the issue). The worker makes the table again by
#     itself, C claims the free row first. 1.7 saw nothing (the same system
#     identifier and timeline) and C issued at once, below IDs A still issued
#     under its lease: duplicates. Now both see another table OID than the
#     one they remember (pg_snowflake/registry: C's is A's, from the backup),
#     both log the WARNING, and C's claim starts at the floor (a lease after
#     the change, on the registry's clock): C issues nothing below it, and A,
#     its worker resumed, is fenced. No ID issued by both.
#     Then C stops: A issues again once C's lease has run out.
#  4. C started again is refused while A renews; A stops (releasing its row)
#     and starts 3 s later; C has taken the identity. A refuses every ID,
#     naming C's host, port and data directory, and its HINT says both
#     readings (a standby promoted in its place: rebuild this node; a
#     restored backup or copy started with its configuration: stop that one)
#     and when A issues again. C stops: A issues again within a lease.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

plan skip_all => 'libfaketime is not installed' unless SnowflakeTest::faketime_available();

my ($DATACENTER, $WORKER) = (1, 1);
my $LEASE_MS = 6000;
my ($registry, $conninfo) = SnowflakeTest::start_registry();
my @conf = ("snowflake.registry = '$conninfo'", "snowflake.registry_lease = '${LEASE_MS}ms'");
my $HISTORY = qr/WARNING:  the snowflake registry's history changed: it is system identifier \d+, timeline 1, table OID (\d+), and was system identifier \d+, timeline 1, table OID (\d+)/;

sub row { return SnowflakeTest::registry_row($registry, $DATACENTER, $WORKER, @_); }

sub signal_worker
{
	my ($node, $signal) = @_;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
	kill $signal, $pid or die "kill $signal $pid: $!";
	return;
}

# C's IDs (b >= 100) copied into A's table c_ids, and the IDs found in both.
sub shared_ids
{
	my ($a, $c) = @_;
	my $ids = $c->safe_psql('postgres', 'SELECT id FROM ids WHERE b >= 100');
	$a->safe_psql('postgres', 'CREATE TABLE IF NOT EXISTS c_ids (id bigint); TRUNCATE c_ids');
	my @ids = grep { length } split /\n/, $ids;
	while (my @part = splice(@ids, 0, 5000))
	{
		$a->safe_psql('postgres', 'INSERT INTO c_ids VALUES (' . join('), (', @part) . ')');
	}
	return (
		scalar(split /\n/, $ids),
		$a->safe_psql('postgres',
			'SELECT count(*) FROM ids JOIN c_ids USING (id) WHERE ids.b < 100'));
}

my $a = SnowflakeTest::init_node(
	'production',
	datacenter_id => $DATACENTER,
	worker_id => $WORKER,
	allows_streaming => 1,
	conf => \@conf);
SnowflakeTest::start_node($a);
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($a);
SnowflakeTest::wait_for_registry($a, "state = 'held'");
ok(-s $a->data_dir . '/pg_snowflake/registry', 'A remembers the registry (pg_snowflake/registry)');
my $table_before = $registry->safe_psql('registry',
	"SELECT 'snowflake_registry'::regclass::oid");

# The backup, then 3,000 IDs that C's clock will replay.
$a->backup('base');
my $backup_time = time;
for my $g (1 .. 10)
{
	$a->safe_psql('postgres',
		"INSERT INTO ids SELECT 1, $g * 1000 + g, snowflake_nextval() FROM generate_series(1, 300) g");
	usleep(150_000);
}

my $c = PostgreSQL::Test::Cluster->new('copy');
SnowflakeTest::remember_node($c);
$c->init_from_backup($a, 'base');
$c->append_conf('postgresql.conf', "restore_command = 'false'\n");
$c->set_recovery_mode;
SnowflakeTest::enable_faketime($c);
# Its clock reads the time of the backup: it replays the seconds A issued in.
SnowflakeTest::set_clock_offset($c, -(time - $backup_time) - 0.5);
SnowflakeTest::start_node($c);
$c->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the restored copy did not end recovery';
is($c->safe_psql('postgres', 'SELECT timeline_id FROM pg_control_checkpoint()'),
	'2', 'C: a restored copy of A on timeline 2');
SnowflakeTest::wait_for_registry($c, "state = 'conflict'", 'C: refused while A renews');

## 3. The registry's database dropped and made again -------------------------

my @writers = SnowflakeTest::start_writers($a, 2, batch => 20, max_batches => 10_000_000);
$a->poll_query_until('postgres', 'SELECT count(*) > 5000 FROM ids')
  or die 'A issues no IDs';
signal_worker($a, 'STOP');
$registry->safe_psql('postgres',
	'DROP DATABASE registry WITH (FORCE); CREATE DATABASE registry');
SnowflakeTest::wait_for_registry($c, "state = 'held'", 'C claims the free row of the table made again');
like(row('host'), qr/:${\ $c->port }$/, 'the row is C\'s');
my $table_after = $registry->safe_psql('registry', "SELECT 'snowflake_registry'::regclass::oid");
isnt($table_after, $table_before, 'the table made again has another OID');
like(slurp_file($c->logfile), $HISTORY, 'C: a WARNING says the registry\'s history changed');
my ($now_oid, $was_oid) = slurp_file($c->logfile) =~ $HISTORY;
is("$now_oid $was_oid", "$table_after $table_before", 'C: it names the two tables');
like(
	slurp_file($c->logfile),
	qr/LOG:  snowflake registry: claiming datacenter_id $DATACENTER, worker_id $WORKER above .*, as the registry's history changed at/,
	'C: claims the identity above the floor');
ok(SnowflakeTest::registry_status($c, 'registry_history_changed_at IS NOT NULL'),
	'C: registry_history_changed_at is set');

# C tries for two seconds; 1.7 issued at once, on the seconds A issued in.
my ($issued, $refused) = (0, 0);
my $last_error;
my $until = time + 2;
while (time < $until)
{
	my $r = SnowflakeTest::try_sql($c,
		'INSERT INTO ids SELECT 100, g, snowflake_nextval() FROM generate_series(1, 500) g');
	if ($r->{ok}) { $issued++; } else { $refused++; $last_error = $r; }
}
is($issued, 0, 'C issues nothing below the floor (its clock replays the past)');
like($last_error->{message},
	qr/^this node is taking snowflake identity datacenter_id $DATACENTER, worker_id $WORKER over from a holder the registry may have forgotten, whose IDs may run up to /,
	'C: the error says why') or diag explain $last_error;

signal_worker($a, 'CONT');
SnowflakeTest::wait_for_registry($a, "state = 'conflict'", 'A, its worker resumed, is fenced');
like(slurp_file($a->logfile), $HISTORY, 'A: a WARNING says the registry\'s history changed');
my @results = SnowflakeTest::stop_writers($a, @writers);
my ($c_count, $both) = shared_ids($a, $c);
is($both, 0, "no ID issued by both A and C ($c_count of C's)");

# C stops: A takes its identity back once C's lease has run out.
$c->stop('fast');
my $stopped = time;
my $r = SnowflakeTest::retry_sql($a, 'SELECT snowflake_nextval()', 3 * $LEASE_MS / 1000);
ok($r->{ok}, 'C stopped: A issues again') or diag explain $r;
my $waited = time - $stopped;
cmp_ok($waited, '<', $LEASE_MS / 1000 + 3, sprintf('within a lease (%.1f s)', $waited));

## 4. A restarts while C runs: the HINT says both readings --------------------

SnowflakeTest::start_node($c);
SnowflakeTest::wait_for_registry($c, "state = 'conflict'", 'C started again: refused while A renews');
$a->stop('fast');
SnowflakeTest::wait_for_registry($c, "state = 'held'", 'A stopped (released): C takes the identity');
usleep(3_000_000);
SnowflakeTest::start_node($a);
SnowflakeTest::wait_for_registry($a, "state = 'conflict'", 'A started 3 s later: refused');
$r = SnowflakeTest::try_sql($a, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'A refuses (55000)');
my $c_dir = $c->safe_psql('postgres', "SELECT current_setting('data_directory')");
my $c_host = qr/\S+:${\ $c->port }/;
like($r->{detail}, qr/held by $c_host \(data directory \Q$c_dir\E, system identifier \d+, timeline 2\)/,
	'the DETAIL names C\'s host, port and data directory');
like($r->{hint}, qr/^The node at $c_host \(data directory \Q$c_dir\E\) has this node's system identifier on a later timeline: either a standby promoted in this node's place \(then this node is the old primary: stop it, or rebuild it as a standby of the new primary\), or a restored backup or copy of this node started with its configuration \(then stop that one/,
	'the HINT says both readings, naming where C runs') or diag $r->{hint};
like($r->{hint}, qr/Once the node at $c_host stops, this node takes the identity back when its lease runs out, at most $LEASE_MS ms after its last renewal, and issues above its IDs\.$/,
	'the HINT says when A issues again');

($c_count, $both) = shared_ids($a, $c);
is($both, 0, "no ID issued by both A and C ($c_count of C's)");
$c->stop('fast');
$stopped = time;
$r = SnowflakeTest::retry_sql($a,
	'INSERT INTO ids SELECT 3, g, snowflake_nextval() FROM generate_series(1, 100) g',
	3 * $LEASE_MS / 1000);
ok($r->{ok}, 'C stopped: A issues again') or diag explain $r;
$waited = time - $stopped;
cmp_ok($waited, '<', $LEASE_MS / 1000 + 3, sprintf('within a lease (%.1f s)', $waited));
SnowflakeTest::check_ids($a, 'ids', 'A');
$a->stop('fast');
done_testing();
