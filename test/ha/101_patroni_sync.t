# Patroni drill, synchronous mode: no ID a client received is ever issued
# again, through everything an operator's Patroni cluster goes through.
#
# Two Patroni members (etcd as the DCS, all on loopback, ports 26000-26099)
# manage PostgreSQL with snowflake configured through Patroni's own
# postgresql.parameters: one identity (datacenter_id 1, worker_id 1) for the
# Patroni cluster, kept by whichever member leads. synchronous_mode: true.
# Two clients insert continuously through a multi-host connection string
# (target_session_attrs=read-write), recording every ID returned to them,
# while:
#   a. the leader's node dies: its walsender stalls for half a second (so the
#      leader has WAL its standby never gets, and commits waiting for it),
#      then Patroni, the postmaster and every backend get SIGKILL; Patroni
#      promotes the synchronous standby when the leader key expires;
#   b. the old leader's Patroni is started again: it rewinds the diverged
#      data directory with pg_rewind and rejoins as the synchronous standby;
#   c. a planned switchover back to it (Patroni's REST API);
#   d. the whole cluster is stopped (the standby first) and started again
#      (the last leader first) with the servers' clock set back 30 s
#      (libfaketime, preloaded into each PostgreSQL through a wrapper in
#      Patroni's bin_dir): snowflake refuses (system clock moved backwards) rather
#      than reissue, until the operator sets snowflake.max_lead through
#      Patroni's dynamic configuration (patronictl edit-config); then it
#      issues above every earlier ID.
# Checks: every ID recorded is distinct, no insert ever hit a duplicate key,
# no batch got an ID at or below one a finished batch had got, and every ID
# a client was given is in the table at the end (no acknowledged row lost).
use strict;
use warnings FATAL => 'all';

use Test::More;
use Time::HiRes qw(time sleep);
use PatroniCluster;

my @missing = PatroniCluster::missing_tools();
plan skip_all => "not installed: @missing" if @missing;
plan skip_all => 'libfaketime is not installed' unless PatroniCluster::faketime_available();

my $began = time;
my $cluster = PatroniCluster->new(name => 'sync', base_port => 26000, synchronous_mode => 1);
my $wait_until = \&PatroniCluster::wait_until;
my %figures;

