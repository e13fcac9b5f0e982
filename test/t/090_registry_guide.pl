# doc/registry.md's setup, run as written (issue 47): every block of the
# guide marked `<!-- setup: NAME -->` (test/perl/RegistryTable.pm reads
# them), with only what names the guide's machines replaced: host names and
# ports (127.0.0.1 and the test's ports), the nodes' network in pg_hba.conf,
# the password file's path, the lease (6 s, for a short test) and each node's
# worker_id. From a registry server with no database `registry`:
#
#   - the database, the role, the schema and the table, its grants; the
#     pg_hba.conf line above initdb's `trust` lines: a wrong password is
#     refused;
#   - the guide's recipe: two streaming standbys, registry_s1 and
#     registry_s2, and synchronous_standby_names = 'ANY 1 (...)' on the
#     primary (both standbys quorum standbys);
#   - three nodes with the password file and the connection string that
#     lists the three registry servers (target_session_attrs=read-write): the
#     check query shows each one holding its identity;
#   - under load (a writer on each node), registry_s1 stopped for two leases:
#     every node keeps issuing (every two seconds), its lease held, its renewals
#     never waiting, the registry still 'synchronous' with one standby;
#   - registry_s2 stopped too: within seconds each node's status says its
#     renewals wait for 'synchronous standbys' (through the unprivileged
#     role), before its lease runs out; registry_s1 back: all renew;
#   - the registry's primary restarted (its standbys reconnect after the
#     guide's wal_retrieve_retry_interval of 1 s): how long until every node
#     renews again (noted; within a lease);
#   - no ID issued twice, each decoding to its node.
use strict;
use warnings;

use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use RegistryTable;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

my $LEASE = '6s';
my @NODES = (1, 2, 3);

# --- the registry: a server with no database `registry` --------------------
my $registry = PostgreSQL::Test::Cluster->new('registry');
$registry->init(allows_streaming => 1);
$registry->append_conf('postgresql.conf', "listen_addresses = '127.0.0.1'");
$registry->start;
SnowflakeTest::remember_node($registry);
is($registry->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname = 'registry'"),
	'0', 'the registry server has no database registry yet');

$registry->safe_psql('postgres', RegistryTable::doc_block('registry-database'));
$registry->safe_psql('registry', RegistryTable::doc_block('registry-table'));
is( $registry->safe_psql(
		'registry',
		"SELECT has_table_privilege('snowflake_node', 'snowflake.snowflake_registry', 'SELECT, INSERT, UPDATE')"
	),
	't',
	'the guide\'s role may use the guide\'s table');

# pg_hba.conf: the guide's line above the others, with this machine's address.
my $hba_line = RegistryTable::doc_block('registry-hba');
$hba_line =~ s{192\.0\.2\.0/24}{127.0.0.1/32} or die "no 192.0.2.0/24 in the pg_hba.conf block";
my $hba_file = $registry->data_dir . '/pg_hba.conf';
my $hba = slurp_file($hba_file);
like($hba, qr/^host\s+all\s+all\s+127\.0\.0\.1\/32\s+trust/m,
	'initdb\'s pg_hba.conf trusts local TCP connections');
PostgreSQL::Test::Utils::append_to_file("$hba_file.new", $hba_line . $hba);
rename "$hba_file.new", $hba_file or die "rename: $!";
$registry->reload;
my ($status, $out, $err) = $registry->psql('postgres', 'SELECT 1',
	connstr => 'host=127.0.0.1 port=' . $registry->port
	  . ' dbname=registry user=snowflake_node password=wrong');
like($err, qr/password authentication failed for user "snowflake_node"/,
	'a wrong password is refused: the line is read before initdb\'s trust');

# --- the recipe: two standbys, quorum commit --------------------------------
my @standbys;
for my $name ('registry_s1', 'registry_s2')
{
	my $standby = SnowflakeTest::init_standby($registry, $name,
		conf => [ RegistryTable::doc_block('registry-standby-conf') ]);
	$standby->start;
	push @standbys, $standby;
}
ok( $registry->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_replication WHERE state = 'streaming'"),
	'two standbys stream from the registry');
$registry->append_conf('postgresql.conf', RegistryTable::doc_block('registry-primary-conf'));
$registry->reload;
ok( $registry->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_replication WHERE sync_state = 'quorum'"),
	'both are quorum standbys (synchronous_standby_names = \'ANY 1 (registry_s1, registry_s2)\')');

