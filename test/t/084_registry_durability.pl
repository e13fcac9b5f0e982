# What the registry can lose (issue 37, item 4). The protocol rests on the
# registry keeping every claim and renewal it acknowledged; one that fails
# over to an asynchronous standby hands rows back in an older state. The node
# cannot make the registry keep its commits; it does what a client can and
# says what it sees (src/pg/registry/durability.cpp):
#
#   - its worker's session commits with synchronous_commit = on, whatever the
#     registry database's default (here local): an audit trigger on the
#     registry table records the setting of the session that writes the row;
#   - a registry primary with a real streaming standby and no
#     synchronous_standby_names: snowflake_registry_status shows
#     'asynchronous standbys' (1 standby) and the node's log has exactly one
#     WARNING about it (with its DETAIL and HINT), however many probes ran;
#   - synchronous_standby_names set and reloaded: 'synchronous', and no new
#     WARNING; renewals go on (the standby confirms them);
#   - the synchronous standby stopped, synchronous_standby_names still set
#     (issue 47): the registry commits each renewal locally and waits for it;
#     within a second of a renewal's wait, and before the lease runs out,
#     snowflake_registry_status says registry_waits_for = 'synchronous
#     standbys' (and since when) and a WARNING says why, with how long the
#     lease has left; once it has run out, the error's HINT names the
#     standbys too. A renewal whose wait an administrator cancels on the
#     registry (committed there locally, with the registry's WARNING) is not
#     counted: the node stays without a lease while the registry's row says
#     renewed. The standby back: renewals are confirmed again, the status
#     clears, and a LOG line says after how long;
#   - synchronous_standby_names reset and the standby stopped: 'no standby',
#     no WARNING;
#   - the standby back and streaming: a second WARNING (a change again); the
#     registry primary stopped and its standby promoted, the node follows it
#     (two hosts in the connection string, target_session_attrs=read-write):
#     the registry's timeline changed, a WARNING says its history changed and
#     registry_history_changed_at is set; the node keeps its lease.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

my $LEASE_MS = 3000;    # the registry is probed every lease

my ($registry) = SnowflakeTest::start_registry(allows_streaming => 1);
$registry->safe_psql(
	'registry', SnowflakeTest::registry_table_sql() . q{
CREATE TABLE public.writes (synchronous_commit text, at timestamptz DEFAULT now());
CREATE FUNCTION public.record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.writes (synchronous_commit)
        VALUES (pg_catalog.current_setting('synchronous_commit'));
    RETURN NULL;
END $$;
CREATE TRIGGER record AFTER INSERT OR UPDATE ON public.snowflake_registry
    FOR EACH ROW EXECUTE FUNCTION public.record();
ALTER DATABASE registry SET synchronous_commit = local;
});
is($registry->safe_psql('registry', 'SHOW synchronous_commit'),
	'local', 'the registry database commits with synchronous_commit = local by default');

my $standby = SnowflakeTest::init_standby($registry, 'registry_standby');
$standby->start;
ok( $registry->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE state = 'streaming'"),
	'the registry has a streaming standby');

# The node reaches whichever of the two is the primary.
my $conninfo =
	'host=' . $registry->host . ',' . $standby->host
  . ' port=' . $registry->port . ',' . $standby->port
  . ' dbname=registry target_session_attrs=read-write';