sub leader_is
{
	my ($i, $seconds) = @_;
	return $wait_until->("m$i leads", $seconds, sub { ($cluster->leader // -1) == $i });
}

sub streams
{
	my ($i, $seconds) = @_;
	return $wait_until->("m$i streams as the synchronous standby", $seconds, sub { $cluster->is_streaming($i) });
}

# The cluster: m0 bootstraps, m1 joins as the synchronous standby.
$cluster->start_etcd;
$cluster->start_member(0);
leader_is(0, 60) or $cluster->fail_with_logs('m0 did not bootstrap');
is($cluster->psql(0, "SELECT current_setting('shared_preload_libraries') || ' '"
		. " || current_setting('snowflake.datacenter_id') || '/' || current_setting('snowflake.worker_id')"),
	'snowflake 1/1', 'postgresql.parameters from Patroni preload snowflake with the cluster\'s identity');
$cluster->create_ids_table(0);
$cluster->start_member(1);
streams(1, 90) or $cluster->fail_with_logs('m1 did not become the synchronous standby');
$figures{bootstrap} = time - $began;

$cluster->start_clients(2);
$wait_until->('the clients insert', 20, sub { $cluster->psql(0, 'SELECT count(*) >= 200 FROM ids') eq 't' })
  or $cluster->fail_with_logs('the clients do not insert');

# a. The leader's node dies, with WAL its standby never got.
my $killed = $cluster->kill_node_with_unsent_wal(0, 0.5);
ok(leader_is(1, 60), 'a. Patroni promotes the synchronous standby m1 after the leader\'s node died');
$figures{failover_promoted} = time - $killed;
$wait_until->('IDs are issued again', 30, sub { $cluster->psql(1, 'SELECT count(*) FROM ids WHERE at > now() - interval \'1s\'') > 0 });
sleep 1;

# b. The old leader comes back: pg_rewind, then it follows m1.
my $restarted = time;
$cluster->start_member(0);
ok(streams(0, 90), 'b. the old leader m0 rejoins as the synchronous standby');
$figures{rejoin} = time - $restarted;
my $log = do { local (@ARGV, $/) = $cluster->log_file(0); <> };
like($log, qr/pg_rewind/i, 'b. Patroni rejoined m0 with pg_rewind (its data directory had diverged)');
sleep 1;

# c. A planned switchover back to m0.
my $switched = time;
my ($status, $answer) = $cluster->rest(1, 'POST', '/switchover', { leader => 'm1', candidate => 'm0' });
is($status, 200, 'c. Patroni accepts the switchover to m0') or diag explain $answer;
ok(leader_is(0, 60) && streams(1, 60), 'c. m0 leads, m1 follows as the synchronous standby');
$figures{switchover_done} = time - $switched;
sleep 1.5;

# d. The whole cluster restarts with its clock 30 s behind.
my $stopped = time;
$cluster->stop_member(1);
$cluster->stop_member(0);
my $restart = time;
# The last leader first, as an operator does: it has every commit (while m1
# was stopped it ran alone, and Patroni's non-strict synchronous mode let it).
$cluster->start_member(0, PatroniCluster::faketime_env('-30s'));
leader_is(0, 60) or $cluster->fail_with_logs('m0 does not lead after the restart');
$cluster->start_member(1, PatroniCluster::faketime_env('-30s'));
my $leader = 0;
my $offset = $cluster->psql($leader, 'SELECT round(extract(epoch FROM now()) - ' . time . ')');
cmp_ok($offset, '<=', -28, "d. after the restart the servers' clock reads ${offset} s from real time");
my $refusal = eval { $cluster->psql($leader, 'SELECT snowflake_nextval()'); '' } // $@;
like($refusal, qr/system clock moved backwards/, 'd. the new leader refuses rather than reissue');
$wait_until->('a client is refused too', 20, sub {
	grep { !$_->{ok} && $_->{sqlstate} eq '55000' && $_->{start} > $restart } $cluster->read_batches;
}) or diag 'no client saw the refusal';

# The operator's fix: snowflake.max_lead through Patroni's dynamic configuration.
my $fixed = time;
my $edit = eval { $cluster->patronictl($leader, 'edit-config', '--pg', 'snowflake.max_lead=60s', '--force') };
like($edit // $@, qr/max_lead/, 'd. patronictl edit-config sets snowflake.max_lead = 60s in the dynamic configuration');
ok($wait_until->('IDs are issued again', 30, sub {
	eval { $cluster->psql($leader, 'SELECT snowflake_nextval()'); 1 };
}), 'd. after the reload Patroni made, the leader issues IDs again');
$figures{clock_fix} = time - $fixed;
my $before = (sort { $b <=> $a } map { @{ $_->{ids} } } grep { $_->{ok} && $_->{end} < $stopped } $cluster->read_batches)[0];
my ($after, $lead) = split /\|/, $cluster->psql($leader,
	'SELECT id, round(extract(epoch FROM (snowflake_decode(id)).ts - clock_timestamp())) FROM snowflake_nextval() id');
cmp_ok($after, '>', $before, "d. its IDs are above every ID of before the restart, running ${lead} s ahead of its clock");
ok(streams(1, 60), 'd. m1 follows again as the synchronous standby');
sleep 1;

# The record.
my @batches = $cluster->stop_clients;
my @ok = grep { $_->{ok} } @batches;
my @ids = map { @{ $_->{ids} } } @ok;
my %seen;
my @repeated = grep { $seen{$_}++ } @ids;
is(scalar @repeated, 0, 'no ID was given to a client twice') or diag "repeated: @repeated[0 .. 9]";
my @duplicate_keys = grep { !$_->{ok} && $_->{sqlstate} eq '23505' } @batches;
is(scalar @duplicate_keys, 0, 'no insert hit a duplicate key') or diag $duplicate_keys[0]{message};
my @violations = PatroniCluster::ordering_violations(@batches);
is(scalar @violations, 0, 'every batch got IDs above those of every batch that had finished before it');
my %table = map { $_ => 1 } split /\n/, $cluster->psql($leader, 'SELECT id FROM ids');
my @lost = grep { !$table{$_} } @ids;
is(scalar @lost, 0, 'every ID a client was given is in the table: no acknowledged row was lost');
my @early = grep { $_->{ok} && $_->{start} > $restart && $_->{end} < $fixed } @batches;
is(scalar @early, 0, 'd. no ID was issued between the restart with the clock set back and the fix');

my %errors;
$errors{ $_->{sqlstate} }++ for grep { !$_->{ok} } @batches;
$figures{failover_clients} = PatroniCluster::longest_gap(\@batches, $killed, $killed + $figures{failover_promoted});
$figures{switchover_clients} = PatroniCluster::longest_gap(\@batches, $switched, $switched + $figures{switchover_done});
diag sprintf('PostgreSQL %s, Patroni %s: %d IDs to clients in %d batches, %d repeated, %d lost, %d rows in the table; '
	  . 'failed batches by SQLSTATE (- = no connection): %s',
	$ENV{PG_MAJOR}, scalar(`patroni --version 2>&1` =~ /([\d.]+)/ ? $1 : '?'), scalar @ids, scalar @ok,
	scalar @repeated, scalar @lost, scalar keys %table, join(', ', map { "$_ $errors{$_}" } sort keys %errors));
diag sprintf('bootstrap %.1f s; failover: kill to promoted %.1f s, clients without an ID %.1f s; '
	  . 'rejoin by pg_rewind %.1f s; switchover %.1f s, clients without an ID %.1f s; clock fix to IDs %.1f s; drill %.0f s',
	map { $_ // -1 } @figures{qw(bootstrap failover_promoted failover_clients rejoin switchover_done
		  switchover_clients clock_fix)}, time - $began);

done_testing();