# --- three nodes --------------------------------------------------------------
my $dir = tempdir(CLEANUP => 1);
my @ports = map { $_->port } ($registry, @standbys);
my @nodes;
for my $i (@NODES)
{
	my $passfile = "$dir/pgpass-node$i";
	my $commands = RegistryTable::doc_block('node-passfile');
	$commands =~ s{/var/lib/postgresql/\.pgpass-snowflake}{$passfile}g
	  or die "no password file path in the node-passfile block";
	# The guide's commands run as root; here the servers' user, postgres,
	# runs them: install -o postgres then changes nothing.
	my $user = getpwuid($<);
	$commands =~ s/-o postgres -g postgres/-o $user/;
	system('bash', '-euc', $commands) == 0 or die "the node-passfile block failed";

	my $conf = RegistryTable::doc_block('node-conf');
	$conf =~ s{host=registry-1\.example,registry-2\.example,registry-3\.example}
	  {host=127.0.0.1,127.0.0.1,127.0.0.1 port=@{[ join ',', @ports ]}}
	  or die "no host list in the node-conf block";
	$conf =~ s{/var/lib/postgresql/\.pgpass-snowflake}{$passfile} or die "no passfile in node-conf";
	$conf =~ s/snowflake\.registry_lease = '30s'/snowflake.registry_lease = '$LEASE'/
	  or die "no lease in node-conf";
	$conf =~ s/snowflake\.worker_id = 2\b/snowflake.worker_id = $i/ or die "no worker_id in node-conf";
	my $node = SnowflakeTest::init_node("node$i",
		datacenter_id => undef, worker_id => undef, conf => [$conf]);
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	push @nodes, $node;
}
my $check = RegistryTable::doc_block('node-check');
$check =~ s/;\s*\z//;    # a subquery here
for my $i (@NODES)
{
	my $node = $nodes[ $i - 1 ];
	ok($node->poll_query_until('postgres', "SELECT state = 'held' FROM ($check) c"),
		"node$i: the guide's check query shows its lease held");
	is($node->safe_psql('postgres', "SELECT datacenter_id || '/' || worker_id FROM ($check) c"),
		"1/$i", "node$i: as datacenter_id 1, worker_id $i");
}
is( $registry->safe_psql(
		'registry',
		"SELECT count(DISTINCT usename) || ' ' || min(usename) FROM pg_stat_activity WHERE application_name = 'snowflake registry'"
	),
	'1 snowflake_node',
	'the nodes\' workers connect as the guide\'s role');

# --- one standby lost under load ----------------------------------------------
my %writers;
for my $node (@nodes)
{
	SnowflakeTest::create_id_writers($node);
	$writers{ $node->name } = [ SnowflakeTest::start_writers($node, 1, batch => 50) ];
}
sub issued
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT count(*) FROM ids');
}
$standbys[0]->stop('fast');
ok( $registry->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'quorum'"),
	'registry_s1 stopped: one quorum standby left');
my %last = map { $_->name => issued($_) } @nodes;
my %paused;
my $waited = 0;
my $started = time;
while (time - $started < 12)    # two leases
{
	sleep 2;
	for my $node (@nodes)
	{
		my $now = issued($node);
		$paused{ $node->name }++ if $now <= $last{ $node->name };
		$last{ $node->name } = $now;
		$waited++
		  if SnowflakeTest::registry_status($node,
			"state <> 'held' OR registry_waits_for IS NOT NULL") eq 't';
	}
}
for my $node (@nodes)
{
	is($paused{ $node->name } // 0, 0,
		$node->name . ': issued IDs in every two seconds of two leases with one standby stopped');
	is( SnowflakeTest::registry_status($node,
			"state || ', ' || registry_durability || ', ' || registry_standbys"),
		'held, synchronous, 1',
		$node->name . ': its lease held; the registry synchronous, with one standby');
}
is($waited, 0, 'no node\'s lease lapsed, no renewal waited');
for my $node (@nodes)
{
	for my $result (SnowflakeTest::stop_writers($node, @{ $writers{ $node->name } }))
	{
		ok($result->{ok}, $node->name . ': its writer never failed') or diag $result->{stderr};
	}
}

# --- both lost: the nodes say why, before their leases run out -----------------
$standbys[1]->stop('fast');
$started = time;
for my $node (@nodes)
{
	SnowflakeTest::wait_for_registry($node,
		"registry_waits_for = 'synchronous standbys' AND registry_waiting_since IS NOT NULL",
		'both standbys stopped: the renewals wait for the synchronous standbys');
}
my $said = time - $started;
note sprintf('every node said so %.1f s after the second standby stopped', $said);
like(slurp_file($nodes[0]->logfile),
	qr/WARNING:  the snowflake registry has not confirmed this node's renewal for \d+ ms: it waits for its synchronous standbys\n.*DETAIL:  .*synchronous_standby_names \('ANY 1 \(registry_s1, registry_s2\)'\).*, and 0 standbys stream from it\. This node issues IDs for \d+ ms more/,
	'node1\'s WARNING names the setting and the lease left');
$standbys[0]->start;
$started = time;
for my $node (@nodes)
{
	SnowflakeTest::wait_for_registry($node, "state = 'held' AND registry_waits_for IS NULL",
		'registry_s1 back: renewals are confirmed');
	my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
	ok($r->{ok}, $node->name . ': issues IDs') or diag $r->{stderr};
}
note sprintf('all renewed %.1f s after registry_s1 started', time - $started);
$standbys[1]->start;
ok( $registry->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_replication WHERE sync_state = 'quorum'"),
	'both standbys back');

# --- the registry restarted ------------------------------------------------------
$registry->stop('fast');
for my $node (@nodes)
{
	SnowflakeTest::wait_for_registry($node, 'last_error IS NOT NULL',
		'the registry stopped: a renewal fails');
}
$registry->start;
$started = time;
my $back = $registry->safe_psql('postgres', 'SELECT now()');
for my $node (@nodes)
{
	SnowflakeTest::wait_for_registry($node,
		"state = 'held' AND last_error IS NULL AND renewed_at >= '$back'",
		'the registry back: renewed');
}
my $renewed = time - $started;
note sprintf('every node renewed %.1f s after the registry started again', $renewed);
cmp_ok($renewed, '<', 6, 'within a lease of the registry\'s start');

# --- the IDs -----------------------------------------------------------------------
for my $i (@NODES)
{
	my $node = $nodes[ $i - 1 ];
	SnowflakeTest::check_ids($node, 'ids', "node$i");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM ids WHERE (snowflake_decode(id)).worker_id <> $i"),
		'0', "node$i: every ID decodes to worker_id $i");
}

$_->stop('fast') for @nodes;
done_testing();