my $node = SnowflakeTest::init_node(
	'node',
	datacenter_id => 1,
	worker_id => 5,
	conf => [
		"snowflake.registry = '$conninfo'",
		"snowflake.registry_lease = '${LEASE_MS}ms'"
	]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($node, "state = 'held'");

my $r;
sub warnings_of
{
	my ($pattern) = @_;
	my @found = slurp_file($node->logfile) =~ /$pattern/g;
	return scalar @found;
}
# The server log is written as the worker logs; a moment's margin anyway.
sub wait_for_warnings
{
	my ($pattern, $count) = @_;
	for (1 .. 100)
	{
		return 1 if warnings_of($pattern) >= $count;
		usleep(100_000);
	}
	return warnings_of($pattern) >= $count;
}
my $ASYNCHRONOUS = qr/WARNING:  the snowflake registry can lose the leases it acknowledged/;
my $HISTORY = qr/WARNING:  the snowflake registry's history changed/;

# Waits until the registry has recorded $count more writes of the worker's
# (claims and renewals: one every third of the lease, a probe every lease).
sub wait_for_writes
{
	my ($count, $label) = @_;
	my $writes = $registry->safe_psql('registry', 'SELECT count(*) FROM public.writes');
	ok( $registry->poll_query_until('registry',
			"SELECT count(*) >= $writes + $count FROM public.writes"),
		$label);
	return;
}

# --- an asynchronous standby ------------------------------------------------
SnowflakeTest::wait_for_registry($node,
	"registry_durability = 'asynchronous standbys' AND registry_standbys = 1");
wait_for_writes(9, 'three leases of renewals (three probes) later');
ok(wait_for_warnings($ASYNCHRONOUS, 1), 'a WARNING about the asynchronous standby');
is(warnings_of($ASYNCHRONOUS), 1, 'exactly one, after three probes');
like(
	slurp_file($node->logfile),
	qr/$ASYNCHRONOUS: 1 standby streams from it, not synchronously\n.*DETAIL:  The registry \(.*\) has an empty synchronous_standby_names\. A failover .*\n.*HINT:  Configure synchronous_standby_names on the registry \(with Patroni: synchronous_mode\)/,
	'the WARNING has its DETAIL and HINT');
is( $registry->safe_psql('registry',
		'SELECT string_agg(DISTINCT synchronous_commit, \', \') FROM public.writes'),
	'on',
	'the worker\'s session writes the row with synchronous_commit = on');
is(SnowflakeTest::registry_status($node, 'registry_history_changed_at IS NULL'),
	't', 'no history change seen');

# --- a synchronous standby --------------------------------------------------
$registry->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = 'registry_standby'");
$registry->reload;
ok( $registry->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'"),
	'the registry\'s standby is synchronous');
SnowflakeTest::wait_for_registry($node, "registry_durability = 'synchronous'");
wait_for_writes(6, 'renewals go on, confirmed by the synchronous standby');
is(SnowflakeTest::registry_status($node, 'state'), 'held', 'the node holds its lease');
is(warnings_of($ASYNCHRONOUS), 1, 'no new WARNING once the standby is synchronous');
like(slurp_file($node->logfile), qr/LOG:  snowflake registry: the registry \(.*\) is now synchronous/,
	'the log says the registry is now synchronous');

# --- the synchronous standby stopped, synchronous_standby_names still set ---
my $STALLED = qr/WARNING:  the snowflake registry has not confirmed this node's renewal for \d+ ms: it waits for its synchronous standbys/;
$standby->stop('fast');
my $stopped = time;
SnowflakeTest::wait_for_registry($node,
	"registry_waits_for = 'synchronous standbys' AND registry_waiting_since IS NOT NULL",
	'the status says the renewals wait for the synchronous standbys');
my $said = time - $stopped;
note sprintf('said %.1f s after the standby stopped (lease %d ms)', $said, $LEASE_MS);
ok(wait_for_warnings($STALLED, 1), 'a WARNING says the renewals wait for the synchronous standbys');
like(
	slurp_file($node->logfile),
	qr/$STALLED\n.*DETAIL:  The registry \(.*\) (committed the renewal locally and waits|holds the renewal behind another claim or renewal of its row \(registry process \d+\), which it committed locally and which waits) for the standbys of synchronous_standby_names \('registry_standby'\) to confirm it \(wait event SyncRep\), and 0 standbys stream from it\. This node issues IDs for \d+ ms more without a confirmed renewal\.\n.*HINT:  Start a standby that synchronous_standby_names names/,
	'with the registry\'s setting, its standbys, and the lease left: said before the lease ran out');
SnowflakeTest::wait_for_registry($node, "state = 'expired'", 'then the lease runs out');
$r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
like($r->{stderr}, qr/HINT:  The registry waits for its synchronous standbys/,
	'the refusal\'s HINT names the synchronous standbys');
is(warnings_of($STALLED), 1, 'one WARNING while the wait goes on, however many retries');

# An administrator cancels the waits on the registry: each commits there
# locally (the registry's WARNING says so) and answers; the node counts none.
my $renewed = SnowflakeTest::registry_status($node, 'renewed_at');
my $row_before = SnowflakeTest::registry_row($registry, 1, 5, 'renewed_at');
for (1 .. 40)
{
	$registry->safe_psql('postgres',
		"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
	usleep(100_000);
}
isnt(SnowflakeTest::registry_row($registry, 1, 5, 'renewed_at'),
	$row_before, 'the canceled waits renewed the row on the registry (locally)');
is(SnowflakeTest::registry_status($node, 'state || \' \' || renewed_at'),
	"expired $renewed", 'the node counted none of them: no lease, its renewal unchanged');
like(SnowflakeTest::registry_status($node, 'last_error'),
	qr/the registry committed the request locally but its synchronous standbys did not confirm it \(.*\): not counted/,
	'its last error says why');

$standby->start;
my $started = time;
SnowflakeTest::wait_for_registry($node, "state = 'held' AND registry_waits_for IS NULL",
	'the standby back: renewals are confirmed again');
note sprintf('renewed %.1f s after the standby started', time - $started);
like(slurp_file($node->logfile),
	qr/LOG:  snowflake registry: the registry answers again, after \d+ ms of waiting for synchronous standbys/,
	'a LOG line says so');
$r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
ok($r->{ok}, 'the node issues IDs') or diag $r->{stderr};

# --- no standby -------------------------------------------------------------
$registry->safe_psql('postgres', "ALTER SYSTEM RESET synchronous_standby_names");
$registry->reload;
$standby->stop('fast');
SnowflakeTest::wait_for_registry($node,
	"registry_durability = 'no standby' AND registry_standbys = 0");
wait_for_writes(6, 'renewals go on without a standby');
is(warnings_of($ASYNCHRONOUS), 1, 'no WARNING without a standby');

# --- the standby back, then promoted ----------------------------------------
$standby->start;
SnowflakeTest::wait_for_registry($node, "registry_durability = 'asynchronous standbys'");
ok(wait_for_warnings($ASYNCHRONOUS, 2),
	'a second WARNING when the asynchronous standby is back (a change again)');
$registry->wait_for_catchup($standby);
$registry->stop('fast');
$standby->promote;
SnowflakeTest::wait_for_registry($node, 'registry_history_changed_at IS NOT NULL',
	'the node saw the registry\'s history change');
ok(wait_for_warnings($HISTORY, 1), 'a WARNING says the registry\'s history changed');
is(warnings_of($HISTORY), 1, 'one');
like(
	slurp_file($node->logfile),
	qr/$HISTORY: it is system identifier (\d+), timeline 2, table OID (\d+), and was system identifier \1, timeline 1, table OID \2\n.*DETAIL:  The registry \(.*\) failed over, was restored, or its table was dropped and made again since/,
	'it names the timelines, and says what happened');
SnowflakeTest::wait_for_registry($node,
	"state = 'held' AND registry_durability = 'no standby'",
	'the node holds its lease from the promoted registry, which has no standby');
$r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
ok($r->{ok}, 'the node issues IDs') or diag $r->{stderr};

$node->stop('fast');
done_testing();
