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
#   - the standby stopped: 'no standby', no WARNING;
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
use Time::HiRes qw(usleep);

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
my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
ok($r->{ok}, 'the node issues IDs') or diag $r->{stderr};

$node->stop('fast');
done_testing();
