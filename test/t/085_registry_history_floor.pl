# A registry that fails over to an asynchronous standby forgets renewals it
# acknowledged (issue 37, item 4). Node A holds datacenter_id 1, worker_id 1
# and renews on the registry primary while the registry's standby is stopped;
# node B, configured with the same identity, is refused and keeps asking. A's
# registry worker then stops (SIGSTOP: its backends may still issue under the
# lease it renewed last), the registry primary is stopped and its standby,
# which never received A's last renewals, is promoted. There A's row is
# expired, its ids_before long past: B takes the identity over at once.
#
# B saw the registry's history change (timeline 1, then 2) before it claimed,
# so it starts at least a lease (the registry's longest) plus its max_lead
# after it saw the change (src/core/registry_history.hpp): above the
# ids_before of A's last renewal, which only the lost primary had, and above
# every ID A issued. Without that floor B would start at its clock, below
# what A may still issue.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my $LEASE_MS = 15000;

my ($registry) = SnowflakeTest::start_registry(allows_streaming => 1);
my $standby = SnowflakeTest::init_standby($registry, 'registry_standby');
$standby->start;
$registry->wait_for_catchup($standby);

my $conninfo =
	'host=' . $registry->host . ',' . $standby->host
  . ' port=' . $registry->port . ',' . $standby->port
  . ' dbname=registry target_session_attrs=read-write';
my @conf = (
	"snowflake.registry = '$conninfo'",
	"snowflake.registry_lease = '${LEASE_MS}ms'");
my $a = SnowflakeTest::init_node('a', datacenter_id => 1, worker_id => 1, conf => \@conf);
SnowflakeTest::start_node($a);
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($a, "state = 'held'");
my $b = SnowflakeTest::init_node('b', datacenter_id => 1, worker_id => 1, conf => \@conf);
SnowflakeTest::start_node($b);
$b->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($b, "state = 'conflict'");
SnowflakeTest::wait_for_registry($b, "registry_durability = 'asynchronous standbys'");
$registry->wait_for_catchup($standby);

# The standby stops receiving: A's renewals from now on are the primary's alone.
$standby->stop('fast');
my $stopped = $registry->safe_psql('registry',
	'SELECT renewed_at FROM snowflake_registry WHERE datacenter_id = 1 AND worker_id = 1');
# Until the row the standby has is expired (a lease after its last renewal).
ok( $registry->poll_query_until('registry',
		"SELECT now() > '$stopped'::timestamptz + interval '$LEASE_MS ms' + interval '2 s'"),
	'a lease and more of renewals the standby never received');

# A's registry worker stops right after a renewal; A issues under its lease.
my $renewed = $registry->safe_psql('registry',
	'SELECT renewed_at FROM snowflake_registry WHERE datacenter_id = 1 AND worker_id = 1');
ok( $registry->poll_query_until('registry',
		"SELECT renewed_at > '$renewed' FROM snowflake_registry WHERE datacenter_id = 1 AND worker_id = 1"),
	'A renews');
my $worker_pid = $a->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
ok(kill('STOP', $worker_pid), "A's registry worker stopped");
my $a_ids_before = $registry->safe_psql('registry',
	'SELECT floor(extract(epoch FROM ids_before) * 1000)::bigint FROM snowflake_registry WHERE datacenter_id = 1 AND worker_id = 1'
);
my $a_last = SnowflakeTest::id_ms($a, 'SELECT snowflake_nextval()');
ok($a_last < $a_ids_before, 'A issues under the lease it renewed last');

# The registry fails over to the standby that missed those renewals.
$registry->stop('immediate');
$standby->start;
$standby->promote;
my $lost = $standby->safe_psql('registry',
	'SELECT floor(extract(epoch FROM ids_before) * 1000)::bigint FROM snowflake_registry WHERE datacenter_id = 1 AND worker_id = 1'
);
ok($lost < $a_ids_before, "the promoted registry forgot A's last renewals (its ids_before is older)");

SnowflakeTest::wait_for_registry($b, 'registry_history_changed_at IS NOT NULL',
	"the registry's history changed");
SnowflakeTest::wait_for_registry($b, "state = 'held'", 'B takes the identity over');
ok( $b->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
	'B issues once its clock reaches its floor');
my $b_first = SnowflakeTest::id_ms($b, 'SELECT snowflake_nextval()');
cmp_ok($b_first, '>=', $a_ids_before,
	"B's IDs start above the ids_before of A's last renewal, which the new registry forgot");
cmp_ok($b_first, '>', $a_last, "B's IDs start above A's");
like(slurp_file($b->logfile),
	qr/LOG:  snowflake registry: claiming datacenter_id 1, worker_id 1 above .*, as the registry's history changed at/,
	'B says why it starts there');

kill('CONT', $worker_pid);
$a->stop('fast');
$b->stop('fast');
done_testing();
