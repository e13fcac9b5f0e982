# A registry that stops answering never slows snowflake_nextval() while the
# lease is valid (issue 11, part 2; doc/high-availability.md, "The registry
# across network partitions").
#
# The registry server and a node, each in a network namespace of its own. The
# registry's postmaster and every backend are stopped with SIGSTOP for 5 s,
# right after a renewal: the node's connection stays open, its next renewal
# (sent 1/3 lease later) gets no answer and fails at its deadline (1/4
# lease). The lease (8 s: the node may issue until 7.2 s after its last
# accepted renewal) outlives the stall, so the node must issue throughout,
# and no call may wait for the registry: backends never talk to it, they read
# what the worker published in shared memory. The bound asserted, 1 s per
# call against a 5 s stall, cannot be reached by scheduling noise; the figure
# measured is printed.
use strict;
use warnings;

use Netns;
use NetnsPostgres;
use PartitionDrill;
use Test::More;
use Time::HiRes qw(time sleep);

Netns::guard_process(80);

my $LEASE = 8;    # renewals every 2.67 s, each request given 2 s
my $STALL = 5;

my $lab = Netns->new;
my ($registry, $conninfo) = PartitionDrill::registry($lab, 57030);
my $node = PartitionDrill::node($lab, 'a', 2, 57031,
	"snowflake.registry = '$conninfo'",
	"snowflake.registry_lease = '${LEASE}s'",
	'snowflake.datacenter_id = 1',
	'snowflake.worker_id = 3');
PartitionDrill::wait_status($node, "state = 'held'", 10, 'holds its identity');
$node->psql(<<'SQL');
-- Calls snowflake_nextval() for `seconds`, a millisecond apart; the number
-- of calls and the longest one.
CREATE FUNCTION nextval_latency(seconds float8, OUT calls bigint, OUT max_ms float8)
LANGUAGE plpgsql AS $$
DECLARE
	stop_at timestamptz := clock_timestamp() + seconds * interval '1 s';
	started timestamptz;
BEGIN
	calls := 0;
	max_ms := 0;
	WHILE clock_timestamp() < stop_at LOOP
		started := clock_timestamp();
		PERFORM snowflake_nextval();
		max_ms := greatest(max_ms, extract(epoch FROM clock_timestamp() - started) * 1000);
		calls := calls + 1;
		PERFORM pg_sleep(0.001);
	END LOOP;
END $$;
SQL

# Right after a renewal, so that the next one falls inside the stall.
my $renewed = PartitionDrill::registry_row($registry, 1, 3, 'renewed_at');
$registry->poll("SELECT renewed_at > '$renewed' FROM snowflake_registry WHERE worker_id = 3",
	10, dbname => 'registry')
  or BAIL_OUT('the node does not renew its lease');
my $frozen_at = time;
my $processes = $registry->freeze;
note "registry stopped: $processes processes";
my $measuring = $node->start_psql(
	sprintf('SELECT calls, max_ms FROM nextval_latency(%.1f)', $STALL - 0.5));

# The node's worker notices: its renewal gets no answer within 2 s.
my $seen_error;
while (!$seen_error && time < $frozen_at + $STALL + 1)
{
	my ($state, $error) = split /\|/,
	  PartitionDrill::status($node, "state, coalesce(last_error, '')");
	$seen_error = $error if $error =~ /did not answer/;
	sleep(0.05);
}
my $wait = $frozen_at + $STALL - time;
sleep($wait) if $wait > 0;
$registry->thaw;
my $thawed_at = time;

my $r = NetnsPostgres::finish_psql($measuring);
ok($r->{ok}, 'snowflake_nextval() never refused during the stall') or diag $r->{stderr};
my ($calls, $max_ms) = split /\|/, $r->{stdout};
is($seen_error, 'the registry did not answer within 2000 ms',
	'the worker\'s renewal got no answer (the registry was really stalled)');
cmp_ok($calls, '>', 100, "$calls calls during the stall");
cmp_ok($max_ms, '<', 1000, sprintf('the slowest call took %.3f ms, far below the %d s stall', $max_ms, $STALL));

PartitionDrill::wait_status($node, "state = 'held' AND last_error IS NULL AND renewed_at > to_timestamp($thawed_at)",
	5, 'renews once the registry answers again');

diag sprintf('figures (lease %d s, registry stopped for %.1f s): %d calls of snowflake_nextval() during the stall, the slowest %.3f ms',
	$LEASE, $thawed_at - $frozen_at, $calls, $max_ms);

$_->stop('fast') for ($node, $registry);
done_testing();
