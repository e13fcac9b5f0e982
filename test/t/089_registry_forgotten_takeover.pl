# A holder renewing a row whose takeover the registry forgot (the case 1.7
# left open, issue 44 item 3). The registry is a primary with a streaming
# standby that stops receiving; node A holds datacenter_id 3, worker_id 2,
# node D (another system, the same identity configured) is refused.
#
# A's registry worker stops (SIGSTOP) right after a renewal: its lease runs
# out, and D takes the identity over once the row has expired, above A's
# ids_before, and issues; D's worker then stops too (its backends issue under
# the lease of its claim). The registry's primary is killed and its standby,
# which never received A's last renewals nor D's takeover, is promoted: there
# the row is still A's. A's worker resumes and renews that row as its holder.
#
# 1.7 let A go on as if nothing had happened: its IDs past the cap of its
# last renewal are the ones D issues above its floor, and both issued the
# same IDs until D's next renewal. Now A sees the registry's new timeline,
# and under the lease it holds skips the gap from its cap of the moment to
# the floor of the change (a lease after it, on the registry's clock): its
# IDs there wait, and no ID is issued by both.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

my ($DATACENTER, $WORKER) = (3, 2);
my $LEASE_MS = 12000;

my ($registry) = SnowflakeTest::start_registry(allows_streaming => 1);
my $standby = SnowflakeTest::init_standby($registry, 'registry_standby');
$standby->start;
$registry->wait_for_catchup($standby);
my $conninfo =
	'host=' . $registry->host . ',' . $standby->host
  . ' port=' . $registry->port . ',' . $standby->port
  . ' dbname=registry target_session_attrs=read-write';
my @conf = ("snowflake.registry = '$conninfo'", "snowflake.registry_lease = '${LEASE_MS}ms'");

sub row { return SnowflakeTest::registry_row($registry, $DATACENTER, $WORKER, @_); }

sub signal_worker
{
	my ($node, $signal) = @_;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
	kill $signal, $pid or die "kill $signal $pid: $!";
	return $pid;
}

my $a = SnowflakeTest::init_node('a', datacenter_id => $DATACENTER, worker_id => $WORKER, conf => \@conf);
SnowflakeTest::start_node($a);
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($a);
SnowflakeTest::wait_for_registry($a, "state = 'held'");
my $d = SnowflakeTest::init_node('d', datacenter_id => $DATACENTER, worker_id => $WORKER, conf => \@conf);
SnowflakeTest::start_node($d);
$d->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($d);
SnowflakeTest::wait_for_registry($d, "state = 'conflict'");
$registry->wait_for_catchup($standby);
$standby->stop('fast');

# A's worker stops right after a renewal the standby never receives.
my @a_writers = SnowflakeTest::start_writers($a, 2, batch => 20, max_batches => 10_000_000);
my $renewed = row('renewed_at');
ok( $registry->poll_query_until('registry',
		"SELECT renewed_at > '$renewed' FROM snowflake_registry WHERE datacenter_id = $DATACENTER AND worker_id = $WORKER"),
	'A renews on the primary alone');
my $a_worker = signal_worker($a, 'STOP');
my $a_cap = row('floor(extract(epoch FROM ids_before) * 1000)::bigint');

# D takes the identity over once A's row has expired, and issues.
SnowflakeTest::wait_for_registry($d, "state = 'held'", 'D takes the expired identity over');
my @d_writers = SnowflakeTest::start_writers($d, 2, batch => 20, max_batches => 10_000_000, first => 100);
$d->poll_query_until('postgres', 'SELECT count(*) > 1000 FROM ids WHERE b >= 100')
  or die 'D issues no IDs';
my $d_worker = signal_worker($d, 'STOP');
like(row('host'), qr/:${\ $d->port }$/, 'the row is D\'s on the primary');
cmp_ok(row('floor(extract(epoch FROM inherited_ids_before) * 1000)::bigint'), '>=', $a_cap,
	'D inherits A\'s ids_before');

# The registry fails over to the standby that missed all that.
$registry->stop('immediate');
$standby->start;
$standby->promote;
like($standby->safe_psql('registry',
		"SELECT host FROM snowflake_registry WHERE datacenter_id = $DATACENTER AND worker_id = $WORKER"),
	qr/:${\ $a->port }$/, 'the promoted registry has the row A\'s, as it was');

# A resumes: it renews the row the registry gave back, as its holder.
kill 'CONT', $a_worker;
SnowflakeTest::wait_for_registry($a, "state = 'held' AND registry_history_changed_at IS NOT NULL",
	'A sees the new timeline and renews its row');
like(slurp_file($a->logfile),
	qr/WARNING:  the snowflake registry's history changed: it is system identifier (\d+), timeline 2, table OID (\d+), and was system identifier \1, timeline 1, table OID \2\n.*\n.*HINT:  .*; under the lease it holds on datacenter_id $DATACENTER, worker_id $WORKER, it issues no ID from .* \(its limit when it saw the change\) to then\./,
	'A: the WARNING names the gap it skips');

# Both try to issue for a while: D under the lease of its forgotten claim
# (its writers), A under its renewal.
my ($issued, $last) = (0, undef);
my $until = time + $LEASE_MS / 1000 / 2;
while (time < $until)
{
	$last = SnowflakeTest::try_sql($a,
		'INSERT INTO ids SELECT 10, (SELECT coalesce(max(g), 0) FROM ids WHERE b = 10) + g, '
		  . 'snowflake_nextval() FROM generate_series(1, 200) g');
	$issued++ if $last->{ok};
}
is($issued, 0, 'A issues nothing in the gap, while D may still issue there');
like($last->{message}, qr/^snowflake identity datacenter_id $DATACENTER, worker_id $WORKER skips the IDs a holder the registry forgot may have issued, up to /,
	'A: the error says why') or diag explain $last;
kill 'CONT', $d_worker;
SnowflakeTest::wait_for_registry($d, "state = 'conflict'", 'D, resumed, is fenced by A\'s row');
SnowflakeTest::stop_writers($d, @d_writers);
SnowflakeTest::stop_writers($a, @a_writers);
my $r = SnowflakeTest::retry_sql($a,
	'INSERT INTO ids SELECT 11, g, snowflake_nextval() FROM generate_series(1, 200) g',
	3 * $LEASE_MS / 1000);
ok($r->{ok}, 'A issues again past the gap') or diag explain $r;

my $ids = $d->safe_psql('postgres', 'SELECT id FROM ids');
$a->safe_psql('postgres', 'CREATE TABLE d_ids (id bigint)');
my @ids = grep { length } split /\n/, $ids;
while (my @part = splice(@ids, 0, 5000))
{
	$a->safe_psql('postgres', 'INSERT INTO d_ids VALUES (' . join('), (', @part) . ')');
}
my $d_count = $a->safe_psql('postgres', 'SELECT count(*) FROM d_ids');
cmp_ok($d_count, '>', 0, "D issued IDs under its forgotten takeover ($d_count)");
is($a->safe_psql('postgres', 'SELECT count(*) FROM ids JOIN d_ids USING (id)'),
	'0', 'no ID issued by both A and D');
SnowflakeTest::check_ids($a, 'ids', 'A');

$a->stop('fast');
$d->stop('fast');
done_testing();
