# Two running postmasters must never pass for one holder (issue 37 item 3):
# a clone of a running node (a cloned VM, a volume snapshot started under the
# same pod name) has its system identifier, timeline, host name, port and
# data directory path. Here the clone is a snapshot of the original's data
# directory started on the same machine (so the same host name), at the same
# port (each listens only on a socket directory of its own, where the port's
# lock file lives), and at the same data directory path: both are started as
# `pg_ctl -D LINK`, LINK a symbolic link that names the original's directory
# when the original starts and the copy's when the clone starts
# (SnowflakeTest::start_node_at). PostgreSQL keeps -D as given, unresolved:
# it is data_directory, the path snowflake sends the registry. So the
# registry sees the same system identifier, timeline, host and
# data_directory from two running postmasters, as from a clone, with no
# namespace (which a chroot, as CI's roots are, cannot make: the test used to
# need unshare and skipped there).
#
# Each postmaster start draws a token (shared memory) that its claims carry:
# the same holder needs the same token. The clone is another claimant of the
# same data directory, so it may take the row only when it is expired,
# released or stale, which it is not while the original renews: it is
# refused (configured identity: state conflict, an error that says a clone
# or another postmaster of this data directory holds it), and the original
# keeps issuing. No ID is issued by both.
#
# Then the original is killed (kill -9, no release): once its row has not
# been renewed for two thirds of its lease (stale), the clone takes the
# identity over, above the floor the original's ids_before sets: still no ID
# issued by both.
#
# On the code before the fix the clone renewed the original's row as its own
# and both issued the same IDs.
use strict;
use warnings;

use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

my ($DATACENTER, $WORKER) = (1, 9);
my $LEASE_MS = 9000;
my ($registry, $conninfo) = SnowflakeTest::start_registry();

sub row
{
	return SnowflakeTest::registry_row($registry, $DATACENTER, $WORKER, @_);
}

my $original = SnowflakeTest::init_node(
	'original',
	datacenter_id => $DATACENTER,
	worker_id => $WORKER,
	conf => [
		"snowflake.registry = '$conninfo'",
		"snowflake.registry_lease = '${LEASE_MS}ms'",
		# Takes over above the floor at once once it holds (part 2).
		"snowflake.max_lead = '20s'"
	]);
# The data directory path both postmasters are started at.
my $path = PostgreSQL::Test::Utils::tempdir() . '/pgdata';
SnowflakeTest::start_node_at($original, $path);
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($original);
SnowflakeTest::wait_for_registry($original, "state = 'held'");

# The clone: the same port, its own socket directory, its data directory a
# snapshot of the original's taken while it runs.
my $clone = PostgreSQL::Test::Cluster->new('clone', port => $original->port, own_host => 1);
SnowflakeTest::remember_node($clone);
SnowflakeTest::snapshot_node($original, $clone->data_dir);
unlink $clone->data_dir . '/postmaster.opts';

# The link now names the copy; the original, which changed into its own
# directory as it started, runs on there.
SnowflakeTest::start_node_at($clone, $path, cluster_name => $original->name);

my $place = "SELECT current_setting('data_directory') || ' ' || current_setting('port')";
is($original->safe_psql('postgres', $place), $path . ' ' . $original->port,
	'the original reports the link as its data_directory');
is($clone->safe_psql('postgres', $place), $original->safe_psql('postgres', $place),
	'the clone has the original\'s data_directory and port');
my $lineage = 'SELECT system_identifier || \' \' || timeline_id '
  . 'FROM pg_control_system(), pg_control_checkpoint()';
is($clone->safe_psql('postgres', $lineage), $original->safe_psql('postgres', $lineage),
	'and its system identifier and timeline');
# Two postmasters, each with its own postmaster.pid (line 1, the pid) and
# shared memory key (line 7), both naming the one data directory (line 2).
my $pidfile = "SELECT pg_read_file('postmaster.pid')";
my @original_pid = split /\n/, $original->safe_psql('postgres', $pidfile);
my @clone_pid = split /\n/, $clone->safe_psql('postgres', $pidfile);
isnt($clone_pid[0], $original_pid[0], 'two postmasters run');
is($clone_pid[1], $original_pid[1], 'their postmaster.pid files name one data directory');
isnt($clone_pid[6], $original_pid[6], 'their shared memory keys differ');

## 1. Both run: the clone is refused, the original keeps issuing -------------

my @original_writers = SnowflakeTest::start_writers($original, 2, batch => 20);
my @clone_writers = SnowflakeTest::start_writers($clone, 2, batch => 20, first => 11);
my $deadline = time + 3 * $LEASE_MS / 1000;
my $original_before = $original->safe_psql('postgres', 'SELECT count(*) FROM ids');
usleep(100_000) while time < $deadline;

