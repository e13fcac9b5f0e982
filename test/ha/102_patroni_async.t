# Patroni drill, asynchronous replication: what a failover costs, counted.
#
# The README says: with asynchronous replication, a promoted standby issues
# above every ID whose use in committed data reached it; an ID returned to a
# client but lost with the old primary's unreplicated WAL could be issued
# again, exactly as the rows around it are lost. This drill makes such WAL
# and counts.
#
# Two Patroni members (etcd, loopback, ports 26100-26199), snowflake
# configured through postgresql.parameters, synchronous_mode off. Two clients
# insert continuously through a multi-host connection string and record every
# ID returned to them. The leader's walsender is stalled for a second (so
# commits acknowledged to the clients pile up in WAL the standby never gets),
# then the leader's node dies (SIGKILL to Patroni, the postmaster and every
# backend) and Patroni promotes the standby when the leader key expires.
# Checks: some acknowledged rows were lost (the drill did what it says); the
# new leader's IDs are above every ID in the table it inherited; an ID given
# to a client twice, if any, is one of the lost rows' IDs, and none other.
use strict;
use warnings FATAL => 'all';

use Test::More;
use Time::HiRes qw(time sleep);
use PatroniCluster;

my @missing = PatroniCluster::missing_tools();
plan skip_all => "not installed: @missing" if @missing;

my $began = time;
my $cluster = PatroniCluster->new(name => 'async', base_port => 26100, synchronous_mode => 0);
my $wait_until = \&PatroniCluster::wait_until;

$cluster->start_etcd;
$cluster->start_member(0);
$wait_until->('m0 leads', 60, sub { ($cluster->leader // -1) == 0 })
  or $cluster->fail_with_logs('m0 did not bootstrap');
$cluster->create_ids_table(0);
$cluster->start_member(1);
$wait_until->('m1 streams', 90, sub { $cluster->is_streaming(1) })
  or $cluster->fail_with_logs('m1 did not become a streaming replica');
is($cluster->psql(0, 'SHOW synchronous_standby_names'), '', 'replication is asynchronous');

$cluster->start_clients(2);
$wait_until->('the clients insert', 20, sub { $cluster->psql(0, 'SELECT count(*) >= 200 FROM ids') eq 't' })
  or $cluster->fail_with_logs('the clients do not insert');

# The leader's walsender stalls; commits go on being acknowledged; the node dies.
my $killed = $cluster->kill_node_with_unsent_wal(0, 1);
ok($wait_until->('m1 leads', 60, sub { ($cluster->leader // -1) == 1 }),
	'Patroni promotes m1 after the leader\'s node died');
my $promoted = time - $killed;
$wait_until->('IDs are issued again', 30, sub {
	$cluster->psql(1, "SELECT count(*) FROM ids WHERE at > now() - interval '1s'") > 0;
});
sleep 2;
my @batches = $cluster->stop_clients;

my %table = map { $_ => 1 } split /\n/, $cluster->psql(1, 'SELECT id FROM ids');
my @before = map { @{ $_->{ids} } } grep { $_->{ok} && $_->{end} < $killed } @batches;
my @after = map { @{ $_->{ids} } } grep { $_->{ok} && $_->{start} > $killed } @batches;
my %lost = map { $_ => 1 } grep { !$table{$_} } @before;
my @kept = grep { $table{$_} } @before;
my %seen;
my @repeated = grep { $seen{$_}++ } @before, @after;

cmp_ok(scalar keys %lost, '>', 0, 'rows acknowledged to clients were lost with the unreplicated WAL');
ok(@after, 'the new leader issues IDs');
my ($highest_kept) = sort { $b <=> $a } @kept;
my ($lowest_after) = sort { $a <=> $b } @after;
cmp_ok($lowest_after // 0, '>', $highest_kept // 0,
	'the new leader\'s IDs are above every ID in the table it inherited');
my @unexplained = grep { !$lost{$_} } @repeated;
is(scalar @unexplained, 0, 'an ID given twice, if any, is a lost row\'s ID: nothing else repeats')
  or diag "repeated and not lost: @unexplained[0 .. 9]";
my @duplicate_keys = grep { !$_->{ok} && $_->{sqlstate} eq '23505' } @batches;
is(scalar @duplicate_keys, 0, 'no insert hit a duplicate key');

my ($highest_lost) = sort { $b <=> $a } keys %lost, @kept;
my $margin = $cluster->psql(1,
	"SELECT round(extract(epoch FROM (snowflake_decode($lowest_after)).ts - (snowflake_decode($highest_lost)).ts) * 1000)");
diag sprintf('PostgreSQL %s, asynchronous: %d IDs acknowledged by the old leader, %d of them lost with its '
	  . 'unreplicated WAL, %d repeated; the new leader\'s first ID is %d ms above the highest lost (or kept) one; '
	  . 'kill to promoted %.1f s, clients without an ID %.1f s; drill %.0f s',
	$ENV{PG_MAJOR}, scalar @before, scalar keys %lost, scalar @repeated, $margin, $promoted,
	PatroniCluster::longest_gap(\@batches, $killed, $killed + $promoted), time - $began);

done_testing();
