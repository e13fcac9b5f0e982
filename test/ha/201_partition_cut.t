# The registry across a real network partition (issue 11, part 2;
# doc/high-availability.md, "The registry across network partitions").
#
# The registry server and two nodes, A and B, each in a network namespace of
# its own, joined by a bridge. Both are configured with the same identity
# (datacenter_id 1, worker_id 2): A holds it, B is refused. Then A's switch
# port goes down while A issues IDs: its packets vanish, its connection to the
# registry hangs. The lease rule (doc/registry.md, "When the registry is
# unreachable") says:
#   - A issues until T + 0.9 lease (T: when it sent its last renewal the
#     registry accepted, so at most 0.9 lease after the cut), then refuses with
#     "snowflake identity lease ... has expired";
#   - B gets the identity only once the lease has expired on the registry's
#     clock, and its IDs are above every ID of A;
#   - when the partition heals, A learns that B holds the identity and stays
#     refused.
# The figures (cut to refusal, cut to takeover, heal to refusal) are printed
# as diagnostics; doc/high-availability.md quotes them.
use strict;
use warnings;

use Netns;
use NetnsPostgres;
use PartitionDrill;
use Test::More;
use Time::HiRes qw(time sleep);

Netns::guard_process(100);

my $LEASE = 6;    # seconds: renewals every 2 s, each request given 1.5 s
my ($DATACENTER, $WORKER) = (1, 2);

my $lab = Netns->new;
my ($registry, $conninfo) = PartitionDrill::registry($lab, 57010);
my @conf = (
	"snowflake.registry = '$conninfo'",
	"snowflake.registry_lease = '${LEASE}s'",
	"snowflake.datacenter_id = $DATACENTER",
	"snowflake.worker_id = $WORKER");
my $node_a = PartitionDrill::node($lab, 'a', 2, 57011, @conf);
PartitionDrill::wait_status($node_a, "state = 'held'", 10, 'holds the identity');
my $node_b = PartitionDrill::node($lab, 'b', 3, 57012, @conf);
PartitionDrill::wait_status($node_b, "state = 'conflict'", 10, 'is refused: A holds the identity');
my $r = $node_b->try_psql('SELECT snowflake_nextval()');
is($r->{message},
	"snowflake identity datacenter_id $DATACENTER, worker_id $WORKER is held by another node",
	'B: snowflake_nextval() says the identity is held by another node');
like($r->{detail}, qr/held by \S+:57011 /, 'B: the detail names A');

## The cut ----------------------------------------------------------------------

my $issuing_a = $node_a->start_psql('CALL issue(30, true)');
$node_a->poll('SELECT count(*) > 50 FROM issued', 10) or BAIL_OUT('A issues no IDs');
my $cut = time;
$lab->cut('a');
my $taking_b = $node_b->start_psql('CALL issue(30, false, 1)');

my $hang = PartitionDrill::tcp_hangs($lab, 'a', $lab->address('reg'), 57010);
cmp_ok($hang, '>=', 1.9, sprintf('cut: a new connection from A to the registry hangs (timed out after %.1f s)', $hang));
# No renewal of A can reach the registry from now on: its row's lease is final.
my $expires = PartitionDrill::registry_row($registry, $DATACENTER, $WORKER,
	'extract(epoch FROM expires_at)');
my $ids_before = PartitionDrill::registry_row($registry, $DATACENTER, $WORKER,
	'extract(epoch FROM ids_before)');

$r = NetnsPostgres::finish_psql($issuing_a);
ok($r->{ok}, 'A: the issuing loop ended on a refusal') or diag $r->{stderr};
my ($refused_at, $sqlstate, $message, $detail) = split /\|/,
  $node_a->psql('SELECT extract(epoch FROM at), sqlstate, message, detail FROM refused');