is(SnowflakeTest::registry_status($original, 'state'), 'held',
	'after three leases beside the clone, the original still holds its identity');
my $original_after = $original->safe_psql('postgres', 'SELECT count(*) FROM ids');
cmp_ok($original_after, '>', $original_before + 1000, 'and keeps issuing IDs');
my @clone_results = SnowflakeTest::stop_writers($clone, @clone_writers);
is(scalar(grep { ($_->{sqlstate} // '') eq '55000' } @clone_results),
	2, 'the clone\'s writers were refused (55000)');
is(SnowflakeTest::registry_status($clone, 'state'), 'conflict',
	'the clone\'s registry state is conflict');
# What the registry holds: the original's host (host name and port) and the
# path both were started at, which the clone sends as its own too (the hint
# below says so).
my $hostname = (POSIX::uname())[1];    # gethostname()
is(row("host || ' ' || data_directory"), "$hostname:" . $original->port . " $path",
	'the registry row names the host name, port and link path');
my $r = SnowflakeTest::try_sql($clone, 'SELECT snowflake_nextval()');
like(
	$r->{message},
	qr/^snowflake identity datacenter_id $DATACENTER, worker_id $WORKER is held by another node$/,
	'the clone: the identity is held by another node');
like($r->{hint}, qr/^Another running server started from this data directory holds it/,
	'the clone: the hint says another server of this data directory holds it')
  or diag $r->{stderr};
is( $clone->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE b > 10'),
	'0', 'the clone issued no ID');

## 2. The original dies without releasing: the clone takes over once stale --

SnowflakeTest::stop_writers($original, @original_writers);
SnowflakeTest::crash_node($original);
my $renewed = row('renewed_at');
SnowflakeTest::wait_for_registry($clone, "state = 'held'",
	'the clone takes the identity over once the original stopped renewing');
my $waited = $registry->safe_psql('registry',
	"SELECT floor(extract(epoch FROM claimed_at - '$renewed'::timestamptz) * 1000)::bigint "
	  . "FROM snowflake_registry WHERE datacenter_id = $DATACENTER AND worker_id = $WORKER");
cmp_ok($waited, '>=', 2 * $LEASE_MS / 3,
	"not before the row was stale (two thirds of the lease after the last renewal: $waited ms)");
cmp_ok($waited, '<', $LEASE_MS, 'before the lease expired');
# Its IDs start above the original's ids_before: up to a lease plus
# max_lead after the original's last renewal, less its own max_lead.
my $retry_until = time + 30;
$r = SnowflakeTest::try_sql($clone, 'SELECT snowflake_nextval()');
while (!$r->{ok} && time < $retry_until)
{
	usleep(200_000);
	$r = SnowflakeTest::try_sql($clone, 'SELECT snowflake_nextval()');
}
ok($r->{ok}, 'the clone issues once its clock nears the floor') or diag $r->{stderr};
@clone_writers = SnowflakeTest::start_writers($clone, 2, batch => 20, first => 11);
$clone->poll_query_until('postgres', 'SELECT count(*) > 1000 FROM ids WHERE b > 10')
  or diag 'the clone issued too few IDs';
SnowflakeTest::stop_writers($clone, @clone_writers);

## Every ID of both, once -----------------------------------------------------

# The original, started again at the path (the link names its directory
# again, the clone runs on in its own; a new postmaster, so a new token), is
# another claimant too while the clone renews; its table keeps the IDs it
# issued.
SnowflakeTest::start_node_at($original, $path);
my $clone_count = $clone->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE b > 10');
cmp_ok($clone_count, '>', 1000, 'the clone issued IDs once it held the identity');
# The clone's IDs next to the original's, compared there.
my $clone_ids =
  $clone->safe_psql('postgres', q{SELECT string_agg(id::text, ',') FROM ids WHERE b > 10});
$original->safe_psql('postgres',
	"CREATE TABLE clone_ids AS SELECT unnest('{$clone_ids}'::bigint[]) AS id");
my $both = $original->safe_psql('postgres',
	'SELECT count(*) FROM ids JOIN clone_ids USING (id) WHERE ids.b <= 10');
is($both, '0', 'no ID issued by both the original and its clone')
  or diag $original->safe_psql('postgres',
	'SELECT id, snowflake_decode(id) FROM ids JOIN clone_ids USING (id) LIMIT 10');
note 'original: ' . $original->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE b <= 10')
  . " IDs, clone: $clone_count IDs";
SnowflakeTest::check_ids($original, 'ids', 'the original');
SnowflakeTest::wait_for_registry($original, "state = 'conflict'",
	'the original, restarted while the clone holds the identity, is refused');

$clone->stop('fast');
$original->stop('fast');
done_testing();