my ($last_id, $last_id_at, $after_cut) = split /\|/, $node_a->psql(
	"SELECT max(id), extract(epoch FROM snowflake_timestamp(max(id))),
	        count(*) FILTER (WHERE at > to_timestamp($cut)) FROM issued");
my $valid_until = PartitionDrill::epoch($node_a,
	'(SELECT valid_until FROM snowflake_registry_status())');

is($sqlstate, '55000', 'A: refused with SQLSTATE 55000');
is($message, "snowflake identity lease for datacenter_id $DATACENTER, worker_id $WORKER has expired",
	'A: the error says its lease has expired');
like($detail, qr/A node issues IDs only until 5400 ms after it sent the last renewal the registry accepted/,
	'A: the detail states the rule (0.9 of the 6 s lease)');
like($detail, qr/Last registry error: the registry did not answer within 1500 ms/,
	'A: the last registry error is a hang (no answer), not a refusal');
cmp_ok($after_cut, '>', 0, "A: issued $after_cut IDs while cut, on its lease");
cmp_ok($last_id_at, '<=', $valid_until + 0.001,
	'A: its last ID is no later than its lease rule allows (valid_until)');
cmp_ok($valid_until, '<=', $expires - $LEASE / 10 + 0.05,
	'A: valid_until is at least a tenth of the lease before the registry lets the identity go');
cmp_ok($last_id_at, '<=', $cut + 0.9 * $LEASE,
	'A: no ID later than 0.9 lease after the cut');
cmp_ok($refused_at - $cut, '>=', 0.9 * $LEASE - $LEASE / 3 - 1,
	'A: kept issuing on its lease through most of it (not refused at the first failed renewal)');

$r = NetnsPostgres::finish_psql($taking_b);
ok($r->{ok}, 'B: the issuing loop ended') or diag $r->{stderr};
my ($first_at, $first_id, $b_count) = split /\|/,
  $node_b->psql('SELECT extract(epoch FROM min(at)), min(id), count(*) FROM issued');
cmp_ok($b_count, '>', 0, "B: took the identity over and issued $b_count IDs");
cmp_ok($first_at, '>=', $expires,
	'B: its first ID came after A\'s lease expired (registry clock)');
my ($claimed_at, $host, $inherited) = split /\|/,
  PartitionDrill::registry_row($registry, $DATACENTER, $WORKER,
	'extract(epoch FROM claimed_at), host, extract(epoch FROM inherited_ids_before)');
cmp_ok($claimed_at, '>=', $expires, 'registry: B claimed the row once A\'s lease had expired');
like($host, qr/:57012$/, 'registry: the row is B\'s');
cmp_ok($inherited, '>=', $ids_before, 'registry: B inherited A\'s ids_before as its floor');
cmp_ok($first_id, '>', $last_id, 'B: its first ID is above every ID of A');
is( $node_b->psql("SELECT count(*) FROM refused WHERE message !~ '^(snowflake identity datacenter_id $DATACENTER, worker_id $WORKER is held by another node|this node is taking snowflake identity)'"),
	'0', 'B: until then refused as held by A, or waiting for the takeover floor');

## The partition heals ----------------------------------------------------------

my $healed = time;
$lab->heal('a');
PartitionDrill::wait_status($node_a, "state = 'conflict'", 10, 'learns that B holds the identity');
my $learned = time - $healed;
for my $round (1, 2)
{
	$r = $node_a->try_psql('SELECT snowflake_nextval()');
	is($r->{message},
		"snowflake identity datacenter_id $DATACENTER, worker_id $WORKER is held by another node",
		"A (healed, check $round): refused, the identity is held by another node");
	like($r->{detail}, qr/held by \S+:57012 /, "A (healed, check $round): the detail names B");
	sleep($LEASE / 3 + 0.5) if $round == 1;    # a renewal interval later, still
}
PartitionDrill::wait_status($node_b, "state = 'held'", 5, 'still holds the identity');
my $b_next = $node_b->psql('SELECT snowflake_nextval()');
cmp_ok($b_next, '>', $first_id, 'B: issues on');

my %seen;
my $duplicates = grep { $seen{$_}++ } split /\n/,
  $node_a->psql('SELECT id FROM issued') . "\n" . $node_b->psql('SELECT id FROM issued');
is($duplicates, 0, 'no ID issued by both nodes (' . scalar(keys %seen) . ' IDs)');

diag sprintf('figures (lease %d s): cut -> A refuses: %.2f s (A last issued %.2f s after the cut; rule: at most %.1f s); '
	  . 'cut -> B issues: %.2f s (A\'s lease expired on the registry %.2f s after the cut); heal -> A knows it lost the identity: %.2f s',
	$LEASE, $refused_at - $cut, $last_id_at - $cut, 0.9 * $LEASE,
	$first_at - $cut, $expires - $cut, $learned);

$_->stop('fast') for ($node_a, $node_b, $registry);
done_testing();
